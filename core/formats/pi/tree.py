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

from collections.abc import Iterable
from typing import NamedTuple

from ctxfold.formats.base import ReadWhole
from ctxfold.transcript.context import summary_head
from ctxfold.transcript.model import CompactionMarker, ContextReset, Entry, Message


class Node(NamedTuple):
    parent: str | None
    # the messages pi sends again (not those it leaves out), or the cut; None: messages that the
    # count cache's kept state left out
    made: tuple[Entry, ...] | None


class Tree:
    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}

    def __getstate__(self) -> dict[str, Node]:
        """Kept without the messages (they would make the count cache's state as large as the
        session, and reading it back 5× slower): a branch back after it is read whole."""
        return {uid: Node(n.parent, None) if _has_message(n.made) else n for uid, n in self.nodes.items()}

    def __setstate__(self, nodes: dict[str, Node]) -> None:
        self.nodes = nodes

    def __contains__(self, uid: object) -> bool:
        return uid in self.nodes

    def add(self, uid: str, parent: str | None, made: Iterable[Entry]) -> None:
        kept = tuple(
            e
            for e in made
            if (isinstance(e, Message) and not e.dropped) or isinstance(e, (CompactionMarker, ContextReset))
        )
        self.nodes[uid] = Node(parent, kept)

    def path(self, uid: str) -> list[str]:
        """The ids from the root to ``uid`` (a loop in the parents ends it)."""
        out: list[str] = []
        seen: set[str] = set()
        at: str | None = uid
        while at is not None and at in self.nodes and at not in seen:
            seen.add(at)
            out.append(at)
            at = self.nodes[at].parent
        out.reverse()
        return out

    def context(self, path: list[str]) -> tuple[tuple[Message, ...], int]:
        """The messages pi sends along ``path``, and where on it the newest cut is (-1: none)."""
        cut, at = None, -1
        for i, uid in enumerate(path):
            for e in self.nodes[uid].made or ():  # (a node kept without messages holds no cut)
                if isinstance(e, (CompactionMarker, ContextReset)):
                    cut, at = e, i
        after = self._messages(path[at + 1 :])
        if not isinstance(cut, CompactionMarker):
            return tuple(after), at
        before = self._messages(path[:at])
        ids = [m.id for m in before]
        kept = before[ids.index(cut.first_kept_id) :] if cut.first_kept_id in ids else []
        return (*summary_head(cut), *kept, *after), at

    def _messages(self, uids: list[str]) -> list[Message]:
        out: list[Message] = []
        for uid in uids:
            made = self.nodes[uid].made
            if made is None:
                raise ReadWhole(f"entry {uid}'s messages are not in the kept state")
            out.extend(e for e in made if isinstance(e, Message))
        return out


def _has_message(made: tuple[Entry, ...] | None) -> bool:
    return made is not None and any(isinstance(e, Message) for e in made)
