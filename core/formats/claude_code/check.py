"""Claude Code's own rules for a session log, as ``claude --resume`` relies on them.

``check`` works on the entries our reader produced (one sessionId, the conversation starts
with a user message, a compaction is followed by the ``isCompactSummary`` user line, tool
results answer the ``tool_use`` blocks of the assistant turn just before them, tool call ids
the Messages API takes: Claude Code sends the log's ``tool_use`` blocks back as they are). ``check_file``
adds the rules that need the raw lines: per-line fields, unique uuids, the resume walk from the
newest main-chain line back along ``parentUuid`` reaching a root without a missing link (a
missing parent makes Claude Code drop everything before it), no second root on the main chain,
and the shape of ``compact_boundary`` lines. The two are disjoint: ``ctxfold validate`` runs both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.jsonl import iter_lines
from ctxfold.formats.validate import TurnCalls
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Entry, Message

_TOOL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what the Messages API accepts as a tool_use id
_CONVERSATION = ("user", "assistant", "system")
_LINKED = (*_CONVERSATION, "attachment", "progress")
# Written by Claude Code on every user/assistant/system line (v1.0.98 … v2.1.126).
_REQUIRED: dict[str, type] = {
    "sessionId": str,
    "timestamp": str,
    "cwd": str,
    "version": str,
    "gitBranch": str,
    "userType": str,
    "isSidechain": bool,
}


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    session: str | None = None
    started = False
    boundary: int | None = None  # line of a compaction still waiting for its summary line
    turn = TurnCalls()
    for line, e in items:
        if isinstance(e, ContextUpdate) and e.session_id:
            if session is not None and e.session_id != session:
                out.append((line, f"second sessionId {e.session_id!r} (the log is session {session!r})"))
            session = session or e.session_id
        elif isinstance(e, CompactionMarker):
            boundary = line
            turn.reset()
        elif isinstance(e, Message) and e.branch is None:
            if boundary is not None:
                if e.role != "user" or e.extra.get("isCompactSummary") is not True:
                    out.append((line, "compact_boundary is not followed by an isCompactSummary user line"))
                boundary = None
            elif not started and e.role != "user":
                article = "an" if e.role == "assistant" else "a"
                out.append(
                    (line, f"the conversation starts with {article} {e.role} message, not a user message")
                )
            started = True
            for c in e.tool_calls:
                if not _TOOL_ID.fullmatch(c.id):
                    out.append((line, f"tool_use id {c.id!r} is not one the Messages API takes"))
            for cid in turn.unanswered(e):
                out.append((line, f"tool_result {cid!r} answers no tool_use of the assistant turn before it"))
    if boundary is not None:
        out.append((boundary, "compact_boundary is not followed by an isCompactSummary user line"))
    return out


def _line_rules(d: dict[str, Any], no: int, out: list[tuple[int, str]]) -> None:
    for key, typ in _REQUIRED.items():
        if not isinstance(d.get(key), typ):
            out.append((no, f"missing or mistyped field {key!r} ({typ.__name__} expected)"))
    if "parentUuid" not in d:
        out.append(
            (no, "missing field 'parentUuid' (null only on the first line and compact_boundary lines)")
        )
    elif d["parentUuid"] is not None and not isinstance(d["parentUuid"], str):
        out.append((no, "parentUuid should be a string or null"))
    if d.get("type") == "system" and d.get("subtype") == "compact_boundary":
        if d.get("parentUuid") is not None:
            out.append(
                (no, "compact_boundary should have parentUuid null: it is where the resumed history starts")
            )
        meta = d.get("compactMetadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("trigger"), str):
            out.append((no, "compact_boundary needs compactMetadata with a trigger"))
        elif not isinstance(meta.get("preTokens"), int) or isinstance(meta.get("preTokens"), bool):
            out.append((no, "compactMetadata.preTokens should be an integer"))


def _walk(rows: dict[str, tuple[int, Any]], leaf: str | None, out: list[tuple[int, str]]) -> None:
    """Follow parentUuid from the leaf the way Claude Code rebuilds the resumed conversation."""
    seen: set[str] = set()
    at = leaf
    while at is not None:
        no, parent = rows[at]
        seen.add(at)
        if parent is None:
            return
        if parent not in rows:
            out.append(
                (no, f"parentUuid {parent!r} is not in the file: resuming drops everything before line {no}")
            )
            return
        if parent in seen:
            out.append((no, "parentUuid chain loops back on itself"))
            return
        at = parent


def check_file(path: str | Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    rows: dict[str, tuple[int, Any]] = {}  # uuid → (line, parentUuid)
    leaf: str | None = None
    root_seen = False
    for item in iter_lines(path):
        if isinstance(item, LineError):
            out.append((item.line, item.reason))
            continue
        d, no = item.data, item.no
        if not isinstance(d, dict) or d.get("type") not in _LINKED or "uuid" not in d:
            continue  # bookkeeping lines (snapshots, queue operations, titles) are not chained
        uid = d["uuid"]
        if not isinstance(uid, str) or not uid:
            out.append((no, "uuid should be a non-empty string"))
            continue
        if uid in rows:
            out.append((no, f"duplicate uuid {uid!r} (first on line {rows[uid][0]})"))
            continue
        if d.get("type") in _CONVERSATION:
            _line_rules(d, no, out)
        parent = d.get("parentUuid")
        rows[uid] = (no, parent if isinstance(parent, str) else None)
        main = d.get("type") in ("user", "assistant") and d.get("isSidechain") is not True
        if main:
            if parent is None and root_seen:
                out.append(
                    (no, "a second root (parentUuid null) on the main chain: resuming drops what came before")
                )
            root_seen = True
            leaf = uid
        elif d.get("subtype") == "compact_boundary":
            root_seen = True
    _walk(rows, leaf, out)
    return sorted(out, key=lambda x: x[0])
