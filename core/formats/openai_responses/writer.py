"""Write OpenAI Responses transcripts: the inverse of ``openai_responses``/``openai_responses_items``.

Layout: a request line ``{model, instructions, tools, input: []}`` for the fixed parts, then one
line per input/output item. A model response (a run of output items ending at the one carrying
usage) goes back as the API's response object ``{object: "response", model, output, usage}``
when the reader had it from one (its last item has a model), else as its items followed by a
``{usage, model}`` line. Earlier conversations (before a ContextReset) are written as a request
log (a ``{model, instructions, tools, input, response}`` line per model response); the last one
then starts with a request line whose empty ``input`` is how a reader sees the restart. A
transcript none of whose lines would name its model (a compacted one: its items have no usage
left) names it on the first request line, so that a re-read counts with the same model.
Response-level fields (``id``, ``status``, ``created_at``) are not kept by the reader, so they
are not written.
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
    is_ctxfold,
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

# Where each call type keeps its arguments (openai_responses_items._CALL_ARGS).
_ARG_KEY = {"function_call": "arguments", "custom_tool_call": "input", "apply_patch_call": "operation"}
_ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "user"}


def _part(p: Part, role: str) -> Any:
    """A content part: input_text/output_text, input_image, input_file."""
    if isinstance(p, TextPart):
        if p.extra.get("type") == "refusal":
            return {**p.extra, "refusal": p.text}
        if "type" in p.extra:
            return {**p.extra, "text": p.text}
        return {"type": "output_text" if role == "assistant" else "input_text", "text": p.text, **p.extra}
    if isinstance(p, MediaPart):
        extra = dict(p.extra)
        kind = extra.pop("type", "input_image" if p.mime_type.startswith("image/") else "input_file")
        url = data_url(p.mime_type, p.data) if p.data is not None else p.url
        if kind == "input_image":
            return {"type": kind, **extra, "image_url": url} if url is not None else {"type": kind, **extra}
        if p.data is not None:
            return {"type": kind, **extra, "file_data": url}
        if p.url is not None:
            return {"type": kind, **extra, "file_url": p.url}
        return {"type": kind, **extra}
    if isinstance(p, OpaquePart):
        return p.data
    return {"type": "input_text", "text": getattr(p, "text", "")}


def _content(parts: Sequence[Part], role: str) -> Any:
    text = plain_text(parts)
    return text if text is not None else [_part(p, role) for p in parts]


def _usage(u: Usage) -> dict[str, Any]:
    d: dict[str, Any] = {"input_tokens": u.prompt_tokens, "output_tokens": u.output_tokens}
    if u.cache_read_tokens:
        d["input_tokens_details"] = {"cached_tokens": u.cache_read_tokens}
    if u.cache_write_tokens:
        d["cache_creation_input_tokens"] = u.cache_write_tokens
    if u.reasoning_tokens is not None:
        d["output_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    d["total_tokens"] = u.prompt_tokens + u.output_tokens
    return d


def items(m: Message, kinds: dict[str, str]) -> list[dict[str, Any]]:
    """The item(s) for one Message; ``kinds`` maps call ids to call item types so an output
    gets the matching ``*_output`` type."""
    extra = extra_of(m)
    ident = {"id": m.id} if m.id else {}
    if len(m.parts) == 1 and isinstance(m.parts[0], OpaquePart) and isinstance(m.parts[0].data, dict):
        return [m.parts[0].data]
    if (
        m.role == "assistant"
        and m.parts
        and all(isinstance(p, (ThinkingPart, ToolCallPart)) for p in m.parts)
    ):
        if len(m.parts) > 1:  # another format's message: one item per part
            return [_model_item(p, {}, {}, kinds) for p in m.parts]
        return [_model_item(m.parts[0], extra, ident, kinds)]
    results = [p for p in m.parts if isinstance(p, ToolResultPart)]
    if results:
        out = [_output(r, extra if m.role == "tool" else {}, ident, kinds) for r in results]
        rest = [p for p in m.parts if not isinstance(p, ToolResultPart)]
        if rest:
            out.append({"type": "message", "role": "user", "content": _content(rest, "user")})
        return out
    role = extra.pop("role", None) or _ROLES[m.role]
    # a message of ctxfold's own (summary...) says what it is; the others keep their fields
    d: dict[str, Any] = {"type": "message"} if is_ctxfold(m) and "type" not in extra else {}
    d.update(extra)
    d.update(ident)
    d["role"] = role
    d["content"] = _content(m.parts, m.role)
    return [d]


def _model_item(
    p: Part, extra: dict[str, Any], ident: dict[str, Any], kinds: dict[str, str]
) -> dict[str, Any]:
    if isinstance(p, ThinkingPart):
        summary = p.extra.get("summary")
        if summary is None:
            summary = [{"type": "summary_text", "text": p.text}] if p.text else []
        d: dict[str, Any] = {"type": "reasoning", **ident, "summary": summary}
        if p.encrypted:
            d["encrypted_content"] = p.encrypted
        d.update((k, v) for k, v in extra.items() if k != "type")
        return d
    assert isinstance(p, ToolCallPart)
    kind = str(extra.get("type") or "function_call")
    kinds[p.id] = kind
    d = {"type": kind, **ident, "call_id": p.id}
    if kind in ("function_call", "custom_tool_call") or p.name != kind[: -len("_call")]:
        d["name"] = p.name
    if p.arguments is not None or kind == "function_call":
        key = _ARG_KEY.get(kind, "action")
        args = p.arguments
        d[key] = (args if isinstance(args, str) else dumps(args).decode()) if key == "arguments" else args
    d.update((k, v) for k, v in extra.items() if k != "type")
    return d


def _output(
    r: ToolResultPart, extra: dict[str, Any], ident: dict[str, Any], kinds: dict[str, str]
) -> dict[str, Any]:
    kind = extra.get("type") or kinds.get(r.call_id, "function_call") + "_output"
    d: dict[str, Any] = {"type": kind, **ident, "call_id": r.call_id}
    text = plain_text(r.content)
    d["output"] = text if text is not None else "" if not r.content else [_part(p, "user") for p in r.content]
    if r.is_error:
        d["is_error"] = True
    d.update((k, v) for k, v in extra.items() if k != "type")
    return d


def tool_dict(t: ToolDef) -> dict[str, Any]:
    """The flat Responses tool schema; built-in tools were kept whole."""
    kind = t.extra.get("type")
    if isinstance(kind, str) and (kind == t.name or isinstance(t.extra.get(kind), dict)):
        return dict(t.extra)
    d: dict[str, Any] = {"type": kind if isinstance(kind, str) else "function", "name": t.name}
    if t.description:
        d["description"] = t.description
    if t.parameters is not None:
        d["parameters"] = dict(t.parameters)
    d.update((k, v) for k, v in t.extra.items() if k != "type")
    return d


def request_line(state: ContextUpdate, input_items: list[Any]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if state.model:
        d["model"] = state.model
    system: tuple[str, ...] = state.system or ()
    if len(system) == 1:
        d["instructions"] = system[0]
    elif system:
        d["instructions"] = [{"type": "message", "role": "system", "content": s} for s in system]
    if state.tools:
        d["tools"] = [tool_dict(t) for t in state.tools]
    d["input"] = input_items
    return d


def _error(e: ApiError) -> dict[str, Any]:
    d: dict[str, Any] = {"error": error_body(e)}
    if e.id:
        d["id"] = e.id
    return d


def _response(run: list[Message], kinds: dict[str, str]) -> dict[str, Any]:
    """A response object whose output is ``run``; the last item carries usage and model."""
    last = run[-1]
    d: dict[str, Any] = {"object": "response"}
    model = last.model or (last.usage.model if last.usage is not None else None)
    if model:
        d["model"] = model
    d["output"] = [x for m in run for x in items(m, kinds)]
    if last.usage is not None:
        d["usage"] = _usage(last.usage)
    return d


def _body(entries: list[Entry], kinds: dict[str, str]) -> Iterator[dict[str, Any]]:
    run: list[Message] = []  # assistant items of the model response being read
    for e in entries:
        if isinstance(e, Message) and e.role == "assistant":
            run.append(e)
            if e.usage is None:
                continue
            if e.model and e.model == e.usage.model:
                yield _response(run, kinds)
            else:
                yield from (d for m in run for d in items(m, kinds))
                yield {"usage": _usage(e.usage), **({"model": e.usage.model} if e.usage.model else {})}
            run = []
            continue
        for m in run:
            yield from items(m, kinds)
        run = []
        if isinstance(e, Message):
            yield from items(e, kinds)
        elif isinstance(e, ApiError):
            yield _error(e)
    for m in run:
        yield from items(m, kinds)


def _named(m: Message) -> str | None:
    """The model the lines ``_body`` writes for ``m`` name, read back: only a response's."""
    return m.usage.model if m.role == "assistant" and m.usage is not None else None


def write(t: Transcript) -> Iterator[bytes]:
    state, entries = current(t)
    state = with_model(t, state, entries, _named)
    segs = segments(state, entries)
    kinds: dict[str, str] = {}
    for i, seg in enumerate(segs):
        if i < len(segs) - 1:  # an earlier conversation: as a request log
            for c in request_log(seg, single=False):
                if isinstance(c, ApiError):
                    yield dumps(_error(c))
                    continue
                line = request_line(c.context, [d for m in c.history for d in items(m, kinds)])
                if c.response:
                    line["response"] = _response(c.response, kinds)
                yield dumps(line)
            continue
        ctx = seg.start
        if i > 0 or ctx.system or ctx.tools or ctx.model:
            yield dumps(request_line(ctx, []))
        chunk: list[Entry] = []
        for e in [*seg.entries, None]:
            if e is not None and not isinstance(e, ContextUpdate):
                chunk.append(e)
                continue
            yield from (dumps(d) for d in _body(chunk, kinds))
            chunk = []
            if isinstance(e, ContextUpdate):
                new = fold(ctx, e)
                if request_line(new, []) != request_line(ctx, []):
                    yield dumps(request_line(new, []))
                ctx = new


# ------------------------------------------------------------------------------ checking


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    """Responses rules: a call output comes after its call, a call is answered before the
    conversation goes on (one still open at the end is a pending call), and a reasoning item
    is followed by another output item of its response."""
    out: list[tuple[int, str]] = []
    for seg in split_items(items):
        open_calls: dict[str, int] = {}
        for k, (no, m) in enumerate(seg):
            nxt = seg[k + 1][1] if k + 1 < len(seg) else None
            if (
                any(isinstance(p, ThinkingPart) for p in m.parts)
                and nxt is not None
                and nxt.role != "assistant"
            ):
                out.append((no, "reasoning item without its following output item"))
            for c in m.tool_calls:
                open_calls[c.id] = no
            for r in m.tool_results:
                if open_calls.pop(r.call_id, None) is None:
                    out.append((no, f"output for {r.call_id!r} does not follow a call with that call_id"))
            if m.role in ("user", "system") and open_calls:
                for cid, line in open_calls.items():
                    out.append((line, f"call {cid!r} has no output before the next {m.role} message"))
                open_calls = {}
    return out


def check_file(path: str | Path) -> list[tuple[int, str]]:
    """``check`` over the file as the openai-responses reader reads it, each entry with its own line."""
    return check(read_items(path, "openai-responses"))
