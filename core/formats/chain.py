"""The lines of a log that links each line to its parent, and what a fork there leaves behind.

Claude Code (``parentUuid``) and pi (``parentId``) link every line of a session to the one it
follows, and rebuild the conversation they send along those links from the newest line. A line
parented to an earlier line than the last one forks: whatever was read after that parent is left
behind and never sent again. Each reader numbers its lines here (:meth:`Chain.place`), notes the
messages it gives (:meth:`Chain.note`), and, at a fork, asks which messages were read after the
parent (:meth:`Chain.after`) to leave them out by a ``Rewind``. Which lines may fork, and which
are placed, is each format's rule (``claude_code/chain.py``; every pi entry is placed).
"""

from __future__ import annotations

from typing import Any

UNPLACED = -1


class Chain:
    """The main chain since the last compaction: ``placed`` maps each line's id to its number
    among the lines (``UNPLACED``: a line read before its parent, or a compaction's boundary:
    no fork goes back to it), ``given`` each message's id to the number of its first line, in
    reading order."""

    __slots__ = ("given", "last", "lines", "lowest", "placed")

    def __init__(self) -> None:
        self.placed: dict[Any, int] = {}
        self.given: dict[str, int] = {}
        self.last = UNPLACED  # the line of the last message given
        self.lines = 0
        self.lowest: int | None = None  # the earliest line a fork went back to

    def where(self, parent: Any) -> int | None:
        """The number of ``parent``'s line (None: not read, or no parent)."""
        return self.placed.get(parent) if isinstance(parent, str) else None

    def place(self, uid: Any, parent: Any, at: int | None) -> None:
        """Number the line just read (``at``: where its parent sits): placed when its parent
        was read before it, or it has none."""
        if isinstance(uid, str):
            placed = parent is None or at is not None
            self.placed[uid] = self.lines if placed else UNPLACED
        self.lines += 1

    def note(self, message_id: str | None) -> None:
        """A message made from the line just read (its uuid): one of an unplaced line is never
        left behind (a result written ahead of its call belongs after it)."""
        if message_id is not None and self.placed.get(message_id, UNPLACED) >= 0:
            self.given[message_id] = self.last = self.lines - 1

    def after(self, at: int) -> list[str]:
        """The messages read after line ``at``, in order, forgotten with their lines: the branch
        a fork there leaves behind (a line parented into it later places nothing)."""
        self.lowest = at if self.lowest is None else min(self.lowest, at)
        gone: list[str] = []
        given = self.given
        while given:
            mid, n = given.popitem()
            if n <= at:
                given[mid] = n
                break
            gone.append(mid)
        placed = self.placed
        while placed:
            uid, n = placed.popitem()
            if 0 <= n <= at:
                placed[uid] = n
                break
        gone.reverse()
        self.last = next(reversed(given.values())) if given else UNPLACED
        return gone

    def joined(self, tail: Chain, opening: Any, cleared: bool) -> Chain:
        """This chain (a log's first part) going on with ``tail`` (the rest, read from a blank
        state that numbered ``opening``, its first line's parent, 0, and its own lines from 1):
        its lines numbered on from these; these forgotten when ``tail`` was ``cleared`` by a
        compaction."""
        n = self.lines - 1

        def on(marks: dict[Any, int]) -> dict[Any, int]:
            return {k: i + n if i >= 0 else i for k, i in marks.items() if k != opening}

        out = Chain()
        out.placed = on(tail.placed) if cleared else {**self.placed, **on(tail.placed)}
        out.given = on(tail.given) if cleared else {**self.given, **on(tail.given)}
        out.lines = n + tail.lines
        out.last = next(reversed(out.given.values())) if out.given else UNPLACED
        lows = (self.lowest, None if tail.lowest is None else tail.lowest + n)
        out.lowest = min((x for x in lows if x is not None), default=None)
        return out

    def clear(self, boundary: Any = None) -> None:
        """A compaction: the chain starts again at its ``boundary`` line (its id, when it is no
        line of the chain itself: kept unplaced, so the line that follows it is placed)."""
        self.placed.clear()
        self.given.clear()
        self.last = UNPLACED
        if isinstance(boundary, str):
            self.placed[boundary] = UNPLACED
