"""Native writer: every transcript of every format round-trips exactly; compaction markers and
the history before them are kept; ``check`` enforces the model's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, detect, real_files, write_jsonl
from writer_support import SUMMARY, assert_compact, compacted, read_items, write_file

from ctxfold.formats import loader
from ctxfold.formats.native import writer as w
from ctxfold.strategies.summary import summary_of
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Message

FMT = "ctxfold"
ALL = sorted(FIXTURES.glob("*/*.jsonl")) + real_files()


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_any_transcript_round_trips_exactly(path: Path, tmp_path: Path) -> None:
    t = loader.load(path)
    out = write_file(w, t, tmp_path / "out.jsonl")
    assert_compact(out)
    assert detect(out) == FMT
    items = read_items(out, FMT)
    assert w.check(items) == []
    back = [e for _, e in items]
    if isinstance(t.entries[0], ContextUpdate) and back[0] == t.entries[0]:
        assert back == list(t.entries)  # the first update became the header
    else:  # an empty header first, then every entry as it was
        assert back[0] == ContextUpdate(system=(), tools=())
        assert back[1:] == list(t.entries)


def test_native_file_is_rewritten_byte_for_byte(tmp_path: Path) -> None:
    path = FIXTURES / FMT / "coding-session.jsonl"
    out = write_file(w, loader.load(path), tmp_path / "out.jsonl")
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("history", [False, True], ids=["context-only", "with-history"])
def test_compacted_transcript_keeps_its_marker(history: bool, tmp_path: Path) -> None:
    t = loader.load(FIXTURES / FMT / "coding-session.jsonl")
    c, tail = compacted(t, keep=4, history=history)
    out = write_file(w, c, tmp_path / "out.jsonl")
    items = read_items(out, FMT)
    assert w.check(items) == []
    back = [e for _, e in items]
    assert back == list(c.entries)
    k = next(i for i, e in enumerate(back) if isinstance(e, CompactionMarker))
    marker, summary = back[k], back[k + 1]
    assert (
        isinstance(marker, CompactionMarker) and marker.source == "ctxfold" and marker.tokens_before == 90_000
    )
    assert isinstance(summary, Message) and summary_of(summary) == SUMMARY
    assert back[-len(tail) :] == tail


def _line(entry: dict) -> dict:
    return {"type": "message", **entry}


HEADER = {"type": "header", "format": "ctxfold", "version": 1}
TEXT = [{"type": "text", "text": "x"}]
USAGE = {"type": "usage", "prompt_tokens": 10}
MARKER = {"type": "compaction", "source": "ctxfold", "summary": "s"}
BAD = {
    "marker without its summary": (
        [MARKER, _line({"role": "user", "parts": TEXT})], [(2, "not followed by its summary")]
    ),
    "tool call in a user message": (
        [_line({"role": "user", "parts": [{"type": "tool_call", "id": "c", "name": "f"}]})], [(2, "tool call in a message of role 'user'")]
    ),
    "text in a tool message": (
        [_line({"role": "tool", "parts": [{"type": "tool_result", "call_id": "c"}, *TEXT]})],
        [(2, "something other than tool results")],
    ),
    "usage on a user message": ([_line({"role": "user", "parts": TEXT, "usage": USAGE})], [(2, "usage on a message of role 'user'")]),
    "tool result in an assistant message": (
        [_line({"role": "assistant", "parts": [{"type": "tool_result", "call_id": "c"}]})], [(2, "tool result in a message of role 'assistant'")]
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD))
def test_check_finds_each_violation_on_its_line(name: str, tmp_path: Path) -> None:
    lines, expected = BAD[name]
    path = tmp_path / "bad.jsonl"
    write_jsonl(path, [HEADER, *lines])
    found = w.check_file(path)
    assert [n for n, _ in found] == [n for n, _ in expected]
    for (_, msg), (_, want) in zip(found, expected, strict=True):
        assert want in msg
