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
may. The reader (``reader.py``) keeps the chain in a :class:`~ctxfold.formats.chain.Chain`.

Claude Code's own compaction (2.1.332: ``/compact``, and the automatic one) may keep the newest
messages verbatim: the boundary's metadata names them (``preserved``), and on resume Claude Code
links them after the summary line and the lines that followed the summary after them. The
reader keeps those messages in the context and puts their lines back on the chain there.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ctxfold.formats.chain import Chain


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


class Preserved(NamedTuple):
    """A compaction's preserved segment (``preserved``): the summary line it goes after, its
    lines in order, the messages they start, and the messages read after it (dropped)."""

    anchor: str
    lines: tuple[Any, ...]
    kept: tuple[str, ...]
    after: tuple[str, ...]


def preserved(chain: Chain, meta: dict[str, Any]) -> Preserved | None:
    """What Claude Code keeps verbatim across its own compaction, from the boundary's
    ``compactMetadata``: ``preservedMessages`` (the lines listed; it prefers them) or a
    ``preservedSegment`` (the chain's lines from ``headUuid`` to ``tailUuid``), put back after the
    summary line ``anchorUuid``. None when nothing is kept, or the lines are not on this chain
    (Claude Code then keeps nothing either: it finds no segment to put back)."""
    listed, segment = meta.get("preservedMessages"), meta.get("preservedSegment")
    if isinstance(listed, dict) and listed.get("uuids"):
        found = _listed(chain, listed)
    elif isinstance(segment, dict):
        found = _segment(chain, segment)
    else:
        return None
    if found is None:
        return None
    anchor, lines = found
    inside = set(lines)
    last = max(
        chain.placed[uid] for uid in lines
    )  # (one is placed: a line written ahead of its parent is -1)
    kept = tuple(mid for mid in chain.given if mid in inside)
    after = tuple(mid for mid, n in chain.given.items() if n > last)
    return Preserved(anchor, tuple(lines), kept, after)


def _listed(chain: Chain, listed: dict[str, Any]) -> tuple[str, list[Any]] | None:
    """The listed lines, when every one was read (a line written ahead of its parent too)."""
    anchor, lines = listed.get("anchorUuid"), listed.get("uuids")
    if (
        not isinstance(anchor, str)
        or not isinstance(lines, list)
        or not all(isinstance(u, str) for u in lines)
    ):
        return None
    numbers = [chain.placed.get(uid) for uid in lines]  # (``get``: a seam's reader notes those it lacks)
    if not all(isinstance(n, int) for n in numbers) or not any(n >= 0 for n in numbers):  # type: ignore[operator]
        return None
    return anchor, lines


def _segment(chain: Chain, segment: dict[str, Any]) -> tuple[str, list[Any]] | None:
    anchor, head, tail = segment.get("anchorUuid"), segment.get("headUuid"), segment.get("tailUuid")
    if not isinstance(head, str) or not isinstance(tail, str):
        return None
    first, last = chain.placed.get(head), chain.placed.get(tail)
    if not isinstance(anchor, str) or not isinstance(first, int) or not isinstance(last, int):
        return None
    if not 0 <= first <= last:
        return None
    return anchor, [uid for uid, n in chain.placed.items() if first <= n <= last]


def put_back(chain: Chain, kept: Preserved) -> None:
    """Place the preserved lines after the summary line, as Claude Code links them on resume:
    a line parented to them later forks there."""
    messages = set(kept.kept)
    for uid in kept.lines:
        chain.place(uid, None, None)
        if uid in messages:
            chain.note(uid)
