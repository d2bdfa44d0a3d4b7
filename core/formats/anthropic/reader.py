"""Anthropic Messages API transcripts: message lines, request lines and response objects.

Three line shapes are accepted, mixed freely:

- a message ``{role, content: str | [blocks]}`` (optionally with ``usage``/``model``/``id``);
- a request ``{model, system, tools, messages, max_tokens, ...}`` as request logs write it on
  every call (optionally wrapped as ``{request: {...}, response: {...}}`` or carrying
  ``response``/``error`` keys): only messages new since the previous request are emitted
  (:class:`PrefixTracker`), a request that does not extend the previous gives ``ContextReset``;
- a response object ``{type: "message", role: "assistant", content, usage}`` and an error
  ``{type: "error", error: {type, message}}``;
- a line ``{system: str | [text blocks], model?, tools?}`` recording the fixed parts on their own.

Tool results stay in role "user" messages, as the API has them. Server-side tool blocks
(``server_tool_use``, ``web_search_tool_result``...) are kept as OpaqueParts: they are not
calls the client answers, so they must not count as unanswered tool calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.anthropic.blocks import block_part, system_texts, tooldef, usage_from_anthropic
from ctxfold.formats.base import Line, get_str, need, obj, parse_overflow, rest, score_lines
from ctxfold.formats.requestlog import PrefixTracker
from ctxfold.transcript.model import (
    ApiError,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    Part,
    TextPart,
)

NAME = "anthropic"
DESCRIPTION = "Anthropic Messages API: message lines, request logs {model, system, messages} and responses"

# Block types only the Anthropic API has: one of them proves a line is Anthropic's.
_PROOF_NAMES = (
    "tool_use tool_result thinking redacted_thinking document server_tool_use web_search_tool_result "
    "web_fetch_tool_result code_execution_tool_result mcp_tool_use mcp_tool_result search_result "
    "container_upload"
)
PROOF_BLOCKS = frozenset(_PROOF_NAMES.split())
# Part / message markers of other formats (OpenAI chat and Responses).
_FOREIGN_BLOCKS = frozenset({"image_url", "input_audio", "file", "refusal", "input_text", "output_text"})
_FOREIGN_KEYS = ("tool_calls", "tool_call_id", "function_call", "parts")
_MSG_USED = ("role", "content", "id", "model", "timestamp", "usage")
_RESP_USED = ("type", "role", "content", "id", "model", "usage")


# --------------------------------------------------------------------------------- sniff


def _blocks_score(content: Any) -> int:
    """90 when a block proves Anthropic, -1 when a block belongs to another format, else 0."""
    if not isinstance(content, list):
        return 0
    score = 0
    for b in content:
        if not isinstance(b, dict):
            return -1
        t = b.get("type")
        if not isinstance(t, str):
            continue
        if t in _FOREIGN_BLOCKS:
            return -1
        if t in PROOF_BLOCKS or (t == "image" and isinstance(b.get("source"), dict)):
            score = 90
    return score


def _message_score(m: Any) -> int:
    if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
        return -1  # Anthropic messages have no system/tool/developer role
    if any(k in m for k in _FOREIGN_KEYS):
        return -1
    return _blocks_score(m.get("content"))


def _line_score(d: Any) -> int:
    if not isinstance(d, dict):
        return -1
    t = d.get("type")
    if t == "message" and d.get("role") == "assistant" and isinstance(d.get("content"), list):
        usage = d.get("usage")
        return 95 if isinstance(usage, dict) and "input_tokens" in usage else 80
    if t == "error" and isinstance(d.get("error"), dict):
        return 30
    req: dict[str, Any] = d["request"] if isinstance(d.get("request"), dict) else d
    if isinstance(req.get("messages"), list):
        scores = [_message_score(m) for m in req["messages"]]
        if -1 in scores:
            return -1
        best = max(scores, default=0)
        if isinstance(req.get("system"), (str, list)):
            best = max(best, 70)
        elif str(req.get("model", "")).startswith("claude") and "max_tokens" in req:
            best = max(best, 60)
        return best
    if "role" in d:
        return _message_score(d)
    if isinstance(d.get("system"), (str, list)):
        # A line of the fixed parts alone ({system, model?, tools?}): no other API logs one, and
        # it is how the anthropic writer starts every file, so a compacted transcript whose
        # blocks are all text (a summary and a continuation) is still recognised.
        return 50 if t is None and _fixed_parts_line(d) else 0
    return 0 if isinstance(t, str) else -1


def _fixed_parts_line(d: dict[str, Any]) -> bool:
    """``system`` a string or text blocks; ``tools``, if any, Anthropic tool definitions."""
    system, tools = d["system"], d.get("tools")
    if isinstance(system, list) and not all(isinstance(b, dict) and b.get("type") == "text" for b in system):
        return False
    if tools is None:
        return True
    return isinstance(tools, list) and all(
        isinstance(x, dict) and isinstance(x.get("name"), str) and "function" not in x for x in tools
    )


def sniff(objs: Sequence[Any]) -> int:
    """Certain only when some block or field proves Anthropic, fairly sure on a line of the fixed
    parts alone; 0 when any line is foreign."""
    return score_lines(objs, _line_score)


# -------------------------------------------------------------------------------- reader


class Reader:
    """Line-by-line: no lookahead is needed because usage always travels with its message."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}  # tool_use id → name, until its result arrives
        self._tracker = PrefixTracker()
        self._responded = False
        self._system: Any = None
        self._tools: Any = None
        self._model: str | None = None

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        t = d.get("type")
        if t == "message":
            return [self._response(d, line, "usage")]
        if t == "error":
            return [self._error(need(d, "error", line, dict), d)]
        if isinstance(d.get("request"), dict):
            return self._request(d["request"], d, line)
        if "messages" in d:
            return self._request(d, d, line)
        if "role" not in d and "system" in d:
            update = self._context(d)  # a per-message log recording the system prompt on its own line
            return [update] if update is not None else ()
        if "role" not in d and isinstance(t, str):
            return ()  # a line type this reader does not know (stream events, future additions)
        return [self._message(d, line)]

    def finish(self) -> Iterable[Entry]:
        return ()

    def _message(self, d: dict[str, Any], line: Line) -> Message:
        role = need(d, "role", line, str)
        if role not in ("user", "assistant"):
            raise LineError(f"unknown role {role!r} (Anthropic messages are user or assistant)", line.no)
        content = need(d, "content", line, (str, list))
        if isinstance(content, str):
            parts: tuple[Part, ...] = (TextPart(content),) if content else ()
        else:
            parts = tuple(block_part(b, line, self._names) for b in content)
        model = get_str(d, "model")
        usage = d.get("usage") if role == "assistant" and isinstance(d.get("usage"), dict) else None
        return Message(
            role,
            parts,
            id=get_str(d, "id"),
            timestamp=get_str(d, "timestamp"),
            usage=usage_from_anthropic(usage, model) if usage is not None else None,
            model=model,
            extra=rest(d, _MSG_USED if usage is not None else _MSG_USED[:-1]),
        )

    def _response(self, d: dict[str, Any], line: Line, where: str) -> Message:
        content = need(d, "content", line, list)
        model = get_str(d, "model")
        usage = d.get("usage")
        return Message(
            "assistant",
            tuple(block_part(b, line, self._names) for b in content),
            id=get_str(d, "id"),
            usage=usage_from_anthropic(usage, model, where) if isinstance(usage, dict) else None,
            model=model,
            extra=rest(d, _RESP_USED),
        )

    def _error(self, err: Mapping[str, Any], d: Mapping[str, Any]) -> ApiError:
        message = str(err.get("message") or err.get("type") or "error")
        sizes = parse_overflow(message)
        return ApiError(
            message,
            prompt_tokens=sizes[0] if sizes else None,
            limit=sizes[1] if sizes else None,
            id=get_str(d, "request_id"),
            extra={"error": dict(err)},
        )

    def _request(self, req: dict[str, Any], d: dict[str, Any], line: Line) -> list[Entry]:
        messages = need(req, "messages", line, list)
        out: list[Entry] = []
        update = self._context(req)
        if update is not None:
            out.append(update)
        start, reset = self._tracker.new_start(messages)
        if reset:
            out.append(ContextReset("request does not extend the previous request's messages"))
        elif self._responded and 0 < start < len(messages) and _role(messages[start]) == "assistant":
            start += 1  # the previous line's response, already emitted
        for m in messages[start:]:
            if not isinstance(m, dict):
                raise LineError("each of 'messages' should be an object", line.no)
            out.append(self._message(m, line))
        self._responded = False
        response = d.get("response")
        if isinstance(response, dict):
            out.append(self._response(response, line, "response.usage"))
            self._responded = True
        elif isinstance(d.get("error"), dict):
            err = d["error"]
            out.append(self._error(err.get("error", err) if isinstance(err.get("error"), dict) else err, d))
        return out

    def _context(self, req: dict[str, Any]) -> ContextUpdate | None:
        system, tools, model = req.get("system"), req.get("tools"), req.get("model")
        changed: dict[str, Any] = {}
        if system is not None and system != self._system:
            self._system = system
            changed["system"] = system_texts(system)
        if tools is not None and tools != self._tools:
            self._tools = tools
            changed["tools"] = tuple(tooldef(t) for t in tools) if isinstance(tools, list) else ()
        if isinstance(model, str) and model != self._model:
            self._model = model
            changed["model"] = model
        return ContextUpdate(**changed) if changed else None


def _role(m: Any) -> Any:
    return m.get("role") if isinstance(m, dict) else None
