"""Write a transcript back as a pi coding-agent session (format version 3).

Version 3 is what pi writes today and what it migrates older files to on load: a ``session``
header, then entries with ``id``/``parentId``. We write one linear chain (pi resumes from the
last entry and walks ``parentId`` back), keeping an entry's id when it has a real one and giving
version 1 entries (which had none) fresh 8-hex ids, as pi's own migration does.

A compaction is written as pi records its own: a ``compaction`` entry with ``summary``,
``firstKeptEntryId`` and ``tokensBefore``, placed after the entries it keeps, with
``firstKeptEntryId`` naming the first of them. pi then builds the context as its wrapped summary,
the kept entries, and what follows the compaction. For a ctxfold compaction the kept entries
are everything after the summary (continuation message, then the verbatim tail), so the
compaction entry ends the file and the resumed context is summary, continuation, tail — the
order ctxfold produced. ctxfold's own summary message is not written: pi wraps the summary
itself (``compactionSummary``), so writing it too would say it twice.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

import orjson

from ctxfold.formats.base import now_iso, zeroed
from ctxfold.formats.origin import native
from ctxfold.formats.pi.check import check, check_file
from ctxfold.formats.pi.reader import BRANCH_PREFIX, BRANCH_SUFFIX, COMPACTION_PREFIX, COMPACTION_SUFFIX
from ctxfold.formats.pi.session import NAME, VERSION, family, header, origin
from ctxfold.transcript.context import live
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextUpdate,
    Entry,
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

__all__ = ["NAME", "VERSION", "check", "check_file", "write"]

STAND_IN = "The conversation before this point was compacted."
_ENTRY_KEYS = frozenset({"type", "id", "parentId", "timestamp", "ctxfold"})  # set by the writer


def _ms(iso: str) -> int:
    try:
        return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return int(datetime.now(timezone.utc).timestamp() * 1000)


def _block(p: Part) -> Any:
    if isinstance(p, TextPart):
        return {
            "type": "text",
            "text": p.text,
            **{k: v for k, v in p.extra.items() if k not in ("type", "text")},
        }
    if isinstance(p, ThinkingPart):
        out: dict[str, Any] = {"type": "thinking", "thinking": p.text}
        if p.signature is not None:
            out["thinkingSignature"] = p.signature
        if p.redacted:
            out["redacted"] = True
        return {**out, **p.extra}
    if isinstance(p, ToolCallPart):
        args = p.arguments if p.arguments is not None else {}
        return {"type": "toolCall", "id": p.id, "name": p.name, "arguments": args, **p.extra}
    if isinstance(p, MediaPart):
        if p.data is None:
            return {"type": "text", "text": p.text or f"[{p.mime_type}: {p.url}]"}
        return {"type": "image", "data": p.data, "mimeType": p.mime_type, **p.extra}
    if isinstance(p, OpaquePart):
        return p.data
    return {"type": "text", "text": p.text if isinstance(p, ToolResultPart) else ""}


def _blocks(parts: Sequence[Part]) -> list[Any]:
    return [_block(p) for p in parts]


def _text_or_blocks(parts: Sequence[Part]) -> Any:
    """pi's custom messages take a plain string; a single plain text goes back as one."""
    if len(parts) == 1 and isinstance(parts[0], TextPart) and not parts[0].extra:
        return parts[0].text
    return _blocks(parts)


def _unwrap(text: str, prefix: str, suffix: str) -> str:
    if text.startswith(prefix) and text.endswith(suffix):
        return text[len(prefix) : len(text) - len(suffix)]
    return text


def _usage(u: Usage | None) -> dict[str, Any]:
    if u is None:
        inp = out = read = write = 0
    else:
        read, write, out = u.cache_read_tokens, u.cache_write_tokens, u.output_tokens
        inp = max(u.prompt_tokens - read - write, 0)
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": write,
            "totalTokens": inp + out + read + write, "cost": cost}  # fmt: skip


class _Writer:
    """Holds the chain (the previous entry's id, ids given out) and the model pi is to restore;
    ``native`` is False for a transcript another format's reader made, whose ``extra`` fields
    are that format's and are not copied."""

    def __init__(self, ts: str, native: bool, provider: str, api: str, model: str | None) -> None:
        self.ts = ts
        self.native = native
        self.prev: str | None = None
        self.ids: dict[str, str] = {}  # the transcript's ids → ids written
        self.used: set[str] = set()
        self.names: dict[str, str] = {}  # tool call id → tool name, for toolResult.toolName
        self.provider, self.api, self.model = provider, api, model

    def new_id(self, old: Any) -> str:
        new = (
            old if isinstance(old, str) and old and not old.startswith("#") and old not in self.used else None
        )
        while new is None or new in self.used:
            new = uuid.uuid4().hex[:8]
        self.used.add(new)
        if isinstance(old, str):
            self.ids.setdefault(old, new)
        return new

    def entry(self, kind: str, new: str, ts: str | None, fields: Mapping[str, Any]) -> tuple[str, bytes]:
        """One entry line chained to the previous one; ``new`` comes from :meth:`new_id`."""
        self.ts = ts or self.ts
        d = {"type": kind, "id": new, "parentId": self.prev, "timestamp": self.ts}
        d.update((k, v) for k, v in fields.items() if k not in _ENTRY_KEYS)
        self.prev = new
        return new, orjson.dumps(d)

    def blocks(self, parts: Sequence[Part]) -> list[Any]:
        if self.native:
            return _blocks(parts)
        return [_block(_plain(p)) for p in parts if not isinstance(p, OpaquePart)]

    def message(self, m: Message) -> tuple[str, bytes]:
        x = m.extra if self.native else {}
        em: dict[str, Any] = dict(x["message"]) if isinstance(x.get("message"), dict) else {}
        role = em.get("role")
        new = self.new_id(m.id)
        if m.role == "user" and not em and "fromId" in x:
            return self.entry("branch_summary", new, m.timestamp, x)
        if m.role == "user" and not em and "customType" in x:
            return self.entry("custom_message", new, m.timestamp, {**x, "content": _text_or_blocks(m.parts)})
        if role == "bashExecution":
            msg = em
        elif role in ("custom", "hookMessage"):
            msg = {**em, "role": "custom", "content": _text_or_blocks(m.parts)}  # hookMessage is v2's name
        elif role in ("branchSummary", "compactionSummary"):
            pre, post = (
                (BRANCH_PREFIX, BRANCH_SUFFIX)
                if role == "branchSummary"
                else (COMPACTION_PREFIX, COMPACTION_SUFFIX)
            )
            msg = {**em, "summary": _unwrap(m.text, pre, post)}
        elif m.role == "assistant":
            msg = self._assistant(m, em)
        elif m.role == "tool":
            msg = self._result(m, em)
        else:  # user (and a foreign system message: pi sessions have none)
            msg = {"role": "user", "content": self.blocks(m.parts), **em}
        msg.setdefault("timestamp", _ms(m.timestamp or self.ts))
        return self.entry("message", new, m.timestamp, {**x, "message": msg})

    def _assistant(self, m: Message, em: dict[str, Any]) -> dict[str, Any]:
        for c in m.tool_calls:
            self.names[c.id] = c.name
        model = m.model
        if em:
            self.provider = em.get("provider", self.provider)
            self.api = em.get("api", self.api)
        else:  # a message pi did not write: the fields its AssistantMessage has
            model = model or self.model
            provider, api = (self.provider, self.api) if self.native else family(model)
            em = {"api": api, "provider": provider, "usage": _usage(m.usage),
                  "stopReason": "toolUse" if m.tool_calls else "stop"}  # fmt: skip
        if m.usage is None and isinstance(em.get("usage"), dict):
            em = {**em, "usage": zeroed(em["usage"])}  # a count that no longer holds (base.zeroed)
        msg = {"role": "assistant", "content": self.blocks(m.parts), **em}
        if model is not None:
            msg["model"] = model
        return msg

    def _result(self, m: Message, em: dict[str, Any]) -> dict[str, Any]:
        r = next(iter(m.tool_results), None)
        if r is None:
            return {"role": "user", "content": self.blocks(m.parts), **em}
        name = r.name if r.name is not None else self.names.get(r.call_id, "")
        return {"role": "toolResult", "toolCallId": r.call_id, "toolName": name,
                "content": self.blocks(r.content), "isError": r.is_error, **em}  # fmt: skip

    def stand_in(self, ts: str | None) -> bytes:
        """The assistant message a compacted session needs before its compaction entry. pi
        treats a file without one as never written and, with its first reply, appends every
        entry again; pi also restores the session's model from it. It is not on the context pi
        builds (that starts at the compaction's first kept entry)."""
        msg = {"role": "assistant", "content": [{"type": "text", "text": STAND_IN}], "api": self.api,
               "provider": self.provider, "model": self.model or "", "usage": _usage(None),
               "stopReason": "stop", "timestamp": _ms(ts or self.ts)}  # fmt: skip
        return self.entry("message", self.new_id(None), ts, {"message": msg})[1]


P = TypeVar("P", bound=Part)


def _plain(p: P) -> P:
    """A part of another format without that format's block fields."""
    if isinstance(p, ToolResultPart):
        return dataclasses.replace(p, content=tuple(_plain(c) for c in p.content), extra={})
    return dataclasses.replace(p, extra={}) if p.extra else p


def _split(m: Message) -> list[Message]:
    """pi has one toolResult message per tool call: results held together (as Anthropic-style
    user messages hold them) become one message each, any other parts a user message after."""
    results = m.tool_results
    if not results or (m.role == "tool" and len(results) == 1):
        return [m]
    out = [Message("tool", (r,), timestamp=m.timestamp) for r in results]
    rest = tuple(p for p in m.parts if not isinstance(p, ToolResultPart))
    return [*out, Message("user", rest, timestamp=m.timestamp)] if rest else out


def _one_turn_each(entries: Sequence[Entry]) -> list[Entry]:
    """Consecutive assistant messages of another format (Codex writes each parallel call as an
    item of its own) as one assistant message, the way pi records a turn: pi sends each of its
    messages as a turn, and would answer the first call of a split turn twice."""
    out: list[Entry] = []
    for e in entries:
        prev = out[-1] if out else None
        if (
            isinstance(e, Message)
            and isinstance(prev, Message)
            and e.role == prev.role == "assistant"
            and e.branch is None
            and prev.branch is None
        ):
            out[-1] = dataclasses.replace(
                prev, parts=(*prev.parts, *e.parts), usage=e.usage or prev.usage, model=e.model or prev.model
            )
        else:
            out.append(e)
    return out


def _first_timestamp(t: Transcript) -> str:
    found = (e.timestamp for e in t.entries if isinstance(e, (Message, CompactionMarker)) and e.timestamp)
    return next(found, None) or now_iso()


def _recorded(w: _Writer, e: CompactionMarker) -> bytes:
    """A compaction pi recorded itself, pointing at the new id of the entry it kept first."""
    fields = {k: v for k, v in e.extra.items() if k != "firstKeptEntryIndex"}  # version 1's pointer
    fields.update(summary=e.summary or "", tokensBefore=e.tokens_before or 0)
    if e.tokens_after is not None:
        fields["tokensAfter"] = e.tokens_after
    new = w.new_id(e.id)
    fields["firstKeptEntryId"] = w.ids.get(e.first_kept_id or "") or new
    return w.entry("compaction", new, e.timestamp, fields)[1]


def write(t: Transcript) -> Iterator[bytes]:
    """The lines of a pi session file for ``t`` (main branch only)."""
    ts = _first_timestamp(t)
    head = header(t, ts)
    provider, api, model = origin(t)
    w = _Writer(ts, native(t, NAME), provider, api, model)
    named = head.get("modelId")  # a version 1 header's model: no model_change needed for it
    yield orjson.dumps(head)
    entries = live(t.entries) if w.native else _one_turn_each(live(t.entries))
    compacted = any(isinstance(e, CompactionMarker) and e.source != NAME for e in entries)
    answered = any(isinstance(e, Message) and e.role == "assistant" and e.branch is None for e in entries)
    pending: CompactionMarker | None = None  # a ctxfold compaction waiting for the entries it keeps
    kept: str | None = None  # the first of them
    summary = ""
    skip: set[int] = set()

    def flush() -> Iterator[bytes]:
        nonlocal pending
        if pending is not None:
            new = w.new_id(None)
            fields = {
                "summary": summary,
                "firstKeptEntryId": kept or new,
                "tokensBefore": pending.tokens_before or 0,
            }
            yield w.entry("compaction", new, pending.timestamp, fields)[1]
            pending = None

    for i, e in enumerate(entries):
        if i in skip:
            continue
        if isinstance(e, ContextUpdate):
            kind = e.extra.get("type") if w.native else None
            if kind in ("model_change", "thinking_level_change"):
                new, line = w.entry(kind, w.new_id(e.extra.get("id")), e.extra.get("timestamp"), e.extra)
                named = e.extra.get("modelId") if kind == "model_change" else named
            else:
                # a compacted session starts with the model it was using, as pi names it
                model = w.model if i == 0 and compacted and w.model else e.model
                if not model or model == named:
                    continue
                provider = w.provider if w.native or model == w.model else family(model)[0]
                new, line = w.entry(
                    "model_change", w.new_id(None), None, {"provider": provider, "modelId": model}
                )
                named = model
            kept = kept or (new if pending else None)
            yield line
        elif isinstance(e, Message) and e.branch is None and (w.native or not e.dropped):
            # (pi leaves its own failed and stopped responses out; another harness's, it would send)
            for m in _split(e):
                new, line = w.message(m)
                kept = kept or (new if pending else None)
                yield line
        elif isinstance(e, CompactionMarker):
            yield from flush()
            if not answered:
                answered = True
                yield w.stand_in(e.timestamp)
            if e.source == NAME:
                yield _recorded(w, e)
                continue
            pending, kept = e, None
            after = next(
                ((j, m) for j, m in enumerate(entries[i + 1 :], i + 1) if isinstance(m, Message)), None
            )
            if after is not None and after[1].extra.get("ctxfold") == "summary":
                skip.add(after[0])  # pi writes its own summary message from the compaction entry
                summary = e.summary if e.summary is not None else after[1].text
            else:
                summary = e.summary or ""
    yield from flush()
