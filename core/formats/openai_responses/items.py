"""OpenAI Responses API items → model values: one Message per input/output item.

Pure conversion, kept apart from the reader so any log of Responses items can reuse it; the
only state is ``names`` (call id → tool name), which the caller keeps across items.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import orjson

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, b64_size, get_str, need, rest
from ctxfold.formats.openai_common import content_parts, media_from_url, usage_from_openai
from ctxfold.transcript.model import (
    MediaPart,
    Message,
    OpaquePart,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
_NEED_CALL_ID = ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output")
_CALL_ARGS = ("arguments", "input", "action", "operation")


def _part(p: Any) -> TextPart | MediaPart | OpaquePart:
    if isinstance(p, dict):
        kind = p.get("type")
        if kind == "input_image":
            url = p.get("image_url")
            if isinstance(url, str):
                return media_from_url(url, "image/*", rest(p, ("image_url",)))
            return MediaPart("image/*", extra=rest(p, ()))
        if kind == "input_file":
            data = p.get("file_data")
            if isinstance(data, str) and data.startswith("data:"):
                return media_from_url(data, "application/octet-stream", rest(p, ("file_data",)))
            if isinstance(data, str):  # bare base64
                mime = (
                    "application/pdf"
                    if str(p.get("filename", "")).endswith(".pdf")
                    else "application/octet-stream"
                )
                return MediaPart(mime, data=data, byte_size=b64_size(data), extra=rest(p, ("file_data",)))
            return MediaPart(
                "application/octet-stream", url=get_str(p, "file_url"), extra=rest(p, ("file_url",))
            )
    return content_parts([p])[0]


def _parts(content: Any) -> tuple[TextPart | MediaPart | OpaquePart, ...]:
    if isinstance(content, list):
        return tuple(_part(p) for p in content)
    if isinstance(content, dict):
        return (_part(content),)
    return tuple(content_parts(content))


def _arguments(item: Mapping[str, Any]) -> Any:
    for key in _CALL_ARGS:
        if key in item:
            raw = item[key]
            if key == "arguments" and isinstance(raw, str):
                try:
                    return orjson.loads(raw)
                except orjson.JSONDecodeError:
                    return raw
            return raw
    return None


def item_message(
    item: Mapping[str, Any], line: Line, names: MutableMapping[str, str] | None = None
) -> Message | None:
    """One Responses item as a Message (None for an ``item_reference``).

    ``names`` maps call ids to tool names until their output arrives, so results get a name.
    """
    t = item.get("type")
    item_id = get_str(item, "id")
    if t == "message" or (t is None and "role" in item):
        raw_role = need(item, "role", line, str)
        role = ROLES.get(raw_role)
        if role is None:
            raise LineError(f"unknown message role {raw_role!r}", line.no)
        extra = rest(item, ("role", "content", "id"))
        if raw_role == "developer":
            extra["role"] = raw_role
        return Message(role, _parts(item.get("content")), id=item_id, extra=extra)
    if not isinstance(t, str):
        raise LineError("missing required field 'type'", line.no)
    if t == "reasoning":
        summary = item.get("summary")
        texts = [s.get("text") for s in summary if isinstance(s, dict)] if isinstance(summary, list) else []
        thinking = ThinkingPart(
            "\n\n".join(x for x in texts if isinstance(x, str)),
            encrypted=get_str(item, "encrypted_content"),
            extra={"summary": summary} if summary else {},
        )
        return Message(
            "assistant", (thinking,), id=item_id, extra=rest(item, ("summary", "encrypted_content", "id"))
        )
    if t in _NEED_CALL_ID:
        need(item, "call_id", line, str)
    call_id = item.get("call_id")
    if t.endswith("_call") and isinstance(call_id, str):
        raw_name = item.get("name")
        name = raw_name if isinstance(raw_name, str) else t[: -len("_call")]
        if names is not None:
            names[call_id] = name
        call = ToolCallPart(call_id, name, _arguments(item))
        used = ("call_id", "name", "id", *_CALL_ARGS)
        return Message("assistant", (call,), id=item_id, extra=rest(item, used))
    if t.endswith("_call_output") and isinstance(call_id, str):
        rname = names.pop(call_id, None) if names is not None else None
        result = ToolResultPart(call_id, _parts(item.get("output")), rname, item.get("is_error") is True)
        return Message(
            "tool", (result,), id=item_id, extra=rest(item, ("call_id", "output", "id", "is_error"))
        )
    if t == "item_reference":
        return None
    return Message("assistant", (OpaquePart(dict(item), t),), id=item_id)


def usage_from_responses(u: Mapping[str, Any], model: str | None, where: str = "usage") -> Usage:
    """Responses usage: ``input_tokens`` already counts the cached ones."""
    return usage_from_openai(u, model, path=where)
