"""LiteLLM writer: one request line per conversation ``{messages, tools, kwargs, context_window,
response: null}`` that the LiteLLM reader reads back.

What cannot round-trip, by design: a request holds no response, so the assistant messages come
back without the id, timestamp, usage and model their log line's ``response`` gave them, and the
log's cost/latency fields are gone. Everything the request itself holds does round-trip.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, detect, real_files
from writer_support import (
    assert_compact,
    read_items,
    tail_kept,
    write_compacted,
    write_file,
)

from ctxfold.formats import loader
from ctxfold.formats.litellm import writer as w
from ctxfold.transcript.model import ApiError, ContextReset, Message

FMT = "litellm"
FILES = sorted((FIXTURES / FMT).glob("*.jsonl")) + [p for p in real_files() if p.parent.name == FMT]


def _request_part(m: Message) -> Message:
    """What a request line holds of a message: an assistant message loses its response fields."""
    if m.role != "assistant":
        return m
    keep = {k: v for k, v in m.extra.items() if k not in ("choice", "response", "other_choices", "log")}
    return dataclasses.replace(m, id=None, timestamp=None, usage=None, model=None, extra=keep)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_round_trip_keeps_the_requests(path: Path, tmp_path: Path) -> None:
    t = loader.load(path, fmt=FMT)
    out = write_file(w, t, tmp_path / "out.jsonl")
    assert_compact(out)
    assert detect(out) == FMT
    items = read_items(out, FMT)
    assert w.check(items) == []
    back = loader.materialize([e for _, e in items], FMT)
    # one line per conversation
    resets = sum(isinstance(e, ContextReset) for e in t.entries)
    assert len(out.read_bytes().splitlines()) == resets + 1
    assert sum(isinstance(e, ContextReset) for e in back.entries) == resets
    assert [_request_part(m) for m in t.messages] == list(back.messages)
    errors = [
        (e.message, e.prompt_tokens, e.limit, e.timestamp) for e in t.entries if isinstance(e, ApiError)
    ]
    assert errors == [
        (e.message, e.prompt_tokens, e.limit, e.timestamp) for e in back.entries if isinstance(e, ApiError)
    ]
    assert (back.system, back.tools, back.context_window) == (t.system, t.tools, t.context_window)
    for line in out.read_bytes().splitlines():
        d = orjson.loads(line)
        assert d["response"] is None and isinstance(d["kwargs"], dict)


def test_request_parameters_survive() -> None:
    t = loader.load(FIXTURES / "real" / "litellm-sonnet4-requests.jsonl")
    (line,) = [orjson.loads(x) for x in w.write(t)]
    first = orjson.loads((FIXTURES / "real" / "litellm-sonnet4-requests.jsonl").read_bytes().splitlines()[0])
    params = {k: v for k, v in first["kwargs"].items() if k != "tools"}
    assert line["kwargs"] == {"model": first["response"]["model"], **params}
    assert line["context_window"] == first["context_window"] == 200000
    assert line["tools"] == first["tools"]  # strict and all: nothing of the schema is lost
    # the whole conversation of the six logged calls is in the one request: 6 responses + the
    # 5 tool results and the first user message, after the system prompt
    assert [m["role"] for m in line["messages"]].count("tool") == 5
    assert len(line["messages"]) == 1 + 1 + 6 + 5


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_compacted_transcript_is_one_request(path: Path, tmp_path: Path) -> None:
    t, tail, out, items, messages = write_compacted(w, path, FMT, tmp_path, history=True)
    assert len(out.read_bytes().splitlines()) == 1
    assert len(messages) == 2 + len(tail)
    tail_kept(messages, [_request_part(m) for m in tail], lambda a, b: a == b)
    back = loader.materialize([e for _, e in items], FMT)
    assert back.system == t.system and back.tools == t.tools


def test_check_applies_the_chat_rules(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    line = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "user", "content": "and?"},
        ],
        "kwargs": {"model": "gpt-4o"},
        "response": None,
    }
    path = tmp_path / "bad.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    assert [(n, "not answered" in m) for n, m in w.check_file(path)] == [(1, True)]
