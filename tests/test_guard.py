"""ContextGuard as an agent developer uses it: API-shaped dicts in and out, SDK usage objects,
provider refusals, one state per conversation, and a summary that keeps the task."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ctxfold.compaction.guard import ContextGuard, prompt_tokens_of
from ctxfold.engine.state import JsonFileStore, MemoryStore
from ctxfold.errors import ConfigError, ProviderError, UsageError
from ctxfold.formats.base import is_overflow, parse_overflow
from ctxfold.formats.messages import from_dict
from ctxfold.providers.offline import OfflineSummarizer
from ctxfold.strategies.summary import SUMMARY_OPEN
from ctxfold.transcript.model import Message, TextPart

TASK = "Refactor src/ and make the failing tests pass."
TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]  # fmt: skip


def openai_turns(n: int, size: int = 300) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for i in range(n):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read", "arguments": f'{{"path": "f{i}"}}'},
        }
        events.append({"role": "assistant", "content": None, "tool_calls": [call]})
        events.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i} " * size})
    return events


def anthropic_turns(n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for i in range(n):
        events.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read",
                                                         "input": {"path": f"f{i}"}}]})  # fmt: skip
        events.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                    "content": f"line {i} " * 300}]})  # fmt: skip
    return events


def test_openai_dicts_in_dicts_out_with_a_stable_prefix() -> None:
    guard = ContextGuard("gpt-4o", window=16_000)
    events = openai_turns(30)
    prepared = guard.before_request(events, system="You are terse.", tools=TOOLS)
    assert prepared.compacted
    assert [m["role"] for m in prepared.messages] == ["user", "user"]
    assert (
        prepared.messages[0]["content"].startswith(SUMMARY_OPEN) and TASK in prepared.messages[1]["content"]
    )
    events.append({"role": "assistant", "content": "Done with the first file."})
    again = guard.before_request(events, system="You are terse.", tools=TOOLS)
    assert again.messages[:2] == prepared.messages  # the compacted request is the prefix of the next
    assert again.messages[2] is events[-1]  # the caller's own dict, untouched


def test_dicts_count_as_the_messages_they_convert_to() -> None:
    for model, events in (("gpt-4o", openai_turns(3)), ("claude-sonnet-4-5", anthropic_turns(3))):
        guard = ContextGuard(model)
        names: dict[str, str] = {}
        as_messages = [from_dict(e, names) for e in events]
        assert guard.estimate(events) == guard.estimate(as_messages) > 3 * 300
        assert any(m.tool_results for m in as_messages) and any(m.tool_calls for m in as_messages)


def test_system_as_a_string_is_one_text_not_its_characters() -> None:
    guard = ContextGuard("gpt-4o")
    prompt = "You are a careful coding agent. " * 20
    assert guard.fixed_tokens(prompt, []) == guard.fixed_tokens([prompt], []) < len(prompt) / 2


def test_bad_events_and_arguments_are_usage_errors() -> None:
    guard = ContextGuard("gpt-4o")
    with pytest.raises(UsageError, match="message 2: unknown message role 'robot'"):
        guard.before_request([{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}])
    with pytest.raises(UsageError, match="expected a ctxfold Message or an OpenAI / Anthropic message dict"):
        guard.before_request(["hello"])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="window must be a positive"):
        ContextGuard("gpt-4o", window=0)
    with pytest.raises(UsageError, match="must leave room"):
        ContextGuard("gpt-4o", window=32_000, buffer=40_000)
    with pytest.raises(UsageError, match="did you mean 'anthropic'"):
        ContextGuard("claude-sonnet-4-5", provider="antropic")


def test_before_any_real_count_the_provider_ratio_applies() -> None:
    claude, gpt = ContextGuard("claude-sonnet-4-5"), ContextGuard("gpt-4o")
    events = [{"role": "user", "content": "word " * 10_000}]
    c, g = claude.before_request(events).decision, gpt.before_request(events).decision
    assert c.predicted == int(c.estimate * 1.3) and g.predicted == g.estimate


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        (1234, 1234),
        (SimpleNamespace(prompt_tokens=900, completion_tokens=5), 900),  # OpenAI chat
        (SimpleNamespace(input_tokens=10, cache_read_input_tokens=800, cache_creation_input_tokens=90), 900),
        (
            SimpleNamespace(input_tokens=900, cache_read_input_tokens=None, cache_creation_input_tokens=None),
            900,
        ),
        ({"input_tokens": 900, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 800}}, 900),
        ({"prompt_token_count": 900}, 900),  # Gemini
        (None, None),
    ],
)
def test_usage_objects_of_every_sdk(usage: Any, tokens: int | None) -> None:
    assert prompt_tokens_of(usage) == tokens


def test_a_usage_without_a_prompt_count_is_refused() -> None:
    with pytest.raises(UsageError, match="cannot find a prompt-token count"):
        ContextGuard("gpt-4o").after_response(SimpleNamespace(output_tokens=3))


@pytest.mark.parametrize(
    ("message", "parsed"),
    [
        (
            "This model's maximum context length is 128000 tokens. However, you requested 131000 tokens "
            "(127000 in the messages, 4000 in the completion).",
            (127_000, 128_000),
        ),
        (
            "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length",
            (197_000, 200_000),
        ),
        ("Your input exceeds the context window of this model.", None),
        ("Error code: 400 - {'error': {'code': 'context_length_exceeded'}}", None),
    ],
)
def test_refusals_as_too_long_force_a_compaction(message: str, parsed: tuple[int, int] | None) -> None:
    assert parse_overflow(message) == parsed and is_overflow(message)
    guard = ContextGuard("gpt-4o", window=300_000)  # believes in a larger window than the server's
    events = openai_turns(4)
    while parsed and guard.estimate(events) < 0.95 * parsed[0]:  # a count the log could have made
        events += openai_turns(10)[1:]
    assert not guard.before_request(events).decision.due
    assert guard.on_error(message)
    if parsed:
        assert guard.state.get("real_tokens") == parsed[0] and guard.policy.window == parsed[1]
    assert guard.before_request(events).compacted


def test_unrelated_errors_teach_nothing() -> None:
    guard = ContextGuard("gpt-4o")
    assert not is_overflow("Rate limit reached for gpt-4o: 429 Too Many Requests")
    assert not guard.on_error("Rate limit reached for gpt-4o: 429 Too Many Requests")
    assert not guard.on_error("500 internal server error")


def test_a_learned_limit_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    ContextGuard("gpt-4o", store=JsonFileStore(path)).on_error(
        "This model's maximum context length is 32768 tokens. However, your messages resulted in 40000 tokens."
    )
    assert ContextGuard("gpt-4o", store=JsonFileStore(path)).policy.window == 32_768


def test_one_state_per_conversation() -> None:
    store = MemoryStore()
    a = ContextGuard("gpt-4o", window=16_000, store=store)
    events = openai_turns(30)
    assert a.before_request(events).compacted
    b = ContextGuard("gpt-4o", window=16_000, store=store)
    other = [{"role": "user", "content": "A different task."}, *events[1:]]
    with pytest.raises(ConfigError, match="belongs to another conversation"):
        b.before_request(other)
    with pytest.raises(ConfigError, match="covers 61 events but only 3 were given"):
        b.before_request(events[:3])
    b.reset()
    assert b.before_request(other).compacted  # starts over


def test_a_failed_summary_changes_nothing() -> None:
    guard = ContextGuard(
        "gpt-4o", window=16_000, summarizer=OfflineSummarizer(scripted=[ProviderError("down")])
    )
    events = openai_turns(5)
    guard.before_request(events)
    guard.after_response(4_000)
    learned = list(guard.calibrator.history)
    with pytest.raises(ProviderError):
        guard.before_request(openai_turns(30))
    assert guard.calibrator.history == learned and guard.state.summary is None


def test_the_default_summary_keeps_the_task_and_reads_everything() -> None:
    guard = ContextGuard("gpt-4o", window=16_000)  # the offline digest, no window of its own
    prepared = guard.before_request(openai_turns(30))
    assert prepared.summary is not None and prepared.summary.provider == "offline"
    assert TASK in prepared.summary.text and "`f0`" in prepared.summary.text  # the oldest call too
    assert ContextGuard("gpt-4o", summarizer="offline").summarizer(prepared_request()).text


def prepared_request() -> Any:
    from ctxfold.providers.base import SummaryRequest

    return SummaryRequest([Message("user", (TextPart(TASK),))], 500)


def test_a_second_compaction_with_no_new_request_still_quotes_it() -> None:
    guard = ContextGuard("gpt-4o", window=16_000)
    events = openai_turns(30)
    guard.before_request(events)
    events += openai_turns(30)[1:]  # only tool traffic since
    again = guard.before_request(events)
    assert again.compacted and TASK in again.messages[1]["content"]
    assert TASK in again.summary.text.split("## Key Information")[0]  # type: ignore[union-attr]


def test_sdk_objects_are_read_as_their_dicts() -> None:
    """The README's loop appends ``response.content`` (the SDK's block objects) as it comes."""
    anthropic_types = pytest.importorskip("anthropic.types")
    openai_types = pytest.importorskip("openai.types.chat")
    blocks = [
        anthropic_types.TextBlock(type="text", text="Reading it."),
        anthropic_types.ToolUseBlock(type="tool_use", id="t1", name="read", input={"path": "a.py"}),
    ]
    as_dicts = [b.model_dump(exclude_none=True) for b in blocks]
    guard = ContextGuard("claude-sonnet-4-5")
    live = [{"role": "user", "content": TASK}, {"role": "assistant", "content": blocks}]
    assert guard.estimate(live) == guard.estimate([live[0], {"role": "assistant", "content": as_dicts}])
    message = openai_types.ChatCompletionMessage(role="assistant", content="Done.")
    assert from_dict(message).text == "Done."


def test_a_config_file_applies_when_given(tmp_path: Path) -> None:
    from ctxfold.config import load_config

    path = tmp_path / "ctxfold.toml"
    path.write_text(
        '[defaults]\nbuffer = "10%"\n\n[models."my-local-llm"]\nwindow = 32768\nprovider = "other"\n'
    )
    guard = ContextGuard("my-local-llm", config=load_config(path))
    assert (guard.policy.window, guard.policy.buffer) == (32_768, 3_276) and not guard.warnings
    assert ContextGuard("my-local-llm").policy.window == 128_000  # no config: none read
    assert ContextGuard("my-local-llm", buffer=1_000, config=load_config(path)).policy.buffer == 1_000
