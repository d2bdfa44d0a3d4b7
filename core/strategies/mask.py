"""Observation masking: old tool results become a one-line placeholder; no LLM call.

Published comparisons of agent context management found masking old observations matches
LLM summarization at about half the cost. Every tool call keeps its result (a placeholder
naming the tool and the tokens removed), so pairing rules of every API still hold. The most
recent ``keep_observations`` tool results stay verbatim.
"""

from __future__ import annotations

from dataclasses import replace

from ctxfold.strategies.base import StrategyInput, StrategyOutput
from ctxfold.transcript.model import Message, TextPart, ToolResultPart


def placeholder(part: ToolResultPart, tokens: int) -> ToolResultPart:
    name = part.name or "tool"
    text = f"[{name} output removed by ctxfold to save context: {tokens:,} tokens]"
    return ToolResultPart(
        part.call_id, (TextPart(text),), name=part.name, is_error=part.is_error, extra=part.extra
    )


class MaskObservationsStrategy:
    name = "mask-observations"
    uses_summarizer = False

    def apply(self, inp: StrategyInput) -> StrategyOutput:
        messages = list(inp.messages)
        positions = [
            (i, j)
            for i, m in enumerate(messages)
            for j, p in enumerate(m.parts)
            if isinstance(p, ToolResultPart)
        ]
        older = positions[: max(0, len(positions) - inp.keep_observations)]
        if not older:
            return StrategyOutput(messages, notes=("nothing to mask: every tool result is recent",))
        targets: dict[int, set[int]] = {}
        for i, j in older:
            targets.setdefault(i, set()).add(j)
        counted = inp.counter.count_messages([Message("tool", (messages[i].parts[j],)) for i, j in older])
        sizes = {
            pos: c.total - inp.counter.framing.per_message for pos, c in zip(older, counted, strict=True)
        }
        masked = 0
        for i, js in targets.items():
            parts = list(messages[i].parts)
            for j in js:
                part = parts[j]
                assert isinstance(part, ToolResultPart)
                if sizes[(i, j)] > 40:  # a placeholder is ~20 tokens: masking tiny results saves nothing
                    parts[j] = placeholder(part, sizes[(i, j)])
                    masked += 1
            messages[i] = replace(messages[i], parts=tuple(parts))
        return StrategyOutput(
            messages, masked=masked, notes=(f"masked {masked} of {len(positions)} tool results",)
        )
