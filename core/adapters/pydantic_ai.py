"""``context_guard(...)``: ContextGuard as a pydantic-ai capability.

    agent = Agent(model, tools=tools,
                  capabilities=[context_guard("gpt-4o", store=JsonFileStore("agent-state.json"))])

pydantic-ai 2 runs a capability's hooks around each model request. Before each attempt
(``prepare_model_request``, the hook pydantic-ai names for context-window fitting) the guard
counts the request as it will go out (the messages, the instructions and system prompts, the
tool definitions) and, when due, replaces the messages *of that request* with
``[summary, continuation] + messages[watermark:]``; the run's message history is never
rewritten, so ``result.all_messages()`` stays the whole conversation. After the response it
reports the usage; a refusal as too long (``ModelContextWindowExceededError`` or a provider's
words for it) is learned and the request attempted again, compacted (``RetryModelRequest``).

Why not a ``ProcessHistory`` history processor: pydantic-ai writes what a history processor
returns back into the run's history (``ctx.messages``), so the conversation itself would be
replaced by the summary, and the guard's watermark, which counts the caller's messages, would no
longer line up with them.

The guard's state goes in ``store`` (a ``JsonFileStore``, a ``SqliteStore`` or any
``StateStore``), one set per conversation (pydantic-ai's ``conversation_id``, carried on the
message history), so one agent serves many conversations and a history saved and loaded again
after a restart goes on with its summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RetryModelRequest
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from ctxfold.adapters._common import GuardFactory, restore
from ctxfold.compaction.guard import ContextGuard
from ctxfold.engine.state import MemoryStore, StateStore
from ctxfold.providers.base import Summarizer

MAX_ATTEMPTS = 3  # a refusal is retried compacted; a second one of the same request gives up


@dataclass
class ContextGuardCapability(AbstractCapability[Any]):
    """The capability ``context_guard`` makes; see the module docstring."""

    factory: GuardFactory
    store: StateStore = field(default_factory=MemoryStore)
    retry: bool = True

    def _guard(self, ctx: RunContext[Any]) -> ContextGuard:
        return self.factory.guard(self.store, ctx.conversation_id or "default")

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        messages = list(request_context.messages)
        params = request_context.model_request_parameters
        system = [
            p.content
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, SystemPromptPart)
        ]
        system += [p.content for p in params.instruction_parts or ()]
        tools = [
            {"name": t.name, "description": t.description or "", "parameters": t.parameters_json_schema}
            for t in [*params.function_tools, *params.output_tools]
        ]
        prepared = self._guard(ctx).before_request(
            [to_event(m) for m in messages], system=system, tools=tools
        )
        if prepared.own:
            head = [
                p
                for m in messages
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, SystemPromptPart)
            ]
            request_context.messages = _merge_head(
                restore(
                    prepared,
                    messages,
                    lambda texts: [ModelRequest(parts=[*head, *map(UserPromptPart, texts)])],
                )
            )
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        self._guard(ctx).after_response(response.usage.input_tokens or None)
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        learned = self._guard(ctx).on_error(
            error, overflow=isinstance(error, ModelContextWindowExceededError)
        )
        if learned and self.retry and request_context.attempt < MAX_ATTEMPTS:
            raise RetryModelRequest() from error
        raise error


def context_guard(
    model: str | None = None,
    *,
    store: StateStore | None = None,
    summarizer: Summarizer | str | None = None,
    retry: bool = True,
    **options: Any,
) -> ContextGuardCapability:
    """A ContextGuard for ``Agent(capabilities=[...])``. ``model`` names the model the guard
    counts for; ``store`` keeps its state (in memory unless given); the other keyword arguments
    are ``ContextGuard``'s (``window=``, ``buffer=``, ``max_tokens=``...)."""
    return ContextGuardCapability(GuardFactory(model, summarizer, options), store or MemoryStore(), retry)


def _merge_head(messages: list[ModelMessage]) -> list[ModelMessage]:
    """ctxfold's summary and continuation as one request, and in the same request as the user's
    prompt that follows them, if one does: providers want requests and responses to alternate."""
    if len(messages) > 1 and isinstance(messages[1], ModelRequest):
        first, second = messages[0], messages[1]
        if isinstance(first, ModelRequest) and not any(
            isinstance(p, BaseToolReturnPart) for p in second.parts
        ):
            return [
                ModelRequest(parts=[*first.parts, *second.parts], instructions=second.instructions),
                *messages[2:],
            ]
    return messages


# ------------------------------------------------------------------------ counting


def to_event(message: ModelMessage) -> dict[str, Any]:
    """One pydantic-ai message as the Anthropic message it stands for (a request is the user's
    turn: prompts, tool returns; a response the assistant's: text, tool calls, thinking), so each
    stays one event and its tool calls pair with their returns by id. System prompts are counted
    apart, as the system."""
    if isinstance(message, ModelRequest):
        return {"role": "user", "content": [b for p in message.parts for b in _request_blocks(p)]}
    return {"role": "assistant", "content": [b for p in message.parts for b in _response_blocks(p)]}


def _request_blocks(part: Any) -> list[dict[str, Any]]:
    kind = getattr(part, "part_kind", "")
    if isinstance(part, SystemPromptPart):
        return []
    if isinstance(part, UserPromptPart):
        return _user_blocks(part.content)
    if isinstance(part, BaseToolReturnPart) and not kind.startswith("builtin"):
        return [
            {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": part.model_response_str()}
        ]
    if kind == "retry-prompt" and getattr(part, "tool_name", None):
        content = part.model_response()
        return [
            {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": content, "is_error": True}
        ]
    return _text_of(part)


def _response_blocks(part: Any) -> list[dict[str, Any]]:
    kind = getattr(part, "part_kind", "")
    if isinstance(part, BaseToolCallPart) and not kind.startswith("builtin"):
        return [
            {
                "type": "tool_use",
                "id": part.tool_call_id,
                "name": part.tool_name,
                "input": part.args_as_dict(),
            }
        ]
    if kind == "thinking":
        return [{"type": "thinking", "thinking": part.content, "signature": part.signature or ""}]
    return _text_of(part)


def _user_blocks(content: str | Sequence[Any]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif getattr(item, "is_image", False) and getattr(item, "base64", None):
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": item.media_type, "data": item.base64},
                }
            )
        elif getattr(item, "kind", "") == "image-url":
            blocks.append({"type": "image", "source": {"type": "url", "url": item.url}})
        else:
            blocks.append(
                {"type": "text", "text": str(getattr(item, "url", "") or getattr(item, "identifier", ""))}
            )
    return blocks


def _text_of(part: Any) -> list[dict[str, Any]]:
    """Any other part by its words: a retry's feedback, text, a provider-side tool's call or
    return (its arguments and content), a file's name."""
    if hasattr(part, "model_response") and callable(part.model_response):
        text = part.model_response()
    else:
        content = getattr(part, "content", None)
        args = getattr(part, "args", None)
        text = content if isinstance(content, str) else str(content or args or "")
    return [{"type": "text", "text": text}] if text else []
