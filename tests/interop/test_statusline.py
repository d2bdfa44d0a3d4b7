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

from ctxfold.cli.statusline import status_line
from interop.statusrec import ANSI, recorder

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import harness_tty  # noqa: E402  (the lab's terminal driver)
from harness_lab import HARNESSES, Reply  # noqa: E402


def test_claude_code_shows_ctxfolds_status_line(harness_bin: Callable[[str], Path], tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    rec.mkdir()
    command = recorder(rec)
    claude = HARNESSES["claude-code"]

    def configure(home: Path, url: str) -> dict[str, str]:
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        settings = {"statusLine": {"type": "command", "command": str(command)}}
        (home / ".claude" / "settings.json").write_text(json.dumps(settings))
        return claude.configure(home, url)

    seen: list[str] = []  # the whole screen when the run stopped (the session keeps its tail)

    def drawn(screen: str) -> bool:
        """Stop once Claude Code has drawn a line the command printed on the transcript holding
        the answer."""
        text = ANSI.sub("", screen)
        outs = (p.read_text() for p in rec.glob("out-*.txt"))
        if any("tokens" in out and out.strip().split(" · ", 1)[-1] in text for out in outs):
            seen.append(screen)
        return bool(seen)

    harness = dataclasses.replace(claude, configure=configure)
    home = tmp_path / "home"
    session = harness_tty.run_interactive(
        harness,
        harness_bin("claude"),
        [Reply("Hello from the lab.")],
        "Say hello.",
        home=home,
        timeout=180,
        until=drawn,
    )
    time.sleep(0.5)
    (log,) = session.logs
    assert list(rec.glob("payload-*.json")), "Claude Code never ran the status line command"
    # the runs that finished (Claude Code stops a run still going when it starts the next one,
    # and the last may still be going when the harness is stopped)
    done = [
        (json.loads((rec / f"payload-{p.name[4:-4]}.json").read_text()), p.read_text().strip())
        for p in sorted(rec.glob("out-*.txt"))
        if p.read_text().endswith("\n")
    ]
    assert done, "no status line command finished"
    payloads = [pay for pay, _ in done]
    outs = [out for _, out in done]
    # the JSON Claude Code sends: the fields the command reads, as docs/commands.md says
    last = payloads[-1]
    assert last["transcript_path"] == str(log) and last["session_id"] == log.stem
    assert isinstance(last["model"]["display_name"], str) and last["model"]["id"]
    assert all(len(o.splitlines()) == 1 for o in outs)
    assert outs[0].startswith("ctxfold: no transcript yet (") or "tokens" in outs[0]  # before any message
    shown = outs[-1]
    assert re.match(r"[\d.]+k?/[\d.]+[kM] tokens \(\d+%\) · [\d.]+k left before ", shown), shown
    # the numbers of the transcript as it stands (no line since: the answer was its last turn)
    assert shown == status_line(json.dumps(last).encode(), color=False)
    assert seen, f"Claude Code drew no line of ctxfold's: {ANSI.sub('', session.stdout)[-1500:]}"
    assert shown.split(" · ", 1)[1] in ANSI.sub("", seen[0])  # Claude Code drew it under its prompt
