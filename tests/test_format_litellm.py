"""LiteLLM completion-log reader (and the shared OpenAI chat conversion it uses).

Every expected number was derived from the raw JSON with jq (expressions next to the
numbers), never by running the reader.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, real, real_files, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader, registry
from ctxfold.formats.base import Line
from ctxfold.formats.litellm import reader as litellm
from ctxfold.formats.openai_common import (
    message_from_openai,
    tooldef_from_openai,
    usage_from_openai,
)
from ctxfold.transcript.model import (
    ApiError,
    ContextReset,
    ContextUpdate,
    Entry,
    MediaPart,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

EDGE = FIXTURES / "litellm" / "edge-cases.jsonl"
BUNDLED = FIXTURES / "real" / "litellm-sonnet4-requests.jsonl"  # byte-for-byte copy of the shared file
SHARED = "litellm/openhands-sdk-sonnet4-requests.jsonl"


def _path(which: str) -> Path:
    return BUNDLED if which == "bundled" else real(SHARED)


def _entries(path: Path) -> list[Entry]:
    return list(loader.open_transcript(path, fmt="litellm").entries)


def _messages(entries: list[Entry]) -> list[Message]:
    return [e for e in entries if isinstance(e, Message)]


# Derived with `jq -s '<expr>' FILE` (6 lines; every line's messages extend the previous
# line's: [range(1;length) as $i | .[$i].messages[0:(.[$i-1].messages|length)] == .[$i-1].messages] | all
# is true, so no reset):
#   last | .messages | map(.role) | group_by(.)   → system 1, user 1, assistant 5, tool 5;
#   plus the last line's response → user 1, assistant 6, tool 5 distinct messages
#   map(.response.choices[0].message.tool_calls | length) | add → 6 tool calls (one per response)
#   map(select(.response.usage.prompt_tokens != null)) | length → 6 usage records
#   .[0].response.usage.prompt_tokens = 4812; last | .response.usage.prompt_tokens = 6729, completion 199
#   map(.response.model) | unique → ["litellm_proxy/claude-sonnet-4-20250514"]; context_window 200000
#   .[0].tools | map(.function.name) → terminal, str_replace_editor, finish
#   all cache_creation_input_tokens / cache_read_input_tokens / cached_tokens are 0
@pytest.mark.parametrize("which", ["bundled", "shared"])
def test_real_counts(which: str) -> None:
    entries = _entries(_path(which))
    msgs = _messages(entries)
    assert Counter(m.role for m in msgs) == Counter(user=1, assistant=6, tool=5)
    assert sum(len(m.tool_calls) for m in msgs) == 6
    assert sum(len(m.tool_results) for m in msgs) == 5
    assert sum(m.usage is not None for m in msgs) == 6
    assert not any(isinstance(e, ContextReset) for e in entries)
    assert sum(isinstance(e, ContextUpdate) for e in entries) == 1  # nothing fixed changes
    # every tool result answers the call just before it
    calls = [c.id for m in msgs for c in m.tool_calls]
    results = [r.call_id for m in msgs for r in m.tool_results]
    assert results == calls[:5]


@pytest.mark.parametrize("which", ["bundled", "shared"])
def test_real_spot_values(which: str) -> None:
    t = loader.load(_path(which), fmt="litellm")
    assert t.models == ("litellm_proxy/claude-sonnet-4-20250514",)
    assert t.context_window == 200000
    assert [tool.name for tool in t.tools] == ["terminal", "str_replace_editor", "finish"]
    assert len(t.system) == 1 and t.system[0].startswith("You are OpenHands agent")
    assert not any(m.role == "system" for m in t.messages)
    usages = [m.usage for m in t.messages if m.usage is not None]
    assert usages[0].prompt_tokens == 4812
    assert (usages[-1].prompt_tokens, usages[-1].output_tokens) == (6729, 199)
    assert usages[-1].context_window == 200000
    assert usages[-1].fields["prompt_tokens"] == "response.usage.prompt_tokens"
    last = t.messages[-1]
    assert last.role == "assistant" and last.tool_calls[0].name == "finish"
    assert last.id == "chatcmpl-86295094-c048-42b1-be96-07eba2fad951"
    assert last.timestamp is not None and last.timestamp.startswith("2025-09-04T19:44:06")
    # the assistant messages with usage are exactly the responses, in order
    assert [m.usage is not None for m in t.messages if m.role == "assistant"] == [True] * 6


# ------------------------------------------------------------------------------ detection


def _mine(path: Path) -> bool:
    return path.parent.name == "litellm" or path.name.startswith("litellm")


@pytest.mark.parametrize("which", ["bundled", "shared"])
def test_sniff_scores_own_files_high(which: str) -> None:
    assert litellm.sniff(sniff_head(_path(which))) == 95


@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_detect(path: Path) -> None:
    objs = sniff_head(path)
    mine = _mine(path)
    assert (litellm.sniff(objs) > 0) == mine
    fmt, _ = registry.detect(objs)
    assert (fmt == "litellm") == mine


def _fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*/*.jsonl"))


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_sniff_on_handmade_fixtures(path: Path) -> None:
    objs = sniff_head(path)
    assert (litellm.sniff(objs) > 0) == _mine(path)


def test_sniff_shapes() -> None:
    assert litellm.sniff([{"messages": [], "kwargs": {}, "response": {}}]) == 80
    assert litellm.sniff([{"messages": [], "model": "gpt-4o"}]) == 0  # a bare request
    assert litellm.sniff([]) == 0


# ------------------------------------------------------------------------- handmade file
# edge-cases.jsonl, 4 lines:
#   1 system (string) + user (text, data-URI image, https image) → response r1: tool call c1,
#     usage prompt 1200 / cached 1024 / completion 30
#   2 = line 1 + echo of r1 + tool result c1 → response r2: reasoning_content + text,
#     usage 1300 / cached 1152 / 12, reasoning 5
#   3 new system (list of parts) + user: not an extension → reset; response r3 is a refusal,
#     usage in Anthropic shape: prompt_tokens 5 + cache_creation 2000 + cache_read 100
#   4 = line 3 + echo of r3 + user + legacy function_call + role "function" result; no
#     response, error "maximum context length is 128000 tokens ... resulted in 135189 tokens"


def test_edge_entry_sequence() -> None:
    kinds = [e.kind if not isinstance(e, Message) else e.role for e in _entries(EDGE)]
    assert kinds == [
        "context",
        "user",
        "assistant",  # r1
        "tool",
        "assistant",  # r2
        "reset",
        "context",  # new system prompt
        "user",
        "assistant",  # r3
        "user",
        "assistant",  # legacy function_call
        "tool",  # role "function"
        "api_error",
    ]


def test_edge_values() -> None:
    entries = _entries(EDGE)
    msgs = _messages(entries)
    first, second = (e for e in entries if isinstance(e, ContextUpdate))
    assert first.system == ("You are a weather bot.",) and first.model == "gpt-4o"
    assert first.context_window == 128000 and first.extra["kwargs"] == {"model": "gpt-4o", "temperature": 0}
    assert first.tools is not None and first.tools[0].name == "get_weather"
    assert first.tools[0].extra == {"strict": True}
    assert (
        second.system == ("You are a careful assistant.",) and second.tools is None and second.model is None
    )

    user = msgs[0]
    text, data_img, url_img = user.parts
    assert isinstance(text, TextPart) and text.text == "Weather in Paris? See pics."
    assert isinstance(data_img, MediaPart) and data_img.mime_type == "image/png" and data_img.data
    assert data_img.byte_size == len(base64.b64decode(data_img.data)) and data_img.extra == {"detail": "low"}
    assert isinstance(url_img, MediaPart) and url_img.url == "https://example.com/sky.jpg"
    assert url_img.mime_type == "image/jpeg" and url_img.data is None

    r1 = msgs[1]
    (call,) = r1.parts
    assert isinstance(call, ToolCallPart) and (call.id, call.arguments) == ("c1", {"city": "Paris"})
    assert r1.id == "r1" and r1.model == "gpt-4o-2024-08-06" and r1.usage is not None
    assert (r1.usage.prompt_tokens, r1.usage.cache_read_tokens, r1.usage.output_tokens) == (1200, 1024, 30)
    assert r1.usage.fields["cache_read_tokens"] == "response.usage.prompt_tokens_details.cached_tokens"

    result = msgs[2].tool_results[0]
    assert (result.call_id, result.name, result.text) == ("c1", "get_weather", "Sunny, 21C")

    r2 = msgs[3]
    assert isinstance(r2.parts[0], ThinkingPart) and r2.parts[0].text == "The tool said sunny."
    assert r2.text == "It is sunny in Paris." and r2.usage is not None and r2.usage.reasoning_tokens == 5

    r3 = msgs[5]
    assert r3.parts == (TextPart("I can't help with that.", extra={"type": "refusal"}),)
    assert r3.usage is not None
    assert (r3.usage.prompt_tokens, r3.usage.cache_write_tokens, r3.usage.cache_read_tokens) == (
        2105,
        2000,
        100,
    )

    legacy, fn_result = msgs[7], msgs[8]
    (fc,) = legacy.tool_calls
    assert (fc.id, fc.name, fc.arguments) == ("get_weather", "get_weather", {"city": "Oslo"})
    (res,) = fn_result.tool_results
    assert (fn_result.role, res.call_id, res.text, fn_result.extra["role"]) == (
        "tool",
        "get_weather",
        "Snow",
        "function",
    )

    (err,) = (e for e in entries if isinstance(e, ApiError))
    assert (err.prompt_tokens, err.limit) == (135189, 128000)


# ------------------------------------------------------------- shared OpenAI conversion


def _line(data: object = None) -> Line:
    return Line(7, data, 0)


def test_message_from_openai_general_shapes() -> None:
    m = message_from_openai(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}, {"type": "x"}],
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "f", "arguments": "not json"}},
                {"id": "2", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin"}},
            ],
            "thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "s"}],
            "audio": None,
        },
        _line(),
    )
    thinking, text, opaque, bad_args, custom = m.parts
    assert isinstance(thinking, ThinkingPart) and thinking.signature == "s"
    assert isinstance(text, TextPart) and text.extra == {"cache_control": {"type": "ephemeral"}}
    assert isinstance(opaque, OpaquePart) and opaque.type == "x"
    assert isinstance(bad_args, ToolCallPart) and bad_args.arguments == "not json"
    assert (
        isinstance(custom, ToolCallPart)
        and custom.arguments == "*** Begin"
        and custom.extra["type"] == "custom"
    )
    assert m.extra == {"audio": None}
    dev = message_from_openai({"role": "developer", "content": "rules"}, _line())
    assert dev.role == "system" and dev.extra["role"] == "developer"


def test_message_from_openai_errors_name_line() -> None:
    with pytest.raises(LineError, match="'role'") as info:
        message_from_openai({"content": "x"}, _line())
    assert info.value.line == 7
    with pytest.raises(LineError, match="'tool_call_id'"):
        message_from_openai({"role": "tool", "content": "x"}, _line())
    with pytest.raises(LineError, match="unknown message role"):
        message_from_openai({"role": "robot", "content": "x"}, _line())


def test_tooldef_and_usage_shapes() -> None:
    flat = tooldef_from_openai(
        {"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}}
    )
    assert (flat.name, flat.description, flat.parameters) == ("f", "d", {"type": "object"})
    builtin = tooldef_from_openai({"type": "web_search_preview"})
    assert builtin.name == "web_search_preview" and builtin.extra == {"type": "web_search_preview"}
    u = usage_from_openai(
        {"input_tokens": 50, "output_tokens": 5, "input_tokens_details": {"cached_tokens": 40}}, "m"
    )
    assert (u.prompt_tokens, u.cache_read_tokens, u.output_tokens, u.model) == (50, 40, 5, "m")


# ----------------------------------------------------------------------- errors, streaming


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ({"kwargs": {}, "response": None}, "'messages'"),
        ({"messages": "nope", "kwargs": {}}, "'messages' should be list"),
        ({"messages": [{"content": "x"}], "kwargs": {}}, "'role'"),
        ({"messages": [], "kwargs": {}, "response": {"usage": {}}}, "'choices'"),
    ],
)
def test_bad_line_names_line(tmp_path: Path, line: dict[str, object], needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = BUNDLED.read_text().splitlines()[0]
    path.write_text(good + "\n" + json.dumps(line) + "\n")
    with pytest.raises(LineError) as info:
        list(loader.open_transcript(path, fmt="litellm").entries)
    assert info.value.line == 2 and needle in str(info.value)


def test_streaming() -> None:
    opened = loader.open_transcript(BUNDLED, fmt="litellm")
    assert isinstance(opened.entries, Iterator)
    assert isinstance(next(opened.entries), ContextUpdate)
    assert opened.lines_read == 1
