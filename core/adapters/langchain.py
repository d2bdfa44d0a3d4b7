"""``ContextGuardMiddleware``: ContextGuard in a LangChain 1.x agent (``create_agent``).

    agent = create_agent(model, tools=tools, checkpointer=checkpointer,
                         middleware=[ContextGuardMiddleware("claude-sonnet-4-5")])

It wraps each model call (``wrap_model_call``): the guard counts the request as it will go out
(the state's messages, the system message, the tools), predicts its real size from the usage the
model reported so far, and when due replaces the messages *of that request* with
``[summary, continuation] + messages[watermark:]``. The agent's ``messages`` are never
rewritten, unlike ``SummarizationMiddleware``, so the full history stays in the checkpoint and
each request starts as the one before it did (the provider's prompt cache keeps working). A
refusal as too long (``ContextOverflowError``, or a provider's words for it) is learned and the
call is made once more, compacted. The guard's state is a private key of the agent's state,
``ctxfold_context_guard``: it is saved by the agent's checkpointer with the thread (a
``SqliteSaver`` keeps it across restarts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    convert_to_openai_messages,
)
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.types import Command
from typing_extensions import NotRequired

from ctxfold.adapters._common import GuardFactory, restore
from ctxfold.compaction.guard import ContextGuard, Prepared
from ctxfold.engine.state import MemoryStore
from ctxfold.providers.base import Summarizer

STATE_KEY = "ctxfold_context_guard"


class ContextGuardState(AgentState):
    """The agent's state with the guard's: private (neither input nor output of the agent)."""

    ctxfold_context_guard: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class ContextGuardMiddleware(AgentMiddleware):
    """A ContextGuard around every model call of the agent.

    ``model`` names the model the guard counts for (its window and tokenizer); the keyword
    arguments are ``ContextGuard``'s (``window=``, ``buffer=``, ``max_tokens=``,
    ``summarizer=``...). ``retry=False`` lets a refusal as too long through (still learned)
    instead of calling the model again.
    """

    state_schema = ContextGuardState

    def __init__(
        self,
        model: str | None = None,
        *,
        summarizer: Summarizer | str | None = None,
        retry: bool = True,
        **options: Any,
    ) -> None:
        super().__init__()
        self.factory = GuardFactory(model, summarizer, options)
        self.retry = retry

    # ------------------------------------------------------------------ the model call

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ExtendedModelResponse:
        call = _Call(self.factory, request)
        try:
            response = handler(call.prepare())
        except Exception as err:
            if not (self.retry and call.learn(err)):
                raise
            response = handler(call.prepare())
        return call.done(response)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ExtendedModelResponse:
        call = _Call(self.factory, request)
        try:
            response = await handler(call.prepare())
        except Exception as err:
            if not (self.retry and call.learn(err)):
                raise
            response = await handler(call.prepare())
        return call.done(response)


class _Call:
    """One model call: a guard over a copy of the thread's guard state, which goes back into the
    agent's state with the response (a call that fails leaves the state as it was)."""

    def __init__(self, factory: GuardFactory, request: ModelRequest) -> None:
        self.request = request
        saved = cast("dict[str, Any] | None", request.state.get(STATE_KEY))
        self.store = MemoryStore(dict(saved or {}))
        self.guard: ContextGuard = factory.guard(self.store, "default")
        self.messages: list[AnyMessage] = list(request.messages)
        self.events = [to_event(m) for m in self.messages]
        system = request.system_message
        self.system = system.text if system is not None else ()
        self.tools = [convert_to_openai_tool(t) for t in request.tools]

    def prepare(self) -> ModelRequest:
        prepared: Prepared = self.guard.before_request(self.events, system=self.system, tools=self.tools)
        messages = restore(prepared, self.messages, _human)
        return self.request.override(messages=messages) if prepared.own else self.request

    def learn(self, error: Exception) -> bool:
        return self.guard.on_error(error, overflow=isinstance(error, ContextOverflowError))

    def done(self, response: ModelResponse) -> ExtendedModelResponse:
        for message in reversed(response.result):
            if isinstance(message, AIMessage):
                usage = message.usage_metadata
                self.guard.after_response(usage.get("input_tokens") if usage else None)
                break
        update = {STATE_KEY: dict(self.store.data)}
        return ExtendedModelResponse(model_response=response, command=Command(update=update))


def to_event(message: BaseMessage) -> Any:
    """A LangChain message as the OpenAI chat message it stands for, the shape the guard counts."""
    return convert_to_openai_messages(message)


def _human(texts: list[str]) -> list[AnyMessage]:
    return [HumanMessage(content=text) for text in texts]
