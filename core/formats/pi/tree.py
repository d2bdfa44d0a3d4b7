"""pi's session tree, kept whole so that any entry can be gone back to.

pi builds each request along ``parentId`` from the last entry: the path from the root to it,
cut at the newest compaction on that path (its summary, then the entries from its
``firstKeptEntryId`` up to it, then those after it), or at the newest ``/clear``. An entry
parented back past a compaction, or onto a branch left earlier, thus brings back messages a
reader that goes on line by line has let go. The tree holds every entry's parent and what it
made (its messages, or its compaction), so the reader can give that context whole
(``Rewind.to``). A session's messages are held as long as it is read: pi's sessions are a few
MB, and pi itself holds them all too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxfold.formats.base import ReadWhole
from ctxfold.transcript.context import summary_head
from ctxfold.transcript.model import CompactionMarker, ContextReset, Entry, Message

CUTS = (CompactionMarker, ContextReset)  # the entries pi's context starts again after


class Tree:
    """``parents``: every entry's parent; ``made``: what it made (its messages, or its cut), or
    None for messages that the count cache's kept state left out."""

    __slots__ = ("made", "parents")

    def __init__(self) -> None:
        self.parents: dict[str, str | None] = {}
        self.made: dict[str, Sequence[Entry] | None] = {}

    def __contains__(self, uid: object) -> bool:
        return uid in self.parents

    def __getstate__(self) -> tuple[Any, ...]:
        """Kept without the messages (they would make the count cache's state as large as the
        session, and reading it back 5× slower): a branch back after it is read whole."""
        made = {uid: None if _has_message(m) else _cuts(m) for uid, m in self.made.items()}
        return self.parents, made

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.parents, self.made = state

    def add(self, uid: str, parent: str | None, made: Sequence[Entry]) -> None:
        self.parents[uid] = parent
        self.made[uid] = made  # (what pi leaves out is left when read)

    def path(self, uid: str) -> list[str]:
        """The ids from the root to ``uid`` (a loop in the parents ends it)."""
        out: list[str] = []
        seen: set[str] = set()
        at: str | None = uid
        while at is not None and at in self.parents and at not in seen:
            seen.add(at)
            out.append(at)
            at = self.parents[at]
        out.reverse()
        return out

    def context(self, path: list[str]) -> tuple[tuple[Message, ...], int]:
        """The messages pi sends along ``path``, and where on it the newest cut is (-1: none)."""
        cut, at = None, -1
        for i, uid in enumerate(path):
            for e in self.made[uid] or ():  # (an entry kept without its messages made no cut)
                if isinstance(e, CUTS):
                    cut, at = e, i
        after = self.messages(path[at + 1 :])
        if not isinstance(cut, CompactionMarker):
            return tuple(after), at
        before = path[:at]  # (the kept entries only: those before them are not needed)
        kept = self.messages(before[before.index(cut.first_kept_id) :]) if cut.first_kept_id in before else []
        return (*summary_head(cut), *kept, *after), at

    def messages(self, uids: list[str]) -> list[Message]:
        """The messages pi sends of these entries (not a response that failed or was stopped)."""
        out: list[Message] = []
        for uid in uids:
            made = self.made[uid]
            if made is None:
                raise ReadWhole(f"entry {uid}'s messages are not in the kept state")
            out.extend(e for e in made if isinstance(e, Message) and not e.dropped)
        return out


def _has_message(made: Sequence[Entry] | None) -> bool:
    return made is not None and any(isinstance(e, Message) for e in made)


def _cuts(made: Sequence[Entry] | None) -> tuple[Entry, ...]:
    return tuple(e for e in made or () if isinstance(e, CUTS))
