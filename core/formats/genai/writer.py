"""Write Google genai (Gemini / ADK) transcripts: the inverse of ``genai``/``genai_parts``.

Layout: a request line ``{model, systemInstruction, tools, contents: []}`` for the fixed parts,
then one line per message, in the shape the reader had it from: an ADK event (its extra holds
``invocationId``/``author``) goes back as an event, a model message with usage, model or
response id as a ``generateContent`` response ``{candidates, usageMetadata, modelVersion,
responseId}`` (streamed chunks were merged into one), anything else as a Content
``{role, parts}``. Keys are written camelCase (the reader takes both spellings). Earlier
conversations (before a ContextReset) are written as a request log. Calls the reader gave a
made-up id (``extra["synthetic_id"]``) are written without one, so they get the same id again.
A transcript none of whose lines would name its model (a compacted one that kept no model
turn) names it on the request line, so that a re-read counts with the same model.

ADK events without content (state changes only) were not read, so they are not written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ctxfold.formats.api_writing import (
    Segment,
    current,
    dumps,
    error_body,
    extra_of,
    fold,
    is_ctxfold,
    merge_runs,
    read_items,
    request_log,
    segments,
    split_items,
    with_model,
)
from ctxfold.transcript.model import (
    ApiError,
    ContextUpdate,
    Entry,
    MediaPart,
    Message,
    OpaquePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    Transcript,
    Usage,
)

_ROLES = {"user": "user", "assistant": "model", "system": "system", "tool": "user"}
# Keys that sit beside functionCall/functionResponse in a Part, not inside it.
_RAW_ROLES = ("user", "model", "function", None)  # what the reader keeps in extra["role"]
_PART_KEYS = frozenset(
    {"thoughtSignature", "thought_signature", "thought", "videoMetadata", "video_metadata"}
)
_FLAGS = ("synthetic_id", "response_key")
_EVENT_MARKS = ("invocationId", "invocation_id", "author")


def _media(p: MediaPart) -> dict[str, Any]:
    extra = dict(p.extra)
    blob = extra.pop("blob", None) or {}
    if p.data is not None:
        return {"inlineData": {"mimeType": p.mime_type, "data": p.data, **blob}, **extra}
    return {"fileData": {"mimeType": p.mime_type, "fileUri": p.url or "", **blob}, **extra}


def _split(extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Part-level keys, keys inside the functionCall/functionResponse) of a part's extra."""
    outer = {k: v for k, v in extra.items() if k in _PART_KEYS}
    inner = {k: v for k, v in extra.items() if k not in _PART_KEYS and k not in _FLAGS}
    return outer, inner


def _response(r: ToolResultPart) -> dict[str, Any]:
    """The functionResponse body: the inverse of ``genai_parts._result_content``."""
    outer, inner = _split(r.extra)
    body: dict[str, Any] = {}
    if not r.extra.get("synthetic_id"):
        body["id"] = r.call_id
    body["name"] = r.name or ""
    content = list(r.content)
    key = r.extra.get("response_key")
    first = content[0] if content else None
    if isinstance(first, TextPart):
        content.pop(0)
        text = first.text
        if isinstance(key, str):
            body["response"] = {key: text}
        else:
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                value = None
            body["response"] = (
                value if isinstance(value, dict) else {"error" if r.is_error else "output": text}
            )
    if content:
        body["parts"] = [_media(p) if isinstance(p, MediaPart) else _part(p) for p in content]
    body.update(inner)
    return {"functionResponse": body, **outer}


def _part(p: Part) -> Any:
    """One Part (the inverse of ``genai_parts.part_of``)."""
    if isinstance(p, TextPart):
        return {"text": p.text, **p.extra}
    if isinstance(p, ThinkingPart):
        if not p.text and p.signature and not p.extra:
            return {"thoughtSignature": p.signature}
        d: dict[str, Any] = {"text": p.text, "thought": True}
        if p.signature:
            d["thoughtSignature"] = p.signature
        return {**d, **p.extra}
    if isinstance(p, ToolCallPart):
        outer, inner = _split(p.extra)
        call: dict[str, Any] = {} if p.extra.get("synthetic_id") else {"id": p.id}
        call["name"] = p.name
        if p.arguments is not None:
            call["args"] = p.arguments
        return {"functionCall": {**call, **inner}, **outer}
    if isinstance(p, ToolResultPart):
        return _response(p)
    if isinstance(p, MediaPart):
        return _media(p)
    if isinstance(p, OpaquePart):
        return p.data
    raise TypeError(f"unknown part {p!r}")


def content(m: Message, extra: dict[str, Any]) -> dict[str, Any]:
    """The Content of a message; ``extra`` is the message's extra (``role``/``content`` used)."""
    d: dict[str, Any] = {}
    role = extra["role"] if extra.get("role", "") in _RAW_ROLES else _ROLES[m.role]
    if role is not None:
        d["role"] = role
    d["parts"] = [_part(p) for p in m.parts]
    d.update(extra.get("content") or {})
    return d


def usage_dict(u: Usage) -> dict[str, Any]:
    """usageMetadata: the reader counts thoughts as output, so they come out of candidates."""
    thoughts = u.reasoning_tokens
    d: dict[str, Any] = {
        "promptTokenCount": u.prompt_tokens,
        "candidatesTokenCount": u.output_tokens - (thoughts or 0),
        "totalTokenCount": u.prompt_tokens + u.output_tokens,
    }
    if u.cache_read_tokens:
        d["cachedContentTokenCount"] = u.cache_read_tokens
    if thoughts is not None:
        d["thoughtsTokenCount"] = thoughts
    return d


def _epoch(ts: str | None) -> Any:
    """ADK timestamps are epoch seconds; the reader made them ISO strings."""
    if ts is None:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return ts


def response_dict(m: Message) -> dict[str, Any]:
    extra = extra_of(m)
    cand = {"content": content(m, extra), **(extra.get("candidate") or {})}
    d: dict[str, Any] = {"candidates": [cand]}
    if m.usage is not None:
        d["usageMetadata"] = usage_dict(m.usage)
    if m.model:
        d["modelVersion"] = m.model
    if m.id:
        d["responseId"] = m.id
    d.update((k, v) for k, v in extra.items() if k not in ("role", "content", "candidate"))
    return d


def message_line(m: Message) -> dict[str, Any]:
    extra = extra_of(m)
    if any(k in extra for k in _EVENT_MARKS):
        d: dict[str, Any] = {"id": m.id} if m.id else {}
        d.update((k, v) for k, v in extra.items() if k not in ("role", "content"))
        if m.timestamp:
            d["timestamp"] = _epoch(m.timestamp)
        d["content"] = content(m, extra)
        if m.usage is not None:
            if not m.usage.final:
                d["partial"] = True
            d["usageMetadata"] = usage_dict(m.usage)
        if m.model:
            d["modelVersion"] = m.model
        return d
    if m.role == "assistant" and (m.usage is not None or m.model or m.id or "candidate" in extra):
        return response_dict(m)
    return content(m, extra)


def _error(e: ApiError, event: dict[str, Any] | None) -> dict[str, Any]:
    if "errorCode" in e.extra or ("error" not in e.extra and event is not None):
        d: dict[str, Any] = {"id": e.id} if e.id else {}
        d.update(event or {})
        if e.timestamp:
            d["timestamp"] = _epoch(e.timestamp)
        if e.extra.get("errorCode") is not None:
            d["errorCode"] = e.extra["errorCode"]
        d["errorMessage"] = e.message
        return d
    d = {"error": error_body(e)}
    if e.id:
        d["id"] = e.id
    if e.timestamp:
        d["timestamp"] = e.timestamp
    return d


def tools_list(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    decls: list[dict[str, Any]] = []
    builtins: list[dict[str, Any]] = []
    for t in tools:
        if t.parameters is None and set(t.extra) == {t.name}:
            builtins.append(dict(t.extra))  # googleSearch, codeExecution...
            continue
        d: dict[str, Any] = {"name": t.name}
        if t.description:
            d["description"] = t.description
        if t.parameters is not None:
            d["parameters"] = dict(t.parameters)
        decls.append({**d, **t.extra})
    return ([{"functionDeclarations": decls}] if decls else []) + builtins


def request_line(state: ContextUpdate, contents: list[dict[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if state.model:
        d["model"] = state.model
    if state.system:
        d["systemInstruction"] = {"parts": [{"text": s} for s in state.system]}
    if state.tools:
        d["tools"] = tools_list(state.tools)
    d["contents"] = contents
    return d


def _fix(entries: list[Entry]) -> list[Entry]:
    """ctxfold's own user messages (summary, continuation) and a user message right after them
    become one Content, so the compaction adds no same-role neighbours."""
    return merge_runs(
        entries, lambda a, b: a.role == b.role == "user" and is_ctxfold(a) and not b.tool_results
    )


def _named(m: Message) -> str | None:
    """The model ``message_line`` writes for ``m`` (``modelVersion`` of an event or response)."""
    if m.role == "assistant" or any(k in extra_of(m) for k in _EVENT_MARKS):
        return m.model
    return None


def write(t: Transcript) -> Iterator[bytes]:
    state, entries = current(t)
    state = with_model(t, state, entries, _named)
    segs = segments(state, entries)
    event: dict[str, Any] | None = None  # the ADK invocation/author of the last event written
    for i, seg in enumerate(segs):
        body = _fix(seg.entries)
        if i < len(segs) - 1:  # an earlier conversation: as a request log
            for c in request_log(Segment(seg.start, body)):
                if isinstance(c, ApiError):
                    yield dumps(_error(c, None))
                    continue
                line = request_line(c.context, [content(m, extra_of(m)) for m in c.history])
                if c.response:
                    line["response"] = response_dict(c.response[0])
                yield dumps(line)
            continue
        ctx = seg.start
        if i > 0 or ctx.system or ctx.tools or ctx.model:
            yield dumps(request_line(ctx, []))
        for e in body:
            if isinstance(e, Message):
                d = message_line(e)
                if any(k in d for k in _EVENT_MARKS):
                    event = {k: d[k] for k in _EVENT_MARKS if k in d}
                yield dumps(d)
            elif isinstance(e, ApiError):
                yield dumps(_error(e, event))
            elif isinstance(e, ContextUpdate):
                new = fold(ctx, e)
                if request_line(new, []) != request_line(ctx, []):
                    yield dumps(request_line(new, []))
                ctx = new


# ------------------------------------------------------------------------------ checking


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    """Gemini's rules (its 400 errors say them): a function call turn comes right after a user
    turn or a function response turn (so never first); a function response turn comes right after a function call turn and has as
    many function responses as it had calls, answering them."""
    out: list[tuple[int, str]] = []
    for seg in split_items(items):
        prev: Message | None = None
        for no, m in seg:
            results = m.tool_results
            if m.role == "assistant" and m.tool_calls and (prev is None or prev.role == "assistant"):
                out.append((no, "function call turn must come right after a user turn or a function "
                                    "response turn"))  # fmt: skip
            if results:
                calls = prev.tool_calls if prev is not None and prev.role == "assistant" else ()
                if not calls:
                    out.append((no, "function response turn must come right after a function call turn"))
                else:
                    if len(results) != len(calls):
                        out.append((no, f"{len(results)} function response(s) for {len(calls)} function "
                                        "call(s) of the call turn"))  # fmt: skip
                    ids = {c.id for c in calls}
                    for r in results:
                        if r.call_id not in ids:
                            out.append(
                                (no, f"function response {r.call_id!r} answers no call of the call turn")
                            )
            elif prev is not None and prev.role == "assistant" and prev.tool_calls:
                out.append((no, "function call turn not followed by its function responses"))
            prev = m
    return out


def check_file(path: str | Path) -> list[tuple[int, str]]:
    """``check`` over the file as the genai reader reads it, each entry with its own line."""
    return check(read_items(path, "genai"))
