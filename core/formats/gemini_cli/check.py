"""Gemini CLI's own rules for a session file, as it relies on them when it lists and resumes one.

``check`` works on the entries our reader produced: the file starts with the session's header,
and each tool result answers a call of the gemini turn just before it (Gemini CLI sends the
results as the user turn after the call). ``check_file`` adds what needs the raw lines: the
header (``sessionId`` and ``projectHash`` strings, which Gemini CLI needs to load the file at
all), message records with a string ``id`` and ``type``, tool calls with an ``id`` and ``name``,
``$set`` an object and ``$rewindTo`` a string, and at least one record Gemini CLI would resume
(without one it does not list the session, and its start-up cleanup deletes the file). The two
are disjoint: ``ctxfold validate`` runs both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.gemini_cli.records import is_resumed_user
from ctxfold.formats.jsonl import iter_lines
from ctxfold.formats.validate import TurnCalls
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Entry, Message


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if items and not (isinstance(items[0][1], ContextUpdate) and items[0][1].session_id):
        out.append((items[0][0], "a Gemini CLI session starts with its header (sessionId, projectHash)"))
    turn = TurnCalls()
    for line, e in items:
        if isinstance(e, CompactionMarker):
            turn.reset()
            for m in e.replacement or ():
                out += [(line, _unanswered(cid)) for cid in turn.unanswered(m)]
            continue
        if isinstance(e, Message) and e.branch is None:
            out += [(line, _unanswered(cid)) for cid in turn.unanswered(e)]
    return out


def _unanswered(cid: str) -> str:
    return f"tool result {cid!r} answers no call of the gemini turn before it"


def _message(d: Any, no: int, where: str) -> list[tuple[int, str]]:
    if not isinstance(d, dict):
        return [(no, f"{where}: a message record should be an object")]
    out: list[tuple[int, str]] = []
    if not isinstance(d.get("id"), str):
        out.append((no, f"{where}: a message record needs a string 'id'"))
    if not isinstance(d.get("type"), str):
        out.append((no, f"{where}: a message record needs a string 'type'"))
    calls = d.get("toolCalls", [])
    if not isinstance(calls, list):
        out.append((no, f"{where}: 'toolCalls' should be an array"))
        calls = []
    for i, c in enumerate(calls):
        if not (isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("name"), str)):
            out.append((no, f"{where}: toolCalls[{i}] needs a string 'id' and 'name'"))
    return out


def _resumable(d: Any) -> bool:
    """What Gemini CLI counts as something to resume: a user record it would send, or a
    gemini record with text, tool calls or thoughts."""
    if not isinstance(d, dict):
        return False
    if d.get("type") == "user":
        return is_resumed_user(d)
    if d.get("type") == "gemini":
        content = d.get("content")
        text = content.strip() if isinstance(content, str) else content
        return bool(text) or bool(d.get("toolCalls")) or bool(d.get("thoughts"))
    return False


def check_file(path: str | Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    first = True
    resumable = False
    last = 0
    for item in iter_lines(path):
        if isinstance(item, LineError):
            out.append((item.line, item.reason))
            continue
        d, no = item.data, item.no
        last = no
        if not isinstance(d, dict):
            continue  # the reader reports it
        if first:
            first = False
            if not (isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str)):
                out.append(
                    (no, "the first record should be the session header (string sessionId and projectHash)")
                )
        if "$rewindTo" in d:
            if not isinstance(d["$rewindTo"], str):
                out.append((no, "'$rewindTo' should name a message id"))
        elif "$set" in d:
            update = d["$set"]
            if not isinstance(update, dict):
                out.append((no, "'$set' should be an object"))
            elif "messages" in update:
                msgs = update["messages"]
                resumable = _list(msgs, no, "$set.messages", out)
        elif isinstance(d.get("messages"), list) or ("sessionId" in d and "messages" in d):
            resumable = _list(d.get("messages"), no, "messages", out)
        elif "id" in d or "type" in d:
            out += _message(d, no, "message")
            resumable = resumable or _resumable(d)
    if not first and not resumable:
        out.append((last, "no message Gemini CLI would resume: it neither lists nor keeps such a session"))
    return sorted(out, key=lambda x: x[0])


def _list(msgs: Any, no: int, where: str, out: list[tuple[int, str]]) -> bool:
    if not isinstance(msgs, list):
        out.append((no, f"'{where}' should be an array"))
        return False
    for i, m in enumerate(msgs):
        out += _message(m, no, f"{where}[{i}]")
    return any(_resumable(m) for m in msgs)
