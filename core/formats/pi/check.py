"""pi's own rules for a session file, as pi relies on them when it reopens a session.

``check`` works on the entries our reader produced: the file starts with its session header,
and each tool result answers a tool call of the assistant turn just before it (pi sends the
context to Anthropic/OpenAI-style APIs, which require that). ``check_file`` adds the rules
that need the raw lines: the header shape, and its size (``pi -c`` reads only the first 512
bytes to tell a session file, and passes over one whose header does not fit); one header only
(a second one is what pi leaves when it appended a whole session again); at least one
assistant message, each naming its ``provider`` and ``model`` (pi treats a file without one as
never written and, with its next reply, appends every entry again; it restores the session's
model from the newest one); for version 2+ files unique entry ids and a ``parentId`` naming an
earlier entry (pi appends, and resumes by walking ``parentId`` back from the last entry, so a
missing parent drops everything before it); compaction entries with a string ``summary``, a
numeric ``tokensBefore`` and a ``firstKeptEntryId`` on the path before them (version 1: a
``firstKeptEntryIndex`` of an earlier entry). The two are disjoint: ``ctxfold validate`` runs
both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.jsonl import iter_lines
from ctxfold.formats.pi.session import HEADER_PEEK
from ctxfold.formats.validate import TurnCalls
from ctxfold.transcript.model import ContextUpdate, Entry, Message


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if items and not (isinstance(items[0][1], ContextUpdate) and items[0][1].session_id):
        out.append((items[0][0], "a pi session starts with its session header"))
    turn = TurnCalls()
    for line, e in items:
        if isinstance(e, Message) and e.branch is None:
            for cid in turn.unanswered(e):
                out.append((line, f"toolResult {cid!r} answers no toolCall of the assistant turn before it"))
    return out


def _ancestors(parents: dict[str, Any], start: Any) -> set[str]:
    seen: set[str] = set()
    at = start
    while isinstance(at, str) and at in parents and at not in seen:
        seen.add(at)
        at = parents[at]
    return seen


def _compaction(
    d: dict[str, Any], no: int, index: int, version: int, parents: dict[str, Any]
) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if not isinstance(d.get("summary"), str):
        out.append((no, "compaction needs a string 'summary'"))
    before = d.get("tokensBefore")
    if not isinstance(before, (int, float)) or isinstance(before, bool):
        out.append((no, "compaction needs a numeric 'tokensBefore'"))
    if version < 2:
        first = d.get("firstKeptEntryIndex")
        if not isinstance(first, int) or isinstance(first, bool) or not 0 < first < index:
            out.append((no, "firstKeptEntryIndex should be the index of an earlier entry"))
        return out
    first = d.get("firstKeptEntryId")
    if not isinstance(first, str):
        out.append((no, "compaction needs a string 'firstKeptEntryId'"))
    elif first != d.get("id") and first not in _ancestors(parents, d.get("parentId")):
        out.append((no, f"firstKeptEntryId {first!r} is not an entry on the path before this compaction"))
    return out


def _header(d: dict[str, Any], no: int, size: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if d.get("type") != "session" or not isinstance(d.get("id"), str) or not isinstance(d.get("cwd"), str):
        out.append((no, "the first line should be the session header (type 'session', string id and cwd)"))
    elif size - 1 > HEADER_PEEK:  # ``size`` counts the newline
        out.append(
            (
                no,
                f"the session header is {size - 1:,} bytes: pi -c reads the first {HEADER_PEEK} and passes the file over",
            )
        )
    return out


def _model_fields(d: dict[str, Any], no: int) -> list[tuple[int, str]]:
    """pi restores the session's model from the newest model_change or assistant message."""
    if d.get("type") == "model_change":
        if not (isinstance(d.get("provider"), str) and isinstance(d.get("modelId"), str)):
            return [(no, "model_change needs a string 'provider' and 'modelId'")]
    elif d.get("type") == "message" and isinstance(d.get("message"), dict):
        m = d["message"]
        if m.get("role") == "assistant" and not (
            isinstance(m.get("provider"), str) and isinstance(m.get("model"), str)
        ):
            return [
                (
                    no,
                    "an assistant message needs a string 'provider' and 'model' (pi restores the model from them)",
                )
            ]
    return []


def _answered(d: Any) -> bool:
    return (
        isinstance(d, dict)
        and d.get("type") == "message"
        and isinstance(d.get("message"), dict)
        and d["message"].get("role") == "assistant"
    )


def check_file(path: str | Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    version = 1
    parents: dict[str, Any] = {}  # entry id → parentId
    index = -1
    answered = False
    for item in iter_lines(path):
        if isinstance(item, LineError):
            out.append((item.line, item.reason))
            continue
        d, no = item.data, item.no
        index += 1
        if not isinstance(d, dict):
            continue  # the reader reports it
        if index == 0:
            out.extend(_header(d, no, item.size))
            v = d.get("version", 1)
            version = v if isinstance(v, int) and not isinstance(v, bool) else 1
            continue
        if d.get("type") == "session":
            out.append((no, "a second session header: pi appended the whole session again"))
            continue
        answered = answered or _answered(d)
        out.extend(_model_fields(d, no))
        if version >= 2:
            eid, parent = d.get("id"), d.get("parentId", ...)
            if not isinstance(eid, str) or not eid:
                out.append((no, "every entry of a version 2+ session needs a string id"))
                continue
            if eid in parents:
                out.append((no, f"duplicate entry id {eid!r}"))
            if parent is ...:
                out.append((no, "missing field 'parentId' (null for the first entry)"))
            elif parent is not None and not isinstance(parent, str):
                out.append((no, f"parentId should be a string or null, not {type(parent).__name__}"))
            elif parent is not None and parent not in parents:
                out.append((no, f"parentId {parent!r} names no earlier entry: pi's resume walk stops here"))
            parents[eid] = parent if isinstance(parent, str) else None
        if d.get("type") == "compaction":
            out.extend(_compaction(d, no, index, version, parents))
    if index > 0 and not answered:
        out.append(
            (
                1,
                "no assistant message: pi takes the file for unwritten and, with its next reply, appends every entry again",
            )
        )
    return sorted(out, key=lambda x: x[0])
