"""Codex's own rules for a rollout, as ``codex resume`` relies on them.

``check`` works on the entries our reader produced: the rollout starts with ``session_meta``;
each tool output answers a call in the history Codex would rebuild at that point (a compaction
restarts that history from its ``replacement_history``, or from the user messages alone when it
has none); inside a ``replacement_history`` every output answers a call made earlier in it.
``check_file`` adds the line shapes Codex's deserializer needs (``timestamp``/``type``/``payload``
on every line, the session_meta fields, ``compacted.message`` a string, function-call
arguments a string). The two are disjoint: ``ctxfold validate`` runs both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.jsonl import iter_lines
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Entry, Message

_META_FIELDS = ("timestamp", "cwd", "originator", "cli_version")


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
    for line, e in items:
        if isinstance(e, CompactionMarker):
            calls = set()
            if e.replacement is not None:
                bad = _unanswered(e.replacement, calls)
                out += [
                    (line, f"replacement_history output {c!r} answers no call made before it in it")
                    for c in bad
                ]
        elif isinstance(e, Message) and e.branch is None:
            bad = _unanswered((e,), calls)
            out += [
                (line, f"tool output {c!r} answers no call in the history Codex rebuilds here") for c in bad
            ]
    return out


def _payload_rules(kind: str, p: dict[str, Any], no: int, out: list[tuple[int, str]]) -> None:
    if kind == "session_meta":
        if not isinstance(p.get("id", p.get("session_id")), str):
            out.append((no, "session_meta needs a string id"))
        for key in _META_FIELDS:
            if not isinstance(p.get(key), str):
                out.append((no, f"session_meta needs a string {key!r}"))
    elif kind == "turn_context" and not isinstance(p.get("model"), str):
        out.append((no, "turn_context needs a string 'model'"))
    elif kind == "compacted" and not isinstance(p.get("message"), str):
        out.append((no, "compacted needs a string 'message' (empty when there is no summary text)"))
    elif kind == "response_item":
        t = p.get("type")
        if t == "function_call" and not isinstance(p.get("arguments"), str):
            out.append((no, "function_call arguments should be a JSON string"))
        elif t == "custom_tool_call" and not isinstance(p.get("input"), str):
            out.append((no, "custom_tool_call input should be a string"))


def check_file(path: str | Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for item in iter_lines(path):
        if isinstance(item, LineError):
            out.append((item.line, item.reason))
            continue
        d, no = item.data, item.no
        if not isinstance(d, dict):
            continue  # the reader reports it
        if not isinstance(d.get("timestamp"), str):
            out.append((no, "missing or mistyped field 'timestamp' (every rollout line has one)"))
        kind, p = d.get("type"), d.get("payload")
        if not isinstance(kind, str) or not isinstance(p, dict):
            continue  # the reader reports a missing type or payload
        _payload_rules(kind, p, no, out)
    return sorted(out, key=lambda x: x[0])
