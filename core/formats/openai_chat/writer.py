"""Write OpenAI Chat Completions transcripts: the inverse of ``openai_chat``/``openai_common``.

Layout: the system prompt as leading ``system`` message lines, or, when there are tools, a model
or an earlier conversation, as a request line ``{model, messages: [system...], tools}``; then one
line per message. An assistant message read from a ``chat.completion`` object goes back as one
(so ids, ``created``, ``finish_reason`` survive); other assistant lines carry their ``usage`` and
``model``. Earlier conversations (before a ContextReset) are written as a request log (a
``{model, messages, tools, response}`` line per model response), the shape whose restart a
reader can see; their messages' timestamps are lost there. A transcript none of whose lines
would name its model (a compacted one: its messages have no usage left) names it on the
request line, so that a re-read counts with the same model. ``message_dicts`` and
``tool_dict`` serve litellm too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxfold.formats.api_writing import (
    current,
    data_url,
    dumps,
    error_body,
    extra_of,
    fold,
    plain_text,
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

# Message extras that describe the response object a message came from, not the message.
RESPONSE_KEYS = ("response", "choice")


def _json(args: Any) -> str:
    return args if isinstance(args, str) else dumps(args).decode()


def content_part(p: Part) -> Any:
    """A content part (the inverse of ``openai_common._content_part``)."""
    if isinstance(p, TextPart):
        if p.extra.get("type") == "refusal":
            return {**p.extra, "refusal": p.text}
        return {"type": "text", **p.extra, "text": p.text}
    if isinstance(p, MediaPart):
        extra = dict(p.extra)
        if p.mime_type.startswith("audio/") and p.data is not None:
            extra.setdefault("format", p.mime_type[len("audio/") :])
            return {"type": "input_audio", "input_audio": {"data": p.data, **extra}}
        url = data_url(p.mime_type, p.data) if p.data is not None else p.url or ""
        if p.mime_type.startswith("image/"):
            return {"type": "image_url", "image_url": {"url": url, **extra}}
        if p.data is None and p.text is not None:
            return {"type": "text", "text": p.text}
        return {"type": "file", "file": {"file_data": url, **extra}}
    if isinstance(p, OpaquePart):
        return p.data
    return {"type": "text", "text": str(getattr(p, "text", ""))}  # a part chat content cannot hold


def content(parts: Sequence[Part], empty: Any) -> Any:
    if not parts:
        return empty
    text = plain_text(parts)
    return text if text is not None else [content_part(p) for p in parts]


def _tool_call(c: ToolCallPart) -> dict[str, Any]:
    if c.extra.get("legacy") == "function_call":
        return {"name": c.name, "arguments": _json(c.arguments)}
    extra = dict(c.extra)
    kind = extra.pop("type", "function")
    body = {"name": c.name, **(extra.pop(kind, None) or {})}
    if kind == "function":
        body["arguments"] = _json(c.arguments)
    elif c.arguments is not None:
        body["input"] = c.arguments
    return {"id": c.id, "type": kind, kind: body, **extra}


def _thinking(parts: list[ThinkingPart], out: dict[str, Any]) -> None:
    if len(parts) == 1 and not parts[0].signature and not parts[0].redacted and not parts[0].encrypted:
        out["reasoning_content"] = parts[0].text
        return
    blocks = []
    for p in parts:
        if p.redacted:
            blocks.append({"type": "redacted_thinking", "data": p.encrypted or ""})
        else:
            block = {"type": "thinking", "thinking": p.text}
            if p.signature:
                block["signature"] = p.signature
            blocks.append(block)
    out["thinking_blocks"] = blocks


def message_dicts(m: Message, *skip: str, names: bool = False) -> list[dict[str, Any]]:
    """The chat message(s) for one Message: a tool message per tool result (a Message of
    another format can hold several, or hold them in a user message). ``names``: give tool
    messages the tool's ``name`` (LiteLLM logs do; the openai-chat reader finds it by id)."""
    extra = extra_of(m, *skip)
    results = [p for p in m.parts if isinstance(p, ToolResultPart)]
    if m.role == "tool" or results:
        out = [_tool_message(r, extra if m.role == "tool" else {}, names) for r in results]
        rest = [p for p in m.parts if not isinstance(p, ToolResultPart)]
        if rest and m.role != "tool":
            out.append(_plain(Message(m.role, tuple(rest)), extra))
        return out
    return [_plain(m, extra)]


def _tool_message(r: ToolResultPart, extra: dict[str, Any], names: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"role": extra.get("role", "tool")}
    if d["role"] == "function":
        d["name"] = r.call_id
    else:
        d["tool_call_id"] = r.call_id
    d["content"] = content(r.content, "")
    if names and r.name and d["role"] == "tool":
        d["name"] = r.name
    d.update((k, v) for k, v in extra.items() if k != "role" and k not in d)
    return d


def _plain(m: Message, extra: dict[str, Any]) -> dict[str, Any]:
    d: dict[str, Any] = {"role": extra.get("role", m.role)}
    thinking = [p for p in m.parts if isinstance(p, ThinkingPart)]
    calls = [p for p in m.parts if isinstance(p, ToolCallPart)]
    legacy = [c for c in calls if c.extra.get("legacy") == "function_call"]
    # opaque entries of tool_calls come after the first call (see openai_common.tool_call_part)
    first = next((i for i, p in enumerate(m.parts) if isinstance(p, ToolCallPart)), len(m.parts))
    opaque_calls = [p for p in m.parts[first:] if isinstance(p, OpaquePart)]
    body = [p for p in m.parts if not isinstance(p, (ThinkingPart, ToolCallPart)) and p not in opaque_calls]
    last = body[-1] if body and m.role == "assistant" else None
    refusal = last.text if isinstance(last, TextPart) and last.extra == {"type": "refusal"} else None
    if refusal is not None:
        body.pop()
    if thinking:
        _thinking(thinking, d)
    d["content"] = content(body, None if m.role == "assistant" else "")
    if refusal is not None:
        d["refusal"] = refusal
    if len(legacy) < len(calls) or opaque_calls:
        d["tool_calls"] = [_tool_call(c) for c in calls if c not in legacy] + [o.data for o in opaque_calls]
    if legacy:
        d["function_call"] = _tool_call(legacy[0])
    d.update((k, v) for k, v in extra.items() if k != "role" and k not in d)
    return d


def usage_dict(u: Usage) -> dict[str, Any]:
    """OpenAI usage: prompt_tokens already counts the cached tokens."""
    d: dict[str, Any] = {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.prompt_tokens + u.output_tokens,
    }
    if u.cache_read_tokens:
        d["prompt_tokens_details"] = {"cached_tokens": u.cache_read_tokens}
    if u.cache_write_tokens:
        d["cache_creation_input_tokens"] = u.cache_write_tokens
    if u.reasoning_tokens is not None:
        d["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return d


def tool_dict(t: ToolDef) -> dict[str, Any]:
    """The chat-completions tool schema (the inverse of ``tooldef_from_openai``)."""
    kind = t.extra.get("type")
    if isinstance(kind, str) and (kind == t.name or isinstance(t.extra.get(kind), dict)):
        return dict(t.extra)  # built-in or custom tool, kept whole
    body: dict[str, Any] = {"name": t.name}
    if t.description:
        body["description"] = t.description
    if t.parameters is not None:
        body["parameters"] = dict(t.parameters)
    body.update((k, v) for k, v in t.extra.items() if k != "type")
    return {"type": kind if isinstance(kind, str) else "function", "function": body}


def system_messages(state: ContextUpdate) -> list[dict[str, Any]]:
    return [{"role": "system", "content": s} for s in state.system or ()]


def request_line(state: ContextUpdate, messages: list[dict[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if state.model:
        d["model"] = state.model
    d["messages"] = [*system_messages(state), *messages]
    if state.tools:
        d["tools"] = [tool_dict(t) for t in state.tools]
    return d


def _error(e: ApiError) -> dict[str, Any]:
    d: dict[str, Any] = {"error": error_body(e)}
    if e.id:
        d["id"] = e.id
    return d


def response_object(m: Message) -> dict[str, Any]:
    """A ``chat.completion`` object holding ``m`` (the inverse of ``openai_chat._response``)."""
    r: dict[str, Any] = {}
    if m.id:
        r["id"] = m.id
    r.update(m.extra.get("response") or {})
    if m.model:
        r["model"] = m.model
    choice = dict(m.extra.get("choice") or {})
    msgs = message_dicts(m, *RESPONSE_KEYS)
    choice["message"] = msgs[0] if msgs else {"role": "assistant", "content": None}
    r["choices"] = [choice]
    if m.usage is not None:
        r["usage"] = usage_dict(m.usage)
    return r


def _message_lines(m: Message) -> Iterator[dict[str, Any]]:
    if m.role == "assistant" and isinstance(m.extra.get("response"), dict) and m.timestamp is None:
        yield response_object(m)
        return
    lines = message_dicts(m)
    if not lines:
        return
    last = lines[-1]
    if m.id:
        last["id"] = m.id
    if m.timestamp:
        last["timestamp"] = m.timestamp
    usage_model = m.usage.model if m.usage is not None else None
    if m.usage is not None and m.role == "assistant" and usage_model == m.model:
        last["usage"] = usage_dict(m.usage)
        if m.model:
            last["model"] = m.model
    yield from lines
    if m.usage is not None and m.role == "assistant" and usage_model != m.model:
        u: dict[str, Any] = {"usage": usage_dict(m.usage)}
        if usage_model:
            u["model"] = usage_model
        yield u


def _named(m: Message) -> str | None:
    """The model the line(s) ``_message_lines`` writes for ``m`` name, read back."""
    if m.role != "assistant":
        return None
    if isinstance(m.extra.get("response"), dict) and m.timestamp is None:
        return m.model
    if m.usage is None:
        return None
    return m.model if m.usage.model == m.model else m.usage.model


def _differs(a: ContextUpdate, b: ContextUpdate) -> bool:
    return (a.system or ()) != (b.system or ()) or (a.tools or ()) != (b.tools or ()) or a.model != b.model


def write(t: Transcript) -> Iterator[bytes]:
    state, entries = current(t)
    state = with_model(t, state, entries, _named)
    segs = segments(state, entries)
    for i, seg in enumerate(segs):
        if i < len(segs) - 1:  # an earlier conversation: as a request log
            for c in request_log(seg):
                if isinstance(c, ApiError):
                    yield dumps(_error(c))
                    continue
                line = request_line(
                    c.context, [d for m in c.history for d in message_dicts(m, *RESPONSE_KEYS)]
                )
                if c.response:
                    line["response"] = response_object(c.response[0])
                yield dumps(line)
            continue
        ctx = seg.start
        if i > 0 or ctx.tools or ctx.model:
            yield dumps(request_line(ctx, []))  # also marks the restart after earlier ones
        else:
            yield from (dumps(d) for d in system_messages(ctx))
        for e in seg.entries:
            if isinstance(e, Message):
                yield from (dumps(d) for d in _message_lines(e))
            elif isinstance(e, ApiError):
                yield dumps(_error(e))
            elif isinstance(e, ContextUpdate):
                new = fold(ctx, e)
                if _differs(ctx, new):
                    yield dumps(request_line(new, []))
                ctx = new


# ------------------------------------------------------------------------------ checking


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    """Chat Completions rules: an assistant message's tool calls are answered by tool messages
    right after it (nothing else in between), and a tool message answers a call of the
    assistant message just before the tool messages."""
    out: list[tuple[int, str]] = []
    for seg in split_items(items):
        open_calls: dict[str, None] = {}
        call_line = 0
        for no, m in seg:
            if m.role == "tool":
                for r in m.tool_results:
                    if r.call_id in open_calls:
                        del open_calls[r.call_id]
                    else:
                        out.append((no, f"tool message for {r.call_id!r} does not follow the assistant "
                                        "message that made that call"))  # fmt: skip
                continue
            if open_calls:
                out.append((call_line, f"tool call(s) {', '.join(open_calls)} not answered by tool "
                                       "messages right after the assistant message"))  # fmt: skip
                open_calls = {}
            if m.role == "assistant" and m.tool_calls:
                open_calls = dict.fromkeys(c.id for c in m.tool_calls)
                call_line = no
            elif m.tool_results:
                out.append((no, f"tool results in a {m.role} message (chat tool results are tool messages)"))
    return out


def check_file(path: str | Path) -> list[tuple[int, str]]:
    """``check`` over the file as the openai-chat reader reads it, each entry with its own line."""
    return check(read_items(path, "openai-chat"))
