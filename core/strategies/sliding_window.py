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
from collections.abc import Sequence

from ctxfold.strategies.base import StrategyInput, StrategyOutput, replace_messages
from ctxfold.strategies.summary import SummaryStrategy, clean_cut, fold_for
from ctxfold.transcript.model import Message

TAIL_RATIO = 0.30
MIN_TAIL = 3
MAX_PASSES = 3


def safe_split(messages: Sequence[Message], candidate: int) -> int | None:
    """The nearest clean boundary: walk back from ``candidate``, then forward. None if there is none."""
    for i in range(candidate, 0, -1):
        if clean_cut(messages, i):
            return i
    for i in range(candidate + 1, len(messages)):
        if clean_cut(messages, i):
            return i
    return None


class SlidingWindowStrategy:
    name = "sliding-window"
    uses_summarizer = True

    def apply(self, inp: StrategyInput) -> StrategyOutput:
        messages = list(inp.messages)
        n = len(messages)
        tail = max(MIN_TAIL, math.ceil(n * TAIL_RATIO))
        notes: list[str] = []
        for attempt in range(1, MAX_PASSES + 1):
            cut = safe_split(messages, max(1, n - tail))
            if cut is None or cut >= n:
                notes.append("no clean tool-call boundary for a tail: summarizing everything")
                break
            # a summary before the tail only adds to it (a prediction grows with what is sent):
            # when the tail alone is over the threshold, the pass fails without a summarizer call
            if not inp.policy.due(inp.predict(messages[cut:])):
                folded = fold_for(inp, messages[:cut])
                result = [folded.messages[0], *messages[cut:]]  # the tail continues; no continuation note
                if not inp.policy.due(inp.predict(result)):
                    return StrategyOutput(
                        result, folded=cut, summary=folded.summary, passes=attempt, notes=tuple(notes)
                    )
            notes.append(f"pass {attempt}: a {n - cut}-message tail is still over the threshold")
            tail = max(1, tail // 2)
        else:
            notes.append("fell back to a summary of everything: no tail fits under the threshold")
        out = SummaryStrategy().apply(replace_messages(inp, messages))
        return StrategyOutput(
            out.messages, out.folded, out.summary, passes=MAX_PASSES + 1, notes=(*notes, *out.notes)
        )
