"""The summary strategy over a context too long to hold: its messages stream by once.

``compact`` reads a long session once. When the context it folds grows past a bound, its
messages stop being kept: a :class:`StreamedContext` feeds each one to the digest's readings
(:mod:`ctxfold.providers.streamed`) and to the newest-request watch, and keeps only the first
few and a recent tail (what the kept exchange and a ``first_kept_id`` compaction can need). At
the end, :func:`fold_streamed` makes the pass :func:`~ctxfold.strategies.summary.fold` makes on
the whole list, from those readings: the same summary, continuation and kept tail. Whatever
it would need that was not kept raises :class:`~ctxfold.providers.streamed.Unknowable`, and
``compact`` reads the session again, whole. A sliding window's tail that fits is the one need
met otherwise: :class:`TailFits` asks for a second read that keeps the messages from the cut on
(:class:`KeepFrom`) and reads only those before it for the summary (``fold_streamed(head=True)``).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.facts import recorded_summary, request_text
from ctxfold.providers.helper import HelperDigesting
from ctxfold.providers.offline import OfflineSummarizer
from ctxfold.providers.standing import IN_PROGRESS, Standing
from ctxfold.providers.streamed import Digesting, Unknowable
from ctxfold.strategies.summary import (
    MIN_SUMMARY,
    TAIL_SHARE,
    Folded,
    continuation_message,
    continued_request,
    summary_message,
    summary_of,
)
from ctxfold.tokens.context_counts import ContextCounts
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

RETAIN_CHARS = 500_000  # the recent tail kept verbatim, in characters of text (roughly)
HEAD = 3


class TailFits(Unknowable):
    """A sliding window's tail from message ``cut`` fits, and its messages were not kept: read
    the session again keeping them (``passed``: the cuts whose tail, after its summary, was
    still over the threshold on an earlier read)."""

    def __init__(self, cut: int, passed: frozenset[int]) -> None:
        super().__init__(f"a tail from message {cut} fits: its messages were not kept")
        self.cut, self.passed = cut, passed


@dataclass(frozen=True)
class KeepFrom:
    """What the read for :class:`TailFits` keeps: in the context that starts at entry
    ``start``, the messages from ``cut`` on, whole."""

    start: int
    cut: int
    passed: frozenset[int] = frozenset()


def weight(m: Message) -> int:
    """About how many characters ``m`` holds: what keeping it costs (a cheap bound, not a count)."""
    n = 200
    for p in m.parts:
        if isinstance(p, TextPart):
            n += len(p.text)
        elif isinstance(p, ToolResultPart):
            n += 100 + sum(len(c.text) for c in p.content if isinstance(c, TextPart))
        elif isinstance(p, ToolCallPart):
            args = p.arguments
            n += 100 + (
                len(args)
                if isinstance(args, str)
                else sum(len(v) if isinstance(v, str) else 64 for v in args.values())
                if isinstance(args, dict)
                else 64
            )
        else:
            n += 100
    return n


class StreamedContext(Sequence[Message]):
    """The context's messages as they stream by: counted, read, and kept only at the head and
    in a recent tail of about ``retain`` characters. Indexing reaches only what was kept;
    iterating the whole raises :class:`Unknowable`."""

    def __init__(
        self,
        seed: Sequence[Message],
        retain: int | None = None,
        helper: bool = False,
        cuts: bool = False,
        keep: KeepFrom | None = None,
    ) -> None:
        self.n = 0
        self.cuts = cuts  # keep what a sliding window's passes read (``counted``, ``clean_cuts``)
        self.keep = keep  # a tail that fits: kept whole from its cut, and not read for the summary
        self._until = keep.cut if keep is not None else None  # the body read for the summary ends
        self.head: list[Message] = []
        self.previous: str | None = None  # a ctxfold summary heading the context
        self.body_head: list[Message] = []
        # the digest's readings, here or in a helper process (a long log: providers/helper.py)
        self.digesting: Digesting | HelperDigesting = HelperDigesting() if helper else Digesting()
        self.newest: str | None = None  # the newest request a person typed (not a summary)
        self.quoted: str | None = None  # the newest request an earlier continuation quoted
        self.tail: deque[tuple[int, Message, int]] = deque()
        self.tail_chars = 0
        self.retain = RETAIN_CHARS if retain is None else retain
        self.calls_before: set[str] = set()  # tool call ids of the messages no longer kept
        # where a sliding window may cut: each call id's first call, each result's last answer
        self.first_call: dict[str, int] = {}
        self.last_answer: dict[str, int] = {}
        # each message's (role, id), hashed (a long context has ~50,000): the read's counts are
        # matched to the messages by them
        self.names = array("q")
        self.sizes: Sequence[int] | None = None  # each message's tokens, once the read's count is matched
        for m in seed:
            self.append(m)

    def append(self, m: Message) -> None:
        i = self.n
        self.n += 1
        if self.cuts:
            self.names.append(hash((m.role, m.id)))
            for p in m.parts:
                if isinstance(p, ToolCallPart):
                    self.first_call.setdefault(p.id, i)
                elif isinstance(p, ToolResultPart):
                    self.last_answer[p.call_id] = i
        if i < HEAD:
            self.head.append(m)
        if i == 0:
            self.previous = summary_of(m)
        if (i > 0 or self.previous is None) and (self._until is None or i < self._until):  # what it folds
            words = request_text(m)
            self.digesting.add(m, words)
            if len(self.body_head) < 2:
                self.body_head.append(m)
            if words and summary_of(m) is None:
                self.newest = words
            self.quoted = continued_request(m) or self.quoted
        w = weight(m)
        self.tail.append((i, m, w))
        self.tail_chars += w
        while self.tail_chars > self.retain and len(self.tail) > 1:
            if self._until is not None and self.tail[0][0] >= self._until:
                break  # the tail that fits is kept whole
            _, old, w = self.tail.popleft()
            self.tail_chars -= w
            self.calls_before.update(p.id for p in old.parts if isinstance(p, ToolCallPart))

    def counted(self, counts: ContextCounts) -> None:
        """The read's count of each message (the estimate replays the same context): kept as
        ``sizes`` when the messages are those, in that order, else left unknown."""
        if (
            self.cuts
            and len(counts) == self.n
            and all(hash(row) == name for row, name in zip(counts.names(), self.names, strict=True))
        ):
            self.sizes = counts.totals

    def clean_cuts(self) -> list[bool]:
        """For each ``i``, :func:`~ctxfold.strategies.summary.clean_cut` ``(context, i)``: no
        call before ``i`` answered at or after it."""
        crossing = [0] * (self.n + 2)
        for call, first in self.first_call.items():
            last = self.last_answer.get(call, -1)
            if first < last:  # cuts first + 1 … last separate a call from its answer
                crossing[first + 1] += 1
                crossing[last + 1] -= 1
        clean, open_calls = [], 0
        for i in range(self.n + 1):
            open_calls += crossing[i]
            clean.append(open_calls == 0)
        return clean

    def kept_from(self, message_id: str) -> list[Message]:
        """The messages from the first with ``message_id`` on (a compaction that keeps the
        recent ones), none when no message has that id; when some messages were not kept,
        :class:`Unknowable` (the session is read whole)."""
        if self.tail[0][0] > len(self.head):  # not every message was kept: it may be one of those
            raise Unknowable(f"message {message_id} may not have been kept")
        kept = [*self.head, *(m for i, m, _ in self.tail if i >= len(self.head))]
        ids = [m.id for m in kept]
        return kept[ids.index(message_id) :] if message_id in ids else []

    def drop(self, ids: set[str]) -> None:
        """A rewind: the messages it leaves out were read by the digest as they came, so the
        session is read whole (:class:`Unknowable`)."""
        raise Unknowable(f"a rewind leaves out {len(ids)} message(s) the digest has read")

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Message]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            raise Unknowable("a streamed context cannot be sliced")
        i = i + self.n if i < 0 else i
        if not 0 <= i < self.n:
            raise IndexError(i)
        if i < len(self.head):
            return self.head[i]
        first = self.tail[0][0]
        if i >= first:
            return self.tail[i - first][1]
        raise Unknowable(f"message {i} of the context was not kept")

    def __iter__(self) -> Iterator[Message]:
        raise Unknowable("a streamed context cannot be read again whole")

    def kept_tail(self) -> list[Message]:
        """The messages from ``keep.cut`` on (a read for :class:`TailFits` kept them all)."""
        assert self._until is not None and self.tail and self.tail[0][0] <= self._until
        return [m for i, m, _ in self.tail if i >= self._until]

    def fold_streamed(self, **options: Any) -> Folded:
        """:func:`fold_streamed` of this context (what the summary strategy calls)."""
        return fold_streamed(self, **options)

    def latest_request(self) -> str | None:
        """:func:`~ctxfold.strategies.summary.latest_user_request` of the body."""
        return self.newest or self.quoted


def fold_streamed(
    ctx: StreamedContext,
    *,
    counter: Counter,
    summarizer: OfflineSummarizer,
    budget_tokens: int,
    instructions: str | None = None,
    source: str | None = None,
    source_range: str | None = None,
    cwd: str | None = None,
    head: bool = False,
) -> Folded:
    """:func:`~ctxfold.strategies.summary.fold` with ``keep_tail`` and a summarizer that reads
    everything (the offline digest), from the streamed readings. With ``head``, the fold of
    the messages before ``keep.cut`` of a read for :class:`TailFits`, as of
    ``messages[:cut]``: a sliding window's head, whose tail goes on verbatim after it."""
    read = ctx.digesting.result(recorded_summary(ctx.body_head))
    standing = read.standing
    tail = [] if head else _tail(ctx, standing, counter, budget_tokens)
    tail_tokens = sum(c.total for c in counter.count_messages(tail)) if tail else 0
    request = SummaryRequest(
        (),
        max(1, budget_tokens - tail_tokens),
        previous_summary=ctx.previous,
        instructions=instructions,
        source=source,
        source_range=source_range,
        cwd=cwd,
        continues=head,
    )
    result = summarizer.digested(request, read)
    note = continuation_message(ctx.latest_request(), standing, tail=bool(tail))
    return Folded([summary_message(result.text), note, *tail], result, 0, len(tail))


def _tail(ctx: StreamedContext, standing: Standing, counter: Counter, budget_tokens: int) -> list[Message]:
    """:func:`~ctxfold.strategies.summary.exchange_tail` on the kept tail: a start whose
    suffix is over the limit is passed over whatever came before it, so only when the whole
    kept tail is within the limit would an earlier start be needed (then :class:`Unknowable`)."""
    off = 0 if ctx.previous is None else 1  # context index → body index
    body = ctx.n - off
    if standing.state != IN_PROGRESS or standing.tail_start is None or body <= 0:
        return []
    limit = min(int(budget_tokens * TAIL_SHARE), budget_tokens - MIN_SUMMARY)
    kept = [(i - off, m) for i, m, _ in ctx.tail if i - off >= 0]
    first = max(standing.tail_start, kept[0][0])
    before = set(ctx.calls_before)
    for k, m in kept:
        if k < first:
            before.update(p.id for p in m.parts if isinstance(p, ToolCallPart))
    msgs = [m for k, m in kept if k >= first]
    sizes = [c.total for c in counter.count_messages(msgs)]
    if standing.tail_start < first and sum(sizes) <= limit:
        raise Unknowable("the exchange under way may start before the kept tail")
    for j, m in enumerate(msgs):
        if j:
            before.update(p.id for p in msgs[j - 1].parts if isinstance(p, ToolCallPart))
        if sum(sizes[j:]) > limit:
            continue
        after = {p.call_id for x in msgs[j:] for p in x.parts if isinstance(p, ToolResultPart)}
        if not (before & after) and m.role == "assistant":
            return msgs[j:]
    return []
