"""The summarizer interface: what every provider receives and returns.

A summarizer is any callable ``(SummaryRequest) -> SummaryResult``. The engine and the
strategies know only this; providers (offline, Anthropic, OpenAI, OpenAI-compatible) live
behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxfold.transcript.model import Message


@dataclass(frozen=True)
class SummaryRequest:
    messages: Sequence[Message]  # the conversation to fold, oldest first, already truncated
    budget_tokens: int  # the summary's output budget (buffer × 0.5)
    previous_summary: str | None = None
    todos: Sequence[Any] | None = None
    instructions: str | None = None  # the user's focus, like "/compact focus on X"
    dropped: int = 0  # oldest messages left out to fit the summarizer's window


@dataclass(frozen=True)
class SummaryResult:
    text: str
    provider: str
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)  # the summarizer call's own input/output tokens
    warnings: list[str] = field(default_factory=list)  # e.g. a failed provider of a fallback chain
    dropped: int = 0  # messages the provider left out to fit its window (on top of the request's)


Summarizer = Callable[[SummaryRequest], SummaryResult]


def budget_summarizer(request: SummaryRequest) -> SummaryResult:
    """Deterministic stand-in for tests and simulations: text of exactly the budgeted size
    (one o200k token per word), mentioning how many messages it folded."""
    head = f"Summary of {len(request.messages)} messages."
    words = max(0, request.budget_tokens - 6)
    return SummaryResult(head + " note" * words, provider="budget")
