"""The sliding window asks the summarizer only for a pass that can succeed: a tail that alone is
over the threshold fails whatever summary comes before it, so it is halved without a call."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ctxfold.engine.policy import Policy
from ctxfold.providers.base import SummaryRequest, SummaryResult
from ctxfold.strategies.base import StrategyInput
from ctxfold.strategies.sliding_window import SlidingWindowStrategy
from ctxfold.strategies.summary import SummaryStrategy
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart


class Recording:
    """A summarizer that answers briefly and remembers how many messages each call folded."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, request: SummaryRequest) -> SummaryResult:
        self.calls.append(len(request.messages))
        return SummaryResult("The user asked for the parser fix; it is half done.", provider="recording")


def _session(turns: int, big: range) -> list[Message]:
    """Turns of a request, a tool call and its result; the results of the turns ``big`` large."""
    out: list[Message] = []
    for i in range(turns):
        size = 4000 if i in big else 40
        out += [
            Message("user", (TextPart(f"step {i}: read file {i}"),)),
            Message("assistant", (ToolCallPart(f"c{i}", "read", {"path": f"f{i}.py"}),)),
            Message("tool", (ToolResultPart(f"c{i}", (TextPart("word " * size),), name="read"),)),
        ]
    return out


def _input(messages: Sequence[Message], threshold: int, summarizer: Recording) -> StrategyInput:
    counter = Counter(get_tokenizer("o200k"), "openai")

    def predict(msgs: Sequence[Message]) -> int:
        return 500 + sum(c.total for c in counter.count_messages(list(msgs)))

    return StrategyInput(
        messages=messages,
        counter=counter,
        policy=Policy(window=threshold + 1000, buffer=1000, buffer_rule="test"),
        predict=predict,
        summarizer=summarizer,
        summarizer_window=1_000_000,
        budget_tokens=500,
    )


@pytest.mark.parametrize(("big", "calls_before_fallback"), [(range(28, 40), 0), (range(28, 32), 1)])
def test_a_tail_over_the_threshold_costs_no_summarizer_call(big: range, calls_before_fallback: int) -> None:
    """40 turns: the tails are the last 12, 6 and 3. With the results of the last 12 large, no
    tail fits: the only calls are the fallback's, as many as a plain summary makes. With those of
    turns 28-31 large, the first tail does not fit alone, the second does: one call, and the pass
    succeeds."""
    messages = _session(40, big)
    threshold = 6000
    sliding, plain = Recording(), Recording()
    out = SlidingWindowStrategy().apply(_input(messages, threshold, sliding))
    notes = [n for n in out.notes if n.startswith("pass ")]
    if calls_before_fallback == 0:
        SummaryStrategy().apply(_input(messages, threshold, plain))
        assert sliding.calls == plain.calls and out.passes == 4 and len(notes) == 3
        assert any(n.startswith("fell back") for n in out.notes)
    else:
        assert len(sliding.calls) == 1 and out.passes == 2 and len(notes) == 1
        assert out.folded == sliding.calls[0] and len(out.messages) == len(messages) - out.folded + 1
