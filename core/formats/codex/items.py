"""Codex rollout ``response_item`` payloads (Responses API items) → Messages.

Pure conversion, no state beyond what the caller passes in: the reader in ``codex.py`` decides
when each message is emitted and which one carries the usage.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import orjson

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, b64_size, get_list, get_str, need, rest
from ctxfold.transcript.model import (
    MediaPart,
    Message,
    OpaquePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)

# developer messages become role "system" with extra["role"] = "developer" (a writer restores it)
ROLES: Mapping[str, Any] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_TEXT_TYPES = frozenset({"input_text", "output_text", "text"})


def _image(item: dict[str, Any]) -> MediaPart:
    """``input_image``: a data URL is kept as base64 (not decoded), anything else as a URL."""
    url = item.get("image_url")
    extra = rest(item, ("type", "image_url"))
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return MediaPart(head or "application/octet-stream", data=data, byte_size=b64_size(data), extra=extra)
    return MediaPart("image", url=url if isinstance(url, str) else None, extra=extra)


def content_parts(content: Any, default: str, line: Line) -> tuple[Any, ...]:
    """Content items → parts. ``default`` is the text item type a writer would use here, so only
    a non-default type (or unknown keys such as annotations) goes into a TextPart's ``extra``."""
    if isinstance(content, str):
        return (TextPart(content),)
    if content is None:
        return ()
    if not isinstance(content, list):
        raise LineError(f"field 'content' should be list, got {type(content).__name__}", line.no)
    parts: list[Any] = []
    for item in content:
        if isinstance(item, str):
            parts.append(TextPart(item))
            continue
        if not isinstance(item, dict):
            raise LineError(f"content item should be object, got {type(item).__name__}", line.no)
        t = get_str(item, "type")
        text = item.get("text")
        if t in _TEXT_TYPES and isinstance(text, str):
            plain = t == default and len(item) == 2
            parts.append(TextPart(text) if plain else TextPart(text, extra=rest(item, ("text",))))
        elif t == "input_image":
            parts.append(_image(item))
        else:
            parts.append(OpaquePart(item, t if t is not None else "opaque"))
    return tuple(parts)


def arguments(raw: Any) -> Any:
    """A function call's JSON argument string as a dict when it is one, else as found."""
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        return value if isinstance(value, dict) else raw
    return raw


def _result(p: dict[str, Any], line: Line, name: str | None) -> ToolResultPart:
    call_id = need(p, "call_id", line, str)
    out = p.get("output")
    is_error = False
    extra: dict[str, Any] = {} if p["type"] == "function_call_output" else {"type": p["type"]}
    if isinstance(out, dict):  # older payload shape: {"content": ..., "success": bool}
        is_error = out.get("success") is False
        extra["output"] = rest(out, ("content", "content_items"))
        out = out.get("content_items", out.get("content"))
    return ToolResultPart(call_id, content_parts(out, "input_text", line), name, is_error, extra)


def _reasoning(p: dict[str, Any]) -> tuple[ThinkingPart, tuple[str, ...]]:
    """Summary texts joined by blank lines; the raw summary list stays in ``extra`` only when
    joining would lose something (items other than plain summary_text)."""
    summary = get_list(p, "summary")
    texts = [s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)]
    used: tuple[str, ...] = ("type", "id", "encrypted_content")
    # texts from plain summary_text items only: the list is rebuilt from them (a mistyped one stays)
    whole = bool(summary) or not p.get("summary")
    if (
        whole
        and len(texts) == len(summary)
        and all(len(s) == 2 and s.get("type") == "summary_text" for s in summary)
    ):
        used += ("summary",)
    return ThinkingPart("\n\n".join(texts), encrypted=get_str(p, "encrypted_content")), used


def item_message(
    p: dict[str, Any], line: Line, ts: str | None, model: str | None, names: MutableMapping[str, str]
) -> Message:
    """One response item → one Message. ``names`` maps call ids to tool names (filled by calls,
    read by outputs) so tool results carry the tool's name."""
    t = need(p, "type", line, str)
    item_id = get_str(p, "id")
    if t == "message":
        role = need(p, "role", line, str)
        if role not in ROLES:
            raise LineError(f"unknown message role {role!r}", line.no)
        default = "output_text" if role == "assistant" else "input_text"
        parts = content_parts(need(p, "content", line), default, line)
        extra = rest(p, ("type", "id", "content", "role"))
        if role == "developer":
            extra["role"] = role
        return Message(
            ROLES[role], parts, item_id, ts, model=model if role == "assistant" else None, extra=extra
        )
    if t in TOOL_OUTPUTS:
        result = _result(p, line, names.get(need(p, "call_id", line, str)))
        return Message("tool", (result,), item_id, ts, extra=rest(p, ("type", "id", "call_id", "output")))
    part: Part
    used: tuple[str, ...]
    if t in ("function_call", "custom_tool_call"):
        call_id = need(p, "call_id", line, str)
        name = need(p, "name", line, str)
        names[call_id] = name
        if t == "function_call":
            part, used = ToolCallPart(call_id, name, arguments(p.get("arguments"))), ("arguments",)
        else:  # free-form tool (apply_patch, code-mode exec): input is plain text
            part, used = ToolCallPart(call_id, name, p.get("input"), extra={"type": t}), ("input",)
        used += ("type", "id", "call_id", "name")
    elif t == "local_shell_call":
        call_id = get_str(p, "call_id") or item_id or ""
        names[call_id] = "local_shell"
        part = ToolCallPart(call_id, "local_shell", p.get("action"), extra={"type": t})
        used = ("type", "id", "call_id", "action")
    elif t == "reasoning":
        part, used = _reasoning(p)
    else:  # web_search_call, compaction, ghost_snapshot, future item types: kept verbatim
        part, used = OpaquePart(p, t), tuple(p)
    return Message("assistant", (part,), item_id, ts, model=model, extra=rest(p, used))
