"""The seeds' threshold strategy (Crush-style): the whole conversation becomes
``[summary message, continuation message]``.

Before summarizing, the oldest messages are dropped until the rendered conversation fits in
80 % of the summarizer's own window (the seeds' step 3), so the summarizing call cannot
overflow either. A previous summary at the head of the conversation is passed on, so the new
summary rolls it in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxfold.providers.base import Summarizer, SummaryRequest, SummaryResult
from ctxfold.providers.facts import CONTINUATION_OPEN, SUMMARY_CLOSE, SUMMARY_OPEN, request_text
from ctxfold.providers.offline import answering_digest
from ctxfold.providers.render import clip
from ctxfold.providers.standing import DONE, IN_PROGRESS, STOPPED, WAITING, Standing, assess
from ctxfold.providers.streamed import Unknowable
from ctxfold.strategies.base import StrategyInput, StrategyOutput
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

SUMMARIZER_INPUT_RATIO = 0.80
CLIP_CHARS = 8_000
QUOTE_CHARS = 2_000  # the continuation points at the request; the summary holds it in full
_QUOTE_OPEN, _QUOTE_CLOSE = "The user's current request is: `", "`. Continue working"
_LAST_OPEN, _ASKED_CLOSE, _DONE_CLOSE = "The user's last request was: `", "`. The assistant then", "`. It"
TAIL_SHARE = 0.35  # of the summary's budget, at most, for the exchange under way kept verbatim
MIN_SUMMARY = 300  # tokens the summary keeps whatever the tail would take
UNLIMITED_WINDOW = 10**12


def summary_message(text: str) -> Message:
    return Message(
        "user", (TextPart(f"{SUMMARY_OPEN}\n{text}\n{SUMMARY_CLOSE}"),), extra={"ctxfold": "summary"}
    )


_DONE = (
    " was delivered and nothing is pending. Wait for the user's next request; do not redo, extend or continue "
    "the finished work."
)
_STOPPED = (
    " was stopped by the user before the assistant finished. Do not resume it on your own: wait for the user's "
    "next message, which says how to go on."
)
_BACKGROUND = (
    " A background task it started was still running (the summary names it): this session gets none of its "
    "notices, so read its output rather than wait for one."
)


def continuation_message(
    user_request: str | None, standing: Standing | None = None, *, tail: bool = False
) -> Message:
    """What the next agent is told to do, matching where things stand: carry on with the request
    (in progress), put the open question to the user again and wait (waiting), or wait for a new
    request (done) or for the word of a user who stopped it (stopped); never "continue" finished
    or stopped work."""
    head = f"{CONTINUATION_OPEN} because it exceeded the context window. The summary above contains all prior context."
    state = standing.state if standing is not None else IN_PROGRESS
    quoted = clip(user_request, QUOTE_CHARS) if user_request else None
    background = _BACKGROUND if standing is not None and standing.running else ""
    if state == WAITING and standing is not None:
        asked = clip(" ".join((standing.question or "").split()), QUOTE_CHARS)
        said = f" {_LAST_OPEN}{quoted}{_ASKED_CLOSE}" if quoted else " The assistant"
        text = (
            f"{head}{said} asked the user a question they have not answered yet: `{asked}`. Put this question "
            "to the user again and wait for their answer; do not choose for them or carry on before they reply.]"
        )
    elif state in (DONE, STOPPED):
        said = f" {_LAST_OPEN}{quoted}{_DONE_CLOSE}" if quoted else " The work"
        text = f"{head}{said}{_STOPPED if state == STOPPED else _DONE}]"
    elif quoted:
        below = " The step under way is kept verbatim after this note." if tail else ""
        below = background + below
        if standing is not None and standing.answers:  # "yes please" means nothing alone
            asked = clip(" ".join(standing.answers.split()), QUOTE_CHARS)
            below = f" It answers the assistant's question: `{asked}`.{below}"
        text = (
            f"{head} {_QUOTE_OPEN}{quoted}{_QUOTE_CLOSE} on this request without asking the user to repeat "
            f"anything.{below}]"
        )
    else:
        text = f"{head} Continue working without asking the user to repeat anything.{background}]"
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
    if not text.startswith(CONTINUATION_OPEN):
        return None
    for opener, closer in (
        (_QUOTE_OPEN, _QUOTE_CLOSE),
        (_LAST_OPEN, _ASKED_CLOSE),
        (_LAST_OPEN, _DONE_CLOSE),
    ):
        if opener in text and closer in text[text.index(opener) :]:
            start = text.index(opener) + len(opener)
            return text[start : text.rindex(closer)] or None
    return None


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


def clean_cut(messages: Sequence[Message], i: int) -> bool:
    """True when no tool call before ``i`` is answered at or after it, and vice versa."""
    before_calls = {p.id for m in messages[:i] for p in m.parts if isinstance(p, ToolCallPart)}
    after_results = {p.call_id for m in messages[i:] for p in m.parts if isinstance(p, ToolResultPart)}
    return not (before_calls & after_results)


@dataclass(frozen=True)
class Folded:
    messages: list[Message]
    summary: SummaryResult
    dropped: int
    tail: int = 0  # trailing input messages kept verbatim after the summary and continuation


def exchange_tail(
    body: Sequence[Message], standing: Standing, counter: Counter, budget_tokens: int
) -> list[Message]:
    """The exchange under way, verbatim: from the assistant's last words of the current step to
    the end, within ``TAIL_SHARE`` of the budget, cut only where no tool call is separated from
    its result (the start moves forward when the whole does not fit; nothing when nothing does)."""
    if standing.state != IN_PROGRESS or standing.tail_start is None or not body:
        return []
    limit = min(int(budget_tokens * TAIL_SHARE), budget_tokens - MIN_SUMMARY)
    sizes = [c.total for c in counter.count_messages(list(body[standing.tail_start :]))]
    for k in range(standing.tail_start, len(body)):
        if sum(sizes[k - standing.tail_start :]) > limit:
            continue
        if clean_cut(body, k) and body[k].role == "assistant":
            return list(body[k:])
    return []


def fold_for(inp: StrategyInput, messages: Sequence[Message], *, keep_tail: bool = False) -> Folded:
    """``fold`` of ``messages`` with a strategy input's counter, summarizer and settings."""
    return fold(
        messages,
        counter=inp.counter,
        summarizer=inp.summarizer,
        budget_tokens=inp.budget_tokens,
        summarizer_window=inp.summarizer_window,
        instructions=inp.instructions,
        source=inp.source,
        source_range=inp.source_range,
        cwd=inp.cwd,
        keep_tail=keep_tail,
    )


def streamed_fold_for(inp: StrategyInput, fold_streamed: Callable[..., Folded], **options: Any) -> Folded:
    """``fold_streamed`` of a context too long to hold (``StreamedContext.fold_streamed``) with
    a strategy input's counter and settings; only the offline digest reads such a context."""
    offline = answering_digest(inp.summarizer)
    if offline is None or inp.summarizer_window < UNLIMITED_WINDOW:
        raise Unknowable("only the offline digest reads a streamed context")
    return fold_streamed(
        counter=inp.counter,
        summarizer=offline,
        budget_tokens=inp.budget_tokens,
        instructions=inp.instructions,
        source=inp.source,
        source_range=inp.source_range,
        cwd=inp.cwd,
        **options,
    )


def fold(
    messages: Sequence[Message],
    *,
    counter: Counter,
    summarizer: Summarizer,
    budget_tokens: int,
    summarizer_window: int,
    instructions: str | None = None,
    source: str | None = None,
    source_range: str | None = None,
    cwd: str | None = None,
    keep_tail: bool = False,
) -> Folded:
    """Summarize ``messages`` (a summary ctxfold wrote at their head is rolled in); with
    ``keep_tail``, the exchange under way stays verbatim after ``[summary, continuation]``."""
    previous = summary_of(messages[0]) if messages else None
    body = list(messages[1:]) if previous is not None else list(messages)
    standing = assess(body)
    tail = exchange_tail(body, standing, counter, budget_tokens) if keep_tail else []
    tail_tokens = sum(c.total for c in counter.count_messages(tail)) if tail else 0
    kept, dropped = truncate_for_summarizer(body, counter, summarizer_window)
    request = SummaryRequest(
        kept,
        max(1, budget_tokens - tail_tokens),
        previous_summary=previous,
        instructions=instructions,
        dropped=dropped,
        source=source,
        source_range=source_range,
        cwd=cwd,
        continues=not keep_tail,
    )
    result = summarizer(request)
    note = continuation_message(latest_user_request(body), standing, tail=bool(tail))
    return Folded([summary_message(result.text), note, *tail], result, dropped, len(tail))


class SummaryStrategy:
    """Everything becomes ``[summary, continuation]``, and the exchange under way, when one is,
    stays verbatim after them."""

    name = "summary"
    uses_summarizer = True

    def apply(self, inp: StrategyInput) -> StrategyOutput:
        streamed = getattr(inp.messages, "fold_streamed", None)  # a context too long to hold
        folded = streamed_fold_for(inp, streamed) if streamed is not None else self._fold(inp)
        return self._output(inp, folded)

    def _fold(self, inp: StrategyInput) -> Folded:
        return fold_for(inp, inp.messages, keep_tail=True)

    def _output(self, inp: StrategyInput, folded: Folded) -> StrategyOutput:
        notes = (
            (f"{folded.dropped} oldest message(s) left out of the summarizer's input to fit its window",)
            if folded.dropped
            else ()
        )
        if folded.tail:
            notes = (
                *notes,
                f"the exchange under way ({folded.tail} message(s)) kept verbatim after the summary",
            )
        return StrategyOutput(
            folded.messages, folded=len(inp.messages) - folded.tail, summary=folded.summary, notes=notes
        )
