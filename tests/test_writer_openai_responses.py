"""OpenAI Responses writer: exact round trips, compacted output, the API's rules as ``check``."""

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
from ctxfold.formats.openai_responses import writer as w
from ctxfold.transcript.model import ContextReset

FMT = "openai-responses"
FILES = sorted((FIXTURES / FMT).glob("*.jsonl"))


def test_items_keep_their_types_and_argument_fields() -> None:
    lines = [orjson.loads(x) for x in w.write(loader.load(FIXTURES / FMT / "writer-edge-cases.jsonl"))]
    assert lines[0]["instructions"] == [
        {"type": "message", "role": "system", "content": "You are a coding agent."},
        {"type": "message", "role": "system", "content": "Keep diffs small."},
    ]
    assert lines[0]["tools"][1]["type"] == "custom" and lines[0]["tools"][2] == {"type": "local_shell"}
    by_type = {x.get("type"): x for x in lines}
    assert "name" not in by_type["local_shell_call"] and by_type["local_shell_call"]["action"]["command"] == [
        "make"
    ]
    assert by_type["apply_patch_call"]["operation"]["path"] == "Makefile"
    assert by_type["function_call"]["arguments"] == "not json"  # unparsable arguments stay as they were
    assert by_type["local_shell_call_output"]["is_error"] is True
    assert by_type["reasoning"] == {
        "type": "reasoning",
        "id": "rs_e1",
        "summary": [],
        "encrypted_content": "gAAAA-e1",
    }


def test_responses_read_from_response_objects_go_back_as_response_objects() -> None:
    lines = [orjson.loads(x) for x in w.write(loader.load(FIXTURES / FMT / "events.jsonl"))]
    # the stream's items were read one by one and the usage from response.completed without
    # its model on the message: items then a {usage, model} line
    assert [x.get("type", "usage" if "usage" in x else None) for x in lines] == [
        "message", "message", "function_call", "usage", "function_call_output",
    ]  # fmt: skip
    t = loader.load(FIXTURES / FMT / "requests.jsonl")
    lines = [orjson.loads(x) for x in w.write(t)]
    assert [("response" in x, len(x["input"])) for x in lines[:4]] == [
        (True, 1),
        (True, 6),
        (True, 8),
        (False, 0),
    ]
    assert lines[0]["response"]["output"][0]["type"] == "reasoning"


def test_reset_is_seen_on_its_line(tmp_path: Path) -> None:
    t = loader.load(FIXTURES / FMT / "requests.jsonl")
    items = read_items(write_file(w, t, tmp_path / "o.jsonl"), FMT)
    assert [n for n, e in items if isinstance(e, ContextReset)] == [4]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("history", [False, True], ids=["context-only", "with-history"])
def test_compacted_transcript(path: Path, history: bool, tmp_path: Path) -> None:
    t, tail, out, _, messages = write_compacted(w, path, FMT, tmp_path, history=history)
    assert messages[1].text.startswith("[System: The conversation was compacted")
    assert len(messages) == 2 + len(tail)
    tail_kept(
        messages, tail, lambda a, b: (a.role, a.parts, a.usage, a.id) == (b.role, b.parts, b.usage, b.id)
    )
    # ctxfold's own messages say they are message items
    assert orjson.loads(out.read_bytes().splitlines()[1 if t.system or t.tools else 0])["type"] == "message"
    again = write_file(w, compacted(t, keep=4, history=not history)[0], tmp_path / "again.jsonl")
    assert again.read_bytes() == out.read_bytes()


API = ("openai-chat", "openai-responses", "anthropic", "genai", "litellm")


@pytest.mark.parametrize("path", [p for f in API for p in sorted((FIXTURES / f).glob("*.jsonl"))], ids=str)
def test_read_items_gives_what_the_loader_gives(path: Path) -> None:
    fmt = path.parent.name
    assert [e for _, e in read_items(path, fmt)] == list(loader.open_transcript(path, fmt=fmt).entries)


def test_held_items_get_their_own_line() -> None:
    """The reader holds a model item back for a usage line; its line is still its own."""
    items = read_items(FIXTURES / FMT / "items.jsonl", FMT)
    # the input's item lines, from its raw JSON: every line without a bare "usage" key
    raw = [orjson.loads(x) for x in (FIXTURES / FMT / "items.jsonl").read_bytes().splitlines()]
    assert [n for n, _ in items] == [n for n, d in enumerate(raw, 1) if "type" in d]


def _call(i: str) -> dict:
    return {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"}


def _out(i: str) -> dict:
    return {"type": "function_call_output", "call_id": i, "output": "ok"}


U = {"type": "message", "role": "user", "content": "hi"}
R = {"type": "reasoning", "id": "rs_1", "summary": []}
BAD = {
    "output before its call": ([U, _out("c1"), _call("c1"), _out("c1")], [(2, "'c1' does not follow a call")]),
    "call without output before the next user message": (
        [U, _call("c1"), _call("c2"), _out("c2"), U],
        [(2, "'c1' has no output before the next user message")],
    ),
    "reasoning not followed by an output item": ([U, R, U], [(2, "reasoning item without")]),
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


def test_pending_calls_and_reasoning_at_the_end_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "pending.jsonl"
    write_jsonl(path, [U, R, _call("c1")])
    assert w.check_file(path) == []
