"""`ctxfold compact`'s output as the next run sees it: its size read back, its summary and
continuation, and compacting it again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest
from compact_support import copy, outputs, run, runner
from conftest import FIXTURES, real, real_files

from ctxfold.cli.app import app
from ctxfold.formats.loader import load
from ctxfold.strategies.summary import SUMMARY_OPEN
from ctxfold.tokens.estimate import estimate_file
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import CompactionMarker, Entry, Message


def test_the_quick_start_output_reads_back_at_the_size_compact_said(tmp_path: Path) -> None:
    """The README's quick start: what `estimate` then predicts for the compacted log is what
    `compact` said it would be (the session taught the profile its hidden prompt; the Claude
    Code output names no model until its next response, and is read as a Claude model's)."""
    src = copy(tmp_path, FIXTURES / "real" / "claude-code-sidechains.jsonl")
    code, out, err = run(str(src), "--window", "24000", "--json")
    assert code == 0, err
    after = orjson.loads(out)["tokens_after"]
    r = runner.invoke(app, ["estimate", str(outputs(src)[0]), "--window", "24000", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = orjson.loads(r.stdout)["files"][0]
    assert doc["provider"] == "anthropic"
    assert abs(doc["predicted"]["tokens"] - after) <= 0.03 * after, (doc["predicted"], after)
    r = runner.invoke(app, ["compact", str(outputs(src)[0]), "--window", "24000", "--dry-run", "--json"])
    assert r.exit_code == 0 and orjson.loads(r.stdout)["status"] == "not-due", r.stdout


@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_continuation_quotes_what_a_person_asked(tmp_path: Path, path: Path) -> None:
    """Not a harness note: Claude Code's system reminders arrive as user lines after the request."""
    src = copy(tmp_path, path)
    code, _, err = run(str(src), "--force", "--no-profile", "--json")
    if code == 1 and ("cannot fit" in err or "10% reduction" in err):
        return  # nothing to fold, or too little (see test_every_real_session)
    assert code == 0, err
    cont = continuation(load(outputs(src)[0]).entries)
    assert "<system-reminder>" not in cont
    if "current request is: `" in cont:
        request = cont.split("current request is: `", 1)[1].rsplit("`. Continue", 1)[0]
        users = [e.text for e in load(src).entries if getattr(e, "role", None) == "user"]
        assert len(request) <= 2_000  # a pointer: the summary holds the request in full
        assert any(request.removesuffix("…") in u for u in users)  # a user line's text, verbatim
        assert not request.startswith(
            ("<system-reminder>", "<command-", "<local-command", "[System:")
        )  # not a harness note, not ctxfold's


def continuation(entries: Sequence[Entry]) -> str:
    inside = [m for e in entries if isinstance(e, CompactionMarker) for m in e.replacement or ()]
    messages = [m for m in [*entries, *inside] if isinstance(m, Message) and m.role == "user"]
    return next(m.text for m in reversed(messages) if "compacted because" in m.text)


@pytest.mark.parametrize("rel", ["pi/large-session.jsonl", "codex/raze.jsonl", "claude-code/fundwise.jsonl"])
def test_compacting_the_output_again_does_not_take_ctxfold_for_the_user(tmp_path: Path, rel: str) -> None:
    """Read back, the summary and continuation have lost their marks (Claude Code writes the
    continuation as a plain user line): the second summary must not quote the first
    continuation as the user's request, nor nest it in the next one."""
    src = copy(tmp_path, real(rel))
    window = int(
        orjson.loads(run(str(src), "--dry-run", "--force", "--no-profile", "--json")[1])["tokens_before"] / 2
    )
    code, _, err = run(str(src), "--window", str(window), "--no-profile")
    assert code == 0, err
    (tmp_path / "again").mkdir()
    again = copy(tmp_path / "again", outputs(src)[0])
    code, _, err = run(str(again), "--force", "--no-profile")
    assert code == 0 or "10% reduction" in err or "cannot fit" in err, err
    if code:
        return
    summary = outputs(again)[1].read_text()
    assert "(verbatim):\n  [System: The conversation was compacted" not in summary
    assert continuation(load(outputs(again)[0]).entries).count("compacted because") == 1


def test_a_compacted_native_file_heads_its_context_with_the_summary_once(tmp_path: Path) -> None:
    """The marker records the summary and the message after it is the summary the model reads:
    a second compaction of the output must not hand the summarizer the summary twice."""
    src = copy(tmp_path)
    assert run(str(src), "--force")[0] == 0
    out = outputs(src)[0]
    ctx = current_context(load(out).entries)
    summaries = [m for m in ctx.messages if SUMMARY_OPEN in m.text]
    assert len(summaries) == 1 and ctx.messages[0] is summaries[0]
    assert len(estimate_file(out).replay.context) == len(ctx.messages)  # the counter agrees


def test_the_context_and_the_counter_agree_on_a_held_summary() -> None:
    """A compaction's summary, then an API error, then a message holding the summary: the
    counter (tokens/session.py) and the context (transcript/context.py) keep the same messages."""
    from ctxfold.tokens.counting import Counter
    from ctxfold.tokens.session import SessionCounter
    from ctxfold.tokens.tokenizers import get_tokenizer
    from ctxfold.transcript.model import ApiError, ContextUpdate, TextPart

    def msg(text: str) -> Message:
        return Message("user", (TextPart(text),))

    for between in ([], [ApiError("overloaded")]):
        entries = [
            ContextUpdate(system=("sys",)),
            msg("old"),
            CompactionMarker(source="ctxfold", summary="S"),
            *between,
            msg("[Previous conversation summary]\nS\n[End of summary — conversation continues below]"),
            msg("next"),
        ]
        replay = SessionCounter(Counter(get_tokenizer("o200k"), "openai")).feed(entries)
        assert len(replay.context) == len(current_context(entries).messages) == (3 if between else 2)
