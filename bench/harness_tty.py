"""The harnesses on a pseudo-terminal, as users run them: Claude Code's interactive terminal UI
(its logs name the entrypoint ``cli``, and it sends what ``claude -p`` does not), pi's (its footer
shows what extensions set), and Gemini CLI's with a second prompt typed in (it compresses its
history only when a user turn starts)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import termios
import time
from collections.abc import Callable
from pathlib import Path

from harness_lab import DONE, HARNESSES, Harness, Reply, ScriptedServer, Session


def run_interactive(
    h: Harness,
    binary: Path,
    script: list[Reply],
    prompt: str = "Say hello.",
    *,
    env: dict[str, str] | None = None,
    home: Path,
    timeout: float = 90,
    settle: float = 3,
    until: Callable[[str], bool] | None = None,
) -> Session:
    """Claude Code as a user runs it: the interactive terminal UI on a pseudo-terminal, the prompt
    given on the command line, stopped once the answer is in its log (or ``settle`` seconds after
    the server answered), or with ``until`` once what it drew satisfies that instead (the
    screen's text as drawn, escape sequences left in). Onboarding, the folder's
    trust dialog and the custom API key prompt are answered in ``~/.claude.json`` beforehand."""
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": ["dummy"], "rejected": []},
        # the fields 1.x read from a project's entry without checking them
        "projects": {
            str(project): {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
                "allowedTools": [],
                "mcpServers": {},
                "enabledMcpjsonServers": [],
                "disabledMcpjsonServers": [],
                "ignorePatterns": [],
                "projectOnboardingSeenCount": 1,
            }
        },
    }
    (home / ".claude.json").write_text(json.dumps(state))
    with ScriptedServer(h.api, script, side=h.side, side_reply=h.side_reply, fallback=Reply("Done.")) as srv:
        full_env = {
            **_terminal_env(home),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **h.configure(home, srv.url),
            **(env or {}),
        }
        answered: list[float] = []

        def done(fd: int, screen: bytes) -> bool:
            if until is not None:
                return until(screen.decode("utf-8", "replace"))
            if not answered and any(r.model_call and not r.side for r in srv.requests):
                answered.append(time.monotonic())
            return bool(answered) and (time.monotonic() - answered[0] > settle or _logged_answer(h, home))

        screen = _on_terminal(binary, [prompt], full_env, project, timeout, done)
        requests = list(srv.requests)
    logs = sorted(p for p in home.glob(h.logs) if p.is_file())
    return Session(h.name, requests, logs, home, 0, screen.decode("utf-8", "replace")[-3000:], "")


def _terminal_env(home: Path) -> dict[str, str]:
    """What every harness here runs with: node on ``PATH`` (the npm packages start with it),
    ``home`` as its home, a colour terminal, UTF-8."""
    node_bin = str(Path(shutil.which("node") or "node").parent)
    return {
        "PATH": f"{node_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
    }


def _logged_answer(h: Harness, home: Path) -> bool:
    """The harness has written the scripted answer to its log."""
    for p in home.glob(h.logs):
        try:
            if '"type":"assistant"' in p.read_text(errors="replace"):
                return True
        except OSError:
            pass
    return False


def run_two_prompts(
    h: Harness,
    binary: Path,
    script: list[Reply],
    prompts: tuple[str, str],
    *,
    after_calls: int,
    env: dict[str, str] | None = None,
    home: Path,
    setup: Callable[[Path], None] | None = None,
    timeout: float = 120,
) -> Session:
    """Gemini CLI in its terminal UI (``-i``): the first prompt, then, once ``after_calls`` model
    calls are answered, a second prompt typed in. A harness that checks its count only when a
    user turn starts (Gemini CLI compresses then) needs that second turn."""
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    with ScriptedServer(h.api, script, side=h.side, side_reply=h.side_reply, fallback=DONE) as srv:
        full_env = {**_terminal_env(home), **h.configure(home, srv.url)}
        if setup is not None:
            setup(home)
        full_env.update(env or {})
        typed: list[float] = []

        def done(fd: int, screen: bytes) -> bool:
            answered = [r for r in srv.requests if r.model_call and not r.side]
            if not typed and len(answered) >= after_calls:
                time.sleep(3)  # let the answer render and the prompt come back
                os.write(fd, prompts[1].encode())
                time.sleep(0.5)
                os.write(fd, b"\r")
                typed.append(time.monotonic())
            return bool(typed) and time.monotonic() - typed[0] > 15

        screen = _on_terminal(binary, ["-i", prompts[0]], full_env, project, timeout, done)
        requests = list(srv.requests)
    logs = sorted(p for p in home.glob(h.logs) if p.is_file())
    return Session(h.name, requests, logs, home, 0, screen.decode("utf-8", "replace")[-3000:], "")


def _on_terminal(
    binary: Path,
    args: list[str],
    env: dict[str, str],
    cwd: Path,
    timeout: float,
    done: Callable[[int, bytes], bool],
    size: tuple[int, int] | None = None,
) -> bytes:
    """Run the harness on a pseudo-terminal until ``done(fd, screen)`` (called about three times
    a second with what it drew so far; it may type into ``fd``) or ``timeout``; what it drew (the
    last 200 kB). With ``size`` (rows, columns) the terminal has that size, and it answers the
    harness's questions for the cursor's position (Codex draws nothing on a terminal of no size)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the harness on the terminal's other end
        os.chdir(cwd)
        os.execve(str(binary), [str(binary), *args], env)
    if size is not None:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    screen = b""
    start = time.monotonic()
    try:
        while time.monotonic() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.3)
            if ready:
                try:
                    got = os.read(fd, 65536)
                except OSError:
                    break
                screen = (screen + got)[-200_000:]
                if size is not None:
                    os.write(fd, b"\x1b[1;1R" * got.count(b"\x1b[6n"))
            if done(fd, screen):
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return screen


def run_codex_tui(
    binary: Path,
    script: list[Reply],
    prompt: str,
    *,
    home: Path,
    top: str = "",
    config: str = "",
    env: dict[str, str] | None = None,
    timeout: float = 90,
    until: Callable[[str], bool],
) -> Session:
    """Codex's terminal UI on a terminal of ``SIZE``, the prompt given on the command line,
    ``top`` (keys) put before the lab's ``config.toml`` and ``config`` (tables) after it (moved
    to ``env``'s ``CODEX_HOME`` when that names another folder), stopped once ``until(screen)``
    (the raw stream as drawn). ``--no-daemon``: 0.171's background server would outlive the run."""
    h = HARNESSES["codex"]
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    with ScriptedServer(h.api, script, fallback=DONE) as srv:
        lab = h.configure(home, srv.url)
        full_env = {**_terminal_env(home), **lab, **(env or {})}
        if full_env["CODEX_HOME"] != lab["CODEX_HOME"]:
            shutil.move(lab["CODEX_HOME"], full_env["CODEX_HOME"])
        toml = Path(full_env["CODEX_HOME"]) / "config.toml"
        toml.write_text(top + toml.read_text() + config)
        screen = _on_terminal(
            binary,
            ["--no-daemon", prompt],
            full_env,
            project,
            timeout,
            lambda fd, raw: until(raw.decode("utf-8", "replace")),
            size=SIZE,
        )
        requests = list(srv.requests)
    logs = sorted(p for p in Path(full_env["CODEX_HOME"]).glob("sessions/**/rollout-*.jsonl"))
    return Session(h.name, requests, logs, home, 0, screen.decode("utf-8", "replace"), "")


SIZE = (40, 120)  # rows, columns
_CSI = re.compile(r"\x1b\[([0-9;?<>=]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[^\[\]]")


def screen_rows(raw: str, size: tuple[int, int] = SIZE) -> list[str]:
    """The rows a terminal shows after ``raw``, as far as a harness that places its text by
    cursor moves draws it (ratatui writes only the cells that changed): cursor positioning,
    erasing to the end of the line, carriage return and line feed; other sequences are
    passed over."""
    rows, cols = size
    grid = [[" "] * cols for _ in range(rows)]
    r = c = 0
    pos = 0
    for m in _CSI.finditer(raw + "\x1b[0m"):
        for ch in raw[pos : m.start()]:
            if ch == "\r":
                c = 0
            elif ch == "\n":
                r = min(r + 1, rows - 1)
            elif ch >= " " and c < cols:
                grid[r][c] = ch
                c += 1
        pos = m.end()
        args, final = m.group(1), m.group(2)
        if final in ("H", "f"):
            row, _, col = (args or "1;1").partition(";")
            r, c = min(int(row or 1), rows) - 1, min(int(col or 1), cols) - 1
        elif final == "K" and args in ("", "0"):
            grid[r][c:] = [" "] * (cols - c)
    return ["".join(line).rstrip() for line in grid]
