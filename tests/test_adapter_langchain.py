"""``ContextGuardMiddleware`` in a real LangChain 1.x agent (``create_agent``, its graph, its tool
node, a ``SqliteSaver`` checkpointer) driven by a scripted chat model built on LangChain's own
``BaseChatModel``: many turns of tool calls past the window, a refusal as too long retried
compacted in the same call, the guard's state kept in the checkpoint across a restart, and the
README's example as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from adapter_support import check_paired, real_tokens, run_example, starts_with_summary, too_long, tool_output

pytest.importorskip("langchain.agents")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import Field

from ctxfold.adapters.langchain import STATE_KEY, ContextGuardMiddleware

SYSTEM = "You are a careful file agent."


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return tool_output(path)


class ScriptedChat(BaseChatModel):
    """Calls ``read_file`` ``steps`` times per user turn, then answers; reports its own count of
    each request as usage and refuses one above ``limit`` as Anthropic words it."""

    limit: int = 10**9
    steps: int = 3
    requests: list[dict[str, Any]] = Field(default_factory=list)
    calls: int = 0  # tool calls made in the turn under way

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        sent = convert_to_openai_messages(messages)
        n = real_tokens(sent, [read_file.name, read_file.description])
        sent = [m for m in sent if m["role"] != "system"]  # the system prompt is sent on its own
        self.requests.append({"messages": sent, "real": n, "refused": n > self.limit})
        if n > self.limit:
            raise ContextOverflowError(too_long(n, self.limit))
        k = len(self.requests)
        if self.calls < self.steps:
            self.calls += 1
            reply = AIMessage(
                content="", tool_calls=[{"name": "read_file", "args": {"path": f"f{k}"}, "id": f"call_{k}"}]
            )
        else:
            self.calls = 0
            reply = AIMessage(content=f"Read the files ({k}).")
        reply.usage_metadata = {"input_tokens": n, "output_tokens": 9, "total_tokens": n + 9}
        return ChatResult(generations=[ChatGeneration(message=reply)])


def ask(agent: Any, text: str, thread: str = "t1") -> dict[str, Any]:
    return agent.invoke(
        {"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": thread}}
    )


def check_request(sent: list[dict[str, Any]]) -> None:
    calls = [(i, c["id"]) for i, m in enumerate(sent) for c in m.get("tool_calls", [])]
    results = [(i, m["tool_call_id"]) for i, m in enumerate(sent) if m["role"] == "tool"]
    check_paired(calls, results)


def test_a_long_agent_run_stays_inside_the_window(tmp_path: Path) -> None:
    """Fifteen user turns of three tool calls each against an 8,000-token limit: the middleware
    compacts more than once, no request is refused or over the limit, each request after a
    compaction starts with the summary and keeps every call with its result, and the agent's
    own messages (in the checkpoint) are the whole history, never rewritten."""
    model = ScriptedChat(limit=8_000)
    guard = ContextGuardMiddleware("gpt-4o", window=8_000)
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        agent = create_agent(
            model, tools=[read_file], system_prompt=SYSTEM, middleware=[guard], checkpointer=saver
        )
        for i in range(15):
            state = ask(agent, f"Task {i}: read the next three files.")
        saved = agent.get_state({"configurable": {"thread_id": "t1"}}).values[STATE_KEY]
    assert len(model.requests) == 15 * 4 and not any(r["refused"] for r in model.requests)
    assert max(r["real"] for r in model.requests) <= 8_000
    summaries = [
        r["messages"][0]["content"]
        for r in model.requests
        if starts_with_summary(str(r["messages"][0]["content"]))
    ]
    assert len(set(summaries)) >= 2  # compacted more than once
    first = next(
        i for i, r in enumerate(model.requests) if starts_with_summary(str(r["messages"][0]["content"]))
    )
    assert model.requests[first - 1]["real"] > 0.6 * 8_000  # compacted when it was due, not at once
    for r in model.requests:
        check_request(r["messages"])
    history = state["messages"]
    assert len(history) == 15 * 8 and not any(starts_with_summary(str(m.content)) for m in history)
    assert saved["__context_guard_summary_default"] in summaries[-1]


def test_a_refusal_is_learned_and_the_call_is_made_again_compacted() -> None:
    """The guard believes in gpt-4o's 128k window; the model refuses above 6,000 tokens: the one
    refusal is followed, in the same model call, by a compacted request that fits, the agent
    never sees the error, and the stated limit is kept in the agent's state."""
    model = ScriptedChat(limit=6_000)
    middleware = [ContextGuardMiddleware("gpt-4o")]
    agent = create_agent(
        model, tools=[read_file], system_prompt=SYSTEM, middleware=middleware, checkpointer=InMemorySaver()
    )
    for i in range(12):
        ask(agent, f"Task {i}.")
    state = agent.get_state({"configurable": {"thread_id": "t1"}}).values
    refused = [i for i, r in enumerate(model.requests) if r["refused"]]
    assert refused, "the conversation should outgrow the model's limit"
    for i in refused:
        retry = model.requests[i + 1]
        assert not retry["refused"] and starts_with_summary(retry["messages"][0]["content"])
        check_request(retry["messages"])
    assert len(refused) == 1  # learned once: the next compactions come before the limit
    assert state[STATE_KEY]["__context_guard_window_limit_default"] == 6_000


def test_the_state_survives_a_restart_with_the_sqlite_checkpointer(tmp_path: Path) -> None:
    """A thread compacted, the process gone (new saver, agent, middleware and model objects):
    the thread goes on from the checkpoint with the same summary and watermark, not compacted
    afresh and not sending the history the summary covers."""
    db = str(tmp_path / "checkpoints.db")

    def build(model: ScriptedChat, saver: SqliteSaver) -> Any:
        return create_agent(
            model,
            tools=[read_file],
            system_prompt=SYSTEM,
            middleware=[ContextGuardMiddleware("gpt-4o", window=8_000)],
            checkpointer=saver,
        )

    first = ScriptedChat()
    with SqliteSaver.from_conn_string(db) as saver:
        agent = build(first, saver)
        i = 0
        while not starts_with_summary(
            str(first.requests[-1]["messages"][0]["content"]) if first.requests else ""
        ):
            ask(agent, f"Task {i}.")
            i += 1
        before = agent.get_state({"configurable": {"thread_id": "t1"}}).values[STATE_KEY]
    second = ScriptedChat()
    with SqliteSaver.from_conn_string(db) as saver:
        agent = build(second, saver)
        ask(agent, "One more task.")
        after = agent.get_state({"configurable": {"thread_id": "t1"}}).values
    assert before["__context_guard_summary_default"] == after[STATE_KEY]["__context_guard_summary_default"]
    sent = second.requests[0]["messages"]
    assert sent[0]["content"] == first.requests[-1]["messages"][0]["content"]
    assert len(sent) < len(after["messages"]) // 2


def test_the_readme_langchain_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example as written, with a model that refuses above 6,000 tokens: the
    refusal is learned and retried compacted, and the checkpoint file holds the guard's state."""
    monkeypatch.chdir(tmp_path)
    model = ScriptedChat(limit=6_000)
    for i in range(8):
        run_example(
            "ctxfold.adapters.langchain", {"model": model, "tools": [read_file], "task": f"Task {i}: read."}
        )
    assert any(r["refused"] for r in model.requests)
    assert all(
        starts_with_summary(model.requests[i + 1]["messages"][0]["content"])
        for i, r in enumerate(model.requests)
        if r["refused"]
    )
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
        values = (
            create_agent(model, tools=[read_file], middleware=[ContextGuardMiddleware()], checkpointer=saver)
            .get_state({"configurable": {"thread_id": "task-1"}})
            .values
        )
    assert values[STATE_KEY]["__context_guard_window_limit_default"] == 6_000


def test_the_async_agent_is_guarded_the_same_way() -> None:
    """``ainvoke`` runs the middleware's async twin: compacted, never over the limit, paired."""
    import asyncio

    model = ScriptedChat(limit=6_000)
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=[ContextGuardMiddleware("gpt-4o")],
        checkpointer=InMemorySaver(),
    )

    async def converse() -> None:
        for i in range(10):
            await agent.ainvoke({"messages": [f"Task {i}."]}, {"configurable": {"thread_id": "a"}})

    asyncio.run(converse())
    refused = [i for i, r in enumerate(model.requests) if r["refused"]]
    assert len(refused) == 1 and starts_with_summary(model.requests[refused[0] + 1]["messages"][0]["content"])
    assert max(r["real"] for r in model.requests if not r["refused"]) <= 6_000
    for r in model.requests:
        check_request(r["messages"])
