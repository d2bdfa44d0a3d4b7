"""The pinned Codex 0.171.0 shows ctxfold's status line in its footer, as docs/commands.md says to
set it up: ``ctxfold statusline --codex`` registered as an MCP server (here through
``providerrec.py``, which notes each message it answers), Codex's "Custom status line" feature
on, and the provider chosen (what ``/statusline`` saves).

Codex's terminal UI runs on a pseudo-terminal against the scripted server, with its home in a
folder other than ``~/.codex`` (``CODEX_HOME``, passed to the server by ``env_vars`` as the docs
say) and ``model_auto_compact_token_limit`` lowered to 300,000. The scripted answer reports
260,000 tokens: the line must say what is left before Codex's auto-compact, computed on the
rollout Codex wrote, in Codex's yellow, and Codex must draw it.

Codex stops asking a provider for good after one read it finds late (it allows one second). In
two of five full runs of the suite on this two-core machine (2026-11-29, other tests on the
other core), the reply's line never came: once Codex showed "Status line timed out", once it
kept the line from before the reply. So when the reply's line was not drawn and the notes show
that Codex stopped asking (no read in its last ``STOPPED`` seconds), Codex is run once more; a
provider that answers a wrong or stale line while Codex asks fails at once, its reads listed.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxfold.cli.codex_statusline import payload
from ctxfold.cli.statusline import line_for

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import harness_tty  # noqa: E402  (the lab's terminal driver)
from harness_lab import Reply, Session  # noqa: E402

LIMIT, USED, OUT = 300_000, 260_000, 12
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TOP = f"model_auto_compact_token_limit = {LIMIT}\n"
RECORDER = Path(__file__).with_name("providerrec.py")
STOPPED = 5.0  # no read for this long before the run ended: Codex stopped asking (it asks each second)


def _config(notes: Path) -> str:
    return f"""
[mcp_servers.ctxfold]
command = "{sys.executable}"
args = ["{RECORDER}", "{notes}"]
env_vars = ["CODEX_HOME"]

[features]
tui_extensions_statusline = true
"""


# what choosing the provider in /statusline saves (seen with 0.171.0)
CHOSEN = '\n[tui]\nstatus_line_provider = { server = "ctxfold", tool = "statusline" }\n'


def _footer(screen: str) -> str | None:
    return next((row.strip() for row in harness_tty.screen_rows(screen) if "tokens (" in row), None)


def _drawn(screen: str) -> bool:
    # the line for the rollout with the reply in it: Codex may draw one from before the reply
    # first (the context without it: 28k), when the machine is busy
    line = _footer(screen)
    return line is not None and "left before" in line and re.match(r"2\d\d(\.\d)?k/", line) is not None


def _run(
    harness_bin: Callable[[str], Path], run: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Session, list[dict[str, Any]], float]:
    """Codex on the scripted reply, the provider's reads as noted, and when the run ended."""
    elsewhere = run / "codex-elsewhere"  # not ~/.codex: the server must be told
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    notes = run / "provider.jsonl"
    # the lab writes its config where CODEX_HOME points; this run moves it elsewhere
    session = harness_tty.run_codex_tui(
        harness_bin("codex-0171"),
        [Reply("Hello from the lab.", input_tokens=USED, output_tokens=OUT)],
        "Say hello.",
        home=run / "home",
        top=TOP,
        config=_config(notes) + CHOSEN,
        env={"CODEX_HOME": str(elsewhere)},
        timeout=120,
        until=_drawn,
    )
    ended = time.time()
    noted = [json.loads(x) for x in notes.read_text().splitlines()] if notes.is_file() else []
    return session, [n for n in noted if n["method"] == "resources/read"], ended


def _reads(reads: list[dict[str, Any]], ended: float) -> str:
    """The provider's reads, for a failure: when each came (seconds before the run ended), then
    how long its answer took and what it said (none: never answered)."""
    return "\n".join(
        f"  -{ended - r['at']:.1f} s: answered in {r['took']:.3f} s, {str(r['text'])[:60]!r}"
        if "took" in r
        else f"  -{ended - r['at']:.1f} s: came"
        for r in reads
    )


def test_codex_shows_ctxfolds_status_line(
    harness_bin: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, reads, ended = _run(harness_bin, tmp_path / "first", monkeypatch)
    if not _drawn(session.stdout) and (not reads or ended - reads[-1]["at"] > STOPPED):
        # Codex gave up: once more, said in the run's warnings (how often it happens shows there)
        said = f"Codex stopped asking ctxfold's provider; run again. Its reads:\n{_reads(reads, ended)}"
        warnings.warn(said, stacklevel=1)
        session, reads, ended = _run(harness_bin, tmp_path / "again", monkeypatch)
    elsewhere = Path(os.environ["CODEX_HOME"])
    shown = _footer(session.stdout)
    rows = "\n".join(r for r in harness_tty.screen_rows(session.stdout) if r.strip())
    assert shown is not None and "left before" in shown, (
        f"Codex drew no line of ctxfold's:\n{rows}\nthe provider's reads:\n{_reads(reads, ended)}"
    )
    (rollout,) = session.logs
    assert rollout.is_relative_to(elsewhere / "sessions")
    meta = json.loads(rollout.read_text().splitlines()[0])["payload"]
    window = max(int(w) for w in re.findall(r'"model_context_window":(\d+)', rollout.read_text()))
    assert re.fullmatch(
        rf"2\d\d(\.\d)?k/{window // 1000}k tokens \(\d+%\) · [\d.]+k left before Codex's auto-compact \(300k\)",
        shown,
    ), f"{shown}\nthe provider's reads:\n{_reads(reads, ended)}"
    # the statusline's own line for the rollout Codex wrote, with the window it records
    state = {"thread": {"id": meta["id"], "usage": {"context": {"context_window_size": window}}}}
    monkeypatch.delenv("NO_COLOR", raising=False)
    expected = line_for(payload(state, str(rollout)), color=True)
    assert ANSI.sub("", expected) == shown
    assert expected.startswith("\x1b[33m")  # within 10 % of the window of Codex's threshold
    # drawn in Codex's yellow (0.171.0: palette colour 3), the colour set before its first word
    first = re.escape(shown.split()[0])
    tint = re.findall(r"\x1b\[([0-9;]*)m(?=" + first + ")", session.stdout)
    assert tint and re.search(r"(^|;)(33|38;5;3)(;|$)", tint[-1]), session.stdout[-2000:]
