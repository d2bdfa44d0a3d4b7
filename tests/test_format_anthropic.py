"""Anthropic Messages reader: counts and spot values on hand-written fixtures, detection,
bad lines, streaming and edge cases.

Every expected number was derived from the raw JSON with throwaway python (the expressions are
next to the numbers, L = [json.loads(l) for l in open(f)]), never by running the reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_formats import Expect, counts, entries, expect_of, other_files, tool_results
from conftest import FIXTURES, detect, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader
from ctxfold.formats.anthropic import reader as anthropic
from ctxfold.formats.base import Line
from ctxfold.transcript.model import (
    ApiError,
    ContextReset,
    ContextUpdate,
    MediaPart,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

DIR = FIXTURES / "anthropic"

# session.jsonl: msgs = [d for d in L if "role" in d]; blocks = every content block of msgs,
# nested = the blocks inside tool_result blocks.
#   Counter(d["role"] for d in msgs)                    → user 6, assistant 5 (all type "message")
#   tool_use blocks 4, tool_result blocks 4, is_error 1; "usage" in d: 5
#   image blocks in blocks + nested: 1; server_tool_use + web_search_tool_result: 2; thinking 1
#   type == "error" lines: 1 (201234 > 200000); L[0] is the system/tools line: 1 ContextUpdate
#   last usage: 2310 + 0 + 2080 = 4390 (input + cache_creation + cache_read)
# requests.jsonl (3 request lines with "response"): new messages per line = messages[len(prev):]
# minus a leading assistant (the previous response) when prev is a prefix, else all (a reset):
#   Counter(role of new) → user 3; responses 3 (assistant); resets 1 (line 3)
#   tool_use in new + responses 2, tool_result 1; usage 3; last 15 + 610 + 0 = 625
#   system/tools/model identical on all lines: 1 ContextUpdate
CASES = {
    "session.jsonl": Expect(
        user=6, assistant=5, tool=0, system=0, calls=4, results=4, errors=1, usage=5, media=1,
        contexts=1, resets=0, api_errors=1, last_prompt=4390,
    ),
    "requests.jsonl": Expect(
        user=3, assistant=3, tool=0, system=0, calls=2, results=1, errors=0, usage=3, media=0,
        contexts=1, resets=1, api_errors=0, last_prompt=625,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts(name: str) -> None:
    opened = loader.open_transcript(DIR / name)
    assert opened.format == "anthropic"
    assert expect_of(list(opened.entries)) == CASES[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_detected_as_anthropic(name: str) -> None:
    assert detect(DIR / name) == "anthropic"


@pytest.mark.parametrize("path", other_files("anthropic"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_formats_not_claimed(path: Path) -> None:
    assert anthropic.sniff(sniff_head(path)) == 0


def test_session_spot_values() -> None:
    es = entries(DIR / "session.jsonl")
    ctx = es[0]
    assert isinstance(ctx, ContextUpdate)
    assert ctx.system == (
        "You are a careful coding agent working in /repo.",
        "Prefer small diffs. Run the tests after every edit.",
    )
    assert ctx.model == "claude-sonnet-4-5-20250929"
    assert ctx.tools is not None
    assert [t.name for t in ctx.tools] == ["read_file", "run_tests", "screenshot", "edit_file", "web_search"]
    assert ctx.tools[4].extra["type"] == "web_search_20250305"
    assert ctx.tools[0].parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    first = next(e for e in es if isinstance(e, Message) and e.role == "assistant")
    assert first.id == "msg_01A"
    assert [type(p) for p in first.parts] == [ThinkingPart, TextPart, ToolCallPart, ToolCallPart]
    assert isinstance(first.parts[0], ThinkingPart) and first.parts[0].signature == "EqQBCkYIARgCKkC1sig"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("toolu_01", "read_file", {"path": "src/dates.py"}),
        ("toolu_02", "run_tests", {"path": "tests/test_dates.py"}),
    ]
    u = first.usage
    assert u is not None
    assert (u.prompt_tokens, u.cache_write_tokens, u.cache_read_tokens, u.output_tokens) == (
        1842,
        1830,
        0,
        141,
    )
    assert u.model == "claude-sonnet-4-5-20250929" and u.final
    assert (
        u.fields["prompt_tokens"] == "usage.input_tokens+cache_creation_input_tokens+cache_read_input_tokens"
    )
    assert first.extra["stop_reason"] == "tool_use"
    results = tool_results(es)
    assert [(r.call_id, r.name, r.is_error) for r in results] == [
        ("toolu_01", "read_file", False),
        ("toolu_02", "run_tests", True),
        ("toolu_03", "screenshot", False),
        ("toolu_04", "edit_file", False),
    ]
    assert results[1].text.startswith("FAILED tests/test_dates.py::test_parse_date")
    image = results[2].content[1]
    assert isinstance(image, MediaPart)
    # the PNG's base64 is 96 characters ending in "==": 96 * 3 // 4 - 2 = 70 bytes
    assert (image.mime_type, image.byte_size, len(image.data or "")) == ("image/png", 70, 96)
    search = next(e for e in es if isinstance(e, Message) and e.id == "msg_01E")
    assert [p.type for p in search.parts if isinstance(p, OpaquePart)] == [
        "server_tool_use",
        "web_search_tool_result",
    ]
    assert search.tool_calls == ()  # server tools are not calls the client answers
    err = es[-1]
    assert isinstance(err, ApiError)
    assert (err.prompt_tokens, err.limit, err.id) == (201234, 200000, "req_011CTx")
    user = es[1]
    assert isinstance(user, Message) and user.timestamp == "2025-10-02T09:00:00Z"


def test_requests_spot_values() -> None:
    es = entries(DIR / "requests.jsonl")
    kinds = [e.kind if not isinstance(e, Message) else e.role for e in es]
    assert kinds == ["context", "user", "assistant", "user", "assistant", "reset", "user", "assistant"]
    msgs = [e for e in es if isinstance(e, Message)]
    assert [m.id for m in msgs if m.role == "assistant"] == ["msg_02A", "msg_02B", "msg_02C"]
    assert msgs[2].tool_results[0].name == "bash" and msgs[2].tool_results[0].text == "42"
    u = msgs[-1].usage
    assert u is not None
    assert u.fields["prompt_tokens"].startswith("response.usage.")
    assert (u.prompt_tokens, u.cache_write_tokens) == (625, 610)


def test_bad_lines_name_the_line(tmp_path: Path) -> None:
    good = json.dumps(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    )
    cases = {
        "no role": {"content": "hi"},
        "no content": {"role": "assistant"},
        "tool_use without id": {
            "role": "assistant",
            "content": [{"type": "tool_use", "name": "bash", "input": {}}],
        },
        "content of wrong type": {"role": "user", "content": 7},
    }
    for label, bad in cases.items():
        path = tmp_path / f"{label}.jsonl"
        path.write_text(good + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(LineError) as err:
            list(loader.open_transcript(path, fmt="anthropic").entries)
        assert err.value.line == 2, label
        assert f"{path}:2" in str(err.value)


def test_streaming_iterator() -> None:
    opened = loader.open_transcript(DIR / "session.jsonl")
    assert isinstance(opened.entries, Iterator)
    first = next(opened.entries)
    assert isinstance(first, ContextUpdate)
    assert opened.lines_read == 1  # nothing read past what the first entry needed


def _feed(lines: list[dict]) -> list:
    reader = anthropic.Reader()
    out: list = []
    for no, d in enumerate(lines, 1):
        out.extend(reader.feed(Line(no, d, 0)))
    out.extend(reader.finish())
    return out


def test_request_response_wrapper_and_error() -> None:
    req = {"model": "claude-opus-4-1", "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
    resp = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hello"}],
            "usage": {"input_tokens": 9, "output_tokens": 2}}  # fmt: skip
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    out = _feed([{"request": req, "response": resp}, {"request": {**req, "messages": []}, "error": error}])
    assert isinstance(out[0], ContextUpdate) and out[0].system == ("Be brief.",)
    assert isinstance(out[2], Message) and out[2].usage is not None and out[2].usage.prompt_tokens == 9
    assert isinstance(out[3], ContextReset)
    assert isinstance(out[4], ApiError) and out[4].message == "Overloaded" and out[4].prompt_tokens is None


def test_unknown_line_types_are_ignored_and_usage_on_message_lines() -> None:
    out = _feed(
        [
            {"type": "message_start", "message": {"id": "m"}},
            {
                "role": "assistant",
                "content": "ok",
                "usage": {"input_tokens": 3, "cache_read_input_tokens": 4},
            },
        ]
    )
    assert len(out) == 1 and isinstance(out[0], Message)
    assert out[0].usage is not None and out[0].usage.prompt_tokens == 7
    assert "usage" not in out[0].extra


def test_document_and_url_sources() -> None:
    blocks = [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"},
        },
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain notes"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy"},
    ]
    (msg,) = _feed([{"role": "user", "content": blocks}])
    pdf, txt, url, redacted = msg.parts
    assert isinstance(pdf, MediaPart) and (pdf.mime_type, pdf.byte_size) == ("application/pdf", 9)
    assert isinstance(txt, MediaPart) and txt.text == "plain notes"
    assert isinstance(url, MediaPart) and url.url == "https://example.com/a.png" and url.data is None
    assert isinstance(redacted, ThinkingPart) and redacted.redacted and redacted.encrypted == "EmwKAhgBEgy"


def test_sniff_needs_proof() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert anthropic.sniff(plain) == 0
    text_blocks = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert anthropic.sniff(text_blocks) == 0
    tool_use = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}]
    assert anthropic.sniff(plain + tool_use) == 90
    assert (
        anthropic.sniff([{"role": "system", "content": "s"}, *tool_use]) == 0
    )  # no system role in Anthropic
    assert counts(_feed(tool_use)) == {"assistant": 1, "calls": 1}
