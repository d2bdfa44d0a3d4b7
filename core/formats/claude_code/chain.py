"""Where each line of a Claude Code log sits on its conversation's chain, and what a fork leaves.

Claude Code links every line to the one before it by ``parentUuid``, and rebuilds the
conversation it sends, on resume, along those links from the newest line. A line parented to
an earlier line than the last one forks the chain: whatever was read after that parent is left
behind and never sent again. ``/rewind`` and ``--resume-session-at`` write such a line (the new
question, parented to the answer before the one rewound), and so does a session resumed after a
crash ("Continue from where you left off.", parented to the line before a call that never ran).

Lines are often written ahead of their parent, though: a parallel call's result before the
call's own line, a ``system`` line before the response it follows; and some ``system`` lines
are parented oddly (an ``api_error`` several lines back, whose following lines the real counts
show were sent). So a line is *placed* (may be a fork's parent) only when its parent was read
before it, and only a user's own line (not only tool results) and an assistant line fork: a
``system`` line never does, though a question parented to one (a turn's ``turn_duration``)
may. The reader (``reader.py``) asks :meth:`Chain.where` a line's parent, and
when it forks, :meth:`Chain.after` which messages were read after it.
"""

from __future__ import annotations

from typing import Any

UNPLACED = -1


class Chain:
    """The main chain since the last compaction: ``placed`` maps each line's uuid to its
    number among the lines (``UNPLACED``: one read before its parent, or the compaction's boundary),
    ``given`` each message's id to the number of its first line, in reading order."""

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

    def place(self, uid: Any, kind: str, parent: Any, at: int | None) -> None:
        """Number the line just read (``kind`` its type; ``at``, where its parent sits)."""
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

    def clear(self, boundary: Any) -> None:
        """A compaction: the chain starts again at its ``boundary`` line (its uuid; unplaced,
        so the summary line that follows it is placed)."""
        self.placed.clear()
        self.given.clear()
        self.last = UNPLACED
        if isinstance(boundary, str):
            self.placed[boundary] = UNPLACED


def forks(kind: str, d: dict[str, Any]) -> bool:
    """Whether a line of this type may fork: an assistant line, or a user line that is not
    only tool results (a result hangs from its call's line, wherever that is)."""
    if kind == "assistant":
        return True
    if kind != "user":
        return False
    msg = d.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return not (
        isinstance(content, list)
        and content
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )
