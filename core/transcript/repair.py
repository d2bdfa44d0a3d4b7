"""Make a message list obey every API's pairing rule: each tool call answered, each result asked.

Real logs hold interrupted calls (the user pressed Esc; the harness died) and, once a prefix is
summarized away, results whose call is gone. Providers reject both. Like Claude Code does on
an interrupt, an unanswered call gets a short synthetic error result right after its message;
a result whose call is not in the list is dropped. A message the harness no longer sends
(``Message.dropped``) is passed over as it is: no call of it is asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ctxfold.transcript.model import Message, Part, TextPart, ToolCallPart, ToolResultPart

INTERRUPTED = "[no result was recorded for this call: it was interrupted]"


def repair_pairs(messages: Sequence[Message], *, close_last: bool = False) -> tuple[list[Message], list[str]]:
    """The messages with every pair whole. A call left unanswered by the last message is kept
    open (its result may still come), unless ``close_last``: a session that is resumed later, with
    a new user turn after it, must not send a call no result follows."""
    out: list[Message] = []
    notes: list[str] = []
    asked: set[str] = set()
    answered = {
        p.call_id for m in messages if not m.dropped for p in m.parts if isinstance(p, ToolResultPart)
    }
    for i, m in enumerate(messages):
        if m.dropped:
            out.append(m)
            continue
        parts: list[Part] = []
        for p in m.parts:
            if isinstance(p, ToolResultPart) and p.call_id not in asked:
                notes.append(f"dropped a result for {p.call_id!r}: its call is not in the context")
                continue
            parts.append(p)
        if len(parts) != len(m.parts):
            if not parts:
                continue
            m = replace(m, parts=tuple(parts))
        out.append(m)
        calls = [p for p in m.parts if isinstance(p, ToolCallPart)]
        asked.update(p.id for p in calls)
        missing = [p for p in calls if p.id not in answered]
        if missing and (i < len(messages) - 1 or close_last):
            for p in missing:
                notes.append(f"added an 'interrupted' result for the unanswered call {p.id!r} ({p.name})")
            results = tuple(
                ToolResultPart(p.id, (TextPart(INTERRUPTED),), name=p.name, is_error=True) for p in missing
            )
            out.append(Message("tool", results, extra={"ctxfold": "repair"}))
    return out, notes
