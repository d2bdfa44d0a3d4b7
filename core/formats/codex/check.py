"""Codex's own rules for a rollout, as ``codex resume`` relies on them.

``check`` works on the entries our reader produced: the rollout starts with ``session_meta``;
each tool output answers a call in the history Codex would rebuild at that point (a compaction
restarts that history from its ``replacement_history``, or from the user messages alone when it
has none); inside a ``replacement_history`` every output answers a call made earlier in it; no
response item appears twice in that history (a duplicated entry).
``check_file`` adds the line shapes Codex's deserializer needs (``timestamp``/``type``/``payload``
on every line, the session_meta fields and a UUID id, ``compacted.message`` a string,
function-call arguments a string, the payloads of ``world_state`` and ``token_usage_record``) and,
in a paginated rollout (``history_mode: "paginated"``, Codex 0.148+), the line numbers: every line
has an ``ordinal``, each one greater than the last (Codex numbers them 0, 1, 2..., appends from the
last one, and refuses to resume when the last line has none). The two are disjoint: ``ctxfold validate`` runs both.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.jsonl import iter_lines
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Entry, Message

_META_FIELDS = ("timestamp", "cwd", "originator", "cli_version")
_HISTORY_MODES = ("legacy", "paginated")


def _unanswered(messages: Iterable[Message], calls: set[str]) -> list[str]:
    """Tool outputs among ``messages`` whose call is neither in ``calls`` nor made before them
    (``calls`` grows with the calls seen)."""
    bad: list[str] = []
    for m in messages:
        if m.role == "assistant":
            calls.update(c.id for c in m.tool_calls)
        for r in m.tool_results:
            if r.call_id not in calls:
                bad.append(r.call_id)
    return bad


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if items and not (isinstance(items[0][1], ContextUpdate) and items[0][1].session_id):
        out.append((items[0][0], "a Codex rollout starts with its session_meta line"))
    calls: set[str] = set()
    seen: dict[str, int] = {}  # response item id → line, in the history Codex rebuilds
    for line, e in items:
        if isinstance(e, CompactionMarker):
            calls, seen = set(), {}
            if e.replacement is not None:
                bad = _unanswered(e.replacement, calls)
                out += [
                    (line, f"replacement_history output {c!r} answers no call made before it in it")
                    for c in bad
                ]
                seen = {m.id: line for m in e.replacement if m.id is not None}
        elif isinstance(e, Message) and e.branch is None:
            bad = _unanswered((e,), calls)
            out += [
                (line, f"tool output {c!r} answers no call in the history Codex rebuilds here") for c in bad
            ]
            if e.id is not None and e.id in seen:
                out.append(
                    (
                        line,
                        f"duplicated entry: response item {e.id!r} is already in the history (line {seen[e.id]})",
                    )
                )
            elif e.id is not None:
                seen[e.id] = line
    return out


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return False
    return True


def _meta_rules(p: dict[str, Any], no: int, out: list[tuple[int, str]]) -> None:
    sid = p.get("id", p.get("session_id"))
    if not isinstance(sid, str):
        out.append((no, "session_meta needs a string id"))
    elif not _is_uuid(sid):
        out.append((no, f"session_meta id {sid!r} is no UUID: Codex finds sessions by UUID"))
    for key in _META_FIELDS:
        if not isinstance(p.get(key), str):
            out.append((no, f"session_meta needs a string {key!r}"))
    if "history_mode" in p and p["history_mode"] not in _HISTORY_MODES:
        out.append(
            (no, f"session_meta history_mode {p['history_mode']!r} is neither 'legacy' nor 'paginated'")
        )


def _payload_rules(kind: str, p: dict[str, Any], no: int, out: list[tuple[int, str]]) -> None:
    if kind == "session_meta":
        _meta_rules(p, no, out)
    elif kind == "turn_context" and not isinstance(p.get("model"), str):
        out.append((no, "turn_context needs a string 'model'"))
    elif kind == "compacted" and not isinstance(p.get("message"), str):
        out.append((no, "compacted needs a string 'message' (empty when there is no summary text)"))
    elif kind == "world_state" and not (isinstance(p.get("full"), bool) and isinstance(p.get("state"), dict)):
        out.append((no, "world_state needs a boolean 'full' and a 'state' object"))
    elif kind == "token_usage_record" and not isinstance(p.get("usage"), dict):
        out.append((no, "token_usage_record needs a 'usage' object"))
    elif kind == "response_item":
        t = p.get("type")
        if t == "function_call" and not isinstance(p.get("arguments"), str):
            out.append((no, "function_call arguments should be a JSON string"))
        elif t == "custom_tool_call" and not isinstance(p.get("input"), str):
            out.append((no, "custom_tool_call input should be a string"))


class _Ordinals:
    """A paginated rollout numbers its lines: each one greater than the one before."""

    def __init__(self) -> None:
        self.paginated: bool | None = None  # decided by the first line (the session_meta)
        self.last: int | None = None
        self.last_no = 0

    def see(self, d: dict[str, Any], no: int, out: list[tuple[int, str]]) -> None:
        if self.paginated is None:
            p = d.get("payload")
            self.paginated = isinstance(p, dict) and p.get("history_mode") == "paginated"
        if not self.paginated:
            return
        self.last_no = no
        n = d.get("ordinal")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            out.append((no, "a paginated rollout numbers every line: 'ordinal' missing or not a count"))
            self.last = None
            return
        if self.last is not None and n <= self.last:
            out.append((no, f"ordinal {n} repeats or goes back before the line before's {self.last}"))
        self.last = n


def check_file(path: str | Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    ordinals = _Ordinals()
    for item in iter_lines(path):
        if isinstance(item, LineError):
            out.append((item.line, item.reason))
            continue
        d, no = item.data, item.no
        if not isinstance(d, dict):
            continue  # the reader reports it
        ordinals.see(d, no, out)
        if not isinstance(d.get("timestamp"), str):
            out.append((no, "missing or mistyped field 'timestamp' (every rollout line has one)"))
        kind, p = d.get("type"), d.get("payload")
        if not isinstance(kind, str) or not isinstance(p, dict):
            continue  # the reader reports a missing type or payload
        _payload_rules(kind, p, no, out)
    return sorted(out, key=lambda x: x[0])
