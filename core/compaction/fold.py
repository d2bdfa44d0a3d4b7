"""The fold step: apply a strategy to the context and check the result, for ``compact`` (files)
and ``ContextGuard`` (in-process) alike.

Folding starts a new segment: the calibrator is reset (no stale factor survives a compaction,
the reference design's step 6), the summary gets the budget that leaves the compacted request
under the threshold, tool calls and results are re-paired, and the result is refused when it
changed nothing, is still due, or shrank less than ``min_shrink``. A fold that fails leaves the
calibrator as it found it: what the session taught stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from ctxfold.engine.budget import fit_budget
from ctxfold.engine.calibration import Calibrator
from ctxfold.engine.policy import Decision, Policy, decide
from ctxfold.errors import NoShrinkError, UsageError, WindowTooSmallError
from ctxfold.providers.base import Summarizer, SummaryResult
from ctxfold.providers.streamed import Unknowable
from ctxfold.strategies.base import Strategy, StrategyInput
from ctxfold.strategies.mask import Premasked, note
from ctxfold.strategies.masked import MaskedCount
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.model import Message
from ctxfold.transcript.repair import repair_pairs


@dataclass(frozen=True)
class Folded:
    messages: list[Message]  # the compacted context, tool calls and results paired
    summary: SummaryResult | None  # None when the strategy called no summarizer
    notes: tuple[str, ...]  # what the strategy and the re-pairing did, for the user
    after: Decision  # the decision on the compacted request (a new segment)
    budget: int  # the summary's output budget in tokens
    tail: int = 0  # trailing input messages kept verbatim after the summary (a ContextGuard moves its watermark back by as many)


@dataclass(frozen=True)
class FoldInput:
    messages: Sequence[Message]
    strategy: Strategy
    counter: Counter
    policy: Policy
    calibrator: Calibrator
    fixed: int  # counted tokens of the system prompt, tools and per-request framing
    before: Decision  # the decision that called for the fold
    summarizer: Summarizer
    summarizer_window: int
    instructions: str | None = None
    keep_observations: int = 10
    min_shrink: float = 0.0  # share of the request a pass must take off, else NoShrinkError
    close_last: bool = False  # a call the last message left unanswered gets an "interrupted" result
    source: str | None = None  # the original session file, for the summary to name
    source_range: str | None = None
    cwd: str | None = None  # the session's working directory, for the summary to name


def fold(inp: FoldInput) -> Folded:
    cal = inp.calibrator
    saved = (list(cal.history), cal.prior)
    cal.reset()
    try:
        return _fold(inp)
    except BaseException:
        cal.history[:], cal.prior = saved
        raise


def _fold(inp: FoldInput) -> Folded:
    cal, policy, before = inp.calibrator, inp.policy, inp.before

    def estimate_of(msgs: Sequence[Message]) -> int:
        return inp.fixed + sum(c.total for c in inp.counter.count_messages(list(msgs)))

    budget = fit_budget(cal, policy, inp.fixed, before.estimate - inp.fixed)
    if isinstance(inp.messages, MaskedCount):
        _counted_only(inp, inp.messages, budget)
    out = inp.strategy.apply(
        StrategyInput(
            messages=inp.messages,
            counter=inp.counter,
            policy=policy,
            predict=lambda msgs: cal.predict(estimate_of(msgs)).tokens,
            summarizer=inp.summarizer,
            summarizer_window=inp.summarizer_window,
            budget_tokens=budget,
            instructions=inp.instructions,
            keep_observations=inp.keep_observations,
            source=inp.source,
            source_range=inp.source_range,
            cwd=inp.cwd,
            # masked as it was read: predicted from its count as it was read
            before=cal.predict(inp.fixed + inp.messages.unmasked).tokens
            if isinstance(inp.messages, Premasked)
            else None,
            predict_count=lambda n: cal.predict(inp.fixed + n).tokens,
        )
    )
    name = inp.strategy.name
    if out.summary is not None and not out.summary.text.strip():
        raise UsageError(f"the summarizer ({out.summary.provider}) returned an empty summary")
    final, repairs = repair_pairs(out.messages, close_last=inp.close_last)
    # the pass did nothing (a re-paired call is no shrink); a context masked as it was read
    # comes in as the pass leaves it, so what it masked is what tells
    if not out.masked and _same(out.messages, inp.messages):
        raise NoShrinkError(_changed_nothing(name, out.notes))
    after = decide(cal, policy, estimate_of(final))
    if after.due:
        raise WindowTooSmallError(_too_large(inp, f"{after.predicted:,}", _cause(inp, out.summary, budget)))
    grew = inp.min_shrink >= 0 and after.estimate >= before.estimate
    if grew and after.predicted <= before.predicted * (1 - inp.min_shrink):
        raise NoShrinkError(  # the prediction fell only because the fold started a new segment
            f"refused: the {name} pass would make what the log shows larger ({before.estimate:,} → "
            f"{after.estimate:,} counted tokens), not the {inp.min_shrink:.0%} reduction a pass must make; "
            f"the {before.predicted:,} predicted tokens are mostly what the log does not show, which no "
            "fold of it can remove"
        )
    if grew or after.predicted > before.predicted * (1 - inp.min_shrink):
        least = (
            f"less than the {inp.min_shrink:.0%} reduction a pass must make"
            if inp.min_shrink
            else "no smaller"
        )
        raise NoShrinkError(
            f"refused: the {name} pass would take the request from {before.predicted:,} to "
            f"{after.predicted:,} predicted tokens, {least}"
        )
    tail = len(inp.messages) - out.folded if out.summary is not None and out.folded else 0
    return Folded(final, out.summary, (*out.notes, *repairs), after, budget, tail)


def _changed_nothing(name: str, notes: Sequence[str]) -> str:
    return (
        f"refused: the {name} pass changed nothing ({'; '.join(notes) or 'no note'}); try --strategy summary"
    )


def _too_large(inp: FoldInput, predicted: str, cause: str) -> str:
    return (
        f"the request cannot fit: the {inp.strategy.name} pass leaves it at {predicted} predicted "
        f"tokens, still over the threshold of {inp.policy.threshold:,} in a {inp.policy.window:,}-token "
        f"window (before: {inp.before.predicted:,}); {cause}"
    )


def _counted_only(inp: FoldInput, counted: MaskedCount, budget: int) -> NoReturn:
    """A masked context too long to hold was counted as it was read, not kept. The pass is
    refused as the whole one would be when it masked nothing, or when even what re-pairing the
    tool calls cannot drop is over the threshold (the figure given is before re-pairing, hence
    "about"); one that may fit needs the session read again whole."""
    if not counted.masked:
        raise NoShrinkError(_changed_nothing(inp.strategy.name, (note(0, counted.results, counted.keep),)))
    if decide(inp.calibrator, inp.policy, inp.fixed + counted.floor).due:
        after = decide(inp.calibrator, inp.policy, inp.fixed + counted.tokens)
        raise WindowTooSmallError(_too_large(inp, f"about {after.predicted:,}", _cause(inp, None, budget)))
    raise Unknowable("a masked context that may fit was counted, not kept")


def _same(a: Sequence[Message], b: Sequence[Message]) -> bool:
    """Equal lists, by index (a streamed context is not read again whole)."""
    return len(a) == len(b) and all(a[i] == b[i] for i in range(len(a)))


def _cause(inp: FoldInput, summary: SummaryResult | None, budget: int) -> str:
    if summary is not None:
        tokens = inp.counter.tokenizer.count(summary.text)
        if tokens > budget * 1.1:
            return f"the summary is {tokens:,} tokens against a budget of {budget:,}"
    if inp.strategy.name != "summary":
        return "try --strategy summary, a larger window, or fewer tools"
    return "use a model with a larger window or fewer tools"
