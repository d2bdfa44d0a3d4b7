"""The pinned Claude Code runs ``ctxfold statusline`` as its status line and shows what it prints.

Claude Code's terminal UI runs on a pseudo-terminal against the scripted server, with
``"statusLine": {"type": "command", ...}`` in its settings; the command records the JSON Claude
Code sends and passes it to ``ctxfold statusline``. Before the session's first message there is
no transcript yet; after the answer, the line names the tokens of the transcript Claude Code
wrote, and the terminal shows it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from interop.statusrec import ANSI, Run, finished, recorder

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import harness_tty  # noqa: E402  (the lab's terminal driver)
from harness_lab import HARNESSES, Reply  # noqa: E402

ANSWER = "Hello from the lab."


def test_claude_code_shows_ctxfolds_status_line(harness_bin: Callable[[str], Path], tmp_path: Path) -> None:
    # Claude Code stops a status line run still going when the next one starts, and runs none
    # once the session is idle: on a loaded machine, every run that read the answer can be
    # stopped (seen once in a full suite). A second session is then run; a line of ctxfold's that
    # is never drawn fails both.
    for attempt in (1, 2):
        rec, session, seen = _session(harness_bin, tmp_path / f"attempt-{attempt}")
        if seen:
            break
    (log,) = session.logs
    assert list(rec.glob("payload-*.json")), "Claude Code never ran the status line command"
    # the runs that finished (Claude Code stops a run still going when it starts the next one,
    # and the last may still be going when the harness is stopped)
    done = finished(rec)
    assert done, "no status line command finished"
    # the JSON Claude Code sends: the fields the command reads, as docs/commands.md says
    last = done[-1].payload
    assert last["transcript_path"] == str(log) and last["session_id"] == log.stem
    assert isinstance(last["model"]["display_name"], str) and last["model"]["id"]
    assert all(len(run.out.splitlines()) == 1 for run in done)
    assert (
        done[0].out.startswith("ctxfold: no transcript yet (") or "tokens" in done[0].out
    )  # before any message
    assert seen, f"Claude Code drew no line of ctxfold's: {ANSI.sub('', session.stdout)[-1500:]}"
    run, screen = seen[0]
    shown = run.out
    assert re.match(r"[\d.]+k?/[\d.]+[kM] tokens \(\d+%\) · [\d.]+k left before ", shown), shown
    # the numbers of the transcript as that run read it
    assert shown == run.expected(tmp_path)
    assert shown.split(" · ", 1)[1] in ANSI.sub("", screen)  # Claude Code drew it under its prompt


def _session(
    harness_bin: Callable[[str], Path], tmp: Path
) -> tuple[Path, harness_tty.Session, list[tuple[Run, str]]]:
    """Claude Code's terminal UI asked one question, with ctxfold's status line recorded in
    ``tmp/rec``; the session, and the run drawn with the screen when it stopped (if any)."""
    rec = tmp / "rec"
    rec.mkdir(parents=True)
    command = recorder(rec)
    claude = HARNESSES["claude-code"]

    def configure(home: Path, url: str) -> dict[str, str]:
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        settings = {"statusLine": {"type": "command", "command": str(command)}}
        (home / ".claude" / "settings.json").write_text(json.dumps(settings))
        return claude.configure(home, url)

    seen: list[tuple[Run, str]] = []  # the run drawn, and the whole screen when the run stopped

    def drawn(screen: str) -> bool:
        """Stop once Claude Code has drawn a line the command printed on the transcript holding
        the answer (a run may read the file before the answer is in it)."""
        text = ANSI.sub("", screen)
        for run in finished(rec):
            if "tokens" in run.out and ANSWER.encode() in run.read() and run.out.split(" · ", 1)[-1] in text:
                seen.append((run, screen))
                break
        return bool(seen)

    harness = dataclasses.replace(claude, configure=configure)
    session = harness_tty.run_interactive(
        harness,
        harness_bin("claude"),
        [Reply(ANSWER)],
        "Say hello.",
        home=tmp / "home",
        timeout=180,
        until=drawn,
    )
    time.sleep(0.5)
    return rec, session, seen
