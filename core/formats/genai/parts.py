"""Google genai shapes → model values: parts, Contents, usageMetadata, tool declarations.

Shared by the genai reader (``genai.py``); pure conversion except :class:`Calls`, which the
caller keeps for the life of a transcript to give id-less function calls stable ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, as_int, b64_size, epoch_iso, get_str, parse_overflow, rest
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

ROLES: dict[str, Role] = {"user": "user", "model": "assistant", "function": "tool", "system": "system"}
_CAMEL = {
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "inline_data": "inlineData",
    "file_data": "fileData",
    "thought_signature": "thoughtSignature",
}


def get(d: Mapping[str, Any], camel: str, snake: str) -> Any:
    """``d[camel]``, else ``d[snake]``: the REST API and the Python SDK spell keys differently."""
    v = d.get(camel)
    return d.get(snake) if v is None else v


def _media(blob: Mapping[str, Any], extra: dict[str, Any]) -> MediaPart:
    mime = str(get(blob, "mimeType", "mime_type") or "application/octet-stream")
    data = blob.get("data")
    uri = get(blob, "fileUri", "file_uri")
    more = rest(blob, ("mimeType", "mime_type", "data", "fileUri", "file_uri"))
    if more:
        extra["blob"] = more
    if isinstance(data, str):
        return MediaPart(mime, data=data, byte_size=b64_size(data), extra=extra)
    return MediaPart(mime, url=uri if isinstance(uri, str) else None, extra=extra)


def usage_from_genai(u: Mapping[str, Any], model: str | None, where: str = "usageMetadata") -> Usage:
    """promptTokenCount already includes cachedContentTokenCount; thoughts are output too."""
    thoughts = get(u, "thoughtsTokenCount", "thoughts_token_count")
    cand = as_int(get(u, "candidatesTokenCount", "candidates_token_count"))
    return Usage(
        prompt_tokens=as_int(get(u, "promptTokenCount", "prompt_token_count")),
        output_tokens=cand + as_int(thoughts),
        cache_read_tokens=as_int(get(u, "cachedContentTokenCount", "cached_content_token_count")),
        reasoning_tokens=as_int(thoughts) if thoughts is not None else None,
        model=model,
        fields={
            "prompt_tokens": f"{where}.promptTokenCount",
            "output_tokens": f"{where}.candidatesTokenCount+thoughtsTokenCount",
            "cache_read_tokens": f"{where}.cachedContentTokenCount",
            "reasoning_tokens": f"{where}.thoughtsTokenCount",
        },
    )


class Calls:
    """Gives id-less function calls an id and pairs their responses to them by name."""

    def __init__(self) -> None:
        self._open: dict[str, list[str]] = {}
        self._n = 0

    def call(self, name: str) -> str:
        self._n += 1
        cid = f"{name}#{self._n}"
        self._open.setdefault(name, []).append(cid)
        return cid

    def result(self, name: str) -> str:
        queue = self._open.get(name)
        return queue.pop(0) if queue else f"{name}#?"


def _result_content(
    resp: Any, parts: Any, extra: dict[str, Any]
) -> tuple[TextPart | MediaPart | OpaquePart, ...]:
    """A functionResponse's text: the single output/result/content string when that is all
    it holds, else the whole response as JSON (how the API serialises it for the model)."""
    out: list[TextPart | MediaPart | OpaquePart] = []
    if isinstance(resp, dict) and len(resp) == 1:
        key, value = next(iter(resp.items()))
        if isinstance(value, str) and key in ("output", "result", "content", "error"):
            out.append(TextPart(value))
            extra["response_key"] = key
    if not out and resp is not None:
        out.append(TextPart(orjson.dumps(resp).decode()))
    for p in parts if isinstance(parts, list) else ():
        blob = get(p, "inlineData", "inline_data") if isinstance(p, dict) else None
        out.append(_media(blob, {}) if isinstance(blob, dict) else OpaquePart(p, "part"))
    return tuple(out)


def part_of(p: Any, line: Line, calls: Calls) -> Part:
    """One genai Part as a model part; the keys beside the data (signatures...) go in extra."""
    if not isinstance(p, dict):
        raise LineError(f"part should be an object, got {type(p).__name__}", line.no)
    sig = get(p, "thoughtSignature", "thought_signature")
    sig = sig if isinstance(sig, str) else None
    if isinstance(p.get("text"), str):
        if p.get("thought") is True:
            return ThinkingPart(
                p["text"], sig, extra=rest(p, ("text", "thought", "thoughtSignature", "thought_signature"))
            )
        return TextPart(p["text"], extra=rest(p, ("text",)))
    for key, value in p.items():
        kind = _CAMEL.get(key, key)
        if kind not in ("functionCall", "functionResponse", "inlineData", "fileData") or not isinstance(
            value, dict
        ):
            continue
        extra = rest(p, (key,))
        if kind in ("inlineData", "fileData"):
            return _media(value, extra)
        name = str(value.get("name") or "")
        cid = value.get("id")
        if not isinstance(cid, str) or not cid:
            cid = calls.call(name) if kind == "functionCall" else calls.result(name)
            extra["synthetic_id"] = True
        if kind == "functionCall":
            return ToolCallPart(
                cid, name, value.get("args"), extra={**extra, **rest(value, ("name", "args", "id"))}
            )
        resp = value.get("response")
        extra.update(rest(value, ("name", "response", "id", "parts")))
        content = _result_content(resp, value.get("parts"), extra)
        is_error = isinstance(resp, dict) and "error" in resp
        return ToolResultPart(cid, content, name, is_error, extra)
    if isinstance(sig, str) and len(p) == 1:
        return ThinkingPart(signature=sig)  # a bare signature part
    first = next(iter(p), "part")
    return OpaquePart(p, _CAMEL.get(first, first))


def content_message(c: Mapping[str, Any], line: Line, calls: Calls, extra: dict[str, Any]) -> Message | None:
    """A Content as a Message, or None when it has no parts."""
    parts_raw = c.get("parts")
    if not isinstance(parts_raw, list):
        raise LineError("missing required field 'parts'", line.no)
    if not parts_raw:
        return None
    raw_role = c.get("role") or "user"
    role = ROLES.get(raw_role) if isinstance(raw_role, str) else None
    if role is None:
        raise LineError(f"unknown role {raw_role!r} (genai roles are user and model)", line.no)
    parts = tuple(part_of(p, line, calls) for p in parts_raw)
    if role == "user" and all(isinstance(p, ToolResultPart) for p in parts):
        role = "tool"
    if role == "tool" or "role" not in c:
        extra["role"] = c.get("role")
    more = rest(c, ("role", "parts"))
    if more:
        extra["content"] = more
    return Message(role, parts, extra=extra)


def system_texts(si: Any) -> tuple[str, ...]:
    if isinstance(si, str):
        return (si,)
    if isinstance(si, dict) and isinstance(si.get("parts"), list):
        si = si["parts"]
    if isinstance(si, list):
        return tuple(
            p if isinstance(p, str) else str(p.get("text", "")) for p in si if isinstance(p, (str, dict))
        )
    return ()


def tooldefs(tools: list[Any]) -> tuple[ToolDef, ...]:
    out: list[ToolDef] = []
    for t in tools:
        if not isinstance(t, dict):
            continue
        decls = get(t, "functionDeclarations", "function_declarations")
        for f in decls if isinstance(decls, list) else ():
            if not isinstance(f, dict):
                continue
            params = f.get("parameters") or get(f, "parametersJsonSchema", "parameters_json_schema")
            used = ("name", "description", "parameters", "parametersJsonSchema", "parameters_json_schema")
            params = params if isinstance(params, dict) else None
            out.append(ToolDef(str(f.get("name")), str(f.get("description") or ""), params, rest(f, used)))
        for key, value in t.items():
            if key not in ("functionDeclarations", "function_declarations"):
                out.append(ToolDef(key, "", None, {key: value}))  # built-in tool (googleSearch...)
    return tuple(out)


def merge(a: Message, b: Message) -> Message:
    """Join a streamed chunk onto what came before: adjacent texts (or thoughts) concatenate."""
    parts = list(a.parts)
    for p in b.parts:
        last = parts[-1] if parts else None
        if isinstance(p, TextPart) and isinstance(last, TextPart):
            parts[-1] = TextPart(last.text + p.text, {**last.extra, **p.extra})
        elif isinstance(p, ThinkingPart) and isinstance(last, ThinkingPart) and not last.signature:
            parts[-1] = ThinkingPart(last.text + p.text, p.signature, extra={**last.extra, **p.extra})
        else:
            parts.append(p)
    usage = b.usage or a.usage
    return Message(a.role, tuple(parts), a.id, a.timestamp, usage, b.model or a.model, a.branch, a.extra)


def api_error(message: str, d: Mapping[str, Any], extra: dict[str, Any]) -> ApiError:
    sizes = parse_overflow(message)
    return ApiError(
        message,
        prompt_tokens=sizes[0] if sizes else None,
        limit=sizes[1] if sizes else None,
        id=get_str(d, "id"),
        timestamp=epoch_iso(d.get("timestamp")),
        extra=extra,
    )
