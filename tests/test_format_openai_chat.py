"""OpenAI chat reader: counts and spot values on hand-written fixtures, detection, bad lines,
streaming and edge cases.

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
from ctxfold.formats import loader, registry
from ctxfold.formats.base import Line
from ctxfold.formats.openai_chat import reader as openai_chat
from ctxfold.transcript.model import ApiError, ContextUpdate, MediaPart, Message, TextPart

DIR = FIXTURES / "openai-chat"
REAL_LITELLM = FIXTURES / "real" / "litellm-sonnet4-requests.jsonl"

# session.jsonl: msgs = [d for d in L if "role" in d]
#   Counter(d["role"] for d in msgs) → assistant 3, tool 3, user 2, system 1, developer 1; the
#   system and developer lines are msgs[0:2], before any other message: one ContextUpdate
#   sum(len(d.get("tool_calls") or []) for d in msgs) → 3; tool messages 3 (no error flag in chat)
#   usage: lines equal to {"usage"} 2 + msgs with "usage" 1 = 3; "error" lines 1
#   image_url parts in msgs' list contents: 2 (user message, tool result)
#   last usage: prompt_tokens 1822, cached_tokens 1536, completion 61
# requests.jsonl (4 lines, each {model, messages, tools, response}): leading system message
# split off; new = messages[len(prev):] minus the repeated response when prev is a prefix, else all
#   Counter(role of new) → user 2, tool 2; resets 1 (line 4); responses 4 (assistant, usage)
#   tool_calls in new + response messages 3; L[-1]["response"]["usage"]["prompt_tokens"] 398
#   system, tools (2) and model identical on every line: 1 ContextUpdate
CASES = {
    "session.jsonl": Expect(
        user=2, assistant=3, tool=3, system=0, calls=3, results=3, errors=0, usage=3, media=2,
        contexts=1, resets=0, api_errors=1, last_prompt=1822,
    ),
    "requests.jsonl": Expect(
        user=2, assistant=4, tool=2, system=0, calls=3, results=2, errors=0, usage=4, media=0,
        contexts=1, resets=1, api_errors=0, last_prompt=398,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts(name: str) -> None:
    opened = loader.open_transcript(DIR / name)
    assert opened.format == "openai-chat"
    assert expect_of(list(opened.entries)) == CASES[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_detected_as_openai_chat(name: str) -> None:
    assert detect(DIR / name) == "openai-chat"


@pytest.mark.parametrize("path", other_files("openai-chat"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_formats_not_claimed(path: Path) -> None:
    assert openai_chat.sniff(sniff_head(path)) == 0


def test_session_spot_values() -> None:
    es = entries(DIR / "session.jsonl")
    ctx = es[0]
    assert isinstance(ctx, ContextUpdate)
    assert ctx.system == (
        "You are a data-engineering agent. You can run SQL and read files.",
        "Never run DELETE or DROP statements.",
    )
    user = es[1]
    assert isinstance(user, Message) and user.role == "user"
    assert user.timestamp == "2025-10-02T08:00:00Z" and "timestamp" not in user.extra
    image = user.parts[1]
    assert isinstance(image, MediaPart) and (image.mime_type, image.byte_size) == ("image/png", 70)
    first = es[2]
    assert isinstance(first, Message) and first.role == "assistant"
    assert [(c.id, c.name) for c in first.tool_calls] == [("call_q1", "run_sql"), ("call_q2", "read_file")]
    assert first.tool_calls[1].arguments == {"path": "etl/orders_job.yaml"}
    assert first.usage is not None
    assert (first.usage.prompt_tokens, first.usage.output_tokens) == (1312, 74)
    assert first.usage.fields["prompt_tokens"] == "usage.prompt_tokens"
    results = tool_results(es)
    assert [(r.call_id, r.name) for r in results] == [
        ("call_q1", "run_sql"),
        ("call_q2", "read_file"),
        ("call_q3", "screenshot_panel"),
    ]
    assert results[0].text.startswith("ERROR: relation")
    assert isinstance(results[2].content[1], MediaPart)
    last = [e for e in es if isinstance(e, Message) and e.role == "assistant"][-1]
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.cache_read_tokens, last.usage.output_tokens) == (
        1822,
        1536,
        61,
    )
    assert last.model == last.usage.model == "gpt-4.1-2025-04-14"
    err = es[-1]
    assert isinstance(err, ApiError) and (err.prompt_tokens, err.limit) == (1382113, 128000)
    t = loader.materialize(es, "openai-chat")
    assert t.models == ("gpt-4.1-2025-04-14",)


def test_requests_spot_values() -> None:
    es = entries(DIR / "requests.jsonl")
    kinds = [e.kind if not isinstance(e, Message) else e.role for e in es]
    assert kinds == [
        "context", "user", "assistant", "tool", "assistant", "tool", "assistant", "reset", "user", "assistant",
    ]  # fmt: skip
    ctx = es[0]
    assert isinstance(ctx, ContextUpdate)
    assert ctx.system == ("You are a helpful calendar assistant.",) and ctx.model == "gpt-4o-mini"
    assert ctx.tools is not None and [t.name for t in ctx.tools] == ["list_events", "create_event"]
    replies = [e for e in es if isinstance(e, Message) and e.role == "assistant"]
    assert [m.id for m in replies] == ["chatcmpl-1", "chatcmpl-2", "chatcmpl-3", "chatcmpl-4"]
    u = replies[1].usage
    assert u is not None
    assert (u.prompt_tokens, u.cache_read_tokens, u.model) == (455, 384, "gpt-4o-mini-2024-07-18")
    assert u.fields["prompt_tokens"] == "response.usage.prompt_tokens"
    assert replies[1].extra["choice"]["finish_reason"] == "tool_calls"
    assert [r.name for r in tool_results(es)] == ["list_events", "create_event"]


def _feed(lines: list[dict]) -> list:
    reader = openai_chat.Reader()
    out: list = []
    for no, d in enumerate(lines, 1):
        out.extend(reader.feed(Line(no, d, 0)))
    out.extend(reader.finish())
    return out


def test_bare_response_chunks_and_late_system() -> None:
    resp = {"id": "c1", "object": "chat.completion", "model": "gpt-4o", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1}}  # fmt: skip
    chunk = {"id": "c2", "object": "chat.completion.chunk", "choices": [{"delta": {"content": "h"}}]}
    out = _feed(
        [
            {"usage": {"prompt_tokens": 1}},  # nothing to attach to: dropped
            {"role": "user", "content": "hello"},
            {"role": "system", "content": "Now answer in French."},
            resp,
            chunk,
        ]
    )
    assert [getattr(e, "role", e.kind) for e in out] == ["user", "system", "assistant"]
    assert out[2].usage.prompt_tokens == 5 and out[2].id == "c1"


def test_trailing_system_only_file() -> None:
    out = _feed([{"role": "system", "content": "only a prompt"}])
    assert out == [ContextUpdate(system=("only a prompt",))]


def test_bad_lines_name_the_line(tmp_path: Path) -> None:
    good = json.dumps({"role": "user", "content": "hi"})
    cases = {
        "no role": {"content": "x"},
        "tool without call id": {"role": "tool", "content": "x"},
        "unknown role": {"role": "wizard", "content": "x"},
        "messages not a list": {"model": "gpt-4o", "messages": "hi"},
    }
    for label, bad in cases.items():
        path = tmp_path / "bad.jsonl"
        path.write_text(good + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(LineError) as err:
            list(loader.open_transcript(path, fmt="openai-chat").entries)
        assert err.value.line == 2, label
        assert f"{path}:2" in str(err.value)


def test_streaming_iterator() -> None:
    opened = loader.open_transcript(DIR / "requests.jsonl")
    assert isinstance(opened.entries, Iterator)
    assert isinstance(next(opened.entries), ContextUpdate)
    assert opened.lines_read == 1


def test_plain_lines_go_to_openai_chat() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert registry.detect(plain) == ("openai-chat", 40)
    msgs = [e for e in _feed(plain) if isinstance(e, Message)]
    assert [m.parts for m in msgs] == [(TextPart("hi"),), (TextPart("hello"),)]
    litellm_like = [{"messages": plain, "kwargs": {}, "response": {"choices": []}, "latency_sec": 1.0}]
    assert openai_chat.sniff(litellm_like) == 0


# openrouter-log.jsonl: the six calls of ../real/litellm-sonnet4-requests.jsonl (an OpenHands SDK
# run) rewritten as an OpenRouter-style request log, one line per call: {timestamp, model,
# messages, tools, completion: chat.completion (gen- id, provider, native_finish_reason, usage
# with cost), usage: {prompt_tokens, completion_tokens, total_tokens, total_cost}, total_cost}.
# real counts: [L2["response"]["usage"]["prompt_tokens"] for L2 in litellm] → the same six numbers
def _real_counts(path: Path) -> list[int | None]:
    from ctxfold.tokens.estimate import estimate_file

    return [q.real for q in estimate_file(path).requests]


def test_request_log_with_completion_and_usage_is_read_with_its_counts() -> None:
    log = DIR / "openrouter-log.jsonl"
    assert detect(log) == "openai-chat"
    litellm = [
        json.loads(line)["response"]["usage"]["prompt_tokens"]
        for line in REAL_LITELLM.read_text().splitlines()
    ]
    assert _real_counts(log) == litellm  # the same calls, the same counts as LiteLLM's log of them
    last = [e for e in entries(log) if isinstance(e, Message)][-1]
    raw = json.loads(log.read_text().splitlines()[-1])["completion"]["usage"]["completion_tokens"]  # 199
    assert last.role == "assistant" and last.usage is not None and last.usage.output_tokens == raw


def test_request_log_line_usage_stands_in_for_the_completions(tmp_path: Path) -> None:
    """A completion without its own usage takes the line's; a completion given as text is the
    answer's text."""
    lines = [json.loads(line) for line in (DIR / "openrouter-log.jsonl").read_text().splitlines()][:2]
    for d in lines:
        del d["completion"]["usage"]
    lines[1]["completion"] = "All done."
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    assert _real_counts(path) == [lines[0]["usage"]["prompt_tokens"], lines[1]["usage"]["prompt_tokens"]]
    last = [e for e in entries(path) if isinstance(e, Message)][-1]
    assert last.role == "assistant" and last.text == "All done."
    assert last.model == "anthropic/claude-sonnet-4"  # the line's model
