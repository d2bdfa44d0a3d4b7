"""OpenAI Chat Completions transcripts: one message per line, request lines and responses.

Accepted lines, mixed freely:

- a chat message ``{role, content, tool_calls, tool_call_id, name, ...}`` (an assistant line
  may carry its own ``usage``); system/developer messages before any other message are the
  system prompt (``ContextUpdate``), later ones stay messages;
- a request ``{model, messages, tools, ...}`` (optionally with the ``response`` it got, or
  wrapped as ``{request, response}``): leading system messages → ``ContextUpdate``, then only
  the messages new since the previous request (:class:`PrefixTracker`; ``ContextReset`` when a
  request does not extend the previous one);
- a response ``chat.completion`` object (bare or as ``{response: {...}}``): its first choice
  becomes the assistant message carrying the usage;
- a request log line as OpenRouter and many proxies write them: ``{model, messages,
  completion, usage, total_cost}``, where ``completion`` is the ``chat.completion`` object (or
  its text) and ``usage`` the call's (``prompt_tokens``, ``completion_tokens``, ``total_cost``):
  the completion is the response, with its own usage or else the line's;
- ``{usage: {...}}`` on its own line: the usage of the assistant message just before it;
- ``{error: {message, ...}}``: an ``ApiError``.

Streaming ``chat.completion.chunk`` lines are ignored: their content is repeated by the
assembled message or response a logger writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, get_str, need, obj, rest, score_lines
from ctxfold.formats.openai_common import (
    api_error,
    message_from_openai,
    tooldef_from_openai,
    usage_from_openai,
)
from ctxfold.formats.requestlog import PrefixTracker
from ctxfold.transcript.model import (
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    ToolResultPart,
    Usage,
)

NAME = "openai-chat"
DESCRIPTION = "OpenAI Chat Completions: message lines, request logs {model, messages} and responses"

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_SYSTEM = ("system", "developer")
# Content part types of other APIs: Anthropic blocks, Responses parts.
_FOREIGN_PARTS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "input_text", "output_text"}
)
_OWN_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
# LiteLLM completion logs are request lines too, with these beside them: theirs, not ours.
_LITELLM_KEYS = ("kwargs", "latency_sec", "response_cost", "litellm_call_id")


# --------------------------------------------------------------------------------- sniff


def _message_score(m: Any) -> int:
    if not isinstance(m, dict) or not isinstance(m.get("role"), str) or "type" in m or "parts" in m:
        return -1
    if m["role"] not in _ROLES:
        return -1
    content = m.get("content")
    types = _part_types(content)
    if types & _FOREIGN_PARTS or (content is not None and not isinstance(content, (str, list))):
        return -1
    if "tool_calls" in m or "tool_call_id" in m or "function_call" in m or types & _OWN_PARTS:
        return 85
    if m.get("role") in ("developer", "tool", "function"):
        return 85
    if types - {"text"}:
        return -1
    return 40  # a bare {role, content}: ours first, but weakly


def _part_types(content: Any) -> set[str]:
    if not isinstance(content, list):
        return set()
    return {t for p in content if isinstance(p, dict) and isinstance(t := p.get("type"), str)}


def _line_score(d: Any) -> int:
    if not isinstance(d, dict):
        return -1
    if any(k in d for k in _LITELLM_KEYS):
        return -1
    if d.get("object") in ("chat.completion", "chat.completion.chunk"):
        return 95
    resp = _response_of(d)
    base = 90 if isinstance(resp, dict) and isinstance(resp.get("choices"), list) else 0
    req = d["request"] if isinstance(d.get("request"), dict) else d
    messages = req.get("messages")
    if isinstance(messages, list):
        scores = [_message_score(m) for m in messages]
        if -1 in scores or "input" in req or "contents" in req:
            return -1
        if not isinstance(req.get("model"), str) and not base:
            return min(max(scores, default=0), 40)
        return max(base, 60, *scores)
    if base:
        return base
    if "role" in d:
        return _message_score(d)
    if isinstance(d.get("usage"), dict) or isinstance(d.get("error"), dict):
        return 0  # fine here, proves nothing
    return -1


def sniff(objs: Sequence[Any]) -> int:
    """Sure on tool_calls, tool messages and completion objects; weak on bare
    ``{role, content}`` lines; 0 when any line belongs to another format."""
    return score_lines(objs, _line_score)


# -------------------------------------------------------------------------------- reader


class Reader:
    """Holds back the last assistant message for one line, in case a ``{usage}`` line follows,
    and the leading system messages until the first other message."""

    def __init__(self) -> None:
        self._pending: Message | None = None
        self._lead: list[str] | None = []  # leading system prompts; None once past them
        self._names: dict[str, str] = {}  # tool call id → name, until its result arrives
        self._tracker = PrefixTracker()
        self._responded = False
        self._system: tuple[str, ...] | None = None
        self._tools: Any = None
        self._model: str | None = None

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        out: list[Entry] = []
        pending, self._pending = self._pending, None
        if "role" in d and "messages" not in d:
            if pending is not None:
                out.append(pending)
            self._line_message(d, line, out)
            return out
        if set(d) <= {"usage", "model", "id", "timestamp"} and "usage" in d:
            usage = need(d, "usage", line, dict)
            if pending is not None:
                model = d.get("model") if isinstance(d.get("model"), str) else pending.model
                pending = replace(pending, usage=usage_from_openai(usage, model))
                out.append(pending)
            return out
        if pending is not None:
            out.append(pending)
        self._end_lead(out)
        if d.get("object") == "chat.completion.chunk":
            return out
        req = d["request"] if isinstance(d.get("request"), dict) else d
        resp = _response_of(d)
        if "messages" in req:
            self._request(req, line, out)
        elif d.get("object") == "chat.completion" or "choices" in d:
            resp = d
        elif resp is None and not isinstance(d.get("error"), dict):
            raise LineError("missing required field 'role'", line.no)
        if resp is not None:
            where = (
                "usage"
                if resp is d
                else "completion.usage"
                if resp is d.get("completion")
                else "response.usage"
            )
            if resp is not d and not isinstance(resp.get("usage"), dict) and isinstance(d.get("usage"), dict):
                resp, where = {**resp, "usage": d["usage"]}, "usage"  # the log line's usage of the call
            if "model" not in resp and isinstance(d.get("model"), str):
                resp = {**resp, "model": d["model"]}
            answer = self._response(resp, line, where)
            if resp is not d and isinstance(d.get("timestamp"), str):  # a request log's time of the call
                answer = replace(answer, timestamp=d["timestamp"])
            out.append(answer)
            self._responded = "messages" in req
        err = d.get("error")
        if isinstance(err, dict):
            out.append(api_error(err, d))
        return out

    def finish(self) -> Iterable[Entry]:
        out: list[Entry] = []
        if self._pending is not None:
            out.append(self._pending)
            self._pending = None
        self._end_lead(out)
        return out

    def _line_message(self, d: dict[str, Any], line: Line, out: list[Entry]) -> None:
        msg = self._convert(d, line)
        ident, ts = d.get("id"), d.get("timestamp")
        if isinstance(ident, str) or isinstance(ts, str):  # a logger's own fields on the line
            extra = {k: v for k, v in msg.extra.items() if k not in ("id", "timestamp")}
            msg = replace(msg, id=ident if isinstance(ident, str) else None, extra=extra)
            msg = replace(msg, timestamp=ts if isinstance(ts, str) else None)
        if self._lead is not None and d.get("role") in _SYSTEM:
            self._lead.append(msg.text)
            return
        self._end_lead(out)
        if msg.role == "assistant":
            self._pending = msg
        else:
            out.append(msg)

    def _end_lead(self, out: list[Entry]) -> None:
        """The leading system messages are over: they are the system prompt."""
        if self._lead:
            self._system = tuple(self._lead)
            out.append(ContextUpdate(system=self._system))
        self._lead = None

    def _convert(self, d: Mapping[str, Any], line: Line) -> Message:
        msg = message_from_openai(d, line)
        if msg.role == "assistant":
            for call in msg.tool_calls:
                self._names[call.id] = call.name
            usage, model = d.get("usage"), d.get("model")
            if isinstance(usage, dict):  # a log that keeps usage (and model) on the message itself
                model = model if isinstance(model, str) else None
                extra = {k: v for k, v in msg.extra.items() if k not in ("usage", "model")}
                return replace(msg, usage=usage_from_openai(usage, model), model=model, extra=extra)
        elif msg.role == "tool" and self._names:
            parts = tuple(
                replace(p, name=self._names.pop(p.call_id, None))
                if isinstance(p, ToolResultPart) and p.name is None and p.call_id in self._names
                else p
                for p in msg.parts
            )
            return replace(msg, parts=parts)
        return msg

    def _request(self, req: dict[str, Any], line: Line, out: list[Entry]) -> None:
        messages = need(req, "messages", line, list)
        n = 0
        while n < len(messages) and isinstance(messages[n], dict) and messages[n].get("role") in _SYSTEM:
            n += 1
        changed: dict[str, Any] = {}
        system = tuple(self._convert(m, line).text for m in messages[:n])
        if system != (self._system or ()):
            self._system = changed["system"] = system
        tools = req.get("tools") if req.get("tools") is not None else req.get("functions")
        if isinstance(tools, list) and tools != self._tools:
            self._tools = tools
            changed["tools"] = tuple(tooldef_from_openai(t) for t in tools if isinstance(t, dict))
        model = req.get("model")
        if isinstance(model, str) and model != self._model:
            self._model = changed["model"] = model
        if changed:
            out.append(ContextUpdate(**changed))
        rest_messages = messages[n:]
        start, reset = self._tracker.new_start(rest_messages)
        if reset:
            out.append(ContextReset("request does not extend the previous request's messages"))
        elif (
            self._responded and 0 < start < len(rest_messages) and _role(rest_messages[start]) == "assistant"
        ):
            start += 1  # the previous line's response, already emitted
        self._responded = False
        for m in rest_messages[start:]:
            if not isinstance(m, dict):
                raise LineError("each of 'messages' should be an object", line.no)
            out.append(self._convert(m, line))

    def _response(self, r: dict[str, Any], line: Line, where: str) -> Message:
        choices = need(r, "choices", line, list)
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        raw = choice.get("message") or choice.get("delta") or {"role": "assistant", "content": None}
        if not isinstance(raw, dict):
            raise LineError("field 'message' of a choice should be an object", line.no)
        msg = self._convert(raw if "role" in raw else {**raw, "role": "assistant"}, line)
        model = get_str(r, "model")
        usage: Usage | None = None
        if isinstance(r.get("usage"), dict):
            usage = usage_from_openai(r["usage"], model, path=where)
        extra = dict(msg.extra)
        more = rest(r, ("choices", "usage", "model", "id"))
        if more:
            extra["response"] = more
        if len(choice) > 1:
            extra["choice"] = rest(choice, ("message", "delta"))
        return replace(msg, id=get_str(r, "id"), usage=usage, model=model, extra=extra)


def _response_of(d: dict[str, Any]) -> dict[str, Any] | None:
    """The response a line holds: ``response``, or a request log's ``completion`` (the
    ``chat.completion`` object, or only its text)."""
    resp = d.get("response")
    if isinstance(resp, dict):
        return resp
    done = d.get("completion")
    if isinstance(done, dict) and (
        isinstance(done.get("choices"), list) or done.get("object") == "chat.completion"
    ):
        return done
    if isinstance(done, str) and "messages" in d:
        return {"choices": [{"message": {"role": "assistant", "content": done}}]}
    return None


def _role(m: Any) -> Any:
    return m.get("role") if isinstance(m, dict) else None
