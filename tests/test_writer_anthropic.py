"""Anthropic writer: exact round trips, compacted output merged to alternate, ``check``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, write_jsonl
from writer_support import (
    SUMMARY,
    compacted,
    read_items,
    tail_kept,
    write_compacted,
    write_file,
)

from ctxfold.formats import loader
from ctxfold.formats.anthropic import writer as w
from ctxfold.transcript.model import ContextReset, TextPart

FMT = "anthropic"
FILES = sorted((FIXTURES / FMT).glob("*.jsonl"))


def test_lines_keep_the_api_shapes() -> None:
    lines = [orjson.loads(x) for x in w.write(loader.load(FIXTURES / FMT / "writer-edge-cases.jsonl"))]
    assert set(lines[0]) == {"model", "system", "tools"}
    assert lines[0]["tools"][1] == {"name": "web_search", "type": "web_search_20250305", "max_uses": 3}
    # responses stay response objects (stop_reason kept); a timestamped message stays a message
    assert lines[2]["type"] == "message" and lines[2]["stop_reason"] == "tool_use"
    assert lines[2]["usage"] == {
        "input_tokens": 12, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 0, "output_tokens": 70,
    }  # fmt: skip
    # the system prompt changed: a line with the fixed parts (the reader reports what changed)
    assert lines[4]["system"] == [{"type": "text", "text": "You are a document assistant."},
                                  {"type": "text", "text": "Cite page numbers."}]  # fmt: skip
    assert "type" not in lines[5] and lines[5]["timestamp"] == "2026-01-05T10:00:05Z"
    doc = lines[1]["content"][1]
    assert doc == {"type": "document", "title": "Q3 report",
                   "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}}  # fmt: skip


def test_earlier_conversations_are_written_as_a_request_log(tmp_path: Path) -> None:
    t = loader.load(FIXTURES / FMT / "requests.jsonl")
    lines = [orjson.loads(x) for x in w.write(t)]
    assert [("response" in x, len(x["messages"])) for x in lines[:3]] == [(True, 1), (True, 3), (False, 0)]
    items = read_items(write_file(w, t, tmp_path / "o.jsonl"), FMT)
    assert [n for n, e in items if isinstance(e, ContextReset)] == [3]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("history", [False, True], ids=["context-only", "with-history"])
def test_compacted_transcript(path: Path, history: bool, tmp_path: Path) -> None:
    t, tail, out, items, messages = write_compacted(w, path, FMT, tmp_path, history=history)
    # summary and continuation are one user message (roles alternate), and so is a kept
    # user message right after them
    first = messages[0]
    texts = [p.text for p in first.parts if isinstance(p, TextPart)]
    assert SUMMARY in texts[0] and texts[1].startswith("[System: The conversation was compacted")
    merged = tail[0].role == "user"
    assert len(messages) == len(tail) + (0 if merged else 1)
    if merged:
        assert first.parts[2:] == tail[0].parts
    tail_kept(messages, tail, lambda a, b: (a.role, a.parts, a.usage) == (b.role, b.parts, b.usage))
    back = loader.materialize([e for _, e in items], FMT)
    assert back.system == t.system and back.tools == t.tools
    again = write_file(w, compacted(t, keep=4, history=not history)[0], tmp_path / "again.jsonl")
    assert again.read_bytes() == out.read_bytes()


def _use(i: str) -> dict:
    return {"type": "tool_use", "id": i, "name": "f", "input": {}}


def _result(i: str) -> dict:
    return {"type": "tool_result", "tool_use_id": i, "content": "ok"}


U = {"role": "user", "content": "hi"}
A = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
BAD = {
    "starts with assistant": ([A, U], [(1, "must start with a user message")]),
    "two user messages": ([U, U, A], [(2, "two user messages in a row")]),
    "two assistant messages": ([U, A, A], [(3, "two assistant messages in a row")]),
    "result of an older turn": (
        [U, {"role": "assistant", "content": [_use("t1")]}, {"role": "user", "content": [_result("t1")]}, A,
         {"role": "user", "content": [_result("t1")]}],
        [(5, "'t1' does not answer a tool_use")],
    ),
    "unanswered tool_use": (
        [U, {"role": "assistant", "content": [_use("t1"), _use("t2")]}, {"role": "user", "content": [_result("t1")]}],
        [(3, "tool_use t2 not answered")],
    ),
    "text before results": (
        [U, {"role": "assistant", "content": [_use("t1")]},
         {"role": "user", "content": [{"type": "text", "text": "here"}, _result("t1")]}],
        [(3, "must come first")],
    ),
    "empty content": ([{"role": "user", "content": []}, A], [(1, "empty message content")]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD))
def test_check_finds_each_violation_on_its_line(name: str, tmp_path: Path) -> None:
    lines, expected = BAD[name]
    path = tmp_path / "bad.jsonl"
    write_jsonl(path, lines)
    found = w.check_file(path)
    assert [n for n, _ in found] == [n for n, _ in expected]
    for (_, msg), (_, want) in zip(found, expected, strict=True):
        assert want in msg


def test_restart_resets_the_rules(tmp_path: Path) -> None:
    """After a ContextReset the next conversation starts again with a user message."""
    req = {"model": "claude-x", "system": "s", "max_tokens": 10}
    lines = [{**req, "messages": [U, A]}, {**req, "messages": [{"role": "user", "content": "new"}]}]
    path = tmp_path / "two.jsonl"
    write_jsonl(path, lines)
    assert w.check_file(path) == []
