"""What the framework adapters share: the guard's settings, kept once, and a guard built for
each call over the state the framework holds; the prepared request mapped back to the
framework's own message objects.

A guard is cheap to build (well under a millisecond) and its whole memory is its store, so an adapter
builds one per model call over the conversation's state where the framework keeps it (an ADK
session's ``state``, a LangChain checkpoint, a caller's file or SQLite store): several
conversations, processes or replicas can share one adapter object, and nothing is held in
memory between calls that a restart would lose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ctxfold.compaction.guard import ContextGuard, Prepared
from ctxfold.engine.state import StateStore
from ctxfold.errors import UsageError
from ctxfold.providers.base import Summarizer
from ctxfold.providers.registry import make_summarizer

T = TypeVar("T")


class GuardFactory:
    """The ``ContextGuard`` arguments an adapter was given, checked once (a bad window or an
    unknown provider fails where the adapter is made, not at the first model call)."""

    def __init__(self, model: str | None, summarizer: Summarizer | str | None, options: Mapping[str, Any]):
        if "store" in options or "agent" in options:
            raise UsageError("the adapter keeps the guard's state itself: no store= or agent= for it here")
        self.model = model
        self.summarizer = make_summarizer(summarizer) if isinstance(summarizer, str) else summarizer
        self.options = dict(options)
        self.guard(None, "default", model)  # raises UsageError on a bad argument

    def guard(self, store: StateStore | None, agent: str, model: str | None = None) -> ContextGuard:
        """A guard over ``store`` for one conversation (``agent`` names it within the store);
        ``model`` stands in when the adapter was given none (ADK names it in each request)."""
        return ContextGuard(
            self.model or model, store=store, agent=agent, summarizer=self.summarizer, **self.options
        )


def restore(prepared: Prepared, originals: Sequence[T], head: Callable[[list[str]], list[T]]) -> list[T]:
    """The prepared request in the framework's objects: ``head`` makes ctxfold's summary and
    continuation (given as texts) into the framework's messages, and the rest are the caller's
    own last messages, the very objects it gave (``originals`` lines up with the events the guard
    was given)."""
    own = prepared.messages[: prepared.own]
    tail = len(prepared.messages) - prepared.own
    texts = [_text(m) for m in own]
    return [*(head(texts) if texts else []), *originals[len(originals) - tail :]]


def _text(message: Any) -> str:
    """The text of one of ctxfold's own chat messages (``{"role": "user", "content": text}``)."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, str):
        raise UsageError(f"expected ctxfold's own chat message, got {type(message).__name__}")
    return content
