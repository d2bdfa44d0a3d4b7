"""ContextGuard with OpenAI Responses input items: dicts and the SDK's objects count as the
Responses reader counts the same items read from a file, the summary and continuation come back
as Responses ``message`` items, flat Responses tools count as the reader counts them, and each
API's shape is told apart by its content.

Expected numbers are never taken from the code under test: counts are compared with the same
items read through the file reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, write_jsonl

from ctxfold.compaction.guard import ContextGuard
from ctxfold.formats import loader
from ctxfold.formats.messages import from_dict, shape_of
from ctxfold.strategies.summary import SUMMARY_OPEN
from ctxfold.transcript.model import ContextUpdate, Message

TASK = "Find out why CI fails and fix it."
SHELL = {"type": "function", "name": "shell", "description": "Run a command.",
         "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}  # fmt: skip


def items(n: int, size: int = 300) -> list[dict[str, Any]]:
    """A Responses history: the task as a bare ``{role, content}`` (as the API allows), then
    calls and outputs, with a reasoning item before each call."""
    events: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    thought = [{"type": "summary_text", "text": "Look."}]
    for i in range(n):
        events.append({"type": "reasoning", "id": f"rs_{i}", "summary": thought})
        command = f'{{"command": "cat f{i}"}}'
        events.append({"type": "function_call", "call_id": f"c{i}", "name": "shell", "arguments": command})
        events.append({"type": "function_call_output", "call_id": f"c{i}", "output": f"line {i} " * size})
    return events


def test_items_count_as_the_responses_reader_reads_them(tmp_path: Path) -> None:
    """The fixture's items (a developer message, an image, reasoning, calls, outputs with an
    image, a web search, a custom tool) cost the same live, as dicts or as the SDK's objects,
    as written to a file and read back."""
    pydantic = pytest.importorskip("pydantic")
    responses = pytest.importorskip("openai.types.responses")
    lines = [
        json.loads(line) for line in (FIXTURES / "openai-responses" / "items.jsonl").read_text().splitlines()
    ]
    typed = [d for d in lines if "type" in d]  # not the {usage} lines
    path = write_jsonl(tmp_path / "items.jsonl", typed)
    from_file = [
        e for e in loader.open_transcript(path, fmt="openai-responses").entries if isinstance(e, Message)
    ]
    guard = ContextGuard("gpt-5")
    adapter = pydantic.TypeAdapter(responses.ResponseInputItem)
    objects = [adapter.validate_python(d) for d in typed]
    assert not any(isinstance(o, dict) for o in objects)
    assert guard.estimate(typed) == guard.estimate(from_file)
    # the objects as the SDK would log them (its own key order, which an opaque item's JSON keeps)
    logged = write_jsonl(
        tmp_path / "sdk.jsonl", [o.model_dump(mode="json", exclude_none=True) for o in objects]
    )
    from_sdk_log = [
        e for e in loader.open_transcript(logged, fmt="openai-responses").entries if isinstance(e, Message)
    ]
    assert guard.estimate(objects) == guard.estimate(from_sdk_log)
    assert abs(guard.estimate(objects) - guard.estimate(typed)) <= 2  # only the web search's key order
    messages = guard.messages_of(objects)
    assert [m.role for m in messages] == [m.role for m in from_file]
    assert sum(len(m.tool_calls) for m in messages) == sum(len(m.tool_calls) for m in from_file) >= 4


def test_items_in_items_out_with_a_stable_prefix() -> None:
    guard = ContextGuard("gpt-5", window=16_000)
    events = items(30)
    prepared = guard.before_request(events, system="You are terse.", tools=[SHELL])
    assert prepared.compacted and len(prepared.messages) == 2
    for item in prepared.messages:
        assert item["type"] == "message" and item["role"] == "user"
        assert [p["type"] for p in item["content"]] == ["input_text"]
    assert prepared.messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN)
    assert TASK in prepared.messages[1]["content"][0]["text"]
    output = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": "Fixed.", "annotations": []}]}  # fmt: skip
    events.append(output)
    again = guard.before_request(events, system="You are terse.", tools=[SHELL])
    assert again.messages[:2] == prepared.messages and again.messages[2] is output


def test_flat_tools_count_as_the_reader_counts_a_request_log(tmp_path: Path) -> None:
    """Responses tools are flat (``{"type": "function", "name", "parameters"}``): they count as
    the nested chat form does, and as the reader counts them from a request line."""
    request = {"model": "gpt-5", "instructions": "You are terse.", "tools": [SHELL, {"type": "web_search"}],
               "input": items(1)}  # fmt: skip
    entries = loader.open_transcript(write_jsonl(tmp_path / "r.jsonl", [request])).entries
    update = next(e for e in entries if isinstance(e, ContextUpdate))
    guard = ContextGuard("gpt-5")
    counter = guard.counter
    logged = (
        counter.count_system(update.system) + counter.count_tools(update.tools) + counter.framing.per_request
    )
    assert guard.fixed_tokens(request["instructions"], request["tools"]) == logged
    nested = {"type": "function", "function": {k: v for k, v in SHELL.items() if k != "type"}}
    assert guard.fixed_tokens((), [SHELL]) == guard.fixed_tokens((), [nested])


@pytest.mark.parametrize(
    ("event", "shape"),
    [
        ({"role": "user", "content": "hi"}, "chat"),  # reads the same in every API
        ({"role": "user", "parts": [{"text": "hi"}]}, "genai"),
        ({"role": "model", "parts": []}, "genai"),
        ({"role": "model"}, "genai"),  # a Content whose parts the SDK left unset
        ({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}, "responses"),
        ({"role": "user", "content": [{"type": "input_text", "text": "hi"}]}, "responses"),
        ({"type": "function_call_output", "call_id": "c1", "output": "ok"}, "responses"),
        ({"role": "assistant", "content": [{"type": "text", "text": "hi"}]}, "chat"),
        # an Anthropic response object's dump: type "message", but its blocks tell
        ({"type": "message", "role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
         "anthropic"),
        ({"role": "assistant", "content": None, "tool_calls": []}, "chat"),
    ],
)  # fmt: skip
def test_each_api_is_told_by_its_content(event: dict[str, Any], shape: str) -> None:
    assert shape_of(event) == shape
    message = from_dict(event)
    assert message.role in ("user", "assistant", "tool")


def test_an_item_reference_is_an_empty_message_so_events_stay_one_to_one() -> None:
    guard = ContextGuard("gpt-5")
    events = [{"role": "user", "content": TASK}, {"type": "item_reference", "id": "msg_0"}]
    messages = guard.messages_of(events)
    assert len(messages) == 2 and messages[1].parts == ()
    assert guard.estimate(events) > guard.estimate(events[:1])  # its framing, nothing more
