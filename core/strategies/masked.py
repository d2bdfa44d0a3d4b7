"""Observation masking as ``compact`` reads a session, so that old tool results are never held.

Masking after the read held the whole context first: on a 200 MB Codex log, whose context is
the whole log, about 500 MiB. :class:`Masking` stands between the reader and the context being
built: each entry waits until ``keep`` newer tool results have come by, then goes on with its
own results masked. A result followed by that many in the log is followed by as many in the
final context, if it is there at all: a reset or compaction drops the older messages, never
newer ones. The context built is then the one the strategy would return, given to it as a
:class:`~ctxfold.strategies.mask.Premasked` list. The placeholders' counts need the session's
counter, which the estimate settles after its first entries: until then entries wait.

A masked context too long for any window (a log that never compacts: 7.4 M tokens of a 200 MB
Codex log) is not held either: past a bound it becomes a :class:`MaskedCount`, which counts its
messages as they come and lets them go. The pass on it is refused from that count when it is
over the threshold whatever the repairs of the pairs drop; otherwise the session is read again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, NoReturn

from ctxfold.providers.streamed import Unknowable
from ctxfold.strategies.mask import Premasked, mask_parts, results_of
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.model import CompactionMarker, Entry, Message, ToolResultPart

BATCH = 256  # messages of a MaskedCount counted at a time


def _messages(e: Entry) -> Sequence[Message]:
    """The messages ``e`` adds to the context: a main-branch message, a compaction's replacement."""
    if isinstance(e, Message):
        return (e,) if e.branch is None else ()
    if isinstance(e, CompactionMarker) and e.replacement is not None:
        return e.replacement
    return ()


def _replaced(old: Message, new: Message) -> int:
    """How many of ``old``'s parts ``new`` replaced."""
    return sum(1 for a, b in zip(old.parts, new.parts, strict=True) if a is not b)


class Masking:
    """Fed every entry in order (:meth:`push`), gives them back in order, old results masked."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.counter: Counter | None = None  # the session's, once the estimate has chosen it
        self._queue: deque[tuple[Entry, int]] = deque()  # entries waiting, with their results
        self._waiting = 0  # tool results in the queue
        # masked message by id → (it, its results masked, the tokens of the message unmasked)
        self._made: dict[int, tuple[Message, int, int]] = {}

    def push(self, e: Entry) -> Iterator[Entry]:
        n = sum(len(results_of(m)) for m in _messages(e))
        self._queue.append((e, n))
        self._waiting += n
        while self.counter is not None and self._queue and self._waiting - self._queue[0][1] >= self.keep:
            e, n = self._queue.popleft()
            self._waiting -= n
            yield self._masked(e, n)

    def flush(self) -> Iterator[Entry]:
        """The entries still waiting, those of their results with ``keep`` newer ones masked."""
        while self._queue:
            e, n = self._queue.popleft()
            self._waiting -= n
            old = max(0, min(n, self._waiting + n - self.keep))
            yield self._masked(e, old) if self.counter is not None else e

    def retain(self, messages: Sequence[Message]) -> None:
        """Forget the masked messages a reset or compaction dropped from the context."""
        live = {id(m) for m in messages}
        self._made = {k: v for k, v in self._made.items() if k in live}

    def let_go(self, m: Message) -> tuple[int, int] | None:
        """Forget ``m`` (a :class:`MaskedCount` holds its figures): how many of its results
        were masked and its tokens unmasked, when it was masked here."""
        made = self._made.pop(id(m), None)
        return None if made is None else (made[1], made[2])

    def context(self, messages: list[Message]) -> Sequence[Message]:
        """The final context, as a :class:`Premasked` list when every entry was masked here
        (a :class:`MaskedCount` when it was too long to hold)."""
        if isinstance(messages, MaskedCount):
            messages.settle()
            return messages
        if self.counter is None:
            return messages  # nothing was masked: the strategy masks the list itself
        made = self._made
        results = sum(len(results_of(m)) for m in messages)
        masked = sum(n for _, n, _ in made.values())
        others = [m for m in messages if id(m) not in made]  # as they were read
        unmasked = sum(t for _, _, t in made.values()) + sum(
            c.total for c in self.counter.count_messages(others)
        )
        return Premasked(
            messages, masked=masked, results=results, keep=self.keep, counter=self.counter, unmasked=unmasked
        )

    def _masked(self, e: Entry, old: int) -> Entry:
        """``e`` with its first ``old`` tool results masked."""
        if not old:
            return e
        messages = list(_messages(e))
        targets = [(i, j) for i, m in enumerate(messages) for j in results_of(m)][:old]
        assert self.counter is not None
        out, _ = mask_parts(messages, targets, self.counter)
        changed = {i: n for i in {i for i, _ in targets} if (n := _replaced(messages[i], out[i]))}
        before = self.counter.count_messages([messages[i] for i in changed])
        for (i, n), count in zip(changed.items(), before, strict=True):
            self._made[id(out[i])] = (out[i], n, count.total)
        if isinstance(e, CompactionMarker):
            return replace(e, replacement=tuple(out))
        return out[0]


class MaskedCount(Sequence[Message]):
    """A masked context too long to hold: its messages are counted as they are appended, then
    let go. It knows ``tokens`` (as the fold counts the list), a floor under what is left of
    them once the pairs are repaired (``floor``), and :class:`Premasked`'s figures; reading
    its messages raises :class:`Unknowable` (the session is read again whole)."""

    def __init__(self, messages: Sequence[Message], masking: Masking) -> None:
        assert masking.counter is not None
        self.counter, self.keep, self._masking = masking.counter, masking.keep, masking
        self.n = self.tokens = self.floor = self.masked = self.results = self.unmasked = 0
        self._pending: list[tuple[Message, int | None]] = []
        for m in messages:
            self.append(m)

    def drop(self, ids: set[str]) -> None:
        """A rewind: the messages were counted and let go, so the session is read whole."""
        raise Unknowable(f"a rewind leaves out {len(ids)} message(s) of a masked context counted, not kept")

    def append(self, m: Message) -> None:
        made = self._masking.let_go(m)
        if made is not None:
            self.masked += made[0]
        self.n += 1
        self.results += len(results_of(m))
        self._pending.append((m, made[1] if made is not None else None))
        if len(self._pending) >= BATCH:
            self.settle()

    def settle(self) -> None:
        """Count the messages appended since the last count."""
        pending, self._pending = self._pending, []
        counts = self.counter.count_messages([m for m, _ in pending])
        for (m, unmasked), c in zip(pending, counts, strict=True):
            self.tokens += c.total
            self.unmasked += c.total if unmasked is None else unmasked
            # repairing the pairs drops an orphan result (its media too), and its message when
            # nothing else is left; it adds only results
            results = [isinstance(p, ToolResultPart) for p in m.parts]
            if not any(results):
                self.floor += c.total
            elif not all(results):
                by = c.by_category
                self.floor += c.total - by.get("tool_results", 0) - by.get("media", 0)

    def kept_from(self, message_id: str) -> NoReturn:
        raise Unknowable(f"message {message_id} may have been let go")

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> NoReturn:
        raise Unknowable("a masked context too long to hold was counted, not kept")

    def __iter__(self) -> Iterator[Message]:
        raise Unknowable("a masked context too long to hold was counted, not kept")
