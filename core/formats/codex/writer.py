"""Write a transcript back as a Codex CLI rollout that ``codex resume`` can pick up.

Codex rebuilds the model's history on resume from the ``response_item`` lines and the newest
``compacted`` line carrying ``replacement_history`` (the history restarts from it; the response
items after it are replayed on top). So the file is: ``session_meta`` first, ``turn_context`` and
``world_state`` lines where the transcript had them, one ``response_item`` per item, and after the
last item of a model response its usage (a ``token_usage_record`` where the rollout had them, and
the ``token_count`` event with cumulative totals). A ctxfold compaction becomes a ``compacted``
line whose ``replacement_history`` holds the summary and continuation messages (as user messages,
where Codex's own compaction puts its summary), with the kept tail after it as ordinary items. No
``turn_context`` follows it, so Codex re-injects its initial context (permissions, environment) on
the next turn, as after its own compaction. UI-only events are not written; a window the log
recorded is said the way Codex says it after a compaction (a ``token_count`` with no usage).

Layouts, chosen from the input's own ``session_meta``: Codex 0.148 and later write
``history_mode: "paginated"`` and number every line (``ordinal`` from 0; resuming refuses a
paginated rollout whose last line has none), older ones neither (``legacy``, which every version
reads). A transcript from another harness is written in the legacy layout with no model, system
prompt or reasoning of that harness: Codex supplies its own instructions and model on resume.

A compacted or converted session is a new session: it gets a new id (``session_meta.id``, and the
rollout's file name when installed; see ``resume.py``), because Codex finds a session by id and
would otherwise open the original, which stays untouched and resumable.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from ctxfold.formats.base import now_iso
from ctxfold.formats.codex.check import check, check_file
from ctxfold.formats.codex.emit import item, items, plain
from ctxfold.formats.codex.reader import LINE_EXTRA, RECORD, ROLLBACK, WORLD_STATE
from ctxfold.transcript.context import live
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextUpdate,
    Message,
    Rewind,
    TextPart,
    Transcript,
    Usage,
)

__all__ = ["check", "check_file", "item", "items", "write"]

NAME = "codex"
PAGINATED_SINCE = (0, 148, 0)  # the first CLI to write history_mode "paginated" and line ordinals
_USAGE_KEYS = (
    ("input_tokens", "prompt_tokens"),
    ("cached_input_tokens", "cache_read_tokens"),
    ("cache_write_input_tokens", "cache_write_tokens"),
    ("output_tokens", "output_tokens"),
    ("reasoning_output_tokens", "reasoning_tokens"),
)


def _version(text: Any) -> tuple[int, ...] | None:
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", text) if isinstance(text, str) else None
    return tuple(int(x) for x in found.groups()) if found else None


def paginated(meta: Mapping[str, Any]) -> bool:
    """Whether Codex treats a rollout with this session_meta as paginated (ordinals required):
    its ``history_mode`` says so; a meta without one is legacy unless its CLI is one that
    always writes the field (then it was lost, and the version decides)."""
    mode = meta.get("history_mode")
    if mode is not None:
        return mode == "paginated"
    version = _version(meta.get("cli_version"))
    return version is not None and version >= PAGINATED_SINCE


# ------------------------------------------------------------------------------ session_meta


def _sources(t: Transcript) -> list[Transcript]:
    original = t.extra.get("original")
    return [t, original] if isinstance(original, Transcript) else [t]


def _first(t: Transcript, want: Any, newest: bool = False) -> ContextUpdate | None:
    for src in _sources(t):
        for e in reversed(src.entries) if newest else src.entries:
            if isinstance(e, ContextUpdate) and want(e):
                return e
    return None


def _is_meta(e: ContextUpdate) -> bool:
    return e.session_id is not None and bool(e.extra) and WORLD_STATE not in e.extra


def _new_id(t: Transcript, own: ContextUpdate | None) -> str:
    """The compacted or converted session's id: the one the transcript was given when it is a
    UUID no source uses (Codex finds sessions by UUID), else a fresh one."""
    old = {src.session_id for src in _sources(t)[1:]} | {
        e.session_id for src in _sources(t)[1:] for e in src.entries if isinstance(e, ContextUpdate)
    }
    sid = own.session_id if own is not None else t.session_id
    try:
        if sid and sid not in old and str(uuid.UUID(sid)) == sid.lower():
            return sid
    except ValueError:
        pass
    return str(uuid.uuid4())


def _cwd(t: Transcript) -> str:
    """Where the session ran, as another harness's messages say (Claude Code: ``cwd``)."""
    for src in _sources(t):
        for m in reversed(src.messages):
            cwd = m.extra.get("cwd")
            if isinstance(cwd, str) and cwd:
                return cwd
    return os.getcwd()


def _session_meta(t: Transcript, own: ContextUpdate | None, native: bool, new: bool) -> dict[str, Any]:
    """The session_meta payload: the original's (Codex's own fields), with the compacted
    session's id and start; for another harness's transcript, a fresh one."""
    if not native:
        return {"id": _new_id(t, own), "timestamp": now_iso(), "cwd": _cwd(t),
                "originator": "codex_cli_rs", "cli_version": "0.0.0", "source": "cli"}  # fmt: skip
    base = _first(t, _is_meta)
    payload: dict[str, Any] = {}
    for cu in (base, own):
        if cu is None:
            continue
        if cu.session_id:
            payload["id"] = cu.session_id
        payload.update(cu.extra)
        # Only a session_meta Codex wrote names a model; a model of ctxfold's goes in a turn_context.
        if cu.model and cu.extra:
            payload["model"] = cu.model
        if cu.system is not None:
            text = "\n\n".join(cu.system)
            found = payload.get("base_instructions")
            if (found.get("text") if isinstance(found, dict) else found) != text:
                payload["base_instructions"] = {"text": text}
    if new:
        payload["id"] = _new_id(t, own)
        if "session_id" in payload:  # newer CLIs: the root session of a thread; this one is its own
            payload["session_id"] = payload["id"]
        payload["timestamp"] = now_iso()
    payload.setdefault("id", t.session_id or str(uuid.uuid4()))
    payload.setdefault("timestamp", now_iso())
    payload.setdefault("cwd", os.getcwd())
    payload.setdefault("originator", "codex_cli_rs")
    payload.setdefault("cli_version", "0.0.0")
    if paginated(payload):
        payload["history_mode"] = "paginated"
    return {"id": payload.pop("id"), **payload}


def _turn_extra(t: Transcript) -> dict[str, Any]:
    """A turn_context payload to copy when the model changes with no turn_context of its own."""
    cu = _first(t, lambda e: e.session_id is None and "cwd" in e.extra and "approval_policy" in e.extra, True)
    return dict(cu.extra) if cu is not None else {"cwd": os.getcwd(), "approval_policy": "never"}


# ------------------------------------------------------------------------------------ lines


class _Lines:
    """Line framing (timestamps, ordinals in the paginated layout) and the running usage totals."""

    def __init__(self, ts: str, ordinals: bool, session_id: str) -> None:
        self.ts = ts
        self.next = 0 if ordinals else None
        self.session_id = session_id
        self.model: str | None = None
        self.window: int | None = None
        self.totals = dict.fromkeys(("input_tokens", "cached_input_tokens", "output_tokens",
                                     "reasoning_output_tokens", "total_tokens"), 0)  # fmt: skip

    def line(self, kind: str, payload: Mapping[str, Any], ts: str | None, **beside: Any) -> bytes:
        self.ts = ts or self.ts
        head: dict[str, Any] = {"timestamp": self.ts}
        if self.next is not None:
            head["ordinal"] = self.next
            self.next += 1
        return orjson.dumps({**head, "type": kind, "payload": payload, **beside})

    def usage(self, u: Usage, record: Mapping[str, Any] | None) -> Iterator[bytes]:
        """A response's usage: its token_usage_record (when the rollout had one) and the
        token_count event Codex writes after it, with the running totals."""
        last: dict[str, Any] = {}
        for key, attr in _USAGE_KEYS:
            value = getattr(u, attr)
            if attr in ("prompt_tokens", "cache_read_tokens", "output_tokens") or (
                attr in u.fields and value is not None
            ):
                last[key] = value or 0
        last["total_tokens"] = u.prompt_tokens + u.output_tokens
        for k, v in last.items():
            self.totals[k] = self.totals.get(k, 0) + v
        self.window = u.context_window or self.window
        if record is not None:
            payload = dict(record)
            payload["usage"] = last
            yield self.line("token_usage_record", payload, None)
        info = {"total_token_usage": dict(self.totals), "last_token_usage": last,
                "model_context_window": self.window}  # fmt: skip
        yield self.line("event_msg", {"type": "token_count", "info": info, "rate_limits": None}, None)

    def window_only(self, window: int) -> bytes:
        """A window with no response behind it, said as Codex does after its own compaction:
        a token_count whose last usage is all zeros (the totals stay as they were)."""
        self.window = window
        last = dict.fromkeys(self.totals, 0)
        info = {
            "total_token_usage": dict(self.totals),
            "last_token_usage": last,
            "model_context_window": window,
        }
        return self.line("event_msg", {"type": "token_count", "info": info, "rate_limits": None}, None)


def _first_timestamp(t: Transcript) -> str:
    for e in t.entries:
        ts = getattr(e, "timestamp", None)
        if isinstance(ts, str):
            return ts
    return now_iso()


# ----------------------------------------------------------------------------------- writer


def _replacement(entries: Sequence[Any], i: int, e: CompactionMarker, skip: set[int]) -> list[Message] | None:
    """The messages a compaction leaves: Codex's own replacement history, or for ctxfold's the
    summary and continuation messages that follow the marker (they are written inside it)."""
    if e.source == NAME:
        return list(e.replacement) if e.replacement is not None else None
    out: list[Message] = []
    for j in range(i + 1, len(entries)):
        m = entries[j]
        if not (isinstance(m, Message) and m.extra.get("ctxfold") in ("summary", "continuation")):
            break
        out.append(m)
        skip.add(j)
    return out


def write(t: Transcript) -> Iterator[bytes]:
    """The lines of a Codex rollout for ``t`` (main branch only)."""
    native = t.source_format == NAME
    entries = t.entries if native else live(t.entries)  # (Codex's own rollbacks are written back)
    new = not native or isinstance(t.extra.get("original"), Transcript)
    own = next((e for e in entries if isinstance(e, ContextUpdate) and e.session_id), None)
    meta = _session_meta(t, own, native, new)
    w = _Lines(meta["timestamp"] if new else _first_timestamp(t), paginated(meta), meta["id"])
    w.model = meta.get("model") if isinstance(meta.get("model"), str) else None
    yield w.line("session_meta", meta, meta["timestamp"])
    skip: set[int] = set()
    for i, e in enumerate(entries):
        if i in skip:
            continue
        if isinstance(e, ContextUpdate):
            yield from _context(t, e, own, w, native)
        elif isinstance(e, Message) and e.branch is None and not e.dropped:  # (Codex would send it)
            m = e if native else plain(e)
            if m is None:
                continue
            beside = m.extra.get(LINE_EXTRA) if native and not new else None
            for it in items(m):
                yield w.line("response_item", it, m.timestamp, **(beside or {}))
            if m.usage is not None and m.role == "assistant":
                record = m.extra.get(RECORD) if native else None
                yield from w.usage(m.usage, record if isinstance(record, Mapping) else None)
        elif isinstance(e, CompactionMarker):
            replacement = _replacement(entries, i, e, skip)
            if not native:
                replacement = [q for q in map(plain, replacement or ()) if q is not None]
            summary = e.summary if e.summary is not None else (replacement[0].text if replacement else "")
            compacted: dict[str, Any] = {"message": summary}
            if replacement is not None:
                compacted["replacement_history"] = [x for m in replacement for x in items(m)]
            yield w.line("compacted", {**compacted, **(e.extra if e.source == NAME else {})}, e.timestamp)
        elif isinstance(e, ApiError) and native and e.extra.get("type") in ("error", "stream_error"):
            yield w.line("event_msg", {"type": e.extra["type"], "message": e.message, **e.extra}, e.timestamp)
        elif isinstance(e, Rewind) and isinstance(e.extra.get(ROLLBACK), Mapping):
            yield w.line("event_msg", e.extra[ROLLBACK], e.extra.get("timestamp"))


def _context(
    t: Transcript, e: ContextUpdate, own: ContextUpdate | None, w: _Lines, native: bool
) -> Iterator[bytes]:
    """The line(s) one ContextUpdate stands for."""
    if not native and e.system:  # another harness's instructions: a developer message, where they began
        yield w.line("response_item", item(Message("system", (TextPart("\n\n".join(e.system)),))), None)
    if native and WORLD_STATE in e.extra:
        yield w.line("world_state", e.extra[WORLD_STATE], None)
        return
    if native and e.session_id and e is not own:  # a second session_meta (forks carry the source's)
        yield w.line("session_meta", _session_meta(replace(t, extra={}), e, True, False), None)
    elif native and ((e.extra and e is not own) or (e.model and e.model != w.model)):
        payload = dict(e.extra) if e.extra and e is not own else _turn_extra(t)
        w.model = e.model or w.model
        yield w.line("turn_context", {**payload, "model": w.model} if w.model else payload, None)
    if e.context_window and e.context_window != w.window:
        yield w.window_only(e.context_window)
