"""Observation masking: old tool results become a one-line placeholder; no LLM call.

Published comparisons of agent context management found masking old observations matches
LLM summarization at about half the cost. Every tool call keeps its result (a placeholder
naming the tool and the tokens removed), so pairing rules of every API still hold. The most
recent ``keep_observations`` tool results stay verbatim.

``compact`` masks as it reads a session (:mod:`ctxfold.strategies.masked`): the context it
hands over is then a :class:`Premasked` list, returned as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ctxfold.strategies.base import StrategyInput, StrategyOutput
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.model import Message, TextPart, ToolResultPart

MIN_TOKENS = 40  # a placeholder is ~20 tokens: masking tiny results saves nothing


class Premasked(list[Message]):
    """A context whose old tool results were masked as it was read: ``masked`` of its
    ``results`` tool results, all but the newest ``keep``, counted by ``counter``: ``unmasked``
    tokens in all as they were read."""

    def __init__(
        self,
        messages: Iterable[Message],
        *,
        masked: int,
        results: int,
        keep: int,
        counter: Counter,
        unmasked: int,
    ) -> None:
        super().__init__(messages)
        self.masked, self.results, self.keep = masked, results, keep
        self.counter, self.unmasked = counter, unmasked


def placeholder(part: ToolResultPart, tokens: int) -> ToolResultPart:
    name = part.name or "tool"
    text = f"[{name} output removed by ctxfold to save context: {tokens:,} tokens]"
    return ToolResultPart(
        part.call_id, (TextPart(text),), name=part.name, is_error=part.is_error, extra=part.extra
    )


def results_of(m: Message) -> list[int]:
    """The positions of ``m``'s tool results among its parts."""
    return [j for j, p in enumerate(m.parts) if isinstance(p, ToolResultPart)]


def mask_parts(
    messages: Sequence[Message], targets: Sequence[tuple[int, int]], counter: Counter
) -> tuple[list[Message], int]:
    """``messages`` with the tool results at ``targets`` (message index, part index) masked
    where that saves anything; and how many were."""
    counted = counter.count_messages([Message("tool", (messages[i].parts[j],)) for i, j in targets])
    per_message = counter.framing.per_message
    by_message: dict[int, dict[int, int]] = {}
    for (i, j), c in zip(targets, counted, strict=True):
        by_message.setdefault(i, {})[j] = c.total - per_message
    out, masked = list(messages), 0
    for i, sizes in by_message.items():
        parts = list(out[i].parts)
        for j, tokens in sizes.items():
            part = parts[j]
            assert isinstance(part, ToolResultPart)
            if tokens > MIN_TOKENS:
                parts[j] = placeholder(part, tokens)
                masked += 1
        out[i] = replace(out[i], parts=tuple(parts))
    return out, masked


def note(masked: int, results: int, keep: int) -> str:
    if results <= keep:
        return "nothing to mask: every tool result is recent"
    return f"masked {masked} of {results} tool results"


class MaskObservationsStrategy:
    name = "mask-observations"
    uses_summarizer = False

    def apply(self, inp: StrategyInput) -> StrategyOutput:
        given = inp.messages
        if isinstance(given, Premasked) and given.keep == inp.keep_observations:
            return StrategyOutput(
                list(given), masked=given.masked, notes=(note(given.masked, given.results, given.keep),)
            )
        messages = list(given)
        positions = [(i, j) for i, m in enumerate(messages) for j in results_of(m)]
        older = positions[: max(0, len(positions) - inp.keep_observations)]
        if not older:
            return StrategyOutput(messages, notes=(note(0, len(positions), inp.keep_observations),))
        messages, masked = mask_parts(messages, older, inp.counter)
        return StrategyOutput(
            messages, masked=masked, notes=(note(masked, len(positions), inp.keep_observations),)
        )
