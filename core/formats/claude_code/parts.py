"""Claude Code content blocks → model parts, and usage records.

Shared by the Claude Code reader; the blocks follow the Anthropic Messages API, so the
mapping is the API's: text, thinking, redacted_thinking, tool_use, tool_result, image,
document. Server-side tool blocks and anything newer stay opaque.
"""

from __future__ import annotations

from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.anthropic.blocks import usage_from_anthropic
from ctxfold.formats.base import Line, b64_size, get_str, need, rest
from ctxfold.transcript.model import (
    MediaPart,
    OpaquePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

SYNTHETIC = "<synthetic>"  # model of messages Claude Code made up itself: no request behind them


def _media(b: dict[str, Any], line: Line) -> MediaPart | OpaquePart:
    """An image or document block; sources we do not model stay opaque."""
    src = need(b, "source", line, dict)
    kind = src.get("type")
    extra = rest(b, ("source",))
    mime = get_str(src, "media_type") or ("text/plain" if kind == "text" else "application/octet-stream")
    data = src.get("data")
    if kind == "base64" and isinstance(data, str):
        return MediaPart(mime_type=mime, data=data, byte_size=b64_size(data), extra=extra)
    if kind == "url" and isinstance(src.get("url"), str):
        return MediaPart(mime_type=mime, url=src["url"], extra=extra)
    if kind == "text" and isinstance(data, str):
        return MediaPart(mime_type=mime, text=data, byte_size=len(data.encode()), extra=extra)
    return OpaquePart(data=b, type=str(b.get("type")))


def block_type(b: Any, line: Line) -> str:
    """The block's ``type``; a LineError when the block is not an object or has none."""
    if not isinstance(b, dict):
        raise LineError(f"content block should be an object, got {type(b).__name__}", line.no)
    t: str = need(b, "type", line, str)
    return t


def _result_content(content: Any, line: Line) -> tuple[TextPart | MediaPart | OpaquePart, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextPart(content),)
    if not isinstance(content, list):
        raise LineError(
            f"tool_result content should be a string or a list, got {type(content).__name__}", line.no
        )
    out: list[TextPart | MediaPart | OpaquePart] = []
    for b in content:
        t = block_type(b, line)
        if t == "text":
            out.append(TextPart(need(b, "text", line, str), extra=rest(b, ("type", "text"))))
        elif t in ("image", "document"):
            out.append(_media(b, line))
        else:
            out.append(OpaquePart(data=b, type=t))
    return tuple(out)


def user_parts(content: Any, line: Line, names: dict[str, str]) -> tuple[Part, ...]:
    """Parts of a user line; ``names`` maps open tool call ids to tool names (popped when answered)."""
    if isinstance(content, str):
        return (TextPart(content),)
    out: list[Part] = []
    for b in content:
        t = block_type(b, line)
        if t == "text":
            out.append(TextPart(need(b, "text", line, str), extra=rest(b, ("type", "text"))))
        elif t == "tool_result":
            call_id = need(b, "tool_use_id", line, str)
            out.append(
                ToolResultPart(
                    call_id=call_id,
                    content=_result_content(b.get("content"), line),
                    name=names.pop(call_id, None),
                    is_error=b.get("is_error") is True,
                    extra=rest(b, ("type", "tool_use_id", "content", "is_error")),
                )
            )
        elif t in ("image", "document"):
            out.append(_media(b, line))
        else:
            out.append(OpaquePart(data=b, type=t))
    return tuple(out)


def assistant_part(b: dict[str, Any], t: str, line: Line, names: dict[str, str]) -> Part:
    if t == "text":
        return TextPart(need(b, "text", line, str), extra=rest(b, ("type", "text")))
    if t == "thinking":
        return ThinkingPart(
            text=get_str(b, "thinking") or "",
            signature=get_str(b, "signature"),
            extra=rest(b, ("type", "thinking", "signature")),
        )
    if t == "redacted_thinking":
        return ThinkingPart(encrypted=get_str(b, "data"), redacted=True, extra=rest(b, ("type", "data")))
    if t == "tool_use":
        call_id = need(b, "id", line, str)
        name = need(b, "name", line, str)
        names[call_id] = name
        return ToolCallPart(call_id, name, b.get("input"), extra=rest(b, ("type", "id", "name", "input")))
    return OpaquePart(data=b, type=t)  # server_tool_use, web_search_tool_result, mcp_tool_use...


def usage_of(msg: dict[str, Any]) -> Usage | None:
    """The provider's usage, or None for synthetic messages (no request was made)."""
    u = msg.get("usage")
    model = msg.get("model")
    if model == SYNTHETIC or not isinstance(u, dict):
        return None
    return usage_from_anthropic(u, model if isinstance(model, str) else None, "message.usage")
