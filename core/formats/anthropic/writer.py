"""Write Anthropic Messages transcripts: the inverse of ``anthropic``/``anthropic_blocks``.

Layout: a ``{system, model, tools}`` line (always: it marks the file as Anthropic's when every
block is text), then one line per message: user messages as ``{role, content}``, assistant
messages that have usage as the API's response object ``{id, type: "message", role, model,
content, stop_reason, usage}`` (as ``{role, ...}`` when they carry a timestamp, which a response
object has no field for). Earlier conversations (before a ContextReset) are written as a request
log (a ``{model, system, tools, messages, response}`` line per model response); the last one then
starts with a request line holding no messages, which is how a reader sees the restart.

The Messages API wants the conversation to start with a user message and roles to alternate, so
consecutive messages of one role (a summary followed by a continuation, say) are merged into one
message with all their blocks. Usage fields the model has no place for (``service_tier``...) and
system block options (``cache_control``) are not kept by the reader, so they are not written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxfold.formats.api_writing import (
    Segment,
    current,
    dumps,
    error_body,
    extra_of,
    fold,
    merge_runs,
    plain_text,
    read_items,
    request_log,
    segments,
    split_items,
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


def _media(p: MediaPart) -> dict[str, Any]:
    extra = dict(p.extra)
    src = extra.pop("source", None)
    kind = extra.pop("type", None) or ("image" if p.mime_type.startswith("image/") else "document")
    default = "image/*" if kind == "image" else "application/pdf"
    if isinstance(src, dict) and src.get("type") == "content":
        return {"type": kind, **extra, "source": src}
    source: dict[str, Any] = dict(src) if isinstance(src, dict) else {}
    if p.data is not None:
        source = {"type": source.pop("type", "base64"), "media_type": p.mime_type, "data": p.data, **source}
    elif p.text is not None:
        source = {"type": source.pop("type", "text"), "media_type": p.mime_type, "data": p.text, **source}
    elif p.url is not None:
        source = {"type": source.pop("type", "url"), "url": p.url, **source}
        if p.mime_type != default:
            source["media_type"] = p.mime_type
    elif not source:
        return {"type": kind, **extra}
    return {"type": kind, **extra, "source": source}


def block(p: Part) -> Any:
    """One content block (the inverse of ``anthropic_blocks.block_part``)."""
    if isinstance(p, TextPart):
        return {"type": "text", "text": p.text, **p.extra}
    if isinstance(p, ToolCallPart):
        args = p.arguments if p.arguments is not None else {}
        return {"type": "tool_use", "id": p.id, "name": p.name, "input": args, **p.extra}
    if isinstance(p, ToolResultPart):
        d: dict[str, Any] = {"type": "tool_result", "tool_use_id": p.call_id}
        if p.content:
            text = plain_text(p.content)
            d["content"] = text if text is not None else [block(x) for x in p.content]
        if p.is_error:
            d["is_error"] = True
        d.update(p.extra)
        return d
    if isinstance(p, ThinkingPart):
        if p.redacted:
            return {"type": "redacted_thinking", "data": p.encrypted or "", **p.extra}
        d = {"type": "thinking", "thinking": p.text}
        if p.signature is not None:
            d["signature"] = p.signature
        return {**d, **p.extra}
    if isinstance(p, MediaPart):
        return _media(p)
    if isinstance(p, OpaquePart):
        return p.data
    raise TypeError(f"unknown part {p!r}")


def usage_dict(u: Usage) -> dict[str, Any]:
    """Anthropic usage: input_tokens excludes the cache reads and writes."""
    d: dict[str, Any] = {
        "input_tokens": max(u.prompt_tokens - u.cache_read_tokens - u.cache_write_tokens, 0),
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
        "output_tokens": u.output_tokens,
    }
    if u.cache_write_1h_tokens:
        d["cache_creation"] = {
            "ephemeral_5m_input_tokens": u.cache_write_tokens - u.cache_write_1h_tokens,
            "ephemeral_1h_input_tokens": u.cache_write_1h_tokens,
        }
    return d


def tool_dict(t: ToolDef) -> dict[str, Any]:
    d: dict[str, Any] = {"name": t.name}
    if t.description:
        d["description"] = t.description
    if t.parameters is not None:
        d["input_schema"] = dict(t.parameters)
    d.update(t.extra)
    return d


def _context(state: ContextUpdate) -> dict[str, Any]:
    """The fixed parts; ``system`` is always there, as it is what marks a line of its own."""
    d: dict[str, Any] = {}
    if state.model:
        d["model"] = state.model
    system: tuple[str, ...] = state.system or ()
    d["system"] = system[0] if len(system) == 1 else [{"type": "text", "text": s} for s in system]
    if state.tools:
        d["tools"] = [tool_dict(t) for t in state.tools]
    return d


def message_dict(m: Message, response: bool) -> dict[str, Any]:
    """A message line (``response``: as the API's response object) or request message."""
    text = plain_text(m.parts) if m.role == "user" else None
    content: Any = text if text is not None else [block(p) for p in m.parts]
    role = "assistant" if m.role == "assistant" else "user"
    if response:
        d: dict[str, Any] = {}
        if m.id:
            d["id"] = m.id
        d.update({"type": "message", "role": role})
        if m.model:
            d["model"] = m.model
        d["content"] = content
    else:
        d = {"role": role, "content": content}
        if m.id:
            d["id"] = m.id
        if m.model:
            d["model"] = m.model
        if m.timestamp:
            d["timestamp"] = m.timestamp
    d.update((k, v) for k, v in extra_of(m).items() if k not in d and k != "role")
    if m.usage is not None and role == "assistant":
        d["usage"] = usage_dict(m.usage)
    return d


def _error(e: ApiError) -> dict[str, Any]:
    d: dict[str, Any] = {"type": "error", "error": error_body(e)}
    d["error"].setdefault("type", "api_error")
    d["error"].setdefault("message", e.message)
    if e.id:
        d["request_id"] = e.id
    return d


def _alternating(entries: list[Entry]) -> list[Entry]:
    """Merge same-role neighbours: the API wants user and assistant turns to alternate."""
    return merge_runs(entries, lambda a, b: (a.role == "assistant") == (b.role == "assistant"))


def write(t: Transcript) -> Iterator[bytes]:
    state, entries = current(t)
    segs = segments(state, entries)
    for i, seg in enumerate(segs):
        body = _alternating(seg.entries)
        if i < len(segs) - 1:  # an earlier conversation: as a request log
            for c in request_log(Segment(seg.start, body)):
                if isinstance(c, ApiError):
                    yield dumps(_error(c))
                    continue
                line = {**_context(c.context), "messages": [message_dict(m, False) for m in c.history]}
                if c.response:
                    line["response"] = message_dict(c.response[0], True)
                yield dumps(line)
            continue
        ctx = seg.start
        head = _context(ctx)
        # always a first line, even with no system prompt: when every block is text (a summary
        # and its continuation) it is what tells a reader that the file is Anthropic's
        yield dumps({**head, "messages": []} if i > 0 else head)
        for e in body:
            if isinstance(e, Message):
                as_response = e.role == "assistant" and e.usage is not None and e.timestamp is None
                yield dumps(message_dict(e, as_response))
            elif isinstance(e, ApiError):
                yield dumps(_error(e))
            elif isinstance(e, ContextUpdate):
                new = fold(ctx, e)
                if _context(new) != _context(ctx):
                    yield dumps(_context(new))
                ctx = new


# ------------------------------------------------------------------------------ checking


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    """Messages API rules: a conversation starts with a user message, roles alternate, every
    tool_result answers a tool_use of the assistant message just before (results first in
    their message), every tool_use is answered in the next message, and no message but a
    final assistant one is empty."""
    out: list[tuple[int, str]] = []
    for seg in split_items(items):
        prev: Message | None = None
        for k, (no, m) in enumerate(seg):
            last = k == len(seg) - 1
            if m.role not in ("user", "assistant"):
                out.append((no, f"role {m.role!r} (Anthropic messages are user or assistant)"))
            if prev is None and m.role != "user":
                out.append((no, "the conversation must start with a user message"))
            if prev is not None and prev.role == m.role:
                out.append((no, f"two {m.role} messages in a row (roles must alternate)"))
            if not m.parts and not (last and m.role == "assistant"):
                out.append((no, "empty message content"))
            calls = (
                {c.id for c in prev.tool_calls} if prev is not None and prev.role == "assistant" else set()
            )
            results = m.tool_results
            for r in results:
                if r.call_id not in calls:
                    out.append((no, f"tool_result {r.call_id!r} does not answer a tool_use of the previous "
                                    "assistant message"))  # fmt: skip
            if m.role == "user" and calls:
                missing = calls - {r.call_id for r in results}
                if missing:
                    out.append((no, f"tool_use {', '.join(sorted(missing))} not answered in this message"))
            if results and any(not isinstance(p, ToolResultPart) for p in m.parts[: len(results)]):
                out.append((no, "tool_result blocks must come first in their message"))
            prev = m
    return out


def check_file(path: str | Path) -> list[tuple[int, str]]:
    """``check`` over the file as the anthropic reader reads it, each entry with its own line."""
    return check(read_items(path, "anthropic"))
