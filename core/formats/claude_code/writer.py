"""Write a transcript back as a Claude Code session log that ``claude --resume`` can pick up.

Only the main chain is written (side chains are not part of the resumed context, nor a
response the conversation left behind, ``Message.dropped``), as one
linear ``uuid``/``parentUuid`` chain with a fresh uuid4 on every line and the original
``sessionId``: the new log may sit beside the original in the project folder, and Claude Code
looks lines up by uuid, so it must not reuse the original's. ``sourceToolAssistantUUID`` is
re-pointed at the new line holding the ``tool_use``. Session fields missing from lines ctxfold
made (cwd, version, gitBranch, userType...) come from the newest line Claude Code wrote.

A merged assistant response goes back as one line per content block sharing ``message.id`` and
``requestId``, each carrying the response's final usage, rather than one line with all blocks:
every real log we have (v1.0.98 to v2.1.126) has exactly one block per assistant line, so that
is the shape Claude Code's loader is known to merge on resume, and our reader merges it back to
the same Message. A message without a ``message.id`` gets a generated one for its lines to share.

A compaction is recorded the way Claude Code records its own: a ``system`` line with
``subtype: compact_boundary``, ``parentUuid: null`` (the cut the resume walk stops at),
``logicalParentUuid`` = the line before it and ``compactMetadata {trigger, preTokens,
postTokens}``, then the summary as a ``user`` line with ``isCompactSummary`` and
``isVisibleInTranscriptOnly``, its ``parentUuid`` the boundary; the chain continues from it.
Claude Code's own boundary is written back with its metadata, what it kept (``chain.preserved``)
named by the uuids its lines were written with and the summary line by the one it is given.
A Claude Code 2.x log ends with a ``last-prompt`` line (newest typed prompt, leaf uuid), as 2.1
writes after each turn.
"""

from __future__ import annotations

import dataclasses
import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from ctxfold.formats.anthropic.writer import usage_dict
from ctxfold.formats.base import now_iso, zeroed
from ctxfold.formats.claude_code.check import check, check_file
from ctxfold.formats.claude_code.parts import SYNTHETIC
from ctxfold.formats.origin import last_model, native, session_cwd, sources
from ctxfold.transcript.context import live
from ctxfold.transcript.model import (
    ApiError,
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

NAME = "claude-code"
NO_RESPONSE = "No response requested."  # Claude Code's answer to a user turn left unanswered
DEFAULT_VERSION = "2.1.112"  # the newest version whose compaction lines we checked our output against
# Fields Claude Code writes on every conversation line, taken from the session's own lines.
_COMMON = (
    "userType",
    "entrypoint",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "slug",
    "isSidechain",
    "agentId",
)
# Reader bookkeeping and linkage: rebuilt for the new file, never copied from ``extra``.
_SKIP = frozenset(
    {"parentUuid", "logicalParentUuid", "uuid", "uuids", "timestamp", "type", "message", "isSidechain",
     "sessionId", "ctxfold"}
)  # fmt: skip


def _template(t: Transcript) -> dict[str, Any]:
    """The per-line session fields of the newest main-chain line that has them; for a transcript
    of another harness, those of a new session in the directory it names."""
    if native(t, NAME):
        for src in sources(t):
            for e in reversed(src.entries):
                if isinstance(e, Message) and e.branch is None and isinstance(e.extra.get("cwd"), str):
                    return {k: e.extra[k] for k in _COMMON if k in e.extra}
    cwd = session_cwd(t) or os.getcwd()
    return {"userType": "external", "cwd": cwd, "version": DEFAULT_VERSION, "gitBranch": ""}


def claude_model(model: str | None) -> str | None:
    """The model when Claude Code can ask for it (a Claude model), else None."""
    return model if model and re.match(r"^(anthropic/)?claude", model, re.I) else None


def _session_id(t: Transcript, template: Mapping[str, Any]) -> str:
    for src in sources(t):
        for e in src.entries:
            if isinstance(e, ContextUpdate) and e.session_id:
                return e.session_id
        if src.session_id:
            return src.session_id
    sid = template.get("sessionId")
    return sid if isinstance(sid, str) else str(uuid.uuid4())


def _is_summary(m: object) -> bool:
    return (
        isinstance(m, Message)
        and m.role == "user"
        and (m.extra.get("ctxfold") == "summary" or m.extra.get("isCompactSummary") is True)
    )


# ------------------------------------------------------------------------------- content blocks


def _plain_text(parts: Sequence[Any]) -> str | None:
    """The text when ``parts`` is a single plain text part (written as a JSON string)."""
    if len(parts) == 1 and isinstance(parts[0], TextPart) and not parts[0].extra:
        return parts[0].text
    return None


def _media(p: MediaPart) -> dict[str, Any]:
    kind = p.extra.get("type") or ("image" if p.mime_type.startswith("image/") else "document")
    if p.data is not None:
        source: dict[str, Any] = {"type": "base64", "media_type": p.mime_type, "data": p.data}
    elif p.url is not None:
        source = {"type": "url", "url": p.url}
    else:
        source = {"type": "text", "media_type": p.mime_type, "data": p.text or ""}
    return {"type": kind, "source": source, **{k: v for k, v in p.extra.items() if k != "type"}}


def _block(p: Part) -> dict[str, Any] | None:
    """One Anthropic content block for a part (None for an opaque part that is not a block)."""
    if isinstance(p, TextPart):
        return {
            "type": "text",
            "text": p.text,
            **{k: v for k, v in p.extra.items() if k not in ("type", "text")},
        }
    if isinstance(p, ThinkingPart):
        if p.redacted:
            return {"type": "redacted_thinking", "data": p.encrypted or "", **p.extra}
        out: dict[str, Any] = {"type": "thinking", "thinking": p.text}
        if p.signature is not None:
            out["signature"] = p.signature
        return {**out, **p.extra}
    if isinstance(p, ToolCallPart):
        args = p.arguments if p.arguments is not None else {}
        return {"type": "tool_use", "id": p.id, "name": p.name, "input": args, **p.extra}
    if isinstance(p, ToolResultPart):
        out = {"type": "tool_result", "tool_use_id": p.call_id}
        text = _plain_text(p.content)
        if text is not None:
            out["content"] = text
        elif p.content:
            out["content"] = [b for b in map(_block, p.content) if b is not None]
        if p.is_error:
            out["is_error"] = True
        return {**out, **p.extra}
    if isinstance(p, MediaPart):
        return _media(p)
    return p.data if isinstance(p, OpaquePart) and isinstance(p.data, dict) else None


def _usage(u: Usage | None) -> dict[str, Any]:
    return usage_dict(u or Usage(0))  # Claude Code's synthetic messages carry all-zero usage


# --------------------------------------------------------------------- another harness's messages


def _tool_id(cid: str) -> str:
    """A tool call id the Messages API takes (letters, digits, ``_`` and ``-``, 64 at most)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", cid)[:64] or "toolu_none"


def _plain(p: Part, claude: bool) -> Part | None:
    """A part of another format as Claude Code would hold it, or None when it has no place
    there: that format's own block fields go, an opaque block goes, and thinking goes unless a
    Claude model signed it (the API refuses thinking it cannot verify)."""
    if isinstance(p, OpaquePart) or (isinstance(p, ThinkingPart) and not (claude and p.signature)):
        return None
    if isinstance(p, ToolCallPart):
        return dataclasses.replace(p, id=_tool_id(p.id), extra={})
    if isinstance(p, ToolResultPart):
        # an opaque block has no place there (None); text and media stay what they were
        content = tuple(
            c for c in (_plain(c, claude) for c in p.content) if isinstance(c, (TextPart, MediaPart))
        )
        return dataclasses.replace(p, call_id=_tool_id(p.call_id), content=content, extra={})
    return dataclasses.replace(p, extra={}) if p.extra else p


def _adopt(m: Message) -> Message | None:
    """A message another harness wrote, with none of its format's fields (only ctxfold's own
    mark is kept); an answer left with nothing to say is dropped."""
    model = claude_model(m.model)
    parts = tuple(q for q in (_plain(p, model is not None) for p in m.parts) if q is not None)
    if m.role == "assistant" and not parts:
        return None
    extra = {k: v for k, v in m.extra.items() if k == "ctxfold"}
    return dataclasses.replace(m, parts=parts, model=model, extra=extra)


# ------------------------------------------------------------------------------------ writer


class _Writer:
    """Holds the chain: the previous line's uuid and timestamp, and where each tool_use went."""

    def __init__(self, sid: str, template: dict[str, Any], first_ts: str | None) -> None:
        self.sid = sid
        # a sub-agent's own transcript keeps every line on its side chain, as Claude Code wrote it
        self.side = template.get("isSidechain") is True
        self.template = {k: v for k, v in template.items() if k not in ("sessionId", "isSidechain")}
        self.prev: str | None = None
        self.ts = first_ts or now_iso()
        self.call_line: dict[str, str] = {}
        self.renamed: dict[Any, str] = {}  # an original line's uuid → its new line's
        self.reserved: str | None = None  # the next line's uuid, named already (a compaction's anchor)

    def line(
        self, kind: str, fields: Mapping[str, Any], ts: str | None, message: Any = None, root: bool = False
    ) -> bytes:
        uid, self.reserved = self.reserved or str(uuid.uuid4()), None
        self.ts = ts or self.ts
        d: dict[str, Any] = {"parentUuid": None if root else self.prev, "isSidechain": self.side}
        if "cwd" not in fields:  # a line ctxfold made: the session's fields (Claude Code's keep their own)
            d.update(self.template)
        d.update((k, v) for k, v in fields.items() if k not in _SKIP)
        d["sessionId"] = self.sid
        d["type"] = kind
        if message is not None:
            d["message"] = message
        d["uuid"] = uid
        d["timestamp"] = self.ts
        if root:
            d["logicalParentUuid"] = self.prev
        self.prev = uid
        return orjson.dumps(d)

    def user(self, m: Message, summary: bool = False) -> bytes:
        fields = dict(m.extra)
        if summary:
            fields.update(isVisibleInTranscriptOnly=True, isCompactSummary=True)
        if "sourceToolAssistantUUID" in fields:
            owner = next((self.call_line.get(r.call_id) for r in m.tool_results), None)
            if owner is None:
                del fields["sourceToolAssistantUUID"]
            else:
                fields["sourceToolAssistantUUID"] = owner
        text = _plain_text(m.parts)
        content: Any = text if text is not None else [b for b in map(_block, m.parts) if b is not None]
        more = m.extra.get("message")
        message = {"role": "user", "content": content, **(more if isinstance(more, dict) else {})}
        out = self.line("user", fields, m.timestamp, message)
        self.renamed[m.id] = self.prev or ""
        return out

    def assistant(self, m: Message) -> Iterator[bytes]:
        raw = m.extra.get("message")
        em: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
        if not em:  # a message Claude Code did not write: make the envelope it would have
            em = {"model": m.model if m.usage is not None and m.model else SYNTHETIC, "type": "message",
                  "stop_reason": None, "stop_sequence": None, "usage": _usage(m.usage)}  # fmt: skip
        elif m.usage is None and isinstance(em.get("usage"), dict):
            em["usage"] = zeroed(em["usage"])  # a count that no longer holds (base.zeroed)
        if not isinstance(em.get("id"), str):
            em["id"] = f"msg_{uuid.uuid4().hex[:24]}"  # the blocks' lines are merged on message.id
        head: dict[str, Any] = {k: em.pop(k) for k in ("model", "id", "type") if k in em}
        blocks: list[list[dict[str, Any]]] = [[b] for b in map(_block, m.parts) if b is not None]
        olds = m.extra.get("uuids")
        olds = list(olds) if isinstance(olds, list) and olds else [m.id]
        for i, content in enumerate(blocks or [[]]):
            message: dict[str, Any] = {**head, "role": "assistant", "content": content, **em}
            out = self.line("assistant", m.extra, m.timestamp, message)
            if content and content[0].get("type") == "tool_use":
                self.call_line[content[0]["id"]] = self.prev or ""
            self.renamed[olds[min(i, len(olds) - 1)]] = self.prev or ""  # (its last line takes the rest)
            yield out

    def boundary(self, e: CompactionMarker) -> bytes:
        fields: dict[str, Any] = dict(e.extra) if e.source == NAME else {}
        if "compactMetadata" not in fields:
            meta: dict[str, Any] = {"trigger": e.trigger if e.trigger in ("manual", "auto") else "manual"}
            meta["preTokens"] = e.tokens_before or 0
            if e.tokens_after is not None:
                meta["postTokens"] = e.tokens_after
            fields = {"subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
                      "level": "info", "compactMetadata": meta}  # fmt: skip
        elif isinstance(fields["compactMetadata"], dict):
            fields["compactMetadata"] = self.kept_renamed(fields["compactMetadata"])
        return self.line("system", fields, e.timestamp, root=True)

    def kept_renamed(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Claude Code's metadata of what its compaction kept (``chain.preserved``), naming the
        new lines: the kept lines by the uuids they were written with, the summary line that
        follows by the uuid it will get. Left out when a kept line was not written."""
        out = {k: v for k, v in meta.items() if k not in ("preservedSegment", "preservedMessages")}
        segment, listed = meta.get("preservedSegment"), meta.get("preservedMessages")
        anchor = str(uuid.uuid4())

        def new(uid: Any) -> str | None:
            return self.renamed.get(uid) if isinstance(uid, str) else None

        if isinstance(segment, dict):
            head, tail = new(segment.get("headUuid")), new(segment.get("tailUuid"))
            if head is None or tail is None:
                return out
            out["preservedSegment"] = {**segment, "headUuid": head, "anchorUuid": anchor, "tailUuid": tail}
        if isinstance(listed, dict):
            named = {
                k: [new(u) for u in v]
                for k, v in listed.items()
                if k in ("uuids", "allUuids") and isinstance(v, list)
            }
            if any(None in v for v in named.values()):
                out.pop("preservedSegment", None)
                return out
            out["preservedMessages"] = {**listed, **named, "anchorUuid": anchor}
        if "preservedSegment" in out or "preservedMessages" in out:
            self.reserved = anchor
        return out


def _first_timestamp(t: Transcript) -> str | None:
    for e in t.entries:
        ts = getattr(e, "timestamp", None)
        if isinstance(ts, str):
            return ts
    return None


def _last_prompt(messages: Sequence[Message]) -> str | None:
    """The newest typed user prompt, for the ``last-prompt`` line (what /resume lists)."""
    for m in reversed(messages):
        x = m.extra
        if (
            m.role != "user"
            or m.tool_results
            or x.get("isMeta")
            or "attachment" in x
            or x.get("isCompactSummary")
            or x.get("ctxfold")
        ):
            continue
        if m.text.strip():
            return m.text.strip()
    return None


def _model_holder(model: str, ts: str) -> Message:
    """The answer a compacted log ends with when its last message is the user's: Claude Code
    resumes with the model of the newest answer on the chain (a log without one resumes with its
    default model), and, finding the user's turn unanswered, adds this same answer itself
    (as ``<synthetic>``, which names no model)."""
    return Message("assistant", (TextPart(NO_RESPONSE),), timestamp=ts, model=model, usage=Usage(0))


def write(t: Transcript) -> Iterator[bytes]:
    """The lines of a Claude Code session log for ``t`` (main chain only)."""
    template = _template(t)
    w = _Writer(_session_id(t, template), template, _first_timestamp(t))
    entries = live(t.entries)
    main = [i for i, e in enumerate(entries) if isinstance(e, Message) and e.branch is None]
    summary_at = -1
    written: list[Message] = []
    nat = native(t, NAME)
    for i, e in enumerate(entries):
        if isinstance(e, Message):
            adopted = e if nat else _adopt(e)
            if e.branch is not None or adopted is None or e.dropped:  # (Claude Code would send it)
                continue
            e = adopted
            written.append(e)
            if e.role == "assistant":
                yield from w.assistant(e)
            elif "attachment" in e.extra:  # a system reminder: back to the line it was read from
                yield w.line("attachment", e.extra, e.timestamp)
            else:  # Claude Code has no tool role: tool results travel in user lines
                yield w.user(e, summary=i == summary_at)
        elif isinstance(e, CompactionMarker):
            yield w.boundary(e)
            if e.source == NAME:
                continue  # the isCompactSummary line Claude Code wrote follows with its own fields
            nxt = next((j for j in main if j > i), None)
            if nxt is not None and _is_summary(entries[nxt]):
                summary_at = nxt
            elif e.summary:
                yield w.user(Message("user", (TextPart(e.summary),), timestamp=e.timestamp), summary=True)
        elif (
            nat
            and isinstance(e, ApiError)
            and e.extra.get("type") in ("assistant", "system")
            and bool(e.extra.get("isSidechain")) == w.side  # errors of the chain being written
        ):
            yield w.line(e.extra["type"], e.extra, e.timestamp, e.extra.get("message"))
    model = claude_model(last_model(t))
    folded = any(isinstance(e, CompactionMarker) and e.source != NAME for e in entries)
    if folded and model and written and written[-1].role != "assistant":
        yield from w.assistant(_model_holder(model, w.ts))
    prompt = _last_prompt(written)
    major = str(template.get("version", "")).split(".")[0]
    if prompt is not None and w.prev is not None and major.isdigit() and int(major) >= 2:
        yield orjson.dumps(
            {"type": "last-prompt", "lastPrompt": prompt, "leafUuid": w.prev, "sessionId": w.sid}
        )
