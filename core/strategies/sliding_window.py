"""The seeds' second strategy: a summary of the head plus a verbatim recent tail.

The tail starts at max(3, 30 %) of the messages and is cut only between complete tool-call /
tool-result pairs (walk back for a clean boundary, then forward), so neither side holds an
orphan. If the result is still over the threshold, the tail is halved and the pass retried,
at most three passes; the investigation in the seeds showed why a tail alone cannot be
trusted to shrink (an irreducible giant tool result), hence the retry and the final fallback
to the full summary.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ctxfold.providers.streamed import Unknowable
from ctxfold.strategies.base import StrategyInput, StrategyOutput, replace_messages
from ctxfold.strategies.streamed import StreamedContext, TailFits
from ctxfold.strategies.summary import SummaryStrategy, clean_cut, fold_for, streamed_fold_for
from ctxfold.transcript.model import Message

TAIL_RATIO = 0.30
MIN_TAIL = 3
MAX_PASSES = 3


def safe_split(n: int, candidate: int, clean: Callable[[int], bool]) -> int | None:
    """The nearest clean boundary of ``n`` messages: walk back from ``candidate``, then forward.
    None if there is none."""
    for i in range(candidate, 0, -1):
        if clean(i):
            return i
    for i in range(candidate + 1, n):
        if clean(i):
            return i
    return None


# What the passes read of the context: how many messages, whether a cut at ``i`` is clean,
# whether the tail from ``i`` alone is over the threshold, and the pass that keeps the tail
# from ``i`` (its output, None when the result is still due)
_View = tuple[
    int, Callable[[int], bool], Callable[[int], bool], Callable[[int, int, list[str]], StrategyOutput | None]
]


class SlidingWindowStrategy:
    name = "sliding-window"
    uses_summarizer = True

    def apply(self, inp: StrategyInput) -> StrategyOutput:
        if isinstance(inp.messages, StreamedContext):
            whole, (n, clean, over, keep_tail) = inp, _streamed(inp, inp.messages)
        else:
            messages = list(inp.messages)
            whole, (n, clean, over, keep_tail) = replace_messages(inp, messages), _listed(inp, messages)
        tail = max(MIN_TAIL, math.ceil(n * TAIL_RATIO))
        notes: list[str] = []
        for attempt in range(1, MAX_PASSES + 1):
            cut = safe_split(n, max(1, n - tail), clean)
            if cut is None or cut >= n:
                notes.append("no clean tool-call boundary for a tail: summarizing everything")
                break
            # a summary before the tail only adds to it (a prediction grows with what is sent):
            # when the tail alone is over the threshold, the pass fails without a summarizer call
            if not over(cut):
                kept = keep_tail(cut, attempt, notes)
                if kept is not None:
                    return kept
            notes.append(f"pass {attempt}: a {n - cut}-message tail is still over the threshold")
            tail = max(1, tail // 2)
        else:
            notes.append("fell back to a summary of everything: no tail fits under the threshold")
        out = SummaryStrategy().apply(whole)
        return StrategyOutput(
            out.messages, out.folded, out.summary, passes=MAX_PASSES + 1, notes=(*notes, *out.notes)
        )


def _listed(inp: StrategyInput, messages: list[Message]) -> _View:
    def keep_tail(cut: int, attempt: int, notes: list[str]) -> StrategyOutput | None:
        folded = fold_for(inp, messages[:cut])
        result = [folded.messages[0], *messages[cut:]]  # the tail continues; no continuation note
        if inp.policy.due(inp.predict(result)):
            return None
        return StrategyOutput(result, folded=cut, summary=folded.summary, passes=attempt, notes=tuple(notes))

    return (
        len(messages),
        lambda i: clean_cut(messages, i),
        lambda cut: inp.policy.due(inp.predict(messages[cut:])),
        keep_tail,
    )


def _streamed(inp: StrategyInput, ctx: StreamedContext) -> _View:
    """The passes on a context that streamed by, from the read's count of each message and
    where calls are answered: when no tail fits, the summary of everything streams as the
    summary strategy's does. A tail that fits needs its messages, which were not kept
    (:class:`TailFits`): ``compact`` reads the session again keeping them, and the passes run
    again on that read, up to the same cut."""
    sizes, predict = ctx.sizes, inp.predict_count
    if sizes is None or predict is None:
        raise Unknowable("the streamed messages' counts are not known")
    n = len(ctx)
    after = [0] * (n + 1)  # tokens of the messages from i on
    for i in range(n - 1, -1, -1):
        after[i] = after[i + 1] + sizes[i]
    keep = ctx.keep
    passed = set(keep.passed) if keep is not None else set()

    def keep_tail(cut: int, attempt: int, notes: list[str]) -> StrategyOutput | None:
        if cut in passed:  # its tail and summary were over the threshold, on an earlier read
            return None
        if keep is None or keep.cut != cut:
            raise TailFits(cut, frozenset(passed))
        folded = streamed_fold_for(inp, ctx.fold_streamed, head=True)
        result = [folded.messages[0], *ctx.kept_tail()]
        if inp.policy.due(inp.predict(result)):
            passed.add(cut)
            return None
        return StrategyOutput(result, folded=cut, summary=folded.summary, passes=attempt, notes=tuple(notes))

    return n, ctx.clean_cuts().__getitem__, lambda cut: inp.policy.due(predict(after[cut])), keep_tail
