"""Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``): one ``{timestamp, type, payload}`` per line.

``response_item`` lines are the conversation (Responses API items); ``event_msg`` lines mostly
duplicate them for the UI and are skipped, except ``token_count`` (usage), ``task_started``
(context window) and context-overflow errors. Codex writes a response's items as they stream
and its ``token_count`` after the response completes, in newer CLIs even after the tool outputs
of that response. Messages are frozen, so the reader holds the last assistant-side message (plus
the tool outputs that follow it) until its usage arrives or something else ends the response.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, as_int, get_str, need, obj, parse_overflow, rest
from ctxfold.formats.codex.items import item_message
from ctxfold.transcript.model import ApiError, CompactionMarker, ContextUpdate, Entry, Message, Usage

NAME = "codex"
DESCRIPTION = "Codex CLI rollout JSONL (session_meta / response_item / event_msg / turn_context lines)"

_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_OVERFLOW_HINT = re.compile(r"context[ _](?:window|length)|ran out of room|prompt is too long", re.I)
_LAST = "payload.info.last_token_usage"
_FIELDS: Mapping[str, str] = {
    "prompt_tokens": f"{_LAST}.input_tokens",
    "output_tokens": f"{_LAST}.output_tokens",
    "cache_read_tokens": f"{_LAST}.cached_input_tokens",
    "reasoning_tokens": f"{_LAST}.reasoning_output_tokens",
    "context_window": "payload.info.model_context_window",
}


def sniff(objs: Sequence[Any]) -> int:
    if not objs:
        return 0
    first = objs[0]
    if (
        isinstance(first, dict)
        and first.get("type") == "session_meta"
        and isinstance(first.get("payload"), dict)
    ):
        return 100
    hits = sum(
        1
        for o in objs
        if isinstance(o, dict) and get_str(o, "type") in _LINE_TYPES and isinstance(o.get("payload"), dict)
    )
    if not hits:
        return 0
    return 90 if hits * 2 >= len(objs) else 50


# ----------------------------------------------------------------------------------- reader


class Reader:
    """Streams one rollout; holds at most one response's tail (its last assistant-side item and
    the tool outputs after it) while waiting for that response's token_count."""

    def __init__(self) -> None:
        self._held: list[Message] = []  # [last assistant-side message, tool outputs after it...]
        self._model: str | None = None
        self._window: int | None = None
        self._totals: Any = None  # info.total_token_usage of the last token_count seen
        self._names: dict[str, str] = {}  # call_id → tool name, to name tool results
        self.dropped_usage = 0  # new token_counts with no assistant message to carry them

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        kind = need(d, "type", line, str)
        if kind not in _LINE_TYPES:
            return ()  # e.g. world_state: not part of the model's context
        p = need(d, "payload", line, dict)
        ts = get_str(d, "timestamp")
        if kind == "response_item":
            return self._response_item(p, line, ts)
        if kind == "event_msg":
            return self._event(p, line, ts)
        if kind == "turn_context":
            return self._turn_context(p)
        if kind == "session_meta":
            return self._flush([self._session_meta(p, line)])
        return self._flush([self._compacted(p, line, ts)])

    def finish(self) -> Iterable[Entry]:
        return self._flush()

    # -- holding back the last assistant-side message until its usage is known

    def _flush(self, then: list[Entry] | None = None) -> list[Entry]:
        out: list[Entry] = list(self._held)
        self._held = []
        if then:
            out.extend(then)
        return out

    def _response_item(self, p: dict[str, Any], line: Line, ts: str | None) -> list[Entry]:
        msg = item_message(p, line, ts, self._model, self._names)
        if msg.role == "assistant":
            out = self._flush()
            self._held = [msg]
            return out
        if msg.role == "tool" and self._held:
            self._held.append(msg)
            return []
        return self._flush([msg])

    def _replacement(self, items: list[Any], line: Line) -> Iterable[Message]:
        for item in items:
            if not isinstance(item, dict):
                raise LineError("replacement_history items should be objects", line.no)
            need(item, "type", line, str)
            yield item_message(item, line, None, self._model, self._names)

    def _compacted(self, p: dict[str, Any], line: Line, ts: str | None) -> CompactionMarker:
        """Codex's own compaction: after it the context is ``replacement_history`` when recorded
        (newer CLIs), else the summary ``message`` (older ones rebuilt the history from it)."""
        replacement = p.get("replacement_history")
        if replacement is not None and not isinstance(replacement, list):
            raise LineError("field 'replacement_history' should be list", line.no)
        return CompactionMarker(
            source="codex",
            summary=get_str(p, "message"),
            replacement=None if replacement is None else tuple(self._replacement(replacement, line)),
            timestamp=ts,
            extra=rest(p, ("message", "replacement_history")),
        )

    # -- event_msg / turn_context / session_meta

    def _event(self, p: dict[str, Any], line: Line, ts: str | None) -> list[Entry]:
        t = need(p, "type", line, str)
        if t == "token_count":
            return self._token_count(p, line)
        if t == "task_started":
            return self._window_update(p.get("model_context_window"))
        if t in ("error", "stream_error"):
            msg = p.get("message")
            info = p.get("codex_error_info")
            overflow = info == "context_window_exceeded" or (
                isinstance(info, dict) and "context_window_exceeded" in info
            )
            if isinstance(msg, str) and (overflow or _OVERFLOW_HINT.search(msg)):
                n, limit = parse_overflow(msg) or (None, None)
                err = ApiError(msg, n, limit, timestamp=ts, extra=rest(p, ("message",)))
                return self._flush([err])
        return []  # user_message, agent_message, exec/patch/web-search ends...: duplicates

    def _token_count(self, p: dict[str, Any], line: Line) -> list[Entry]:
        info = p.get("info")
        if info is None:
            return []
        if not isinstance(info, dict):
            raise LineError(f"field 'info' should be dict, got {type(info).__name__}", line.no)
        window = info.get("model_context_window")
        window = window if isinstance(window, int) and window > 0 else None
        totals = info.get("total_token_usage")
        last = info.get("last_token_usage")
        out: list[Entry] = []
        new = totals is None or totals != self._totals
        self._totals = totals
        if new and isinstance(last, dict):
            reasoning = last.get("reasoning_output_tokens")
            usage = Usage(
                prompt_tokens=as_int(last.get("input_tokens")),
                output_tokens=as_int(last.get("output_tokens")),
                cache_read_tokens=as_int(last.get("cached_input_tokens")),
                reasoning_tokens=None if reasoning is None else as_int(reasoning),
                model=self._model,
                context_window=window or self._window,
                fields=_FIELDS,
            )
            if self._held:
                self._held[0] = replace(self._held[0], usage=usage)
                out = self._flush()
            else:
                self.dropped_usage += 1
        out.extend(self._window_update(window))
        return out

    def _window_update(self, window: Any) -> list[Entry]:
        if not isinstance(window, int) or window <= 0 or window == self._window:
            return []
        self._window = window
        return self._flush([ContextUpdate(context_window=window)])

    def _turn_context(self, p: dict[str, Any]) -> list[Entry]:
        """Every turn_context becomes a ContextUpdate (so a writer can restore the line);
        ``model`` is set only when it changed."""
        model = get_str(p, "model")
        changed = model is not None and model != self._model
        if changed:
            self._model = model
        return self._flush([ContextUpdate(model=model if changed else None, extra=rest(p, ("model",)))])

    def _session_meta(self, p: dict[str, Any], line: Line) -> ContextUpdate:
        sid = p.get("id") or p.get("session_id")
        if not isinstance(sid, str):
            raise LineError("missing required field 'id'", line.no)
        base = p.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else base
        text = text if isinstance(text, str) else None
        used = ["id", "model"]
        if isinstance(base, dict) and len(base) == 1 and text is not None:
            used.append("base_instructions")  # the usual {"text": ...}; a plain string stays in extra
        model = get_str(p, "model")
        if model:
            self._model = model
        return ContextUpdate(
            system=(text,) if text is not None else None,
            model=model,
            session_id=sid,
            extra=rest(p, used),
        )
