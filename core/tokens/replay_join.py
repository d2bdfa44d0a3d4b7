"""One replay going on with another's: a log's second part replayed by another process from a
blank state (``tokens/split.py``), joined to the replay of its first part.

The other process knew nothing of the context its part starts in, so each of its requests
before its first recorded compaction (or reset) counted only the messages of its own part: those
rows get what this replay held at the seam added (its context, elided results, server tools, its
index and segment); after that compaction the context is the part's own, but for the system
prompt and tools, which no compaction clears. What it never learned (the model, the window)
was the first part's. A part that sets a system prompt or tools of its own, or holds a summary
for the message after it, is not joined (its counts would need what it did not see), nor one
after a first part that has had no response yet (what the log says of its harness, ``LogFacts``,
is read up to the first response: the part read its own up to its own).
"""

from __future__ import annotations

from typing import Any

from ctxfold.tokens.session import Replay

_FIXED = ("system", "tools")


def joinable(tail: dict[str, Any]) -> bool:
    """Whether a part's replay (``SessionCounter.snapshot``) can be joined to any first part."""
    t: Replay = tail["state"]
    return (
        tail["held_summary"] is None
        and not t.system
        and not t.tools
        and not t.harness
        and not any(t.by_category.get(c) for c in _FIXED)
    )


def join(first: dict[str, Any], tail: dict[str, Any]) -> dict[str, Any] | None:
    """The replay of the first part's entries and then the part's, from both replays
    (``SessionCounter.snapshot``; the part's ``joinable``), the first's state reused. None when
    the first holds a summary for the message after it (whose text the part kept), or has not
    yet learned what the log says of its harness (``LogFacts``, read up to the first response:
    the part read its own up to its own)."""
    if first["held_summary"] is not None or not first["state"].facts.done:
        return None
    a, t = first["state"], tail["state"]
    fixed = sum(a.by_category.get(c, 0) for c in _FIXED)
    context = sum(a.by_category.values())  # the first part's context, fixed part included
    elided = a.by_category.get("tool_results", 0) + a.by_category.get("media", 0)
    first_real = first["segment_has_real"]
    for q in t.requests:
        q.index += len(a.requests)
        if q.segment == 0:  # in the context the first part left
            q.estimate += context
            q.messages += len(a.context)
            q.elided += elided
            q.server_tools += a.server_tools
            q.server_tools_after += a.server_tools
            q.first_in_segment = q.first_in_segment and not first_real
        else:
            q.estimate += fixed
        q.fixed += fixed
        q.segment += a.segment
        q.model = q.model or a.model
        q.context_window = q.context_window or a.context_window
    for c in t.compactions:
        c.before_request += len(a.requests)
    reset = t.segment > 0
    if reset:
        a.context, a.server_tools = t.context, t.server_tools
        a.by_category = {**t.by_category, **{c: a.by_category.get(c, 0) for c in _FIXED}}
    else:
        a.context.extend(t.context)
        a.server_tools += t.server_tools
        for c, n in t.by_category.items():
            a.by_category[c] = a.by_category.get(c, 0) + n
    a.requests.extend(t.requests)
    a.compactions.extend(t.compactions)
    a.other_calls.extend(t.other_calls)
    a.other_times.extend(t.other_times)
    a.messages_seen += t.messages_seen
    a.side_messages += t.side_messages
    a.side_requests += t.side_requests
    a.segment += t.segment
    a.model = t.model or a.model
    a.context_window = t.context_window or a.context_window
    a.session_id = t.session_id or a.session_id
    a.agent = t.agent or a.agent
    a.project = a.project if a.project is not None else t.project
    return {
        "state": a,
        "in_run": tail["in_run"],
        "segment_has_real": tail["segment_has_real"] or (first_real and not reset),
        "held_summary": None,
    }
