"""``context_guard_filter(...)``: ContextGuard in the OpenAI Agents SDK.

    session = SQLiteSession("task-1", "sessions.db")
    guard = context_guard_filter("gpt-4o", session=session)
    result = Runner.run_sync(agent, task, session=session, hooks=guard,
                             run_config=RunConfig(call_model_input_filter=guard))

The SDK hands ``call_model_input_filter`` the model input (the session's items and the run's
new ones, as Responses input items) and the instructions just before each model call; the
filter returns what the guard prepared, after a compaction ``[summary, continuation] +
items[watermark:]``, so the session's items are never rewritten. Given as the run's ``hooks``
as well, it reads the usage of each response (``on_llm_end``) to calibrate. The SDK lets a
model error end the run: ``guard.on_error(err)`` learns a refusal as too long, and the run
started again sends the compacted request.

The guard's state goes beside the session's items: in the ``SQLiteSession``'s own database file
(a table of its own, keyed by the session id), or in ``store`` (any ``StateStore``), one set per
agent, as the reference design keys it.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper, RunHooks
from agents.items import ModelResponse
from agents.run_config import CallModelData, ModelInputData

from ctxfold.adapters._common import GuardFactory
from ctxfold.adapters.stores import SqliteStore
from ctxfold.compaction.guard import ContextGuard
from ctxfold.engine.state import MemoryStore, StateStore
from ctxfold.errors import UsageError
from ctxfold.providers.base import Summarizer


class ContextGuardFilter(RunHooks):
    """The filter ``context_guard_filter`` makes: a ``call_model_input_filter`` and the run
    hooks that report each response's usage."""

    def __init__(self, factory: GuardFactory, store: StateStore) -> None:
        self.factory, self.store = factory, store
        self.agent = "default"  # the agent of the last request, whose refusal ``on_error`` learns

    def guard(self, agent: str | None = None) -> ContextGuard:
        return self.factory.guard(self.store, agent or self.agent)

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        self.agent = data.agent.name
        instructions = data.model_data.instructions
        prepared = self.guard().before_request(
            list(data.model_data.input), system=instructions or (), tools=_tools(data.agent)
        )
        return ModelInputData(input=prepared.messages, instructions=instructions)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        self.guard(agent.name).after_response(response.usage.input_tokens or None)

    def on_error(self, error: BaseException | str) -> bool:
        """Learn from the error that ended a run: True when the model refused the request as too
        long, and the next run's request goes out compacted."""
        code = getattr(error, "code", None)
        return self.guard().on_error(error, overflow=code == "context_length_exceeded")


def context_guard_filter(
    model: str | None = None,
    *,
    session: Any = None,
    store: StateStore | None = None,
    summarizer: Summarizer | str | None = None,
    **options: Any,
) -> ContextGuardFilter:
    """A ContextGuard for ``RunConfig(call_model_input_filter=...)`` and ``Runner.run(hooks=...)``.

    ``model`` names the model the guard counts for; its state goes in ``store``, or beside a
    ``SQLiteSession``'s items in its database file (``session=``), else in memory. One filter
    per conversation (per session): the SDK does not tell a filter which session it serves. The
    other keyword arguments are ``ContextGuard``'s (``window=``, ``buffer=``, ``max_tokens=``...)."""
    if store is None and session is not None:
        path = getattr(session, "db_path", None)
        if path is None or str(path) == ":memory:":
            raise UsageError(
                "session= keeps the guard's state in a SQLiteSession's database file: pass store= instead"
            )
        store = SqliteStore(path, scope=str(session.session_id))
    return ContextGuardFilter(GuardFactory(model, summarizer, options), store or MemoryStore())


def _tools(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The agent's function tools as the flat schemas the Responses API is sent (hosted tools
    and handoffs are the SDK's to describe; they are not counted)."""
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.params_json_schema}
        for t in agent.tools
        if isinstance(t, FunctionTool)
    ]
