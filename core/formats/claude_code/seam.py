"""Where a Claude Code log can be read from its middle, and how that read joins the first part's.

A large log's second part is read by another process (``tokens/split.py``) while this one reads
the first. The reader's state runs across lines, so the second part starts at a *seam*: a user
line that is not only tool results. The reader never holds such a line back: reading it first
emits every response and result it was holding (``Reader.finish`` does the same), so a reader
started fresh there emits what the reader of the whole file does, but for three things the
join mends or checks:

- the session id and model it announces: unknown at the start, so its first announcements may
  repeat what the first part's reader already had (a replay is left as it was by them); a part
  that reads request records (a system prompt and tools) is read again here instead
  (``replay_join.joinable``);
- tool results whose call it did not see: named by the first part's reader when the call is
  among those it kept open (then the join is refused, and the part read here again);
- where lines sit on the chain (``chain.py``): the reader started at the seam numbers the seam
  line's parent 0 and its own lines from 1, and the join numbers them on from the first part's.
  The first part's reader is told that parent, and forks there as the whole file's reader
  would at the seam line (a response or turns it leaves behind). The join is refused when a
  line of the part is parented into the first part (but to the seam line's parent), or forks
  at the seam line's parent where the whole file's reader placed none;
- which sub-agent's transcript the file is: read from the file's first conversation line;
- a compaction's preserved segment (``chain.preserved``): refused when its lines were read by the
  first part and the tail compacts, or when the first part's reader had not put them back yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from ctxfold.formats.claude_code.lines import CONVERSATION
from ctxfold.formats.claude_code.reader import Reader
from ctxfold.transcript.model import Entry

# Neither a session id nor a model: what a reader started at a seam knows of both.
UNKNOWN = "\x00unknown"
# How far into the file its first conversation line is looked for.
HEAD_LINES = 200


def is_seam(data: Any) -> bool:
    """Whether a fresh reader may start at this line (a parsed JSON line): a main-chain user line
    whose content is a text, or blocks that are not all tool results. (A sub-agent's prompt on a
    side chain is no seam worth trying: the main chain's call that started it is still open.)"""
    if not isinstance(data, dict) or data.get("type") != "user" or data.get("isSidechain") is True:
        return False
    msg = data.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return True
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content)
        and any(b["type"] != "tool_result" for b in content)
    )


class _Watched(dict[Any, Any]):
    """The open tool calls' names, noting each call id looked for and not found."""

    def __init__(self) -> None:
        super().__init__()
        self.missed: set[Any] = set()

    def pop(self, key: Any, *default: Any) -> Any:
        if key not in self:
            self.missed.add(key)
        return super().pop(key, *default)

    def __contains__(self, key: object) -> bool:
        found = super().__contains__(key)
        if not found:
            self.missed.add(key)
        return found


class _Placed(dict[Any, Any]):
    """The chain's lines (``Reader._chain``), noting each parent looked for and not found until
    the chain first starts again (at a compaction: then the whole file's reader forgets the
    first part's lines too)."""

    def __init__(self, opening: Any) -> None:
        super().__init__()
        self.opening = opening if isinstance(opening, str) else None  # the seam line's parent
        if self.opening is not None:
            self[self.opening] = 0  # placed by the first part, before every line of the tail
        self.missed: set[Any] = set()
        self.cleared = False

    def get(self, key: Any, default: Any = None) -> Any:
        if not self.cleared and key not in self:
            self.missed.add(key)
        return super().get(key, default)

    def clear(self) -> None:
        self.cleared = True
        super().clear()


@dataclass
class Unseen:
    """What the tail's reader looked for in the first part and did not find."""

    calls: set[Any] = field(default_factory=set)  # call ids of tool results
    parents: set[Any] = field(default_factory=set)  # lines' parents, but the seam line's
    opening: Any = None  # the seam line's parent, taken as known
    cleared: bool = False  # the chain started again in the tail


def tail_reader(f: BinaryIO, seam: int) -> Reader:
    """A reader for the lines from byte ``seam`` of ``f``: started as the file's first
    conversation line starts it, when that line comes before the seam."""
    reader = Reader()
    reader._session = reader._model = UNKNOWN
    reader._names = _Watched()
    f.seek(seam)
    reader._chain.placed = _Placed(orjson.loads(f.readline()).get("parentUuid"))
    reader._chain.lines = 1  # (line 0 stands for the seam line's parent)
    f.seek(0)
    for _, raw in zip(range(HEAD_LINES), iter(f.readline, b""), strict=False):
        if f.tell() > seam:
            break
        try:
            d = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(d, dict) and d.get("type") in CONVERSATION:
            reader._start(d)
            break
    return reader


def at_seam(reader: Reader, unseen: Unseen) -> Iterable[Entry]:
    """What the first part's reader emits at the seam line, before that line's own entries: its
    response left behind when the seam line is parented past it."""
    return [*reader._fork(reader._chain.where(unseen.opening)), *reader.finish()]


def detach(reader: Reader) -> Unseen:
    """What the tail's reader looked for and did not find; its names and chain made plain dicts
    (the reader is sent back to the first process)."""
    names, chain = reader._names, reader._chain.placed
    unseen = Unseen()
    if isinstance(names, _Watched):
        unseen.calls = names.missed
    if isinstance(chain, _Placed):
        unseen.opening = chain.opening
        unseen.parents = chain.missed
        unseen.cleared = chain.cleared
    reader._names = dict(names)
    reader._chain.placed = dict(chain)
    return unseen


def join(first: Reader, tail: Reader, unseen: Unseen) -> Reader | None:
    """The reader of the whole file at the tail's end, from the first part's reader at the seam,
    the tail's and what it did not find; None when the first part's open calls would have
    named a result the tail's reader left unnamed, the first part placed a line's parent the
    tail's reader did not, or the file is another sub-agent's to it.

    The tail's entries need no mending: what it announced that the first part's reader knew
    already (its first session id and model) sets the replay to what it was."""
    if unseen.calls & first._names.keys() or first._own != tail._own:
        return None
    if unseen.parents & first._chain.placed.keys():
        return None
    if unseen.opening is not None and unseen.opening not in first._chain.placed:
        return None  # (the whole file's reader did not place the seam line)
    if tail._chain.lowest == 0 and first._chain.placed[unseen.opening] < 0:
        return None  # a fork at the seam line's parent, which the whole file's reader cannot place
    if first._kept is not None:
        return None  # a compaction's kept lines, put back after its summary line in the tail
    tail._names = {**first._names, **tail._names}
    if tail._session == UNKNOWN:
        tail._session = first._session
    if tail._model == UNKNOWN:
        tail._model = first._model
    if tail._shape is None:  # (a tail that read records is not joined: its replay has a prompt)
        tail._shape = first._shape
    tail._chain = first._chain.joined(tail._chain, unseen.opening, unseen.cleared)
    if not unseen.cleared:
        tail._anchor = first._anchor  # (a line parented to the summary line was looked for: refused)
    if tail._pending is not None and tail._pending.start >= 0:
        tail._pending.start += first._chain.lines - 1
    return tail
