"""``context_guard`` in a real pydantic-ai 2 agent (its graph, tool execution, retries and
capability hooks) driven by pydantic-ai's own ``FunctionModel`` playing a scripted provider:
many turns of tool calls past the window, a refusal as too long attempted again compacted, the
state kept in a file across a restart with the saved message history, and the README's example
as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from adapter_support import check_paired, real_tokens, run_example, starts_with_summary, too_long, tool_output

pytest.importorskip("pydantic_ai")

import itertools

from pydantic_ai import Agent, ModelHTTPError
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from ctxfold import JsonFileStore
from ctxfold.adapters.pydantic_ai import context_guard

INSTRUCTIONS = "You are a careful file agent."


def read_file(path: str) -> str:
    """Read a file."""
    return tool_output(path)


class Scripted:
    """The model's function: calls ``read_file`` ``steps`` times per user turn, then answers;
    reports its own count of each request and refuses one above ``limit``."""

    def __init__(self, limit: int = 10**9, steps: int = 3) -> None:
        self.limit, self.steps = limit, steps
        self.requests: list[dict[str, Any]] = []
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        body = [
            [(p.part_kind, getattr(p, "content", None), getattr(p, "args", None)) for p in m.parts]
            for m in messages
        ]
        tools = [(t.name, t.description, t.parameters_json_schema) for t in info.function_tools]
        n = real_tokens(body, tools, info.instructions)
        self.requests.append({"messages": messages, "real": n, "refused": n > self.limit})
        if n > self.limit:
            body_error = {"error": {"type": "invalid_request_error", "message": too_long(n, self.limit)}}
            raise ModelHTTPError.for_category(
                ModelContextWindowExceededError, status_code=400, model_name="scripted", body=body_error
            )
        k = len(self.requests)
        if self.calls < self.steps:
            self.calls += 1
            part: Any = ToolCallPart("read_file", {"path": f"f{k}"}, tool_call_id=f"call_{k}")
        else:
            self.calls = 0
            part = TextPart(f"Read the files ({k}).")
        return ModelResponse(parts=[part], usage=RequestUsage(input_tokens=n, output_tokens=9))


def first_text(messages: list[ModelMessage]) -> str:
    part = messages[0].parts[0] if messages and messages[0].parts else None
    return part.content if isinstance(part, UserPromptPart) and isinstance(part.content, str) else ""


def check_request(messages: list[ModelMessage]) -> None:
    calls = [
        (i, p.tool_call_id) for i, m in enumerate(messages) for p in m.parts if isinstance(p, ToolCallPart)
    ]
    results = [
        (i, p.tool_call_id) for i, m in enumerate(messages) for p in m.parts if isinstance(p, ToolReturnPart)
    ]
    check_paired(calls, results)
    kinds = [type(m) for m in messages]
    assert all(a is not b for a, b in itertools.pairwise(kinds)), "requests and responses alternate"


def converse(
    agent: Agent[None, str], turns: int, history: list[ModelMessage] | None = None
) -> list[ModelMessage]:
    for i in range(turns):
        history = agent.run_sync(
            f"Task {i}: read the next three files.", message_history=history
        ).all_messages()
    return history or []


def test_a_long_agent_run_stays_inside_the_window() -> None:
    """Fifteen runs of three tool calls each against an 8,000-token limit: compacted more than
    once, never refused or over the limit, each compacted request starts with the summary, keeps
    every call with its return and alternates requests and responses, and the run's own history
    is whole."""
    script = Scripted(limit=8_000)
    agent = Agent(
        FunctionModel(script),
        tools=[read_file],
        instructions=INSTRUCTIONS,
        capabilities=[context_guard("gpt-4o", window=8_000)],
    )
    history = converse(agent, 15)
    assert len(script.requests) == 15 * 4 and not any(r["refused"] for r in script.requests)
    assert max(r["real"] for r in script.requests) <= 8_000
    summaries = {
        first_text(r["messages"]) for r in script.requests if starts_with_summary(first_text(r["messages"]))
    }
    assert len(summaries) >= 2
    for r in script.requests:
        check_request(r["messages"])
    assert len(history) == 15 * 8 and not any(
        starts_with_summary(first_text([m])) for m in history if m.parts
    )


def test_a_refusal_is_attempted_again_compacted() -> None:
    """The guard believes in gpt-4o's 128k window; the model refuses above 6,000 tokens: each
    refusal is followed at once by a compacted attempt that fits, and the run never fails."""
    script = Scripted(limit=6_000)
    agent = Agent(
        FunctionModel(script),
        tools=[read_file],
        instructions=INSTRUCTIONS,
        capabilities=[context_guard("gpt-4o")],
    )
    converse(agent, 12)
    refused = [i for i, r in enumerate(script.requests) if r["refused"]]
    assert len(refused) == 1
    retry = script.requests[refused[0] + 1]
    assert not retry["refused"] and starts_with_summary(first_text(retry["messages"]))
    check_request(retry["messages"])


def test_the_state_survives_a_restart_with_a_file_store(tmp_path: Path) -> None:
    """A compacted conversation saved (pydantic-ai's own JSON of the history) and loaded by a new
    agent, capability and store: the next request starts with the same summary, not a new one."""
    state, saved = tmp_path / "guard.json", tmp_path / "history.json"
    first = Scripted()
    agent = Agent(
        FunctionModel(first),
        tools=[read_file],
        instructions=INSTRUCTIONS,
        capabilities=[context_guard("gpt-4o", window=8_000, store=JsonFileStore(state))],
    )
    history: list[ModelMessage] = []
    while not (first.requests and starts_with_summary(first_text(first.requests[-1]["messages"]))):
        history = converse(agent, 1, history or None)
    saved.write_bytes(ModelMessagesTypeAdapter.dump_json(history))
    second = Scripted()
    agent = Agent(
        FunctionModel(second),
        tools=[read_file],
        instructions=INSTRUCTIONS,
        capabilities=[context_guard("gpt-4o", window=8_000, store=JsonFileStore(state))],
    )
    converse(agent, 1, ModelMessagesTypeAdapter.validate_json(saved.read_bytes()))
    assert first_text(second.requests[0]["messages"]) == first_text(first.requests[-1]["messages"])
    assert len(second.requests[0]["messages"]) < len(history) // 2


def test_the_readme_pydantic_ai_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    script = Scripted(limit=6_000)
    namespace = run_example(
        "ctxfold.adapters.pydantic_ai",
        {"model": FunctionModel(script), "tools": [read_file], "task": "Task 0: read."},
    )
    history = namespace["result"].all_messages()
    for i in range(1, 8):
        history = namespace["agent"].run_sync(f"Task {i}: read.", message_history=history).all_messages()
    refused = [i for i, r in enumerate(script.requests) if r["refused"]]
    assert refused and all(
        starts_with_summary(first_text(script.requests[i + 1]["messages"])) for i in refused
    )
    assert (tmp_path / "agent-state.json").exists()
