"""Google genai (Gemini API) transcripts: Content lines, ADK events, requests and responses.

Accepted lines, camelCase or snake_case keys alike:

- a Content ``{role: user|model, parts: [...]}``;
- an ADK event ``{id, author, invocationId, timestamp, content, usageMetadata, partial,
  errorCode, errorMessage, ...}``: ``partial`` events are merged into one message (usage
  ``final=False``) that the complete event from the same author then replaces;
- a request ``{model, contents, systemInstruction, tools}`` (also under ``config``): only
  contents new since the previous request (:class:`PrefixTracker`);
- a response ``{candidates: [{content}], usageMetadata, modelVersion, responseId}``; stream
  chunks sharing a ``responseId`` are merged into one message.

Role "model" is "assistant". A Content whose parts are all ``functionResponse`` becomes role
"tool" (so token counting frames it as a tool message) with ``extra["role"] = "user"`` for
writers. Calls without an ``id`` get one made from the name (``extra["synthetic_id"]``) and
their responses are paired by name in order. Output tokens count candidates + thoughts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, epoch_iso, get_dict, get_str, obj, rest, score_lines
from ctxfold.formats.genai.parts import (
    ROLES,
    Calls,
    api_error,
    content_message,
    get,
    merge,
    system_texts,
    tooldefs,
    usage_from_genai,
)
from ctxfold.formats.requestlog import PrefixTracker
from ctxfold.transcript.model import ContextReset, ContextUpdate, Entry, Message

NAME = "genai"
DESCRIPTION = "Google genai / Gemini: Content lines, ADK events, generateContent requests and responses"

_SIGNALS = (
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
    "inlineData",
    "inline_data",
)
_EVENT_KEYS = ("invocationId", "invocation_id", "author")
_EVENT_USED = (
    "id",
    "timestamp",
    "content",
    "usageMetadata",
    "usage_metadata",
    "partial",
    "modelVersion",
    "model_version",
)
_NONE: tuple[str, Any] = ("", None)


# --------------------------------------------------------------------------------- sniff


def _line_score(d: Any) -> int:
    if not isinstance(d, dict):
        return -1
    if "invocationId" in d or "invocation_id" in d:
        return 95
    if isinstance(d.get("contents"), list) or isinstance(d.get("candidates"), list):
        return 90
    content: dict[str, Any] = d["content"] if isinstance(d.get("content"), dict) else d
    parts = content.get("parts")
    if isinstance(parts, list):
        role = content.get("role", "user")
        if not isinstance(role, str) or role not in ROLES:
            return -1
        if "author" in d:
            return 95
        signal = any(isinstance(p, dict) and any(k in p for k in _SIGNALS) for p in parts)
        return 85 if signal or content.get("role") == "model" else 70
    if "usageMetadata" in d or isinstance(d.get("error"), dict):
        return 0
    return -1


def sniff(objs: Sequence[Any]) -> int:
    """Sure on ``parts`` Contents and ADK event keys; 0 when any line is foreign."""
    return score_lines(objs, _line_score)


# -------------------------------------------------------------------------------- reader


class Reader:
    """Holds back at most one message: a streaming one (ADK partials or response chunks) that
    later lines may extend or replace."""

    def __init__(self) -> None:
        self._calls = Calls()
        self._tracker = PrefixTracker()
        self._held: Message | None = None
        self._held_key: tuple[str, Any] = _NONE
        self._responded = False
        self._system: Any = None
        self._tools: Any = None
        self._model: str | None = None

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        out: list[Entry] = []
        if any(k in d for k in ("invocationId", "invocation_id", "author")) or isinstance(
            d.get("content"), dict
        ):
            self._event(d, line, out)
        elif isinstance(d.get("candidates"), list):
            self._response(d, line, out, "usageMetadata", hold=True)
        elif isinstance(d.get("request"), dict) or "contents" in d:
            self._flush(out)
            self._request(d["request"] if isinstance(d.get("request"), dict) else d, d, line, out)
        elif "parts" in d:
            self._flush(out)
            msg = content_message(d, line, self._calls, {})
            if msg is not None:
                out.append(msg)
        elif isinstance(d.get("error"), dict):
            self._flush(out)
            err = d["error"]
            out.append(api_error(str(err.get("message") or err.get("status") or "error"), d, {"error": err}))
        else:
            raise LineError("missing required field 'parts'", line.no)
        return out

    def finish(self) -> Iterable[Entry]:
        out: list[Entry] = []
        self._flush(out)
        return out

    def _flush(self, out: list[Entry]) -> None:
        if self._held is not None:
            out.append(self._held)
            self._held, self._held_key = None, _NONE

    def _event(self, d: dict[str, Any], line: Line, out: list[Entry]) -> None:
        content = d.get("content")
        partial = d.get("partial") is True
        model = get(d, "modelVersion", "model_version")
        model = model if isinstance(model, str) else None
        msg = None
        if isinstance(content, dict) and isinstance(content.get("parts"), list):
            msg = content_message(content, line, self._calls, rest(d, _EVENT_USED))
        raw_usage = get(d, "usageMetadata", "usage_metadata")
        if msg is not None:
            usage = None
            if isinstance(raw_usage, dict) and msg.role == "assistant":
                usage = replace(usage_from_genai(raw_usage, model), final=not partial)
            msg = replace(
                msg, id=get_str(d, "id"), timestamp=epoch_iso(d.get("timestamp")), usage=usage, model=model
            )
        key = ("partial", d.get("author"))
        if self._held is not None and self._held_key == key and msg is not None:
            if partial:
                self._held = merge(self._held, msg)
                return
            self._held, self._held_key = None, _NONE  # the complete event replaces its partials
        self._flush(out)
        if partial and msg is not None:
            self._held, self._held_key = msg, key
            return
        if msg is not None:
            out.append(msg)
        code, text = get(d, "errorCode", "error_code"), get(d, "errorMessage", "error_message")
        if code or text:
            out.append(api_error(str(text or code), d, {"errorCode": code} if code else {}))

    def _response(self, d: dict[str, Any], line: Line, out: list[Entry], where: str, hold: bool) -> None:
        cands = d.get("candidates")
        cand = cands[0] if isinstance(cands, list) and cands and isinstance(cands[0], dict) else {}
        content = cand.get("content")
        model = get(d, "modelVersion", "model_version")
        model = model if isinstance(model, str) else None
        rid = get(d, "responseId", "response_id")
        msg = None
        if isinstance(content, dict) and isinstance(content.get("parts"), list):
            extra = rest(
                d,
                (
                    "candidates",
                    "usageMetadata",
                    "usage_metadata",
                    "modelVersion",
                    "model_version",
                    "responseId",
                ),
            )
            if len(cand) > 1:
                extra["candidate"] = rest(cand, ("content",))
            msg = content_message(content, line, self._calls, extra)
        raw_usage = get(d, "usageMetadata", "usage_metadata")
        if msg is not None:
            usage = usage_from_genai(raw_usage, model, where) if isinstance(raw_usage, dict) else None
            msg = replace(msg, id=rid if isinstance(rid, str) else None, usage=usage, model=model)
        if hold and rid and self._held is not None and self._held_key == ("chunk", rid):
            if msg is not None:
                self._held = merge(self._held, msg)
            return
        self._flush(out)
        if msg is None:
            return
        if hold and rid:
            self._held, self._held_key = msg, ("chunk", rid)
        else:
            out.append(msg)

    def _request(self, req: dict[str, Any], d: dict[str, Any], line: Line, out: list[Entry]) -> None:
        config = get_dict(req, "config")
        system = get(req, "systemInstruction", "system_instruction") or get(
            config, "systemInstruction", "system_instruction"
        )
        tools = req.get("tools") or config.get("tools")
        changed: dict[str, Any] = {}
        if system is not None and system != self._system:
            self._system = system
            changed["system"] = system_texts(system)
        if isinstance(tools, list) and tools != self._tools:
            self._tools = tools
            changed["tools"] = tooldefs(tools)
        model = req.get("model")
        if isinstance(model, str) and model != self._model:
            self._model = changed["model"] = model
        if changed:
            out.append(ContextUpdate(**changed))
        contents = req.get("contents")
        if not isinstance(contents, list):
            raise LineError("missing required field 'contents'", line.no)
        start, reset = self._tracker.new_start(contents)
        if reset:
            out.append(ContextReset("request contents do not extend the previous request's contents"))
        elif self._responded and 0 < start < len(contents) and _role(contents[start]) == "model":
            start += 1  # the previous line's response, already emitted
        self._responded = False
        for c in contents[start:]:
            if not isinstance(c, dict):
                raise LineError("each of 'contents' should be an object", line.no)
            msg = content_message(c, line, self._calls, {})
            if msg is not None:
                out.append(msg)
        response = d.get("response")
        if isinstance(response, dict):
            self._response(response, line, out, "response.usageMetadata", hold=False)
            self._responded = True


def _role(c: Any) -> Any:
    return c.get("role") if isinstance(c, dict) else None
