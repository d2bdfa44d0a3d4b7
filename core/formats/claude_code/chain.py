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
"""

from __future__ import annotations

from typing import Any


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
