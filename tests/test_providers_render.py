"""The summarizer prompt (rendering, elision, fitting), todo extraction and the provider registry."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ctxfold.errors import UsageError
from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.registry import PROVIDERS, make_summarizer, parse_spec
from ctxfold.providers.render import (
    SECTIONS,
    ToolResults,
    build_prompt,
    render_messages,
    short_args,
    system_prompt,
)
from ctxfold.providers.todos import Todo, extract_todos, todos_from_summary
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

TOK = get_tokenizer("o200k")


def _call(call_id: str, name: str, args: object, branch: str | None = None) -> Message:
    return Message("assistant", (ToolCallPart(call_id, name, args),), branch=branch)


def _res(call_id: str, text: str, error: bool = False) -> Message:
    return Message("user", (ToolResultPart(call_id, (TextPart(text),), is_error=error),))


def test_render_elides_results_by_default_and_excerpts_with_head() -> None:
    msgs = [
        Message("user", (TextPart("list files"),)),
        _call("c1", "Bash", {"command": "ls " + "x" * 500, "timeout": 5}),
        _res("c1", "HEAD" + "." * 1000 + "TAIL"),
        _res("c1", "boom", error=True),
        Message("assistant", (TextPart("side"),), branch="agent-1"),
    ]
    elided = render_messages(msgs)
    assert elided[0] == "user: list files"
    assert elided[1].startswith('assistant: [called tool: Bash(command="ls xxx') and len(elided[1]) < 400
    assert (
        elided[2] == "tool: [tool Bash returned a result]"
        and elided[3] == "tool: [tool Bash returned an error]"
    )
    assert len(elided) == 4  # the side chain is the sub-agent's own
    head = render_messages(msgs, ToolResults.parse("head:10"))
    assert head[2].startswith("tool: [tool Bash returned a result]\nHEAD......") and head[2].endswith(
        "......TAIL"
    )
    assert "[… 988 characters elided …]" in head[2]
    assert head[3] == "tool: [tool Bash returned an error]\nboom"


@pytest.mark.parametrize("spec", ["head", "head:0", "head:x", "tail:3", ""])
def test_tool_results_option_is_validated(spec: str) -> None:
    with pytest.raises(UsageError, match="elide"):
        ToolResults.parse(spec)


def test_short_args() -> None:
    assert short_args({"path": "a.py", "n": 3}) == 'path="a.py", n=3'
    assert short_args("raw\n  text") == "raw text" and short_args(None) == ""
    assert len(short_args({"k": "v" * 1000})) <= 300


def test_system_prompt_sections_and_word_limit() -> None:
    text = system_prompt(2000)
    assert all(f"## {s}" in text for s in SECTIONS) and "1500 words" in text
    assert "conversation's own language" in text


def test_prompt_fit_leaves_room_for_the_output() -> None:
    msgs = [Message("user", (TextPart(f"msg {i} " + "word " * 200),)) for i in range(50)]
    request = SummaryRequest(msgs, 3000, previous_summary="## Current State\nold", dropped=7)
    prompt = build_prompt(request, window=12_000, max_output=3000)
    assert prompt.input_tokens <= 12_000 - 3000 and prompt.dropped > 0
    assert f"[{7 + prompt.dropped} earlier messages were left out to fit]" in prompt.user
    assert "[Previous summary]\n## Current State\nold\n[End previous summary]" in prompt.user
    conversation = prompt.user.split("[Conversation]")[1].split("[End conversation]")[0]
    assert "msg 49 " in conversation and "msg 0 " not in conversation
    huge = build_prompt(SummaryRequest([Message("user", (TextPart("z " * 50_000),))], 100), window=4000)
    assert huge.input_tokens <= 3200 and "cut to fit" in huge.user


def test_prompt_without_todos_still_asks_for_the_section() -> None:
    prompt = build_prompt(SummaryRequest([Message("user", (TextPart("hi"),))], 100), window=8000)
    assert "No todo list was recorded" in prompt.user and prompt.todos is None


# ----------------------------------------------------------------------------------- todos


def test_todos_newest_list_wins_and_errors_and_side_chains_are_ignored() -> None:
    msgs = [
        _call("1", "TodoWrite", {"todos": [{"content": "a", "status": "pending", "activeForm": "A"}]}),
        _call("2", "update_plan", json.dumps({"plan": [{"step": "b", "status": "in_progress"}]})),
        _call("3", "TodoWrite", {"todos": [{"content": "refused", "status": "pending"}]}),
        _res("3", "<tool_use_error>bad input</tool_use_error>", error=True),
        _call("4", "TodoWrite", {"todos": [{"content": "sub", "status": "pending"}]}, branch="agent"),
    ]
    assert extract_todos(msgs) == [Todo("b", "in_progress")]
    assert extract_todos(msgs[:1]) == [Todo("a", "pending")]
    assert extract_todos([Message("user", (TextPart("x"),))]) is None


def test_todos_generic_tool_and_task_tools() -> None:
    generic = [_call("1", "todo_write", [{"text": "x", "done": True}, "plain item"])]
    assert extract_todos(generic) == [Todo("x", "completed"), Todo("plain item", "pending")]
    tasks = [
        _call("1", "TaskCreate", {"subject": "first", "description": "d", "activeForm": "F"}),
        _res("1", "Task #7 created successfully: first"),
        _call("2", "TaskCreate", {"subject": "second"}),
        _res("2", "Task #8 created successfully: second"),
        _call("3", "TaskUpdate", {"taskId": "7", "status": "completed"}),
        _call("4", "TaskUpdate", {"taskId": "8", "status": "deleted"}),
    ]
    assert extract_todos(tasks) == [Todo("first", "completed")]


def test_todos_from_claude_code_reminders() -> None:
    def reminder(kind: str, items: list[object]) -> Message:
        return Message(
            "user", (TextPart("<system-reminder>"),), extra={"attachment": {"type": kind, "content": items}}
        )

    tasks = [{"id": "4", "subject": "deploy", "status": "in_progress"}, {"id": "5", "subject": "test"}]
    msgs = [
        _call("1", "TodoWrite", {"todos": [{"content": "old", "status": "pending"}]}),
        reminder("task_reminder", tasks),  # the harness's list: newer than the tool call
        _call("2", "TaskUpdate", {"taskId": "5", "status": "completed"}),  # ids from the reminder
        reminder("todo_reminder", []),  # nothing open: does not erase what is known
    ]
    assert extract_todos(msgs) == [Todo("deploy", "in_progress"), Todo("test", "completed")]
    assert extract_todos(msgs[1:2]) == [Todo("deploy", "in_progress"), Todo("test", "pending")]
    assert extract_todos(msgs[3:]) is None


def test_todos_from_a_previous_summary() -> None:
    text = "## Current State\nx\n## Todo List\n- [pending] a\n\n- [completed] b\n## Other\n- c"
    assert todos_from_summary(text) == ["- [pending] a", "- [completed] b"]


# -------------------------------------------------------------------------------- registry


def test_parse_spec() -> None:
    assert parse_spec("anthropic:claude-haiku-4-5, OpenAI ,offline") == [
        ("anthropic", "claude-haiku-4-5"),
        ("openai", None),
        ("offline", None),
    ]
    assert parse_spec(None) == [("offline", None)]
    with pytest.raises(UsageError, match=r"did you mean 'openai-compatible'"):
        parse_spec("openai-compat:llama")
    with pytest.raises(UsageError, match="empty provider"):
        parse_spec("anthropic,,offline")


def test_chain_shape_and_windows() -> None:
    chain = make_summarizer("anthropic:claude-haiku-4-5")
    assert [s.provider for s in chain.links] == ["anthropic"]  # named alone: no fallback added
    assert [s.provider for s in make_summarizer("anthropic,offline").links] == ["anthropic", "offline"]
    assert chain.window == 200_000
    strict = make_summarizer("openai:gpt-4.1-mini,openai-responses:o3", strict=True)
    assert [s.provider for s in strict.links] == ["openai", "openai-responses"]
    local = make_summarizer(
        "openai-compatible:qwen3-coder", base_url={"openai-compatible": "http://x/v1"}, window=32_000
    )
    assert local.window == 32_000 and set(PROVIDERS) >= {"offline", "anthropic", "openai"}


def test_sdks_are_imported_lazily() -> None:
    code = (
        "import sys, ctxfold.providers.registry as r; r.make_summarizer('anthropic,openai');"
        "assert not {'anthropic', 'openai'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
