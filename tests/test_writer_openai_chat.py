"""OpenAI chat writer: exact round trips, compacted output, the API's rules as ``check``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, write_jsonl
from writer_support import (
    compacted,
    read_items,
    tail_kept,
    write_compacted,
    write_file,
)

from ctxfold.formats import loader
from ctxfold.formats.openai_chat import writer as w
from ctxfold.transcript.model import ContextReset

FMT = "openai-chat"
FILES = sorted((FIXTURES / FMT).glob("*.jsonl"))


def test_response_objects_and_usage_lines_keep_their_shape(tmp_path: Path) -> None:
    t = loader.load(FIXTURES / FMT / "writer-edge-cases.jsonl")
    lines = [orjson.loads(x) for x in w.write(t)]
    # line 1 of the input is a request line with tools and model: written back as one
    assert lines[0]["model"] == "gpt-4.1" and [x["type"] for x in lines[0]["tools"]] == ["function", "custom"]
    response = next(x for x in lines if x.get("object") == "chat.completion")
    assert response["id"] == "chatcmpl-9" and response["created"] == 1767600000
    assert response["choices"][0]["finish_reason"] == "stop"
    # usage recorded on its own line with a model the message does not have stays separate
    assert set(lines[3]) == {"usage", "model"}  # as on the 4th input line
    legacy = next(x for x in lines if "function_call" in x)
    assert legacy["function_call"]["name"] == "lookup" and "tool_calls" not in legacy


def test_earlier_conversations_are_written_as_a_request_log(tmp_path: Path) -> None:
    t = loader.load(FIXTURES / FMT / "requests.jsonl")
    lines = [orjson.loads(x) for x in w.write(t)]
    # 3 model calls before the reset → 3 request lines with their response, then the restart
    assert [("response" in x, len(x["messages"])) for x in lines[:4]] == [
        (True, 2),
        (True, 4),
        (True, 6),
        (False, 1),
    ]
    assert (
        sum(isinstance(e, ContextReset) for _, e in read_items(write_file(w, t, tmp_path / "o.jsonl"), FMT))
        == 1
    )


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("history", [False, True], ids=["context-only", "with-history"])
def test_compacted_transcript(path: Path, history: bool, tmp_path: Path) -> None:
    t, tail, out, items, messages = write_compacted(w, path, FMT, tmp_path, history=history)
    assert messages[1].text.startswith("[System: The conversation was compacted")
    assert len(messages) == 2 + len(tail)
    tail_kept(messages, tail, lambda a, b: (a.role, a.parts) == (b.role, b.parts))
    back = loader.materialize([e for _, e in items], FMT)
    assert back.system == t.system and back.tools == t.tools
    # the history before the marker is not part of the model's context: never written
    again = write_file(w, compacted(t, keep=4, history=not history)[0], tmp_path / "again.jsonl")
    assert again.read_bytes() == out.read_bytes()


CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
    {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
]}  # fmt: skip
BAD = {
    "tool message after a user message": (
        [{"role": "user", "content": "hi"}, CALL, {"role": "user", "content": "wait"},
         {"role": "tool", "tool_call_id": "c1", "content": "x"}, {"role": "tool", "tool_call_id": "c2", "content": "y"}],
        [(2, "not answered by tool messages"), (4, "does not follow the assistant message"),
         (5, "does not follow the assistant message")],
    ),
    "one call left unanswered before the next assistant message": (
        [{"role": "user", "content": "hi"}, CALL, {"role": "tool", "tool_call_id": "c1", "content": "x"},
         {"role": "assistant", "content": "done"}],
        [(2, "c2 not answered")],
    ),
    "tool message answering an unknown call": (
        [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "x"}],
        [(2, "'c9' does not follow")],
    ),
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


def test_pending_calls_at_the_end_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "pending.jsonl"
    write_jsonl(path, [{"role": "user", "content": "hi"}, CALL])
    assert w.check_file(path) == []
