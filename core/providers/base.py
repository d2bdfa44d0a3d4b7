"""The summarizer interface: what every provider receives and returns.

A summarizer is any callable ``(SummaryRequest) -> SummaryResult``. The engine and the
strategies know only this; providers (offline, Anthropic, OpenAI, OpenAI-compatible) live
behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxfold.transcript.model import Message


@dataclass(frozen=True)
class SummaryRequest:
    """What a summarizer is asked to fold: the conversation, the summary's token budget, and
    the summary it rolls in (a second compaction folds the first one's summary too).

    >>> request = ctxfold.SummaryRequest([ctxfold.Message("user", (ctxfold.TextPart("Fix the parser"),))], 2_000)
    >>> request.budget_tokens, request.previous_summary
    (2000, None)
    """

    messages: Sequence[Message]  # the conversation to fold, oldest first, already truncated
    budget_tokens: int  # the summary's output budget (buffer × 0.5)
    previous_summary: str | None = None
    todos: Sequence[Any] | None = None
    instructions: str | None = None  # the user's focus, like "/compact focus on X"
    dropped: int = 0  # oldest messages left out to fit the summarizer's window
    source: str | None = None  # the original session file, unchanged, for the next agent to look things up
    source_range: str | None = None  # which part of it was folded, in words ("entries 12–940 of 940")
    cwd: str | None = None  # the session's working directory, when its log names one
    continues: bool = False  # the conversation goes on verbatim after the summary (a sliding window)


@dataclass(frozen=True)
class SummaryResult:
    """A summarizer's answer: the summary, who wrote it, and what the call cost.

    >>> ctxfold.SummaryResult("The user asked to fix the parser.", provider="mine").provider
    'mine'
    """

    text: str
    provider: str
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)  # the summarizer call's own input/output tokens
    warnings: list[str] = field(default_factory=list)  # e.g. a failed provider of a fallback chain
    dropped: int = 0  # messages the provider left out to fit its window (on top of the request's)


class Summarizer(Protocol):
    """Anything that turns a :class:`SummaryRequest` into a :class:`SummaryResult`: a provider
    from :func:`make_summarizer`, or a function of your own.

    >>> def first_words(request: ctxfold.SummaryRequest) -> ctxfold.SummaryResult:
    ...     said = " / ".join(m.text[:40] for m in request.messages if m.role == "user")
    ...     return ctxfold.SummaryResult(f"The user said: {said}", provider="first-words")
    >>> guard = ctxfold.ContextGuard("gpt-4o", window=8_000, summarizer=first_words)
    """

    def __call__(self, request: SummaryRequest, /) -> SummaryResult: ...


def budget_summarizer(request: SummaryRequest) -> SummaryResult:
    """Deterministic stand-in for tests and simulations: text of exactly the budgeted size
    (one o200k token per word), mentioning how many messages it folded."""
    head = f"Summary of {len(request.messages)} messages."
    words = max(0, request.budget_tokens - 6)
    return SummaryResult(head + " note" * words, provider="budget")
