"""Write a transcript back as a Codex CLI rollout that ``codex resume`` can pick up.

Codex rebuilds the model's history on resume from the ``response_item`` lines and the newest
``compacted`` line carrying ``replacement_history`` (the history restarts from it; the response
items after it are replayed on top). So the file is: ``session_meta`` first, ``turn_context``
lines where the transcript had them, one ``response_item`` per message, and after the last item
of a model response an ``event_msg`` ``token_count`` with that response's usage (cumulative
totals, as Codex writes them). A ctxfold compaction becomes a ``compacted`` line whose
``replacement_history`` holds the summary and continuation messages (as user messages, which
is where Codex's own compaction puts its summary), with the kept tail written after it as
ordinary response items. No ``turn_context`` is written after it unless the transcript has
one, so Codex re-injects its initial context (permissions, environment) on the next turn, as
it does after its own compaction. UI-only events (user_message, agent_message, exec ends,
task_started) are not written: Codex does not read them back into the model's history.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from ctxfold.formats.base import now_iso
from ctxfold.formats.codex.check import check, check_file
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextUpdate,
    MediaPart,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    Usage,
)

__all__ = ["check", "check_file", "item", "items", "write"]

NAME = "codex"


# ------------------------------------------------------------------------------ response items


def _content(parts: Sequence[Any], default: str) -> list[Any]:
    out: list[Any] = []
    for p in parts:
        if isinstance(p, TextPart):
            rest = {k: v for k, v in p.extra.items() if k not in ("type", "text")}
            out.append({"type": p.extra.get("type", default), "text": p.text, **rest})
        elif isinstance(p, MediaPart):
            url = f"data:{p.mime_type};base64,{p.data}" if p.data is not None else p.url
            out.append({"type": "input_image", "image_url": url, **p.extra})
        elif isinstance(p, OpaquePart):
            out.append(p.data)
        elif isinstance(p, ThinkingPart):  # not a content item in Codex: keep its words
            out.append({"type": default, "text": p.text})
    return out


def _output(r: ToolResultPart) -> Any:
    """A tool output: a plain string when it is one text, else a list of content items. The
    older ``{"content": ..., "success": bool}`` shape comes back when the reader kept it."""
    first = r.content[0] if r.content else None
    value: Any = _content(r.content, "input_text")
    if first is None:
        value = ""
    elif len(r.content) == 1 and isinstance(first, TextPart) and not first.extra:
        value = first.text
    if isinstance(r.extra.get("output"), dict):
        key = "content" if isinstance(value, str) else "content_items"
        return {key: value, **r.extra["output"]}
    return value


def _reasoning(m: Message, p: ThinkingPart) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "reasoning"}
    if m.id is not None:
        out["id"] = m.id
    if "summary" not in m.extra:
        out["summary"] = [{"type": "summary_text", "text": p.text}] if p.text else []
    out.update(m.extra)
    out["encrypted_content"] = p.encrypted  # Codex writes the key even when it is null
    return out


def item(m: Message) -> dict[str, Any]:
    """The Responses API item for one message, as Codex records it in ``response_item`` lines."""
    head: dict[str, Any] = {}
    extra = {k: v for k, v in m.extra.items() if k != "ctxfold"}
    if m.role == "tool" and m.tool_results:
        r = m.tool_results[0]
        head = {"type": r.extra.get("type", "function_call_output")}
        if m.id is not None:
            head["id"] = m.id
        return {**head, "call_id": r.call_id, "output": _output(r), **extra}
    if m.role == "assistant" and len(m.parts) == 1 and not isinstance(m.parts[0], TextPart):
        p = m.parts[0]
        if isinstance(p, ThinkingPart):
            return _reasoning(m, p)
        if isinstance(p, OpaquePart) and isinstance(p.data, dict):
            return dict(p.data)
        if isinstance(p, ToolCallPart):
            kind = p.extra.get("type", "function_call")
            head = {"type": kind, **({"id": m.id} if m.id is not None else {})}
            if kind == "local_shell_call":
                return {**head, "call_id": p.id, "action": p.arguments, **extra}
            if kind == "custom_tool_call":
                return {**head, **extra, "call_id": p.id, "name": p.name, "input": p.arguments}
            args = p.arguments if isinstance(p.arguments, str) else orjson.dumps(p.arguments).decode()
            return {**head, "name": p.name, "arguments": args, "call_id": p.id, **extra}
    role = extra.pop("role", None) or ("developer" if m.role == "system" else m.role)
    if role == "tool":
        role = "user"
    head = {"type": "message", **({"id": m.id} if m.id is not None else {}), "role": role}
    default = "output_text" if role == "assistant" else "input_text"
    return {**head, "content": _content(m.parts, default), **extra}


def items(m: Message) -> list[dict[str, Any]]:
    """Codex records a response as one item per output (reasoning, message, call) and one
    output item per tool result, so a message holding several (from another format) is split."""
    if m.role == "tool" and len(m.tool_results) > 1:
        return [item(Message("tool", (r,))) for r in m.tool_results]
    if (
        m.role != "assistant"
        or all(isinstance(p, (TextPart, MediaPart)) for p in m.parts)
        or len(m.parts) < 2
    ):
        return [item(m)]
    out: list[dict[str, Any]] = []
    run: list[Any] = []
    for p in (*m.parts, None):
        if isinstance(p, (TextPart, MediaPart)):
            run.append(p)
            continue
        if run:
            out.append(item(Message("assistant", tuple(run))))
            run = []
        if p is not None:
            out.append(item(Message("assistant", (p,))))
    return out


# ------------------------------------------------------------------------------------ writer


def _sources(t: Transcript) -> list[Transcript]:
    original = t.extra.get("original")
    return [t, original] if isinstance(original, Transcript) else [t]


def _first(t: Transcript, want: Any, newest: bool = False) -> ContextUpdate | None:
    for src in _sources(t):
        for e in reversed(src.entries) if newest else src.entries:
            if isinstance(e, ContextUpdate) and want(e):
                return e
    return None


def _session_meta(t: Transcript, own: ContextUpdate | None, ts: str) -> dict[str, Any]:
    """The session_meta payload: the transcript's own, else the original's, else a fresh one."""
    base = _first(t, lambda e: e.session_id is not None and bool(e.extra))
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
    payload.setdefault("id", t.session_id or str(uuid.uuid4()))
    payload.setdefault("timestamp", ts)
    payload.setdefault("cwd", os.getcwd())
    payload.setdefault("originator", "codex_cli_rs")
    payload.setdefault("cli_version", "0.0.0")
    return {"id": payload.pop("id"), **payload}


def _turn_extra(t: Transcript) -> dict[str, Any]:
    """A turn_context payload to copy when the model changes with no turn_context of its own."""
    cu = _first(t, lambda e: e.session_id is None and "cwd" in e.extra and "approval_policy" in e.extra, True)
    return dict(cu.extra) if cu is not None else {"cwd": os.getcwd(), "approval_policy": "never"}


class _Writer:
    def __init__(self, ts: str) -> None:
        self.ts = ts
        self.model: str | None = None
        self.window: int | None = None
        self.totals = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
                       "reasoning_output_tokens": 0, "total_tokens": 0}  # fmt: skip

    def line(self, kind: str, payload: Mapping[str, Any], ts: str | None) -> bytes:
        self.ts = ts or self.ts
        return orjson.dumps({"timestamp": self.ts, "type": kind, "payload": payload})

    def token_count(self, u: Usage) -> bytes:
        last = {"input_tokens": u.prompt_tokens, "cached_input_tokens": u.cache_read_tokens,
                "output_tokens": u.output_tokens, "reasoning_output_tokens": u.reasoning_tokens or 0,
                "total_tokens": u.prompt_tokens + u.output_tokens}  # fmt: skip
        if u.reasoning_tokens is None:
            del last["reasoning_output_tokens"]
        for k, v in last.items():
            self.totals[k] += v
        self.window = u.context_window or self.window
        info = {"total_token_usage": dict(self.totals), "last_token_usage": last,
                "model_context_window": self.window}  # fmt: skip
        return self.line("event_msg", {"type": "token_count", "info": info, "rate_limits": None}, None)


def _first_timestamp(t: Transcript) -> str:
    for e in t.entries:
        ts = getattr(e, "timestamp", None)
        if isinstance(ts, str):
            return ts
    return now_iso()


def write(t: Transcript) -> Iterator[bytes]:
    """The lines of a Codex rollout for ``t`` (main branch only)."""
    entries = t.entries
    w = _Writer(_first_timestamp(t))
    own = next((e for e in entries if isinstance(e, ContextUpdate) and e.session_id), None)
    meta = _session_meta(t, own, w.ts)
    w.model = meta.get("model") if isinstance(meta.get("model"), str) else None
    yield w.line(
        "session_meta", meta, meta.get("timestamp") if isinstance(meta.get("timestamp"), str) else None
    )
    skip: set[int] = set()
    for i, e in enumerate(entries):
        if i in skip:
            continue
        if isinstance(e, ContextUpdate):
            if e.session_id and e is not own:  # a second session_meta (forked rollouts carry the source's)
                yield w.line("session_meta", _session_meta(t, e, w.ts), None)
            elif (e.extra and e is not own) or (e.model and e.model != w.model):
                payload = dict(e.extra) if e.extra else _turn_extra(t)
                w.model = e.model or w.model
                yield w.line("turn_context", {**payload, "model": w.model} if w.model else payload, None)
            if e.context_window and e.context_window != w.window:
                # said by the turn's task_started, as Codex does: a window the log recorded must
                # survive even where no token_count (no usage) follows to repeat it
                w.window = e.context_window
                yield w.line("event_msg", {"type": "task_started", "model_context_window": w.window}, None)
        elif isinstance(e, Message) and e.branch is None:
            for it in items(e):
                yield w.line("response_item", it, e.timestamp)
            if e.usage is not None and e.role == "assistant":
                yield w.token_count(e.usage)
        elif isinstance(e, CompactionMarker):
            replacement: list[Message] | None = list(e.replacement) if e.replacement is not None else None
            if e.source != NAME:
                replacement = []
                for j in range(i + 1, len(entries)):
                    m = entries[j]
                    if not (isinstance(m, Message) and m.extra.get("ctxfold") in ("summary", "continuation")):
                        break
                    replacement.append(m)
                    skip.add(j)
            summary = e.summary if e.summary is not None else (replacement[0].text if replacement else "")
            compacted: dict[str, Any] = {"message": summary}
            if replacement is not None:
                compacted["replacement_history"] = [x for m in replacement for x in items(m)]
            yield w.line("compacted", {**compacted, **(e.extra if e.source == NAME else {})}, e.timestamp)
        elif isinstance(e, ApiError) and e.extra.get("type") in ("error", "stream_error"):
            yield w.line("event_msg", {"type": e.extra["type"], "message": e.message, **e.extra}, e.timestamp)
