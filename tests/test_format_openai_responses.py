"""OpenAI Responses reader: counts and spot values on hand-written fixtures, detection, bad
lines, streaming and edge cases.

Every expected number was derived from the raw JSON with throwaway python (the expressions are
next to the numbers, L = [json.loads(l) for l in open(f)]), never by running the reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_formats import Expect, entries, expect_of, other_files, tool_results
from conftest import FIXTURES, detect, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader
from ctxfold.formats.base import Line
from ctxfold.formats.openai_responses import reader as openai_responses
from ctxfold.transcript.model import (
    ApiError,
    ContextUpdate,
    MediaPart,
    Message,
    OpaquePart,
    ThinkingPart,
)

DIR = FIXTURES / "openai-responses"

# One Message per item. items = [d for d in L if "type" in d]:
# items.jsonl: Counter(d["type"] for d in items) → message 3 (developer 1, user 1, assistant 1),
#   function_call 3, function_call_output 3, reasoning 1, web_search_call 1, custom_tool_call 1,
#   custom_tool_call_output 1 → assistant = 1 + 3 + 1 + 1 + 1 = 7, tool = 3 + 1 = 4, system 1
#   calls 3 + 1 = 4, results 4; "usage" lines 4, each right after a model-side item
#   input_image parts in message contents and list outputs: 2; last usage input_tokens 3240
# requests.jsonl (4 lines {model, instructions, tools, input, response}): new input = input[len(prev):]
#   minus the previous response's len(output) items when prev is a prefix; line 3 has
#   previous_response_id (its input is all new, prev unchanged); line 4 does not extend → reset
#   Counter(new) → message/user 3, function_call_output 2; outputs: function_call 3,
#   reasoning 1, message 1 → assistant 5; usage: responses with usage != None 3 (last 480);
#   line 4's response has status failed + error (400512 > 400000); instructions/tools same: 1 context
# events.jsonl: user message 1; response.output_item.done items 2 (message, function_call), which
#   response.completed repeats with usage (input_tokens 950); function_call_output 1
CASES = {
    "items.jsonl": Expect(
        user=1, assistant=7, tool=4, system=1, calls=4, results=4, errors=0, usage=4, media=2,
        contexts=0, resets=0, api_errors=0, last_prompt=3240,
    ),
    "requests.jsonl": Expect(
        user=3, assistant=5, tool=2, system=0, calls=3, results=2, errors=0, usage=3, media=0,
        contexts=1, resets=1, api_errors=1, last_prompt=480,
    ),
    "events.jsonl": Expect(
        user=1, assistant=2, tool=1, system=0, calls=1, results=1, errors=0, usage=1, media=0,
        contexts=0, resets=0, api_errors=0, last_prompt=950,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts(name: str) -> None:
    opened = loader.open_transcript(DIR / name)
    assert opened.format == "openai-responses"
    assert expect_of(list(opened.entries)) == CASES[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_detected_as_openai_responses(name: str) -> None:
    assert detect(DIR / name) == "openai-responses"


@pytest.mark.parametrize("path", other_files("openai-responses"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_formats_not_claimed(path: Path) -> None:
    assert openai_responses.sniff(sniff_head(path)) == 0


def test_items_spot_values() -> None:
    es = entries(DIR / "items.jsonl")
    msgs = [e for e in es if isinstance(e, Message)]
    dev, user, reasoning = msgs[0], msgs[1], msgs[2]
    assert dev.role == "system" and dev.extra["role"] == "developer"
    image = user.parts[1]
    assert isinstance(image, MediaPart)
    assert (image.mime_type, image.byte_size, image.extra["detail"]) == ("image/png", 70, "low")
    thinking = reasoning.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.text == "Check the CI log and the workflow file in parallel."
    assert thinking.encrypted == "gAAAAABo1xQ" and reasoning.id == "rs_01"
    carriers = [m for m in msgs if m.usage is not None]
    assert [m.id for m in carriers] == ["fc_02", "fc_03", "ctc_01", "msg_01"]
    u = carriers[0].usage
    assert u is not None
    assert (u.prompt_tokens, u.output_tokens, u.reasoning_tokens, u.model) == (2412, 187, 128, "gpt-5-codex")
    assert u.fields["prompt_tokens"] == "usage.input_tokens"
    last = carriers[-1].usage
    assert last is not None and (last.prompt_tokens, last.cache_read_tokens) == (3240, 3072)
    calls = [c for m in msgs for c in m.tool_calls]
    assert calls[0].arguments == {"command": ["gh", "run", "view", "--log-failed"]}
    assert calls[3].name == "apply_patch" and str(calls[3].arguments).startswith("*** Begin Patch")
    assert [(r.call_id, r.name) for r in tool_results(es)] == [
        ("call_A1", "shell"),
        ("call_A2", "read_file"),
        ("call_A3", "open_url"),
        ("call_A4", "apply_patch"),
    ]
    assert isinstance(tool_results(es)[2].content[1], MediaPart)
    search = next(m for m in msgs if m.id == "ws_01")
    assert search.role == "assistant" and isinstance(search.parts[0], OpaquePart)
    assert search.parts[0].type == "web_search_call"


def test_requests_spot_values() -> None:
    es = entries(DIR / "requests.jsonl")
    kinds = [e.kind if not isinstance(e, Message) else e.role for e in es]
    assert kinds == [
        "context", "user", "assistant", "assistant", "assistant", "tool", "tool", "assistant",
        "user", "assistant", "reset", "user", "api_error",
    ]  # fmt: skip
    ctx = es[0]
    assert isinstance(ctx, ContextUpdate)
    assert ctx.system == ("You are a terse shell assistant.",) and ctx.model == "gpt-5"
    assert ctx.tools is not None and [t.name for t in ctx.tools] == ["shell", "web_search"]
    carriers = [e for e in es if isinstance(e, Message) and e.usage is not None]
    assert [m.id for m in carriers] == ["fc_12", "msg_21", "fc_31"]
    assert (
        carriers[0].usage is not None
        and carriers[0].usage.fields["prompt_tokens"] == "response.usage.input_tokens"
    )
    assert carriers[0].usage.model == "gpt-5-2025-08-07"
    err = es[-1]
    assert isinstance(err, ApiError) and (err.prompt_tokens, err.limit, err.id) == (400512, 400000, "resp_4")


def test_events_spot_values() -> None:
    es = entries(DIR / "events.jsonl")
    assert [(getattr(e, "role", None), getattr(e, "id", None)) for e in es] == [
        ("user", None),
        ("assistant", "msg_31"),
        ("assistant", "fc_41"),
        ("tool", None),
    ]
    assert es[2].usage is not None and es[2].usage.prompt_tokens == 950


def _feed(lines: list[dict]) -> list:
    reader = openai_responses.Reader()
    out: list = []
    for no, d in enumerate(lines, 1):
        out.extend(reader.feed(Line(no, d, 0)))
    out.extend(reader.finish())
    return out


def test_string_input_unknown_items_and_bare_response() -> None:
    out = _feed(
        [
            {"model": "gpt-5-mini", "input": "hi", "instructions": "Be brief."},
            {"type": "future_thing", "id": "x1"},
            {"id": "r1", "object": "response", "model": "gpt-5-mini", "output": [
                {"type": "message", "id": "m1", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}],
             "usage": {"input_tokens": 11, "output_tokens": 2}},
        ]
    )  # fmt: skip
    assert [e.kind for e in out] == ["context", "message", "message"]
    assert out[0].system == ("Be brief.",)
    assert out[1].role == "user" and out[1].text == "hi"
    assert out[2].text == "hello" and out[2].usage.prompt_tokens == 11


def test_last_item_is_emitted_at_the_end() -> None:
    out = _feed([{"type": "function_call", "call_id": "c", "name": "ls", "arguments": "not json"}])
    assert len(out) == 1 and out[0].tool_calls[0].arguments == "not json"


def test_bad_lines_name_the_line(tmp_path: Path) -> None:
    good = json.dumps({"type": "message", "role": "user", "content": "hi"})
    cases = {
        "no type nor role": {"content": "x"},
        "message without role": {"type": "message", "content": "x"},
        "function_call without call_id": {"type": "function_call", "name": "ls", "arguments": "{}"},
        "input of wrong type": {"model": "gpt-5", "input": 3},
    }
    for label, bad in cases.items():
        path = tmp_path / "bad.jsonl"
        path.write_text(good + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(LineError) as err:
            list(loader.open_transcript(path, fmt="openai-responses").entries)
        assert err.value.line == 2, label
        assert f"{path}:2" in str(err.value)


def test_streaming_iterator() -> None:
    opened = loader.open_transcript(DIR / "items.jsonl")
    assert isinstance(opened.entries, Iterator)
    first = next(opened.entries)
    assert isinstance(first, Message) and first.role == "system"
    assert opened.lines_read == 1


def test_sniff_plain_lines_lose_to_openai_chat() -> None:
    plain = [{"role": "user", "content": "hi"}]
    assert openai_responses.sniff(plain) == 30
    assert openai_responses.sniff([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]) == 90
    assert openai_responses.sniff([{"role": "assistant", "content": None, "tool_calls": []}]) == 0
