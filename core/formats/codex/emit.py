"""Messages → the Responses API items Codex records in ``response_item`` lines.

The inverse of ``items.py``. A message the Codex reader produced carries its item's own fields in
``extra`` and comes back as it was. A message read from another format carries that format's
fields, which mean nothing to Codex: :func:`plain` reduces it to what a Responses item can hold
(text, images, function calls and their outputs) and drops reasoning, which only the model that
wrote it can read back (an Anthropic thinking signature is no OpenAI ``encrypted_content``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson

from ctxfold.formats.codex.reader import LINE_EXTRA, RECORD
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

# Message.extra keys that are line-level or ctxfold's own, never item fields
NOT_ITEM_FIELDS = frozenset({"ctxfold", LINE_EXTRA, RECORD})


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
    extra = {k: v for k, v in m.extra.items() if k not in NOT_ITEM_FIELDS}
    if m.role == "tool" and m.tool_results:
        r = m.tool_results[0]
        head = {"type": r.extra.get("type", "function_call_output")}
        if m.id is not None:
            head["id"] = m.id
        return {**head, "call_id": r.call_id, "output": _output(r), **extra}
    if m.role == "assistant" and len(m.parts) == 1 and not isinstance(m.parts[0], TextPart):
        p = m.parts[0]
        if isinstance(p, ThinkingPart):
            return _reasoning(replace(m, extra=extra), p)
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
    output item per tool result, so a message holding several (from another format) is split;
    a user message holding tool results (Anthropic's shape) gives the outputs, then its words."""
    if m.tool_results and (m.role != "tool" or len(m.tool_results) > 1 or len(m.parts) > 1):
        outs = [item(Message("tool", (r,))) for r in m.tool_results]
        other = tuple(p for p in m.parts if not isinstance(p, ToolResultPart))
        return outs + ([item(Message("user", other))] if other else [])
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


# ------------------------------------------------------------------- messages from other formats


def _plain_part(p: Part) -> Part | None:
    if isinstance(p, TextPart):
        return TextPart(p.text)
    if isinstance(p, MediaPart):
        if p.data is None and p.url is None:
            return TextPart(p.text) if p.text else None
        return MediaPart(p.mime_type, data=p.data, url=p.url)
    if isinstance(p, ToolCallPart):
        return ToolCallPart(p.id, p.name, p.arguments)
    if isinstance(p, ToolResultPart):
        content = tuple(c for c in map(_plain_part, p.content) if isinstance(c, (TextPart, MediaPart)))
        return ToolResultPart(p.call_id, content, p.name)
    return None  # reasoning (readable only by the model that wrote it), server-tool blocks


def plain(m: Message) -> Message | None:
    """``m`` from another format as Codex can hold it, or None when nothing of it remains."""
    parts = tuple(q for q in map(_plain_part, m.parts) if q is not None)
    if not parts:
        return None
    role = "user" if m.role == "tool" and not any(isinstance(q, ToolResultPart) for q in parts) else m.role
    return Message(role, parts, timestamp=m.timestamp, usage=m.usage, model=m.model)
