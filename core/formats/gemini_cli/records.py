"""Gemini CLI message records → model messages, the way Gemini CLI turns them into the history
it sends.

A record is ``{id, timestamp, type, content, ...}``. ``content`` is a genai part list, one part,
or a string. ``type`` is ``user``, ``gemini`` (with ``thoughts``, ``tokens``, ``model`` and
``toolCalls``, each call holding its ``result``), or ``info``/``error``/``warning`` (shown to the
user, never sent). What is sent, as Gemini CLI rebuilds it:

- a user record, unless its text (non-text parts spelled ``[Function Response: …]`` and so on)
  is empty or starts with ``/`` or ``?``: commands and help, handled by the CLI itself. The
  ``<session_context>`` and ``<hook_context>`` records were sent too, but are dropped on resume
  and made anew (``CONTEXT_PREFIXES``);
- a gemini record: its content when that already holds function calls (a history Gemini CLI
  synchronised back into the file), else its thoughts, its content and a call per
  ``toolCalls`` entry; then the results of those calls, unless a user record right after it
  carries them (0.61 records each result again as a user message; after a resume it sends
  both, which the file then shows as two user records).

Thoughts are kept as thinking (Gemini CLI strips them from what it sends). ``tokens`` is the
usage of the call that produced the record: ``input`` is ``promptTokenCount`` (cached included).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, as_int, get_dict, get_list, get_str, rest
from ctxfold.formats.genai.parts import Calls, part_of
from ctxfold.transcript.model import (
    Message,
    OpaquePart,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

SENT_TYPES = ("user", "gemini")
SHOWN_TYPES = ("info", "error", "warning")
IGNORED_PREFIXES = ("/", "?")
CONTEXT_PREFIXES = ("<session_context>", "<hook_context>")
ACK = "Got it. Thanks for the additional context!"  # the model turn after Gemini CLI's own summary
SNAPSHOT = "<state_snapshot>"
CANCELLED = "Request cancelled."  # the info record after a request the user cancelled
_USAGE_FIELDS: Mapping[str, str] = {
    "prompt_tokens": "tokens.input",
    "output_tokens": "tokens.output+thoughts",
    "cache_read_tokens": "tokens.cached",
    "reasoning_tokens": "tokens.thoughts",
}
# the record fields the model values hold; everything else rides in extra
_GEMINI_USED = ("id", "timestamp", "type", "content", "thoughts", "tokens", "model", "toolCalls")
_CALL_USED = ("id", "name", "args", "result")


def as_parts(content: Any, line: Line, calls: Calls) -> list[Part]:
    """A PartListUnion as parts: strings are text, objects genai parts."""
    if content is None or content == "":
        return []
    items = content if isinstance(content, list) else [content]
    out: list[Part] = []
    for p in items:
        if isinstance(p, str):
            out.append(TextPart(p))
        elif isinstance(p, dict):
            out.append(part_of(p, line, calls))
        else:
            out.append(OpaquePart(p, type=type(p).__name__))
    return out


def spelled(content: Any) -> str:
    """The content as Gemini CLI spells it to decide what a resume drops."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(spelled(p) for p in content)
    if not isinstance(content, dict):
        return ""
    for key, label in (("functionCall", "Function Call"), ("functionResponse", "Function Response")):
        value = content.get(key)
        if isinstance(value, dict):
            return f"[{label}: {value.get('name')}]"
    if "thought" in content:
        return f"[Thought: {content['thought']}]"
    if isinstance(content.get("inlineData"), dict) or isinstance(content.get("fileData"), dict):
        return "[Media]"
    text = content.get("text")
    return text if isinstance(text, str) else ""


def is_sent_user(record: Mapping[str, Any]) -> bool:
    """Whether a user record reaches the model: not empty, not a command or help request."""
    text = spelled(record.get("content")).strip()
    return bool(text) and not text.startswith(IGNORED_PREFIXES)


def is_resumed_user(record: Mapping[str, Any]) -> bool:
    """Whether a resume keeps a user record: one it sends, and not a context record."""
    return is_sent_user(record) and not is_context(record)


def is_context(record: Mapping[str, Any]) -> bool:
    """A context record Gemini CLI makes anew on every start (and drops on resume)."""
    return spelled(record.get("content")).strip().startswith(CONTEXT_PREFIXES)


def usage_of(record: Mapping[str, Any]) -> Usage | None:
    """The usage of the call that produced a gemini record; all zeros is no record."""
    t = get_dict(record, "tokens")
    inp, out, thoughts = as_int(t.get("input")), as_int(t.get("output")), as_int(t.get("thoughts"))
    if not (inp or out or thoughts):
        return None
    return Usage(
        prompt_tokens=inp,
        output_tokens=out + thoughts,
        cache_read_tokens=as_int(t.get("cached")),
        reasoning_tokens=thoughts if "thoughts" in t else None,
        model=get_str(record, "model"),
        fields=_USAGE_FIELDS,
    )


def _result_parts(call: Mapping[str, Any], line: Line, calls: Calls) -> list[Part]:
    """A tool call's ``result`` as the parts Gemini CLI sends back: a string becomes the
    ``output`` of a functionResponse, a part list goes as it is."""
    result = call.get("result")
    cid, name = str(call.get("id") or ""), str(call.get("name") or "")
    if isinstance(result, str):
        text = TextPart(result)
        return [ToolResultPart(cid, (text,), name, extra={"response_key": "output", "result": "string"})]
    out: list[Part] = []
    for p in as_parts(result, line, calls):
        if isinstance(p, ToolResultPart) and p.extra.get("synthetic_id"):
            p = replace(p, call_id=cid)  # an id-less response answers the call that holds it
        out.append(p)
    return out


def _thoughts(record: Mapping[str, Any]) -> list[Part]:
    out: list[Part] = []
    for t in get_list(record, "thoughts"):
        if isinstance(t, dict):
            text = t.get("description")
            out.append(ThinkingPart(text if isinstance(text, str) else "", extra=rest(t, ("description",))))
    return out


def answered_after(records: Sequence[Mapping[str, Any]], i: int) -> list[tuple[str, str]]:
    """(name, call id) of the responses the user records right after record ``i`` carry."""
    found: list[tuple[str, str]] = []
    for r in records[i + 1 :]:
        if r.get("type") != "user":
            break
        content = r.get("content")
        for p in content if isinstance(content, list) else [content]:
            resp = p.get("functionResponse") if isinstance(p, dict) else None
            if isinstance(resp, dict) and isinstance(resp.get("id"), str):
                found.append((str(resp.get("name") or ""), resp["id"]))
    return found


def _adopt(parts: list[Part], answers: list[tuple[str, str]]) -> list[Part]:
    """Calls a rewritten record holds without their id take the id of the response after them
    with the same name, in order (as Gemini CLI pairs them when it sends the history)."""
    free = [a for a in answers if not any(isinstance(p, ToolCallPart) and p.id == a[1] for p in parts)]
    out: list[Part] = []
    for p in parts:
        if isinstance(p, ToolCallPart) and p.extra.get("synthetic_id"):
            match = next((a for a in free if a[0] == p.name), None)
            if match is not None:
                free.remove(match)
                p = replace(p, id=match[1], extra={k: v for k, v in p.extra.items() if k != "synthetic_id"})
        out.append(p)
    return out


def messages_of(records: Sequence[Mapping[str, Any]], i: int, line: Line, calls: Calls) -> list[Message]:
    """What record ``i`` of a list sends: nothing, one message, or a gemini turn and the tool
    results it carries."""
    r = records[i]
    kind = r.get("type")
    if kind == "user":
        made = _user(r, line, calls)
    elif kind == "gemini":
        made = _gemini(r, answered_after(records, i), line, calls)
    else:
        return []
    if made and cancelled_after(records, i):  # the turn (its request, or its tool calls) cut short
        at = 0 if kind == "gemini" else -1
        made[at] = replace(made[at], stopped=True)
    return made


def cancelled_after(records: Sequence[Mapping[str, Any]], i: int) -> bool:
    """Whether the record after record ``i`` is the notice Gemini CLI shows when the user
    cancels a request (Esc): the request or the turn's tool calls were cut short there."""
    nxt = records[i + 1] if i + 1 < len(records) else None
    return nxt is not None and nxt.get("type") == "info" and spelled(nxt.get("content")).strip() == CANCELLED


def _user(r: Mapping[str, Any], line: Line, calls: Calls) -> list[Message]:
    if not is_sent_user(r):
        return []
    parts = as_parts(r.get("content"), line, calls)
    results = [p for p in parts if isinstance(p, ToolResultPart)]
    role: Role = "tool" if results and not any(isinstance(p, TextPart) for p in parts) else "user"
    extra: dict[str, Any] = {"record": rest(r, ("content",))}
    if isinstance(r.get("content"), str):
        extra["string"] = True
    if is_context(r):
        extra["gemini_context"] = True
    return [Message(role, tuple(parts), id=get_str(r, "id"), timestamp=get_str(r, "timestamp"), extra=extra)]


def _gemini(r: Mapping[str, Any], answers: list[tuple[str, str]], line: Line, calls: Calls) -> list[Message]:
    content = _adopt(as_parts(r.get("content"), line, calls), answers)
    answered = {cid for _, cid in answers}
    tool_calls = [c for c in get_list(r, "toolCalls") if isinstance(c, dict)]
    synced = any(isinstance(p, (ToolCallPart, ThinkingPart)) for p in content)
    if synced:
        parts = content
    else:
        made = [ToolCallPart(c["id"], c["name"], c.get("args")) for c in tool_calls]
        parts = [*_thoughts(r), *content, *made]
    if not parts:
        return []  # Gemini CLI sends nothing for it, not even its tool results
    extra: dict[str, Any] = {"record": rest(r, _GEMINI_USED)}
    if isinstance(r.get("content"), str):
        extra["string"] = True
    if synced:
        extra["synced"] = True
        if r.get("thoughts"):
            extra["thoughts"] = r["thoughts"]
    if isinstance(r.get("tokens"), dict):
        extra["tokens"] = r["tokens"]
    if tool_calls:
        extra["toolCalls"] = {c["id"]: rest(c, _CALL_USED) for c in tool_calls}
    model = get_str(r, "model")
    msg = Message(
        "assistant",
        tuple(parts),
        id=get_str(r, "id"),
        timestamp=get_str(r, "timestamp"),
        usage=usage_of(r),
        model=model,
        extra=extra,
    )
    results: list[Part] = []
    for c in tool_calls:
        if c["id"] not in answered and c.get("result") is not None:
            results.extend(_result_parts(c, line, calls))
    if not results:
        return [msg]
    done = Message(
        "tool",
        tuple(results),
        id=f"{msg.id}_response",
        timestamp=msg.timestamp,
        extra={"from_calls": True},
    )
    return [msg, done]


def check_record(d: Any, where: str, line: Line) -> dict[str, Any]:
    """A message record, or a LineError naming what is missing."""
    if not isinstance(d, dict):
        raise LineError(f"{where}: expected a message object, got {type(d).__name__}", line.no)
    if not isinstance(d.get("id"), str):
        raise LineError(f"{where}: missing required field 'id'", line.no)
    if not isinstance(d.get("type"), str):
        raise LineError(f"{where}: missing required field 'type'", line.no)
    calls = d.get("toolCalls", [])
    if not isinstance(calls, list):
        raise LineError(f"{where}: field 'toolCalls' should be an array", line.no)
    for c in calls:
        if not (isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("name"), str)):
            raise LineError(f"{where}: each of 'toolCalls' needs a string id and name", line.no)
    return d
