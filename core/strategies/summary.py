"""The seeds' threshold strategy (Crush-style): the whole conversation becomes
``[summary message, continuation message]``.

Before summarizing, the oldest messages are dropped until the rendered conversation fits in
80 % of the summarizer's own window (the seeds' step 3), so the summarizing call cannot
overflow either. A previous summary at the head of the conversation is passed on, so the new
summary rolls it in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ctxfold.providers.base import Summarizer, SummaryRequest, SummaryResult
from ctxfold.providers.facts import CONTINUATION_OPEN, SUMMARY_CLOSE, SUMMARY_OPEN, request_text
from ctxfold.providers.render import clip
from ctxfold.strategies.base import StrategyInput, StrategyOutput
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.model import Message, TextPart, ToolResultPart

SUMMARIZER_INPUT_RATIO = 0.80
CLIP_CHARS = 8_000
QUOTE_CHARS = 2_000  # the continuation points at the request; the summary holds it in full
_QUOTE_OPEN, _QUOTE_CLOSE = "The user's current request is: `", "`. Continue working"
UNLIMITED_WINDOW = 10**12


def summary_message(text: str) -> Message:
    return Message(
        "user", (TextPart(f"{SUMMARY_OPEN}\n{text}\n{SUMMARY_CLOSE}"),), extra={"ctxfold": "summary"}
    )


def continuation_message(user_request: str | None) -> Message:
    if user_request:
        text = (
            f"{CONTINUATION_OPEN} because it exceeded the context window. "
            f"The summary above contains all prior context. {_QUOTE_OPEN}{clip(user_request, QUOTE_CHARS)}"
            f"{_QUOTE_CLOSE} on this request without asking the user to repeat anything.]"
        )
    else:
        text = (
            f"{CONTINUATION_OPEN} because it exceeded the context window. "
            "The summary above contains all prior context. Continue working without asking the "
            "user to repeat anything.]"
        )
    return Message("user", (TextPart(text),), extra={"ctxfold": "continuation"})


def summary_of(message: Message) -> str | None:
    """The summary text when ``message`` starts with a summary ctxfold wrote, else None (a
    writer may have merged the continuation into the same message: only the first text counts)."""
    first = next((p.text for p in message.parts if isinstance(p, TextPart)), "")
    if message.role != "user" or not first.startswith(SUMMARY_OPEN) or SUMMARY_CLOSE not in first:
        return None
    return first[len(SUMMARY_OPEN) : first.rfind(SUMMARY_CLOSE)].strip()


def continued_request(message: Message) -> str | None:
    """The request an earlier continuation message quoted, so that a second compaction with no
    new request in between still names it."""
    text = message.text if message.role == "user" else ""
    if not text.startswith(CONTINUATION_OPEN) or _QUOTE_OPEN not in text or _QUOTE_CLOSE not in text:
        return None
    return text[text.index(_QUOTE_OPEN) + len(_QUOTE_OPEN) : text.rindex(_QUOTE_CLOSE)] or None


def latest_user_request(messages: Sequence[Message]) -> str | None:
    """The newest user message a person typed: not a tool result, ctxfold's own message, nor a
    harness note (a Claude Code system reminder, a hook's output), the same rule as the summary's
    "Current user request" (:func:`request_text`); failing that, the one an earlier
    continuation quoted."""
    for m in reversed(messages):
        text = request_text(m) if summary_of(m) is None else None
        if text:
            return text
    return next((q for m in reversed(messages) if (q := continued_request(m))), None)


def clip_tool_results(messages: Sequence[Message], limit: int = CLIP_CHARS) -> list[Message]:
    """Tool results longer than ``limit`` characters keep their head and tail only: the
    summarizer needs what a tool said, not a 300k-character payload (the seeds rendered results
    as a bare "[tool X returned a result]")."""
    out: list[Message] = []
    for m in messages:
        if not any(isinstance(p, ToolResultPart) and _result_chars(p) > limit for p in m.parts):
            out.append(m)
            continue
        parts = tuple(_clip(p, limit) if isinstance(p, ToolResultPart) else p for p in m.parts)
        out.append(replace(m, parts=parts))
    return out


def _result_chars(p: ToolResultPart) -> int:
    return sum(len(c.text) for c in p.content if isinstance(c, TextPart))


def _clip(p: ToolResultPart, limit: int) -> ToolResultPart:
    if _result_chars(p) <= limit:
        return p
    text = p.text
    head, tail = text[: limit * 3 // 4], text[-(limit // 4) :]
    clipped = f"{head}\n[... {len(text) - len(head) - len(tail):,} characters left out ...]\n{tail}"
    return replace(p, content=(TextPart(clipped),))


def truncate_for_summarizer(
    messages: Sequence[Message], counter: Counter, window: int
) -> tuple[list[Message], int]:
    """Clip giant tool results, then drop the oldest messages until the rest fit in 80 % of the
    summarizer's window; if what is left is still too big, clip harder."""
    budget = int(window * SUMMARIZER_INPUT_RATIO)
    if window >= UNLIMITED_WINDOW:
        return list(messages), 0  # a summarizer with no window (the offline digest) reads everything
    clipped = clip_tool_results(messages)
    counts = [c.total for c in counter.count_messages(clipped)]
    total = sum(counts)
    start = 0
    while start < len(clipped) - 1 and total > budget:
        total -= counts[start]
        start += 1
    kept = clipped[start:]
    limit = CLIP_CHARS
    while total > budget and limit > 100:
        limit //= 4
        kept = clip_tool_results(kept, limit)
        total = sum(c.total for c in counter.count_messages(kept))
    return kept, start


@dataclass(frozen=True)
class Folded:
    messages: list[Message]
    summary: SummaryResult
    dropped: int


def fold(
    messages: Sequence[Message],
    *,
    counter: Counter,
    summarizer: Summarizer,
    budget_tokens: int,
    summarizer_window: int,
    instructions: str | None = None,
) -> Folded:
    previous = summary_of(messages[0]) if messages else None
    body = list(messages[1:]) if previous is not None else list(messages)
    kept, dropped = truncate_for_summarizer(body, counter, summarizer_window)
    request = SummaryRequest(
        kept, budget_tokens, previous_summary=previous, instructions=instructions, dropped=dropped
    )
    result = summarizer(request)
    out = [summary_message(result.text), continuation_message(latest_user_request(body))]
    return Folded(out, result, dropped)


class SummaryStrategy:
    """Everything becomes ``[summary, continuation]``."""

    name = "summary"
    uses_summarizer = True

    def apply(self, inp: StrategyInput) -> StrategyOutput:
        folded = fold(
            inp.messages,
            counter=inp.counter,
            summarizer=inp.summarizer,
            budget_tokens=inp.budget_tokens,
            summarizer_window=inp.summarizer_window,
            instructions=inp.instructions,
        )
        notes = (
            (f"{folded.dropped} oldest message(s) left out of the summarizer's input to fit its window",)
            if folded.dropped
            else ()
        )
        return StrategyOutput(folded.messages, folded=len(inp.messages), summary=folded.summary, notes=notes)
