"""The pinned pi shows ctxfold's status line in its footer, through the extension ctxfold ships.

pi's terminal UI runs on a pseudo-terminal against the scripted server, with the extension put in
``~/.pi/agent/extensions/`` by ``ctxfold statusline --install-pi``'s own code, and
``CTXFOLD_STATUSLINE_CMD`` pointing it at a command that records the JSON it is given and passes
it to this checkout's ``ctxfold statusline``. The project's ``.pi/settings.json`` lowers pi's
auto-compaction (``compaction.reserveTokens``: 30,000, so it fires at 170,000 of 200,000, before
ctxfold's 180,000), and the scripted answer reports a context of 160,000 tokens: the line must
say what is left before pi's auto-compact, computed on the session file pi wrote, and pi must
draw it.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxfold.cli.pi_extension import install
from ctxfold.cli.statusline import status_line

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import harness_tty  # noqa: E402  (the lab's terminal driver)
from harness_lab import HARNESSES, Reply  # noqa: E402

LAUNCH = "import sys; sys.argv = ['ctxfold', 'statusline']; from ctxfold.cli.main import main; main()"
ANSI = re.compile(r"\x1b(\[[0-9;?>=]*[A-Za-z~]|\][^\x07]*\x07|[()][0-9A-B])")
RESERVE, USED, OUT = 30_000, 160_000, 12


def _recorder(rec: Path) -> Path:
    """The command the extension runs: it keeps the JSON and the line of each call."""
    command = rec / "status.sh"
    py = shlex.quote(sys.executable)
    command.write_text(
        "#!/bin/sh\n"
        "n=$(date +%s%N)\n"
        f"tee {rec}/payload-$n.json | {py} -c {shlex.quote(LAUNCH)} | tee {rec}/out-$n.txt\n"
    )
    command.chmod(0o755)
    return command


def _finished(rec: Path) -> list[tuple[dict[str, object], str]]:
    """(JSON given, line printed) of each call that finished, in the order they ran."""
    out = []
    for p in sorted(rec.glob("out-*.txt")):
        text = p.read_text()
        if text.endswith("\n"):
            out.append((json.loads((rec / f"payload-{p.name[4:-4]}.json").read_text()), text.strip()))
    return out


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

    def drawn(screen: str) -> bool:
        """Stop once pi has drawn a line ctxfold printed for the session's answer."""
        text = ANSI.sub("", screen)
        return any("tokens" in line and ANSI.sub("", line) in text for _, line in _finished(rec))

    session = harness_tty.run_interactive(
        HARNESSES["pi"],
        harness_bin("pi"),
        [Reply("Hello from the lab.", input_tokens=USED, output_tokens=OUT)],
        "Say hello.",
        env={"CTXFOLD_STATUSLINE_CMD": str(_recorder(rec))},
        home=home,
        timeout=180,
        until=drawn,
    )
    (log,) = session.logs
    header = json.loads(log.read_text().splitlines()[0])
    done = _finished(rec)
    assert done, "pi never ran the status line command (was the extension loaded?)"
    # at session_start, before pi has written the file (unless the answer came first), then after
    # the turn
    first = done[0][1]
    assert first == "ctxfold: no transcript yet (Claude Sonnet 4.5)" or "tokens" in first, first
    payload, printed = next((pay, out) for pay, out in reversed(done) if "tokens" in out)
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
    # the numbers of the file pi wrote, pi's settings read as pi reads them
    monkeypatch.setenv("HOME", str(home))
    assert shown == status_line(json.dumps(payload).encode(), color=False)
    screen = ANSI.sub("", session.stdout)
    assert shown in screen  # pi drew it in its footer
    # in pi's warning colour (its footer's own for a context over 70 %), not ctxfold's codes
    tint = re.search(r"(\x1b\[[0-9;]*m)" + re.escape(shown), session.stdout)
    own = re.search(r"(\x1b\[[0-9;]*m)" + re.escape(f"{(USED + OUT) / 2000:.1f}%/200k"), session.stdout)
    assert tint and own and tint.group(1) == own.group(1) != "\x1b[33m", session.stdout[-1500:]
