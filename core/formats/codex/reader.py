"""Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``): one ``{timestamp, type, payload}`` per line.

``response_item`` lines are the conversation (Responses API items); ``event_msg`` lines mostly
duplicate them for the UI and are skipped, except ``token_count`` (usage), ``task_started``
(context window) and context-overflow errors. Codex writes a response's items as they stream
and its usage after the response completes, in newer CLIs even after the tool outputs of that
response. Messages are frozen, so the reader holds the last assistant-side message (plus the
tool outputs that follow it) until its usage arrives or something else ends the response.

Newer CLIs (0.148+, ``history_mode: "paginated"``) number every line (``ordinal``, checked by
``check.py``, renumbered by the writer) and put response-item bookkeeping beside the payload
(``metadata``: kept in ``extra["codex_line"]``). From 0.153 each response's usage is a
``token_usage_record`` line (with its turn and response ids); once a rollout has one, its
``token_count`` events only say the window. ``world_state`` lines (the harness state Codex diffs
its context against) become a ContextUpdate holding the payload, so a round trip keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, as_int, get_str, need, obj, parse_overflow, rest
from ctxfold.formats.codex.items import item_message
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextUpdate,
    Entry,
    Message,
    Rewind,
    TextPart,
    Usage,
)

NAME = "codex"
DESCRIPTION = "Codex CLI rollout JSONL (session_meta / response_item / event_msg / turn_context lines)"

_LINE_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "token_usage_record",
    }
)
LINE_KEYS = frozenset({"timestamp", "ordinal", "type", "payload"})  # a line's own keys; others go in extra
WORLD_STATE = "world_state"  # ContextUpdate.extra key holding a world_state payload
LINE_EXTRA = "codex_line"  # Message.extra key holding the line's other keys (response-item metadata)
RECORD = "codex_usage_record"  # Message.extra key: the token_usage_record's fields besides usage
ROLLBACK = "codex_rollback"  # Rewind.extra key: the thread_rolled_back event's payload
# user items Codex puts in the conversation itself: no turn of the user's starts with them
_CONTEXTUAL = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<skills_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
)
_OVERFLOW_HINT = re.compile(r"context[ _](?:window|length)|ran out of room|prompt is too long", re.I)
_LAST = "payload.info.last_token_usage"
_NAMES = {
    "prompt_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "cached_input_tokens",
    "cache_write_tokens": "cache_write_input_tokens",
    "reasoning_tokens": "reasoning_output_tokens",
}
_EVENT_FIELDS: Mapping[str, str] = {
    **{k: f"{_LAST}.{v}" for k, v in _NAMES.items()},
    "context_window": "payload.info.model_context_window",
}
RECORD_USAGE = "payload.usage"
_RECORD_FIELDS: Mapping[str, str] = {k: f"{RECORD_USAGE}.{v}" for k, v in _NAMES.items()}


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


def _starts_turn(m: Message) -> bool:
    """Whether ``m`` starts a user's turn, as a rollback counts turns: a user item that is not
    one Codex made itself (its environment, instructions...)."""
    if m.role != "user":
        return False
    text = next((p.text for p in m.parts if isinstance(p, TextPart)), "").lstrip()
    return not text.startswith(_CONTEXTUAL)


class _Rollback:
    """A ``thread_rolled_back`` event, until the reader has counted what it drops."""

    __slots__ = ("payload", "timestamp", "turns")

    def __init__(self, turns: int, payload: dict[str, Any], timestamp: str | None) -> None:
        self.turns, self.payload, self.timestamp = turns, payload, timestamp


class Reader:
    """Streams one rollout; holds at most one response's tail (its last assistant-side item and
    the tool outputs after it) while waiting for that response's usage."""

    def __init__(self) -> None:
        self._held: list[Message] = []  # [last assistant-side message, tool outputs after it...]
        self._model: str | None = None
        self._window: int | None = None
        self._totals: Any = None  # info.total_token_usage of the last token_count seen
        self._records = False  # usage comes from token_usage_record lines (token_count: window only)
        self._names: dict[str, str] = {}  # call_id → tool name, to name tool results
        self.dropped_usage = 0  # new usage records with no assistant message to carry them
        # the messages of the context given (since the last compaction), the places among them
        # where a user's turn starts, each with the context updates Codex put just before it,
        # and those since the last message that was none (a rollback drops the last turns:
        # ``_rolled_back``)
        self._given_count = 0
        self._starts: list[tuple[int, int]] = []
        self._updates = 0

    def feed(self, line: Line) -> Iterable[Entry]:
        return self._given(self._read(line))

    def _given(self, out: list[Entry]) -> list[Entry]:
        """Note the messages given, and turn a rollback into the rewind of its turns' messages."""
        for i, e in enumerate(out):
            if type(e) is Message:
                if e.branch is None:
                    self._note(e)
            elif isinstance(e, CompactionMarker):
                self._given_count, self._starts, self._updates = 0, [], 0
                for m in e.replacement or ():
                    self._note(m)
            elif isinstance(e, _Rollback):
                out[i] = self._rolled_back(e)
        return out

    def _note(self, m: Message) -> None:
        if _starts_turn(m):
            self._starts.append((self._given_count, self._updates))
            self._updates = 0
        elif m.role == "system" or m.role == "user":  # a developer item, or Codex's own user item
            self._updates += 1
        else:
            self._updates = 0
        self._given_count += 1

    def _rolled_back(self, r: _Rollback) -> Rewind:
        """Codex drops the last ``num_turns`` user turns from what it sends (all of them, but what
        came before the first, when there are fewer), with the context updates it had put just
        before the first of them (a model switch...), but before the first turn."""
        starts, cut = self._starts, self._given_count
        if starts and r.turns > 0:
            at, updates = starts[-r.turns] if r.turns < len(starts) else starts[0]
            every = r.turns >= len(starts)
            cut = at if every else at - updates
            del starts[-r.turns :]
            self._updates = updates if every else 0
        last, self._given_count = self._given_count - cut, cut
        return Rewind(last=last, extra={ROLLBACK: r.payload, "timestamp": r.timestamp})

    def _read(self, line: Line) -> list[Entry]:
        d = obj(line)
        kind = need(d, "type", line, str)
        if kind not in _LINE_TYPES:
            return []  # a line type Codex added later: not part of the model's context
        p = need(d, "payload", line, dict)
        ts = get_str(d, "timestamp")
        if kind == "response_item":
            return self._response_item(p, line, ts, rest(d, LINE_KEYS))
        if kind == "event_msg":
            return self._event(p, line, ts)
        if kind == "token_usage_record":
            return self._usage_record(p, line)
        if kind == "turn_context":
            return self._turn_context(p)
        if kind == "world_state":
            return self._flush([ContextUpdate(extra={WORLD_STATE: p})])
        if kind == "session_meta":
            return self._flush([self._session_meta(p, line)])
        return self._flush([self._compacted(p, line, ts)])

    def finish(self) -> Iterable[Entry]:
        return self._given(self._flush())

    # -- holding back the last assistant-side message until its usage is known

    def _flush(self, then: list[Entry] | None = None) -> list[Entry]:
        out: list[Entry] = list(self._held)
        self._held = []
        if then:
            out.extend(then)
        return out

    def _response_item(
        self, p: dict[str, Any], line: Line, ts: str | None, line_extra: dict[str, Any]
    ) -> list[Entry]:
        msg = item_message(p, line, ts, self._model, self._names)
        if line_extra:
            msg = replace(msg, extra={**msg.extra, LINE_EXTRA: line_extra})
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

    # -- usage: token_usage_record lines (newer CLIs) or token_count events

    def _attach(self, usage: Usage, extra: dict[str, Any] | None = None) -> list[Entry]:
        if not self._held:
            self.dropped_usage += 1
            return []
        first = self._held[0]
        self._held[0] = replace(
            first, usage=usage, extra={**first.extra, RECORD: extra} if extra else first.extra
        )
        return self._flush()

    def _usage_record(self, p: dict[str, Any], line: Line) -> list[Entry]:
        """One response's usage, with the ids Codex files it under (kept for a round trip)."""
        usage = p.get("usage")
        if not isinstance(usage, dict):
            raise LineError("token_usage_record needs a 'usage' object", line.no)
        self._records = True
        return self._attach(_usage(usage, _RECORD_FIELDS, self._model, self._window), rest(p, ("usage",)))

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
        # all zeros: no response behind it (Codex writes one after its compaction, to say the window)
        spent = isinstance(last, dict) and any(as_int(last.get(k)) for k in ("input_tokens", "output_tokens"))
        if new and isinstance(last, dict) and spent and not self._records:
            out = self._attach(_usage(last, _EVENT_FIELDS, self._model, window or self._window))
        out.extend(self._window_update(window))
        return out

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
        if t == "thread_rolled_back":
            turns = p.get("num_turns")
            rollback: Any = _Rollback(turns if isinstance(turns, int) and turns > 0 else 0, p, ts)
            return self._flush([rollback])
        return []  # user_message, agent_message, item_completed, exec ends...: UI duplicates

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


def _usage(last: dict[str, Any], fields: Mapping[str, str], model: str | None, window: int | None) -> Usage:
    """A Usage from Codex's token-usage object; ``fields`` names only the keys the object has
    (so a writer knows, e.g., whether this CLI writes ``cache_write_input_tokens``)."""
    reasoning = last.get("reasoning_output_tokens")
    return Usage(
        prompt_tokens=as_int(last.get("input_tokens")),
        output_tokens=as_int(last.get("output_tokens")),
        cache_read_tokens=as_int(last.get("cached_input_tokens")),
        cache_write_tokens=as_int(last.get("cache_write_input_tokens")),
        reasoning_tokens=None if reasoning is None else as_int(reasoning),
        model=model,
        context_window=window,
        fields=_present(fields, frozenset(k for k in _NAMES if _NAMES[k] in last)),
    )


_PRESENT: dict[tuple[tuple[tuple[str, str], ...], frozenset[str]], dict[str, str]] = {}


def _present(fields: Mapping[str, str], present: frozenset[str]) -> dict[str, str]:
    """``fields`` less the counts the object lacks: one mapping per shape of usage object, shared
    by every usage of that shape (the count cache pickles a session's thousands once each)."""
    key = (tuple(fields.items()), present)
    found = _PRESENT.get(key)
    if found is None:
        found = _PRESENT[key] = {k: f for k, f in fields.items() if k not in _NAMES or k in present}
    return found
