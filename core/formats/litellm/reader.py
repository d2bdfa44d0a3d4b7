"""LiteLLM completion logs: one line per model call, ``{messages, tools, kwargs,
context_window, response, cost, timestamp, latency_sec}`` (as OpenHands' ``log_completions``
writes them). Each line repeats the whole request, so only the messages new since the
previous line are emitted; the response becomes the assistant message carrying the usage.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import (
    Line,
    ListReader,
    as_int,
    epoch_iso,
    get_dict,
    get_str,
    need,
    obj,
    parse_overflow,
    rest,
)
from ctxfold.formats.openai_common import (
    content_parts,
    message_from_openai,
    tooldef_from_openai,
    usage_from_openai,
)
from ctxfold.formats.requestlog import PrefixTracker
from ctxfold.transcript.model import (
    ApiError,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    TextPart,
)

NAME = "litellm"
DESCRIPTION = "LiteLLM completion logs (whole request + response per line, e.g. OpenHands log_completions)"

_SYSTEM_ROLES = ("system", "developer")
_LINE_USED = ("messages", "tools", "kwargs", "context_window", "response", "timestamp")
_RESPONSE_USED = ("choices", "usage", "model", "id")


def sniff(objs: Sequence[Any]) -> int:
    first = objs[0] if objs else None
    if not isinstance(first, dict) or not isinstance(first.get("messages"), list):
        return 0
    if not isinstance(first.get("kwargs"), dict) or "response" not in first:
        return 0
    # messages + kwargs + response is LiteLLM's completion-log shape; the timing and cost
    # fields make it certain (a bare OpenAI request log has neither kwargs nor these).
    return 95 if "latency_sec" in first or "cost" in first else 80


def _system_texts(messages: list[Any]) -> tuple[tuple[str, ...], int]:
    """The leading system/developer messages as prompt strings (one per text part), and how
    many messages they span."""
    texts: list[str] = []
    n = 0
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in _SYSTEM_ROLES:
            break
        n += 1
        texts.extend(p.text for p in content_parts(m.get("content")) if isinstance(p, TextPart))
    return tuple(texts), n


def _role(m: Any) -> Any:
    return m.get("role") if isinstance(m, dict) else None


class Reader(ListReader):
    def __init__(self) -> None:
        self._tracker = PrefixTracker()
        self._responded = False
        self._system: tuple[str, ...] | None = None
        self._tools_raw: Any = None
        self._model: str | None = None
        self._window: int | None = None
        self._kwargs: Any = None

    def feed(self, line: Line) -> Iterable[Entry]:
        return list(self._entries(line))

    def _entries(self, line: Line) -> Iterator[Entry]:
        d = obj(line)
        messages = need(d, "messages", line, list)
        response = d.get("response")
        if response is not None and not isinstance(response, dict):
            raise LineError(f"field 'response' should be dict, got {type(response).__name__}", line.no)
        kwargs = get_dict(d, "kwargs")

        system, n_system = _system_texts(messages)
        history = messages[n_system:]
        # The echo of the previous response is skipped here, not via PrefixTracker.responded():
        # that path truncates the tracker's remembered history to the echo, so the next line
        # would repeat everything after it.
        start, reset = self._tracker.new_start(history)
        if reset:
            yield ContextReset("request history does not extend the previous request")
        elif self._responded and 0 < start < len(history) and _role(history[start]) == "assistant":
            start += 1
        self._responded = False

        update = self._update(d, kwargs, response, system)
        if update is not None:
            yield update
        for m in history[start:]:
            if not isinstance(m, dict):
                raise LineError(f"a message should be an object, got {type(m).__name__}", line.no)
            yield message_from_openai(m, line)

        if response is not None:
            yield from self._response(d, response, line)
        elif d.get("error") is not None:
            text = d["error"] if isinstance(d["error"], str) else str(d["error"])
            found = parse_overflow(text)
            yield ApiError(
                text,
                prompt_tokens=found[0] if found else None,
                limit=found[1] if found else None,
                timestamp=epoch_iso(d.get("timestamp")),
            )

    def _update(
        self, d: dict[str, Any], kwargs: dict[str, Any], response: Any, system: tuple[str, ...]
    ) -> ContextUpdate | None:
        """A ContextUpdate holding whatever fixed part changed since the previous line."""
        changed: dict[str, Any] = {}
        if system != self._system:
            self._system = changed["system"] = system
        tools_raw = d.get("tools") if d.get("tools") is not None else kwargs.get("tools")
        if tools_raw is None:
            tools_raw = kwargs.get("functions")
        if tools_raw != self._tools_raw:
            self._tools_raw = tools_raw
            tools = tools_raw if isinstance(tools_raw, list) else ()
            changed["tools"] = tuple(tooldef_from_openai(t) for t in tools if isinstance(t, dict))
        model = kwargs.get("model") or (response.get("model") if isinstance(response, dict) else None)
        if isinstance(model, str) and model != self._model:
            self._model = changed["model"] = model
        window = as_int(d.get("context_window")) or None
        if window is not None and window != self._window:
            self._window = changed["context_window"] = window
        params = {k: v for k, v in kwargs.items() if k not in ("tools", "functions", "messages")}
        extra: dict[str, Any] = {}
        if params != self._kwargs:
            self._kwargs = params
            if params:
                extra["kwargs"] = params
        if not changed and not extra:
            return None
        return ContextUpdate(**changed, extra=extra)

    def _response(self, d: dict[str, Any], response: dict[str, Any], line: Line) -> Iterator[Entry]:
        choices = need(response, "choices", line, list)
        if not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        raw = need(choice, "message", line, dict)
        msg = message_from_openai(raw, line)
        model = get_str(response, "model")
        model = model if model is not None else self._model
        usage_raw = response.get("usage")
        # LiteLLM's usage is OpenAI-shaped: prompt_tokens already includes cached tokens
        # (its Anthropic adapter adds cache_read_input_tokens and cache_creation_input_tokens
        # into it). The Anthropic fixture has both at 0 so it cannot show this; the litellm
        # issue #11364 log (98805 = 10 + 66360 + 32435) does. usage_from_openai also adds
        # them back if prompt_tokens is ever smaller than the cache counts.
        usage = (
            usage_from_openai(usage_raw, model, path="response.usage", context_window=self._window)
            if isinstance(usage_raw, dict)
            else None
        )
        extra = dict(msg.extra)
        more = rest(choice, ("message", "index"))
        if more:
            extra["choice"] = more
        resp_more = rest(response, _RESPONSE_USED)
        if resp_more:
            extra["response"] = resp_more
        if len(choices) > 1:
            extra["other_choices"] = choices[1:]
        line_more = rest(d, _LINE_USED)
        if line_more:
            extra["log"] = line_more
        yield Message(
            "assistant",
            msg.parts,
            id=get_str(response, "id"),
            timestamp=epoch_iso(d.get("timestamp")),
            usage=usage,
            model=model,
            extra=extra,
        )
        self._responded = True
