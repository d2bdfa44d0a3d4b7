"""Write a transcript back as a Gemini CLI session, in the shape its input had.

A saved-chat document is written as one document on a single line: a JSON document for versions
that read ``.json`` chats whole, and at the same time a JSONL file whose first line holds the
whole record, which current versions load and append to (a pretty-printed document named
``.jsonl`` would not survive the lines Gemini CLI appends to it on resume). An event log is
written as its header line and one line per message record.

What is written is the message list Gemini CLI would load: after a compaction only what the
model sees from there on. A ctxfold summary (with the continuation after it) becomes one user
record, answered by a short gemini record (Gemini CLI's own compression writes that pair too),
so the turns keep alternating.

Tool calls: a session written back as it was keeps them inside the ``toolCalls`` entry of the
record that made them, with their results. A compacted session, which is there to be resumed,
holds them as Gemini CLI's history does: the calls in the gemini record's content, the results
in the user record after it, and no ``toolCalls`` entry. Gemini CLI 0.61 sends a ``toolCalls``
result and a user record answering the same call both, and after each resumed turn it writes
its sessions back in a form that does that: a session it recorded itself sends every earlier
tool result twice once resumed; the compacted one sends each once, however often resumed.

A compacted transcript is a new session: a new ``sessionId`` and start time (so ``-r latest``
picks it), the original's project hash, kind and title, and the original stays resumable.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from ctxfold.formats.api_writing import current
from ctxfold.formats.base import now_iso, zeroed
from ctxfold.formats.gemini_cli.check import check, check_file
from ctxfold.formats.gemini_cli.reader import DOCUMENT
from ctxfold.formats.gemini_cli.records import CANCELLED
from ctxfold.formats.genai.writer import content as genai_content
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextUpdate,
    MediaPart,
    Message,
    OpaquePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    Usage,
)

__all__ = ["check", "check_file", "write"]

NAME = "gemini-cli"
ACK = "Understood. I have the summary of our conversation so far and will continue from it."
_HEADER_ORDER = ("sessionId", "projectHash", "startTime", "lastUpdated")


def _sources(t: Transcript) -> list[Transcript]:
    original = t.extra.get("original")
    return [t, original] if isinstance(original, Transcript) else [t]


def _header(t: Transcript, compacted: bool) -> tuple[dict[str, Any], str]:
    """The session's metadata (later updates merged in) and the shape to write it in."""
    fields: dict[str, Any] = {}
    shape = "jsonl"
    original: str | None = None
    for source in reversed(_sources(t)):  # the original's first, this transcript's over it
        for e in source.entries:
            if not isinstance(e, ContextUpdate):
                continue
            if "shape" in e.extra:
                shape = str(e.extra["shape"])
                fields.update((k, v) for k, v in e.extra.items() if k != "shape")
                original = original or e.session_id
            update = e.extra.get("update")
            if isinstance(update, dict):
                fields.update(update)
    sid = t.session_id or original
    if compacted and (sid is None or sid == original):
        sid = None  # a compacted session is a new one, whatever it was handed
    now = now_iso()
    head = {
        "sessionId": sid or str(uuid.uuid4()),
        "projectHash": fields.pop("projectHash", None) or _project_hash(t),
        "startTime": now if compacted else fields.pop("startTime", now),
        "lastUpdated": now if compacted else fields.pop("lastUpdated", now),
    }
    for key in ("startTime", "lastUpdated", "sessionId"):
        fields.pop(key, None)
    return {**head, **fields}, shape


def _project_hash(t: Transcript) -> str:
    """For a session of another harness: Gemini CLI's hash of the folder it ran in, when its
    lines name one (Claude Code's ``cwd``, Codex's and pi's headers), else zeros."""
    for source in _sources(t):
        for e in source.entries:
            cwd = e.extra.get("cwd") if isinstance(e, (ContextUpdate, Message)) else None
            if isinstance(cwd, str) and cwd:
                return hashlib.sha256(cwd.encode()).hexdigest()
    return "0" * 64


def _model(t: Transcript) -> str | None:
    models = [m for s in _sources(t) for m in s.models]
    return models[-1] if models else None


# ----------------------------------------------------------------------------- records


def _parts_json(parts: Sequence[Part]) -> list[Any]:
    return genai_content(Message("user", tuple(parts)), {})["parts"]


def _content(m: Message, parts: Sequence[Part]) -> Any:
    """A plain text stays a string when the record had one; anything else is a part list."""
    if m.extra.get("string") and all(isinstance(p, TextPart) and not p.extra for p in parts):
        return "".join(p.text for p in parts if isinstance(p, TextPart))
    return _parts_json(parts)


def _tokens(m: Message) -> dict[str, Any] | None:
    raw = m.extra.get("tokens")
    u: Usage | None = m.usage
    if u is None:
        return zeroed(raw) if isinstance(raw, dict) else None
    thoughts = u.reasoning_tokens or 0
    tool = raw.get("tool", 0) if isinstance(raw, dict) else 0
    out = u.output_tokens - thoughts
    return {"input": u.prompt_tokens, "output": out, "cached": u.cache_read_tokens, "thoughts": thoughts,
            "tool": tool, "total": u.prompt_tokens + out + thoughts + tool}  # fmt: skip


class _Results:
    """The tool results of the written messages, by the id of the call they answer."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.by_call: dict[str, list[Part]] = {}
        self.strings: set[str] = set()
        for m in messages:
            owner: str | None = None
            for p in m.parts:
                if isinstance(p, ToolResultPart):
                    owner = p.call_id
                    if owner in self.by_call:
                        continue  # a second copy (Gemini CLI's own, after a resume)
                    self.by_call[owner] = [p]
                    if p.extra.get("result") == "string" and len(p.content) == 1:
                        self.strings.add(owner)
                elif (
                    owner is not None
                    and m.role == "tool"
                    and isinstance(p, (MediaPart, OpaquePart, TextPart))
                ):
                    self.by_call[owner].append(p)  # a part the tool returned beside its response

    def result(self, cid: str) -> Any:
        parts = self.by_call.get(cid)
        if parts is None:
            return None
        first = parts[0]
        if cid in self.strings and isinstance(first, ToolResultPart):
            return first.text
        return _parts_json(parts)


def _gemini(m: Message, results: _Results, model: str | None, ts: str) -> dict[str, Any]:
    x = m.extra
    base = dict(x["record"]) if isinstance(x.get("record"), dict) else {}
    rec: dict[str, Any] = {"id": m.id or str(uuid.uuid4()), "timestamp": m.timestamp or ts, "type": "gemini"}
    calls = [p for p in m.parts if isinstance(p, ToolCallPart)]
    if x.get("synced"):
        rec["content"] = _parts_json(m.parts)
        thoughts: Any = x.get("thoughts") or []
    else:
        rest = [p for p in m.parts if not isinstance(p, (ToolCallPart, ThinkingPart))]
        rec["content"] = _content(m, rest) if rest else ""
        thoughts = [
            {"subject": p.extra.get("subject", ""), "description": p.text, **p.extra}
            for p in m.parts
            if isinstance(p, ThinkingPart)
        ]
    rec["thoughts"] = thoughts
    tokens = _tokens(m)
    if tokens is not None:
        rec["tokens"] = tokens
    rec["model"] = m.model or base.get("model") or model
    given = x.get("toolCalls")
    meta: dict[str, Any] = given if isinstance(given, dict) else {}
    if calls:
        rec["toolCalls"] = [_call(c, results, meta.get(c.id), rec["timestamp"]) for c in calls]
    return {**rec, **{k: v for k, v in base.items() if k not in rec}}


def _call(c: ToolCallPart, results: _Results, meta: Any, ts: str) -> dict[str, Any]:
    result = results.result(c.id)
    out: dict[str, Any] = {"id": c.id, "name": c.name, "args": c.arguments if c.arguments is not None else {}}
    out["result"] = result
    extra = dict(meta) if isinstance(meta, dict) else {}
    extra.setdefault("status", "success" if result is not None else "cancelled")
    extra.setdefault("timestamp", ts)
    return {**out, **extra}


def _user(m: Message, parts: Sequence[Part], ts: str) -> dict[str, Any]:
    base = dict(m.extra["record"]) if isinstance(m.extra.get("record"), dict) else {}
    rec = {"id": m.id or str(uuid.uuid4()), "timestamp": m.timestamp or ts, "type": "user"}
    rec["content"] = _content(m, parts)
    return {**rec, **{k: v for k, v in base.items() if k not in rec}}


def _ack(model: str | None, ts: str) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "timestamp": ts, "type": "gemini", "content": ACK, "thoughts": [],
            "model": model}  # fmt: skip


def _history_gemini(m: Message, model: str | None, ts: str) -> dict[str, Any]:
    """A gemini record as Gemini CLI's history holds it: the calls in its content, no
    ``toolCalls`` (their results follow as a user record)."""
    base = dict(m.extra["record"]) if isinstance(m.extra.get("record"), dict) else {}
    sent = [p for p in m.parts if not isinstance(p, ThinkingPart)]
    rec: dict[str, Any] = {"id": m.id or str(uuid.uuid4()), "timestamp": m.timestamp or ts, "type": "gemini"}
    rec["content"] = _parts_json(sent) if m.tool_calls else _content(m, sent)
    rec["thoughts"] = [
        {"subject": p.extra.get("subject", ""), "description": p.text, **p.extra}
        for p in m.parts
        if isinstance(p, ThinkingPart)
    ]
    tokens = _tokens(m)
    if tokens is not None:
        rec["tokens"] = tokens
    rec["model"] = m.model or base.get("model") or model
    return {**rec, **{k: v for k, v in base.items() if k not in rec and k != "toolCalls"}}


def records(
    messages: Sequence[Message], model: str | None, ts: str, *, history: bool = False
) -> list[dict[str, Any]]:
    """The message records for ``messages``, in order. With ``history`` tool calls are written
    the way Gemini CLI's history holds them (see :func:`_history_gemini`), else inside the
    ``toolCalls`` of the record that made them, with their results."""
    results = _Results(messages)
    asked = set() if history else {c.id for m in messages for c in m.tool_calls if m.role == "assistant"}
    answered: set[str] = set()
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        ts = m.timestamp or ts
        if m.role == "assistant":
            out.append(_history_gemini(m, model, ts) if history else _gemini(m, results, model, ts))
        elif m.extra.get("ctxfold") == "summary":
            parts = list(m.parts)
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if nxt is not None and nxt.extra.get("ctxfold") == "continuation":
                parts.extend(nxt.parts)
                i += 1
            out.append(_user(m, parts, ts))
            out.append(_ack(model, ts))
        elif not history and m.extra.get("from_calls"):
            pass  # results read from a toolCalls entry: written back inside it
        elif not history and isinstance(m.extra.get("record"), dict):
            out.append(_user(m, m.parts, ts))  # a record of the input, as it was
        else:
            left = [p for p in m.parts if not (isinstance(p, ToolResultPart) and p.call_id in asked)]
            if history:  # each call answered once, though Gemini CLI's own rewrite may hold two
                left = [p for p in left if not (isinstance(p, ToolResultPart) and p.call_id in answered)]
                answered.update(p.call_id for p in left if isinstance(p, ToolResultPart))
            if m.role == "tool" and m.tool_results and len(left) < len(m.parts):
                left = [p for p in left if isinstance(p, ToolResultPart)]  # its media went with it
            if left:
                out.append(_user(m, left, ts))
        if m.stopped and out:  # Gemini CLI's notice after it, shown and never sent
            out.append({"id": str(uuid.uuid4()), "timestamp": ts, "type": "info", "content": CANCELLED})
        i += 1
    return out


def _has_ctxfold_compaction(t: Transcript) -> bool:
    return "original" in t.extra or any(
        isinstance(e, CompactionMarker) and e.source == "ctxfold" for e in t.entries
    )


def write(t: Transcript) -> Iterator[bytes]:
    """The lines of a Gemini CLI session file for ``t`` (main conversation only)."""
    compacted = _has_ctxfold_compaction(t)
    head, shape = _header(t, compacted)
    _, entries = current(t)
    messages = [e for e in entries if isinstance(e, Message) and e.branch is None]
    ts = head["lastUpdated"] if compacted else next((m.timestamp for m in messages if m.timestamp), now_iso())
    recs = records(messages, _model(t), ts, history=compacted)
    if shape == DOCUMENT:
        yield orjson.dumps({**_ordered(head), "messages": recs})
        return
    yield orjson.dumps(_ordered(head))
    for r in recs:
        yield orjson.dumps(r)


def _ordered(head: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: head[k] for k in _HEADER_ORDER if k in head}, **head}
