"""OpenAI chat-completions shapes → model values, shared by every reader whose lines carry
OpenAI-style messages (LiteLLM logs, OpenHands model responses, OpenAI chat request logs).

Kept free of any one log's framing: callers pass a message, tool or usage dict and get a
model value back, so each reader only handles where those dicts live in its lines.
``with_model`` serves the API writers (openai-chat, openai-responses, genai): the model a
written transcript must still name when none of its lines would.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from typing import Any

import orjson

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, as_int, b64_size, get_dict, get_str, need, parse_overflow, rest
from ctxfold.transcript.model import (
    ApiError,
    MediaPart,
    Message,
    OpaquePart,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    Usage,
)

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}

# Keys of a message turned into parts or fields; everything else goes to ``extra``.
_MESSAGE_USED = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "function_call",
    "refusal",
    "reasoning_content",
    "thinking_blocks",
)


def media_from_url(
    url: str, default_mime: str = "image/*", extra: Mapping[str, Any] | None = None
) -> MediaPart:
    """A ``data:`` URI becomes inline base64 data with its mime type; anything else a URL."""
    extra = extra or {}
    if url.startswith("data:"):
        head, sep, payload = url[5:].partition(",")
        mime, _, params = head.partition(";")
        if sep and params.split(";")[-1] == "base64":
            return MediaPart(mime or default_mime, data=payload, byte_size=b64_size(payload), extra=extra)
        return MediaPart(mime or default_mime, url=url, extra=extra)
    guessed = mimetypes.guess_type(url.split("?", 1)[0])[0]
    return MediaPart(guessed or default_mime, url=url, extra=extra)


def content_parts(content: Any) -> list[TextPart | MediaPart | OpaquePart]:
    """Message ``content``: a string, ``None`` or a list of typed parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if not isinstance(content, list):
        return [OpaquePart(content, type=type(content).__name__)]
    out: list[TextPart | MediaPart | OpaquePart] = []
    for p in content:
        out.append(_content_part(p))
    return out


def _content_part(p: Any) -> TextPart | MediaPart | OpaquePart:
    if isinstance(p, str):
        return TextPart(p)
    if not isinstance(p, dict):
        return OpaquePart(p, type=type(p).__name__)
    kind = p.get("type")
    if kind in ("text", "input_text", "output_text") and isinstance(p.get("text"), str):
        if kind == "text" and len(p) == 2:
            return TextPart(p["text"])
        return TextPart(p["text"], extra=rest(p, ("text",) if kind != "text" else ("text", "type")))
    if kind == "refusal" and isinstance(p.get("refusal"), str):
        return TextPart(p["refusal"], extra=rest(p, ("refusal",)))
    if kind == "image_url":
        image = p.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if isinstance(url, str):
            more = rest(image, ("url",)) if isinstance(image, dict) else {}
            return media_from_url(url, "image/*", {**more, **rest(p, ("type", "image_url"))})
    if kind == "input_audio" and isinstance(p.get("input_audio"), dict):
        audio = p["input_audio"]
        data = audio.get("data")
        if isinstance(data, str):
            fmt = get_str(audio, "format") or "wav"
            return MediaPart(
                f"audio/{fmt}", data=data, byte_size=b64_size(data), extra=rest(audio, ("data",))
            )
    if kind == "file" and isinstance(p.get("file"), dict):
        f = p["file"]
        if isinstance(f.get("file_data"), str):
            return media_from_url(f["file_data"], "application/octet-stream", rest(f, ("file_data",)))
    return OpaquePart(p, type=kind if isinstance(kind, str) else "opaque")


def _arguments(raw: Any) -> Any:
    """Arguments arrive as a JSON string; unparsable strings stay as they are."""
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw


def tool_call_part(c: Any, line: Line) -> ToolCallPart | OpaquePart:
    """One entry of ``tool_calls`` (function or custom tool)."""
    if not isinstance(c, dict):
        raise LineError(f"tool call should be an object, got {type(c).__name__}", line.no)
    kind = get_str(c, "type") or "function"
    body = c.get(kind)
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        return OpaquePart(c, type=kind)
    args = _arguments(body.get("arguments")) if kind == "function" else body.get("input")
    extra = rest(c, ("id", kind, "type"))
    if kind != "function":
        extra["type"] = kind
    more = rest(body, ("name", "arguments", "input"))
    if more:
        extra[kind] = more
    return ToolCallPart(str(c.get("id") or ""), body["name"], args, extra=extra)


def message_from_openai(d: Mapping[str, Any], line: Line) -> Message:
    """One chat message (system/developer/user/assistant/tool/legacy function)."""
    raw_role = need(d, "role", line, str)
    role = _ROLES.get(raw_role)
    if role is None:
        raise LineError(f"unknown message role {raw_role!r}", line.no)
    extra = rest(d, _MESSAGE_USED)
    if raw_role in ("developer", "function"):
        extra["role"] = raw_role
    parts: list[Part] = []
    if role == "tool":
        if raw_role == "function":  # legacy: results are matched to calls by function name
            call_id = str(need(d, "name", line, str))
        else:
            call_id = str(need(d, "tool_call_id", line, (str, int)))
        name = get_str(d, "name")
        extra.pop("name", None)
        content = tuple(content_parts(d.get("content")))
        parts.append(ToolResultPart(call_id, content, name=name))
        return Message(role, tuple(parts), extra=extra)
    thinking = d.get("reasoning_content")
    blocks = d.get("thinking_blocks")
    if isinstance(blocks, list) and blocks:
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "redacted_thinking":
                parts.append(ThinkingPart(encrypted=get_str(b, "data"), redacted=True))
            elif isinstance(b, dict):
                parts.append(ThinkingPart(str(b.get("thinking") or ""), signature=get_str(b, "signature")))
        if isinstance(thinking, str) and thinking:
            extra["reasoning_content"] = thinking  # the same text the blocks already hold
    elif isinstance(thinking, str) and thinking:
        parts.append(ThinkingPart(thinking))
    parts.extend(content_parts(d.get("content")))
    refusal = d.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(TextPart(refusal, extra={"type": "refusal"}))
    calls = d.get("tool_calls")
    if isinstance(calls, list):
        parts.extend(tool_call_part(c, line) for c in calls)
    elif calls is not None:
        extra["tool_calls"] = calls
    fc = d.get("function_call")
    if isinstance(fc, dict) and isinstance(fc.get("name"), str):
        # legacy single call: no id, so the function name stands in for it
        parts.append(
            ToolCallPart(
                fc["name"], fc["name"], _arguments(fc.get("arguments")), extra={"legacy": "function_call"}
            )
        )
    elif fc is not None:
        extra["function_call"] = fc
    return Message(role, tuple(parts), extra=extra)


def tooldef_from_openai(d: Mapping[str, Any]) -> ToolDef:
    """A tool schema: ``{"type": "function", "function": {...}}``, the flat Responses form,
    a legacy ``functions`` entry, or a built-in tool (kept whole in ``extra``)."""
    kind = d.get("type")
    body: Mapping[str, Any] = (
        d["function"] if kind in (None, "function") and isinstance(d.get("function"), dict) else d
    )
    name = body.get("name")
    if not isinstance(name, str):
        custom = d.get(kind) if isinstance(kind, str) else None
        if isinstance(custom, dict) and isinstance(custom.get("name"), str):
            return ToolDef(custom["name"], str(custom.get("description") or ""), None, extra=dict(d))
        return ToolDef(str(kind or ""), "", None, extra=dict(d))
    params = body.get("parameters")
    extra = rest(body, ("name", "description", "parameters", "type"))
    if body is not d:
        extra.update(rest(d, ("function", "type")))
    if kind not in (None, "function"):
        extra["type"] = kind
    return ToolDef(
        name,
        str(body.get("description") or ""),
        params if isinstance(params, dict) else None,
        extra=extra,
    )


def usage_from_openai(
    usage: Mapping[str, Any],
    model: str | None,
    *,
    path: str = "usage",
    context_window: int | None = None,
) -> Usage:
    """OpenAI-style usage: ``prompt_tokens`` (or ``input_tokens``) already counts cached tokens.

    LiteLLM reports Anthropic calls in this shape too, with ``cache_read_input_tokens`` and
    ``cache_creation_input_tokens`` beside it; its Anthropic adapter adds both into
    ``prompt_tokens`` (older releases only the reads). When ``prompt_tokens`` is smaller than
    the cache counts it cannot include them, so it is raw Anthropic ``input_tokens`` and they
    are added.
    """
    key_in = "prompt_tokens" if "prompt_tokens" in usage else "input_tokens"
    key_out = "completion_tokens" if "completion_tokens" in usage else "output_tokens"
    prompt = as_int(usage.get(key_in))
    details = get_dict(usage, f"{key_in}_details") or get_dict(usage, "input_tokens_details")
    fields = {"prompt_tokens": f"{path}.{key_in}", "output_tokens": f"{path}.{key_out}"}
    cache_read = as_int(usage.get("cache_read_input_tokens"))
    if cache_read:
        fields["cache_read_tokens"] = f"{path}.cache_read_input_tokens"
    else:
        cache_read = as_int(details.get("cached_tokens"))
        if cache_read:
            fields["cache_read_tokens"] = f"{path}.{key_in}_details.cached_tokens"
    cache_write = as_int(usage.get("cache_creation_input_tokens"))
    if cache_write:
        fields["cache_write_tokens"] = f"{path}.cache_creation_input_tokens"
    else:
        cache_write = as_int(details.get("cache_creation_tokens"))
        if cache_write:
            fields["cache_write_tokens"] = f"{path}.{key_in}_details.cache_creation_tokens"
    if prompt < cache_read + cache_write:
        prompt += cache_read + cache_write
        fields["prompt_tokens"] += "+cache_read_input_tokens+cache_creation_input_tokens"
    out_details = usage.get(f"{key_out}_details") or usage.get("output_tokens_details")
    reasoning = out_details.get("reasoning_tokens") if isinstance(out_details, dict) else None
    return Usage(
        prompt_tokens=prompt,
        output_tokens=as_int(usage.get(key_out)),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=as_int(reasoning) if reasoning is not None else None,
        model=model,
        context_window=context_window,
        fields=fields,
    )


def api_error(err: Mapping[str, Any], d: Mapping[str, Any]) -> ApiError:
    """A provider's error object as an ApiError; a "too long" message gives a real count."""
    message = str(err.get("message") or err.get("code") or "error")
    sizes = parse_overflow(message)
    return ApiError(
        message,
        prompt_tokens=sizes[0] if sizes else None,
        limit=sizes[1] if sizes else None,
        id=get_str(d, "id"),
        extra={"error": dict(err)},
    )
