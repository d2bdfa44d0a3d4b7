"""The pinned pi shows ctxfold's status line in its footer, through the extension ctxfold ships.

pi's terminal UI runs on a pseudo-terminal against the scripted server, with the extension put in
``~/.pi/agent/extensions/`` by ``ctxfold statusline --install-pi``'s own code, and
``CTXFOLD_STATUSLINE_CMD`` pointing it at a command that records the JSON it is given and passes
it to this checkout's ``ctxfold statusline``. The project's ``.pi/settings.json`` lowers pi's
auto-compaction (``compaction.reserveTokens``: 30,000, so it fires at 170,000 of 200,000, before
ctxfold's 180,000), and the scripted answer reports a context of 160,000 tokens: the line must
say what is left before pi's auto-compact, computed on the session file pi wrote, and pi must
draw it. Then what the extension does when things go wrong: no ``ctxfold`` to run, and a command
that never ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxfold.cli.pi_extension import install
from interop.statusrec import ANSI, Run, finished, recorder

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import harness_tty  # noqa: E402  (the lab's terminal driver)
from harness_lab import HARNESSES, Reply, ScriptedServer  # noqa: E402

RESERVE, USED, OUT = 30_000, 160_000, 12


def test_pi_shows_ctxfolds_status_line(
    harness_bin: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    home, rec = tmp_path / "home", tmp_path / "rec"
    rec.mkdir()
    project = home / "project"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text(json.dumps({"compaction": {"reserveTokens": RESERVE}}))
    installed = install(home=home)
    assert installed.action == "installed" and installed.path.parent == home / ".pi" / "agent" / "extensions"

    seen: list[tuple[Run, str]] = []  # the run drawn, and the whole screen when the run stopped

    def drawn(screen: str) -> bool:
        """Stop once pi has drawn a line ctxfold printed for the session's answer."""
        text = ANSI.sub("", screen)
        for run in finished(rec):
            if "tokens" in run.out and b'"role":"assistant"' in run.read() and ANSI.sub("", run.out) in text:
                seen.append((run, screen))
                break
        return bool(seen)

    session = harness_tty.run_interactive(
        HARNESSES["pi"],
        harness_bin("pi"),
        [Reply("Hello from the lab.", input_tokens=USED, output_tokens=OUT)],
        "Say hello.",
        env={"CTXFOLD_STATUSLINE_CMD": str(recorder(rec))},
        home=home,
        timeout=180,
        until=drawn,
    )
    (log,) = session.logs
    header = json.loads(log.read_text().splitlines()[0])
    done = finished(rec)
    assert done, "pi never ran the status line command (was the extension loaded?)"
    # at session_start, before pi has written the file (unless the answer came first), then after
    # the turn
    first = done[0].out
    assert first == "ctxfold: no transcript yet (Claude Sonnet 4.5)" or "tokens" in first, first
    assert seen, f"pi drew no line of ctxfold's: {ANSI.sub('', session.stdout)[-1500:]}"
    run, drew = seen[0]
    payload, printed = run.payload, run.out
    # the JSON the extension sends: Claude Code's shape, for pi's session
    assert payload == {
        "session_id": header["id"],
        "transcript_path": str(log),
        "cwd": str(project),
        "model": {"id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5"},
        "context_window": {"context_window_size": 200_000},
    }
    shown = ANSI.sub("", printed)
    assert printed.startswith("\x1b[33m")  # ctxfold's yellow: within 10 % of the window of it
    assert re.fullmatch(r"1[56]\d(\.\d)?k/200k tokens \(\d+%\) · [\d.]+k left before pi's auto-compact \(170k\)", shown), shown  # fmt: skip
    # the numbers of the file as that run read it, pi's settings read as pi reads them
    monkeypatch.setenv("HOME", str(home))
    assert shown == run.expected(tmp_path)
    assert shown in ANSI.sub("", drew)  # pi drew it in its footer
    # in pi's warning colour (its footer's own for a context over 70 %), not ctxfold's codes
    tint = re.search(r"(\x1b\[[0-9;]*m)" + re.escape(shown), drew)
    own = re.search(r"(\x1b\[[0-9;]*m)" + re.escape(f"{(USED + OUT) / 2000:.1f}%/200k"), drew)
    assert tint and own and tint.group(1) == own.group(1) != "\x1b[33m", drew[-1500:]


def _answered(home: Path) -> bool:
    """pi has written the scripted answer to its session file."""
    return any('"role":"assistant"' in p.read_text() for p in home.glob(HARNESSES["pi"].logs))


def test_without_ctxfold_on_path_the_footer_says_so(
    harness_bin: Callable[[str], Path], tmp_path: Path
) -> None:
    """No ``ctxfold`` where pi looks and no ``CTXFOLD_STATUSLINE_CMD``: a short hint, and pi
    answers as ever."""
    home = tmp_path / "home"
    install(home=home)
    path = f"{Path(shutil.which('node') or 'node').parent}:/usr/bin:/bin"
    if shutil.which("ctxfold", path=path):
        pytest.skip("a ctxfold is installed system-wide here")
    hint = "ctxfold: not found on PATH (set CTXFOLD_STATUSLINE_CMD)"
    seen: list[str] = []

    def hinted(screen: str) -> bool:
        if hint in ANSI.sub("", screen) and _answered(home):
            seen.append(screen)
        return bool(seen)

    session = harness_tty.run_interactive(
        HARNESSES["pi"],
        harness_bin("pi"),
        [Reply("Hello from the lab.")],
        env={"PATH": path},
        home=home,
        timeout=180,
        until=hinted,
    )
    assert seen, f"no hint, or no answer: {ANSI.sub('', session.stdout)[-1500:]}"


def test_a_command_still_running_when_pi_quits_is_stopped(
    harness_bin: Callable[[str], Path], tmp_path: Path
) -> None:
    """A status command that hangs holds up nothing: pi answers while it runs, and quitting pi
    (Ctrl+D) stops it, with the children it started."""
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    install(home=home)
    pids = tmp_path / "pids"
    hang = tmp_path / "hang.sh"
    hang.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 600 &\necho $! >> {pids}\nwait\n")
    hang.chmod(0o755)
    h = HARNESSES["pi"]
    quit_at: list[bool] = []

    def quit_once_answered(fd: int, screen: bytes) -> bool:
        if not quit_at and _answered(home) and pids.is_file() and len(pids.read_text().split()) >= 2:
            os.write(fd, b"\x04")  # Ctrl+D on an empty editor: pi quits
            quit_at.append(True)
        return False  # on until pi has exited (the terminal closes) or the deadline

    started: list[int] = []
    try:
        with ScriptedServer(h.api, [Reply("Hello from the lab.")], fallback=Reply("Done.")) as srv:
            env = {
                "PATH": f"{Path(shutil.which('node') or 'node').parent}:/usr/bin:/bin",
                "HOME": str(home),
                "TERM": "xterm-256color",
                "LANG": "C.UTF-8",
                **h.configure(home, srv.url),
                "CTXFOLD_STATUSLINE_CMD": str(hang),
            }
            harness_tty._on_terminal(
                harness_bin("pi"), ["Say hello."], env, home / "project", 180, quit_once_answered
            )
        assert quit_at, "pi never answered while the status command ran"
        started = [int(p) for p in pids.read_text().split()]
        deadline = time.monotonic() + 60
        while any(_alive(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in started if _alive(p)], "the status command outlived pi"
    finally:
        for p in started:  # what this test started, should the extension have left it
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a child of nobody here (reparented to init), gone once reaped: a zombie counts as dead
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    return True
