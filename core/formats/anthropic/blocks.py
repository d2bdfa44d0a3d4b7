"""Anthropic Messages shapes → model values: content blocks, usage, tool definitions.

Pure conversion, kept apart from the reader so other readers of Anthropic-shaped content can
reuse it; the only state is ``names`` (tool_use id → name), which the caller keeps.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, as_int, b64_size, get_str, need, rest
from ctxfold.transcript.model import (
    MediaPart,
    OpaquePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    Usage,
)


def _media(b: dict[str, Any], default_mime: str) -> MediaPart:
    src = b.get("source")
    if not isinstance(src, dict):
        return MediaPart(mime_type=default_mime, extra=rest(b, ()))
    kind = src.get("type")
    mime = get_str(src, "media_type") or default_mime
    extra = {**rest(b, ("source",)), "source": rest(src, ("data", "media_type", "url"))}
    if kind == "base64" and isinstance(src.get("data"), str):
        return MediaPart(mime, data=src["data"], byte_size=b64_size(src["data"]), extra=extra)
    if kind == "text" and isinstance(src.get("data"), str):
        return MediaPart(get_str(src, "media_type") or "text/plain", text=src["data"], extra=extra)
    if kind == "content" and isinstance(src.get("content"), list):
        text = "\n".join(str(x.get("text", "")) for x in src["content"] if isinstance(x, dict))
        return MediaPart("text/plain", text=text, extra={**rest(b, ("source",)), "source": src})
    return MediaPart(mime, url=get_str(src, "url"), extra=extra)


def block_part(b: Any, line: Line, names: dict[str, str] | None = None) -> Part:
    """One content block as a model part; ``names`` maps pending tool_use ids to tool names."""
    if not isinstance(b, dict):
        raise LineError(f"content block should be an object, got {type(b).__name__}", line.no)
    t = b.get("type")
    if t == "text":
        return TextPart(need(b, "text", line, str), extra=rest(b, ("type", "text")))
    if t == "tool_use":
        call = ToolCallPart(
            need(b, "id", line, str),
            need(b, "name", line, str),
            b.get("input"),
            rest(b, ("type", "id", "name", "input")),
        )
        if names is not None:
            names[call.id] = call.name
        return call
    if t == "tool_result":
        call_id = need(b, "tool_use_id", line, str)
        raw = b.get("content")
        if isinstance(raw, str):
            content: tuple[Any, ...] = (TextPart(raw),)
        elif isinstance(raw, list):
            content = tuple(_result_part(block_part(x, line), x) for x in raw)
        else:
            content = ()
        name = names.pop(call_id, None) if names is not None else None
        used = ("type", "tool_use_id", "content", "is_error")
        return ToolResultPart(call_id, content, name, bool(b.get("is_error")), rest(b, used))
    if t == "thinking":
        return ThinkingPart(
            get_str(b, "thinking") or "",
            get_str(b, "signature"),
            extra=rest(b, ("type", "thinking", "signature")),
        )
    if t == "redacted_thinking":
        return ThinkingPart(encrypted=get_str(b, "data"), redacted=True, extra=rest(b, ("type", "data")))
    if t == "image":
        return _media(b, "image/*")
    if t == "document":
        return _media(b, "application/pdf")
    return OpaquePart(b, t if isinstance(t, str) else "opaque")


def _result_part(p: Part, raw: Any) -> TextPart | MediaPart | OpaquePart:
    if isinstance(p, (TextPart, MediaPart, OpaquePart)):
        return p
    return OpaquePart(raw, str(raw.get("type")))


def usage_from_anthropic(u: Mapping[str, Any], model: str | None, where: str = "usage") -> Usage:
    """Usage with prompt = input + cache writes + cache reads: everything the model read."""
    cw = as_int(u.get("cache_creation_input_tokens"))
    cr = as_int(u.get("cache_read_input_tokens"))
    split = u.get("cache_creation")  # {"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"}
    hour = min(cw, as_int(split.get("ephemeral_1h_input_tokens"))) if isinstance(split, dict) else 0
    return Usage(
        prompt_tokens=as_int(u.get("input_tokens")) + cw + cr,
        output_tokens=as_int(u.get("output_tokens")),
        cache_read_tokens=cr,
        cache_write_tokens=cw,
        cache_write_1h_tokens=hour,
        model=model,
        fields=_fields(where, bool(hour)),
    )


@functools.cache
def _fields(where: str, hour: bool) -> dict[str, str]:
    """Where each count came from: one mapping per place, shared by every usage read there (a
    session's thousands of them, kept and pickled by the count cache, each pickled once)."""
    fields = {
        "prompt_tokens": f"{where}.input_tokens+cache_creation_input_tokens+cache_read_input_tokens",
        "output_tokens": f"{where}.output_tokens",
        "cache_read_tokens": f"{where}.cache_read_input_tokens",
        "cache_write_tokens": f"{where}.cache_creation_input_tokens",
    }
    if hour:
        fields["cache_write_1h_tokens"] = f"{where}.cache_creation.ephemeral_1h_input_tokens"
    return fields


def tooldef(t: Any) -> ToolDef:
    """A tool definition; server tools (``web_search_20250305``...) keep their type in extra."""
    if not isinstance(t, dict):
        return ToolDef(str(t))
    name = t.get("name") or t.get("type") or "?"
    return ToolDef(
        str(name),
        str(t.get("description") or ""),
        t["input_schema"] if isinstance(t.get("input_schema"), dict) else None,
        rest(t, ("name", "description", "input_schema")),
    )


def system_texts(system: Any) -> tuple[str, ...]:
    if isinstance(system, str):
        return (system,) if system else ()
    if isinstance(system, list):
        return tuple(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in system)
    return ()
