"""Which Claude Code lines are the conversation, and which are bookkeeping the reader gives
nothing for (queue operations, file snapshots, hook progress, titles, the last prompt...).

Kept apart from the reader, importing nothing, so that the statusline can tell lines that change
nothing from the rest without loading the reader: after such a line it shows the line it
showed before (``cli/status_memo.py``).
"""

from __future__ import annotations

import json

# The line types the reader reads; any other type is bookkeeping: no entry, no state kept.
CONVERSATION = frozenset({"assistant", "user", "system", "attachment"})
# Claude Code 2.1.3xx's record of a request's system prompt and tools (its "request replay"),
# written once per distinct pair: the reader reads it too.
SHAPE = "api-request-shape"


def adds_nothing(raw: bytes) -> bool:
    """Whether the reader gives nothing for the complete line ``raw`` and keeps nothing of it: a
    JSON object whose ``type`` is another string (a line that is not JSON is left to the reader)."""
    try:
        d = json.loads(raw)
    except ValueError:
        return False
    kind = d.get("type") if isinstance(d, dict) else None
    return isinstance(kind, str) and kind not in CONVERSATION and kind != SHAPE
