"""genai writer: exact round trips (Contents, ADK events, requests, stream chunks), compacted
output, and Gemini's function-turn rules as ``check``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
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
from ctxfold.formats.genai import writer as w
from ctxfold.strategies.mask import placeholder
from ctxfold.transcript.model import (
    ContextReset,
    Entry,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

FMT = "genai"
FILES = sorted((FIXTURES / FMT).glob("*.jsonl"))


def test_each_message_goes_back_in_its_own_shape() -> None:
    adk = [orjson.loads(x) for x in w.write(loader.load(FIXTURES / FMT / "adk_events.jsonl"))]
    assert all("invocationId" in x for x in adk)
    assert adk[0]["timestamp"] == 1759401000.123456  # the input's epoch seconds
    assert adk[-1]["errorCode"] == "400" and "errorMessage" in adk[-1]
    stream = [orjson.loads(x) for x in w.write(loader.load(FIXTURES / FMT / "stream.jsonl"))]
    # three chunks of one response were merged: one response with the whole text and last usage
    assert [("candidates" in x) for x in stream] == [False, True, False]
    assert stream[1]["responseId"] == "s-77" and stream[1]["usageMetadata"]["candidatesTokenCount"] == 17
    edge = [orjson.loads(x) for x in w.write(loader.load(FIXTURES / FMT / "writer-edge-cases.jsonl"))]
    assert edge[0]["tools"] == [
        {"functionDeclarations": [{"name": "find_flights", "description": "Search flights.",
                                   "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}]},
        {"googleSearch": {}},
    ]  # fmt: skip
    call = edge[2]["candidates"][0]["content"]["parts"]
    assert call == [
        {"thoughtSignature": "c2lnLTE="},
        {"functionCall": {"name": "find_flights", "args": {"to": "LIS"}}, "thoughtSignature": "c2lnLTI="},
    ]  # the made-up id is not written
    assert edge[3]["parts"][0]["functionResponse"]["response"] == {
        "flights": [{"no": "TP123", "price": 210}],
        "count": 1,
    }


def test_earlier_conversations_are_written_as_a_request_log(tmp_path: Path) -> None:
    t = loader.load(FIXTURES / FMT / "requests.jsonl")
    lines = [orjson.loads(x) for x in w.write(t)]
    assert [("response" in x, len(x["contents"])) for x in lines[:4]] == [
        (True, 1),
        (True, 3),
        (True, 5),
        (False, 0),
    ]
    items = read_items(write_file(w, t, tmp_path / "o.jsonl"), FMT)
    assert [n for n, e in items if isinstance(e, ContextReset)] == [4]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("history", [False, True], ids=["context-only", "with-history"])
def test_compacted_transcript(path: Path, history: bool, tmp_path: Path) -> None:
    t, tail, out, _, messages = write_compacted(w, path, FMT, tmp_path, history=history)
    # summary and continuation are one user Content, and so is a kept user text right after
    texts = [p.text for p in messages[0].parts if isinstance(p, TextPart)]
    assert SUMMARY in texts[0] and texts[1].startswith("[System: The conversation was compacted")
    merged = tail[0].role == "user"
    assert len(messages) == len(tail) + (0 if merged else 1)
    # ids the reader made up for id-less calls count calls from the file's start, so they are
    # renumbered once the summarised calls are gone; name pairing keeps them matched
    tail_kept(messages, tail, lambda a, b: (a.role, _parts(a), a.usage) == (b.role, _parts(b), b.usage))
    again = write_file(w, compacted(t, keep=4, history=not history)[0], tmp_path / "again.jsonl")
    assert again.read_bytes() == out.read_bytes()


def _parts(m: Message) -> tuple[Part, ...]:
    return tuple(
        dataclasses.replace(p, id="") if isinstance(p, ToolCallPart) and p.extra.get("synthetic_id")
        else dataclasses.replace(p, call_id="") if isinstance(p, ToolResultPart) and p.extra.get("synthetic_id")
        else p
        for p in m.parts
    )  # fmt: skip


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_masked_tool_results_keep_their_error_flag(path: Path, tmp_path: Path) -> None:
    """Observation masking replaces a result's content with a placeholder text: the response
    goes back under its own key, or under "error"/"output" by the error flag."""
    t = loader.load(path, fmt=FMT)
    masked = tuple(
        dataclasses.replace(e, parts=tuple(placeholder(p, 1000) if isinstance(p, ToolResultPart) else p for p in e.parts))
        if isinstance(e, Message) else e
        for e in t.entries
    )  # fmt: skip
    out = write_file(w, dataclasses.replace(t, entries=masked), tmp_path / "out.jsonl")
    back = loader.load(out, fmt=FMT)

    def results(entries: Iterable[Entry]) -> list[tuple[str, str, bool]]:
        return [
            (r.call_id, r.text, r.is_error) for e in entries if isinstance(e, Message) for r in e.tool_results
        ]

    assert results(back.entries) == results(masked)


U = {"role": "user", "parts": [{"text": "hi"}]}
M = {"role": "model", "parts": [{"text": "let me look"}]}


def _calls(*ids: str) -> dict:
    return {"role": "model", "parts": [{"functionCall": {"id": i, "name": "f", "args": {}}} for i in ids]}


def _responses(*ids: str) -> dict:
    return {
        "role": "user",
        "parts": [{"functionResponse": {"id": i, "name": "f", "response": {"output": "ok"}}} for i in ids],
    }


BAD = {
    "history starts with a function call": ([_calls("a"), _responses("a")], [(1, "function call turn must come")]),
    "function call after a model turn": ([U, M, _calls("a"), _responses("a")], [(3, "function call turn must come")]),
    "function response without a call turn": ([U, _responses("a")], [(2, "must come right after a function call")]),
    "fewer responses than calls": ([U, _calls("a", "b"), _responses("a")], [(3, "1 function response(s) for 2")]),
    "response answering another call": ([U, _calls("a"), _responses("z")], [(3, "'z' answers no call")]),
    "call turn not answered": ([U, _calls("a"), U], [(3, "not followed by its function responses")]),
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
