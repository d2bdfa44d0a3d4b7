"""The strategy interface and its registry.

A strategy turns the current context (the messages after any earlier summary's watermark)
into a smaller one. It gets a ``predict`` function (the engine's calibrated prediction of a
request made of given messages) so it can check whether its result is under the threshold.
Strategies chain with ``+``: ``mask-observations+summary`` masks first and summarizes only if
the masked context is still over the threshold.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ctxfold.engine.policy import Policy
from ctxfold.errors import UsageError
from ctxfold.names import did_you_mean
from ctxfold.providers.base import Summarizer, SummaryResult
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.model import Message


@dataclass(frozen=True)
class StrategyInput:
    messages: Sequence[Message]
    counter: Counter
    policy: Policy
    predict: Callable[[Sequence[Message]], int]
    summarizer: Summarizer
    summarizer_window: int
    budget_tokens: int
    instructions: str | None = None
    keep_observations: int = 10
    source: str | None = None  # the original session file, named in the summary
    source_range: str | None = None  # the part of it folded, in words
    cwd: str | None = None  # the session's working directory, named in the summary
    # the prediction for the context as read, when ``messages`` no longer hold it (masked as it
    # was read: strategies/masked.py); None: ``predict(messages)``
    before: int | None = None
    # the prediction for a request whose messages count ``n`` tokens: for a context that streamed
    # by, whose messages are not there to count again (None: not given)
    predict_count: Callable[[int], int] | None = None


@dataclass(frozen=True)
class StrategyOutput:
    messages: list[Message]
    folded: int = 0  # leading input messages replaced by the summary (0: none)
    summary: SummaryResult | None = None
    masked: int = 0  # tool results replaced by a placeholder
    passes: int = 1
    notes: tuple[str, ...] = field(default=())


class Strategy(Protocol):
    name: str
    uses_summarizer: bool

    def apply(self, inp: StrategyInput) -> StrategyOutput: ...


STRATEGIES: dict[str, str] = {
    "summary": "ctxfold.strategies.summary:SummaryStrategy",
    "sliding-window": "ctxfold.strategies.sliding_window:SlidingWindowStrategy",
    "mask-observations": "ctxfold.strategies.mask:MaskObservationsStrategy",
}


def _load(name: str) -> Strategy:
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r}{did_you_mean(name, list(STRATEGIES))}")
    module, cls = STRATEGIES[name].split(":")
    strategy: Strategy = getattr(importlib.import_module(module), cls)()
    return strategy


def get_strategy(spec: str) -> Strategy:
    """The strategy named by ``spec``; ``a+b`` chains them (``b`` runs only if still needed).

    >>> ctxfold.get_strategy("mask-observations+summary").name
    'mask-observations+summary'
    """
    names = [n.strip() for n in spec.split("+") if n.strip()]
    if not names:
        raise UsageError("no strategy given")
    parts = [_load(n) for n in names]
    return parts[0] if len(parts) == 1 else Chain(parts)


MIN_SHRINK = 0.10  # a pass must take at least this share off the request, or it is refused


class Chain:
    """Apply strategies in order, stopping as soon as the request is under the threshold and
    smaller by the share a pass must make (a mask that saves 7 % goes on to the summary)."""

    def __init__(self, parts: list[Strategy]) -> None:
        self.parts = parts
        self.name = "+".join(p.name for p in parts)
        self.uses_summarizer = any(p.uses_summarizer for p in parts)

    def apply(self, inp: StrategyInput) -> StrategyOutput:
        messages = list(inp.messages)
        out = StrategyOutput(messages, passes=0)
        notes: list[str] = []
        masked = passes = folded = 0
        summary = None
        before = inp.predict(messages) if inp.before is None else inp.before
        for i, part in enumerate(self.parts):
            now = inp.predict(messages) if i > 0 else before
            if i > 0 and not inp.policy.due(now) and now <= before * (1 - MIN_SHRINK):
                notes.append(
                    f"{part.name} not needed: {self.parts[i - 1].name} brought the request under the threshold"
                )
                break
            out = part.apply(replace_messages(inp, messages) if i else inp)  # as given: a Premasked list
            messages, masked, passes = out.messages, masked + out.masked, passes + out.passes
            folded = out.folded or folded
            summary = out.summary or summary
            notes.extend(out.notes)
        return StrategyOutput(messages, folded, summary, masked, passes, tuple(notes))


def replace_messages(inp: StrategyInput, messages: Sequence[Message]) -> StrategyInput:
    return replace(inp, messages=messages)
