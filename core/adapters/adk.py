"""``ContextGuardPlugin``: ContextGuard for every agent of a Google ADK app, in one line.

    runner = Runner(agent=agent, app_name="app", session_service=service,
                    plugins=[ContextGuardPlugin()])

Before each model call ADK rebuilds ``llm_request.contents`` from the session's events; the
plugin hands them to the guard and sends what it prepared (after a compaction
``[summary, continuation] + events[watermark:]``), so the session's events are never rewritten.
After the call it reports the response's ``usage_metadata``; when the model refuses the request
as too long, it learns the stated size and calls the model once more with the compacted request
(``retry=False`` lets the error through instead). The guard's state is the session's own
``state``, under the reference design's keys (``__context_guard_summary_{agent}``...), one set
per agent, so it is kept by whatever session service the app runs (in memory, a database,
Vertex AI) and survives a restart with a persistent one.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin

from ctxfold.adapters._common import GuardFactory
from ctxfold.adapters.stores import StateView
from ctxfold.compaction.guard import ContextGuard
from ctxfold.providers.base import Summarizer

_KEPT = 256  # requests whose full contents are remembered for a retry (one per agent and invocation)


class ContextGuardPlugin(BasePlugin):
    """A ContextGuard for every LLM agent the runner runs.

    ``model`` names the model the guard counts for (its window and tokenizer); by default each
    request's own model name (``llm_request.model``). The other keyword arguments are
    ``ContextGuard``'s (``window=``, ``buffer=``, ``max_tokens=``, ``summarizer=``...).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        summarizer: Summarizer | str | None = None,
        retry: bool = True,
        name: str = "ctxfold_context_guard",
        **options: Any,
    ) -> None:
        super().__init__(name=name)
        self.factory = GuardFactory(model, summarizer, options)
        self.retry = retry
        self._contents: OrderedDict[tuple[str, str], list[Any]] = OrderedDict()

    def _guard(self, context: CallbackContext, llm_request: LlmRequest | None = None) -> ContextGuard:
        model = llm_request.model if llm_request is not None else None
        return self.factory.guard(StateView(context.state), context.agent_name, model)

    def _prepare(self, context: CallbackContext, llm_request: LlmRequest, contents: list[Any]) -> None:
        config = llm_request.config
        prepared = self._guard(context, llm_request).before_request(
            contents,
            system=config.system_instruction if config else None,
            tools=config.tools if config else None,
        )
        llm_request.contents = prepared.messages

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        contents = list(llm_request.contents)
        key = (callback_context.invocation_id, callback_context.agent_name)
        self._contents[key] = contents  # for a retry: the request is sent compacted
        self._contents.move_to_end(key)
        while len(self._contents) > _KEPT:
            self._contents.popitem(last=False)
        self._prepare(callback_context, llm_request, contents)
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if not llm_response.partial and llm_response.usage_metadata is not None:  # chunks carry no count
            self._guard(callback_context).after_response(llm_response.usage_metadata)
        return None

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        if not self._guard(callback_context, llm_request).on_error(error):
            return None
        contents = self._contents.get((callback_context.invocation_id, callback_context.agent_name))
        llm = _agent_model(callback_context)
        if not self.retry or contents is None or llm is None:
            return None  # ADK raises the error; what was learned goes with the session's next event
        self._prepare(callback_context, llm_request, contents)
        last = None
        async for response in llm.generate_content_async(llm_request, stream=False):
            last = response
        return last  # ADK hands it to after_model_callback like any response

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        for key in [k for k in self._contents if k[0] == invocation_context.invocation_id]:
            del self._contents[key]


def _agent_model(context: CallbackContext) -> Any:
    """The agent's model, to call it again: ADK's callback context reaches it only through its
    invocation context (present in every ADK 2 release this extra allows)."""
    agent = getattr(getattr(context, "_invocation_context", None), "agent", None)
    try:
        return getattr(agent, "canonical_model", None)
    except ValueError:  # an agent that inherits a model it cannot find
        return None
