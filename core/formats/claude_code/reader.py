"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

Claude Code writes one line per content block of a model response: the lines share
``message.id`` (and ``requestId``) and each repeats the usage so far. Tool results of parallel
calls may be written *between* those lines, even before the ``tool_use`` line they answer. So
the reader keeps one pending assistant message, defers tool-result-only user lines while it is
open, and emits the merged message (with the last line's usage) before them once a line of
another response arrives. Attachment lines the harness sends as system reminders (skill list,
reminders, re-read files...) become meta user messages, see ``claude_code_attachments``; other
bookkeeping lines (queue operations, snapshots, hook progress, titles...) carry nothing the
model read and are dropped. Where a line's ``parentUuid`` goes back past what was read since
(a rewind, a session resumed after a crash), the messages left behind are dropped from the
context as Claude Code drops them (``chain.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from ctxfold.formats.base import Line, as_int, get_dict, get_list, get_str, need, obj, parse_overflow, rest
from ctxfold.formats.chain import Chain
from ctxfold.formats.claude_code.attachments import render as render_attachment
from ctxfold.formats.claude_code.chain import Preserved, forks, preserved, put_back
from ctxfold.formats.claude_code.lines import CONVERSATION, SHAPE
from ctxfold.formats.claude_code.parts import SYNTHETIC, assistant_part, block_type, usage_of, user_parts
from ctxfold.transcript.model import (
    REQUEST_SHAPE,
    TOOL_SEARCH,
    ApiError,
    CompactionMarker,
    ContextUpdate,
    Entry,
    Message,
    Part,
    Rewind,
    TextPart,
    ToolDef,
    ToolResultPart,
)

NAME = "claude-code"
DESCRIPTION = "Claude Code session log (~/.claude/projects/*/<session>.jsonl)"

_LINE_USED = ("type", "message", "uuid", "timestamp")
_MAX_HELD = 64  # tool results held for a call not yet seen; beyond this they are emitted as they are
_BOOKKEEPING = frozenset(
    {
        "queue-operation",
        "last-prompt",
        "ai-title",
        "custom-title",
        "permission-mode",
        "progress",
        "attachment",
    }
)


def _bookkeeping(d: dict[str, Any], t: Any) -> bool:
    """A Claude Code line that is not part of the conversation (summary, snapshot, queue...)."""
    if t == "summary":
        return "leafUuid" in d
    if t == "file-history-snapshot":
        return "messageId" in d and "snapshot" in d
    return isinstance(t, str) and t in _BOOKKEEPING and isinstance(d.get("sessionId"), str)


def sniff(objs: Sequence[Any]) -> int:
    """95 when a conversation line has Claude Code's own linkage fields, 60 for bookkeeping only."""
    weak = False
    for d in objs:
        if not isinstance(d, dict):
            continue
        t = d.get("type")
        if (
            t in ("user", "assistant", "system")
            and isinstance(d.get("sessionId"), str)
            and "uuid" in d
            and "parentUuid" in d
        ):
            return 95
        weak = weak or _bookkeeping(d, t)
    return 60 if weak else 0


def _side(d: dict[str, Any]) -> str | None:
    """The side chain a line belongs to (its ``agentId``), or None for the main chain."""
    if d.get("isSidechain") is True:
        agent = d.get("agentId")
        return agent if isinstance(agent, str) and agent else "sidechain"
    return None


def _api_error_text(d: dict[str, Any]) -> str:
    """The innermost ``message`` of a system/api_error line's nested ``error`` objects."""
    err: Any = d.get("error")
    text = d.get("content") if isinstance(d.get("content"), str) else None
    while isinstance(err, dict):
        if isinstance(err.get("message"), str):
            text = err["message"]
        err = err.get("error")
    if text is None:
        text = err if isinstance(err, str) else "API error"
    return text


def _key(d: dict[str, Any], msg: dict[str, Any]) -> tuple[str, Any] | None:
    """What tells a response's lines: its ``message.id`` and the line's ``requestId``."""
    mid = msg.get("id")
    return (mid, d.get("requestId")) if isinstance(mid, str) else None


def _tool_def(t: dict[str, Any]) -> ToolDef | None:
    """A tool of a recorded request: a client tool's name, description and input schema, or a
    server tool (``type`` names it: web search, code execution...) with its fields in ``extra``."""
    name = t.get("name")
    if not isinstance(name, str):
        return None
    schema = t.get("input_schema")
    description = t.get("description")
    return ToolDef(
        name,
        description if isinstance(description, str) else "",
        schema if isinstance(schema, dict) else None,
        extra=rest(t, ("name", "description", "input_schema")),
    )


def _same(a: tuple[str, Any] | None, b: tuple[str, Any] | None) -> bool:
    """Same response: same ``message.id``, and same ``requestId`` when both lines have one."""
    if a is None or b is None or a[0] != b[0]:
        return False
    return a[1] is None or b[1] is None or a[1] == b[1]


class _Pending:
    """One assistant response being assembled from its per-block lines."""

    __slots__ = ("blocks", "branch", "first", "key", "last", "left", "parts", "start", "uuids")

    def __init__(
        self,
        d: dict[str, Any],
        msg: dict[str, Any],
        key: tuple[str, Any] | None,
        branch: str | None,
        start: int = -1,
    ) -> None:
        self.first = d
        self.last = msg
        self.key = key
        self.branch = branch
        self.start = start  # the main-chain line number of its first line (-1: a side chain's)
        self.left = False  # the conversation went on from a line before it: the response is left behind
        self.blocks: list[Any] = []
        self.parts: list[Part] = []
        self.uuids: list[Any] = []

    def add(self, d: dict[str, Any], msg: dict[str, Any], line: Line, names: dict[str, str]) -> None:
        content = need(msg, "content", line, (list, str))
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for b in content:
            t = block_type(b, line)
            if b in self.blocks:  # a line that repeats a block already seen
                continue
            self.blocks.append(b)
            self.parts.append(assistant_part(b, t, line, names))
        self.last = msg
        self.uuids.append(d.get("uuid"))

    def build(self) -> Message:
        d, msg = self.first, self.last
        model = msg.get("model")
        extra = rest(d, _LINE_USED)
        extra["message"] = rest(msg, ("content", "role"))
        if len(self.uuids) > 1:
            extra["uuids"] = self.uuids
        return Message(
            role="assistant",
            parts=tuple(self.parts),
            id=get_str(d, "uuid"),
            timestamp=get_str(d, "timestamp"),
            usage=usage_of(msg),
            model=model if isinstance(model, str) and model != SYNTHETIC else None,
            branch=self.branch,
            extra=extra,
            dropped=self.left,
        )


class Reader:
    def __init__(self) -> None:
        self._pending: _Pending | None = None
        self._deferred: list[Message] = []
        self._names: dict[str, str] = {}
        self._session: str | None = None
        self._model: str | None = None
        self._started = False
        self._own: str | None = None  # the sub-agent whose own transcript this file is
        self._chain = Chain()  # the main chain's lines since the last compaction (``chain.py``)
        self._kept: Preserved | None = None  # what the last compaction kept, until put back after its summary
        self._anchor: tuple[Any, Any] | None = None  # (its summary line, its last kept line) once put back
        self._shape: Any = None  # the hash of the last system prompt and tools read (``_request_shape``)

    def _branch(self, d: dict[str, Any]) -> str | None:
        """A line's branch: None for the main chain, else its side chain's agent."""
        side = _side(d)
        return None if side is not None and side == self._own else side

    def _start(self, d: dict[str, Any]) -> None:
        """At the first conversation line (user, assistant, system or attachment): Claude Code 2.x
        writes each sub-agent's conversation to its own file (``<session>/subagents/agent-<id>.jsonl``),
        every line on that agent's side chain, so a file that starts on an agent's side chain is
        that agent's transcript, and its chain is the main one."""
        self._started = True
        side = _side(d)
        if side not in (None, "sidechain"):
            self._own = side

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        t = need(d, "type", line, str)
        if t not in CONVERSATION:
            if t == SHAPE:
                return self._request_shape(d)
            return ()  # summary, progress, snapshots... and future bookkeeping types (lines.py)
        if not self._started:
            self._start(d)
        first = self._follow(d, t) if d.get("isSidechain") is not True or self._branch(d) is None else None
        if t == "assistant":
            out = self._assistant(d, line)
        elif t == "user":
            out = self._user(d, line)
        elif t == "system":
            out = self._system(d, line)
        else:
            out = self._attachment(d)
        return [*first, *out] if first else out

    def finish(self) -> Iterable[Entry]:
        return self._flush()

    def _request_shape(self, d: dict[str, Any]) -> list[Entry]:
        """The system prompt and tools the requests from here on sent, as Claude Code 2.1.3xx
        records them (``api-request-shape``, written before the request that first uses them):
        a tool whose schema is loaded only when searched for (``defer_loading``) takes no room."""
        agent, shape, digest = d.get("agentId"), d.get("shape"), d.get("shapeHash")
        if agent is not None and agent != self._own:  # a sub-agent's requests: its own file's
            return []
        if not isinstance(shape, dict) or digest == self._shape:
            return []
        self._shape = digest
        blocks = get_list(shape, "system")
        system = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
        tools = [t for t in get_list(shape, "tools") if isinstance(t, dict)]
        searched = [t.get("defer_loading") is True for t in tools]
        defs = tuple(
            x for t, s in zip(tools, searched, strict=True) if not s and (x := _tool_def(t)) is not None
        )
        out = self._flush()  # (the response before it was sent with what came before)
        extra = {REQUEST_SHAPE: digest if isinstance(digest, str) else "", TOOL_SEARCH: any(searched)}
        out.append(ContextUpdate(system=tuple(system), tools=defs, extra=extra))
        return out

    def _follow(self, d: dict[str, Any], t: str) -> list[Entry]:
        """Place a main-chain line (``chain.py``); the entries a fork there brings first."""
        chain, parent = self._chain, d.get("parentUuid")
        kept = self._kept
        if kept is not None and kept.anchor in chain.placed and kept.lines:  # the line after the summary
            self._kept, self._anchor = None, (kept.anchor, kept.lines[-1])
            put_back(chain, kept)
        if self._anchor is not None and parent == self._anchor[0]:
            parent = self._anchor[1]  # what followed the summary follows what it kept
        at = chain.where(parent)
        out: list[Entry] = []
        # (most lines are parented to the last one: nothing was read after their parent)
        after = at is not None and at >= 0 and (chain.last > at or self._started_after(at))
        if after and forks(t, d) and not self._continues(d):
            out = self._fork(at)
        chain.place(d.get("uuid"), parent, at)
        return out

    def _started_after(self, at: int) -> bool:
        """Whether the response being assembled started after line ``at``."""
        p = self._pending
        return p is not None and p.start > at

    def _continues(self, d: dict[str, Any]) -> bool:
        """Whether ``d`` is another line of the response being assembled."""
        p, msg = self._pending, d.get("message")
        key = _key(d, msg) if isinstance(msg, dict) else None
        return p is not None and d.get("type") == "assistant" and _same(p.key, key) and p.branch is None

    def _fork(self, at: int | None) -> list[Entry]:
        """A line parented to line ``at`` (``Chain.where``), when it comes before the last line
        read, leaves behind what was read after it, as Claude Code never sends it again: the
        response being assembled is dropped (with its results), and the messages given already
        are left out by a :class:`Rewind`."""
        chain = self._chain
        if at is None or at < 0:
            return []
        p = self._pending
        if p is not None and p.start > at:
            p.left = True
        elif chain.last <= at:
            return []
        out = self._flush()
        dropped = {e.id for e in out if isinstance(e, Message) and e.dropped}
        gone = tuple(mid for mid in chain.after(at) if mid not in dropped)
        if gone:
            out.append(Rewind(gone))
        return out

    def _flush(self, carry: bool = False) -> list[Entry]:
        """Emit the pending response, then the tool results held back behind it.

        With ``carry`` (another response starts), results whose ``tool_use`` line has not been
        seen yet stay held: Claude Code sometimes writes a result before the call it answers.
        """
        out: list[Entry] = []
        left: set[str] = set()  # the calls of a response left behind: their results go with it
        if self._pending is not None:
            response = self._pending.build()
            out.append(response)
            self._pending = None
            if response.dropped:
                left = {c.id for c in response.tool_calls}
        held: list[Message] = []
        for m in self._deferred:
            if left and any(isinstance(p, ToolResultPart) and p.call_id in left for p in m.parts):
                m = dataclasses.replace(m, dropped=True)
            orphan = any(
                isinstance(p, ToolResultPart) and p.name is None and p.call_id not in self._names
                for p in m.parts
            )
            if orphan and carry and len(held) < _MAX_HELD:
                held.append(m)
                continue
            if any(
                isinstance(p, ToolResultPart) and p.name is None and p.call_id in self._names for p in m.parts
            ):
                m = dataclasses.replace(m, parts=tuple(self._named(p) for p in m.parts))
            out.append(m)
        self._deferred = held
        return out

    def _named(self, p: Part) -> Part:
        """A tool result that arrived before its call, with the call's tool name filled in."""
        if isinstance(p, ToolResultPart) and p.name is None and p.call_id in self._names:
            return dataclasses.replace(p, name=self._names.pop(p.call_id))
        return p

    def _context(self, d: dict[str, Any], out: list[Entry], model: str | None = None) -> None:
        """Announce a new session id, or a new main-chain model, before the entry that uses it."""
        sid = d.get("sessionId")
        new_sid = sid if isinstance(sid, str) and sid != self._session else None
        new_model = model if model is not None and model != self._model else None
        if new_sid or new_model:
            self._session = new_sid or self._session
            self._model = new_model or self._model
            agent = {"agent_id": self._own} if new_sid and self._own else {}
            out.append(ContextUpdate(model=new_model, session_id=new_sid, extra=agent))

    def _assistant(self, d: dict[str, Any], line: Line) -> list[Entry]:
        msg = need(d, "message", line, dict)
        if d.get("isApiErrorMessage") is True:
            out = self._flush()
            self._context(d, out)
            content = need(msg, "content", line, (list, str))
            text = (
                content
                if isinstance(content, str)
                else "\n".join(
                    get_str(b, "text") or ""
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "text"
                )
            )
            out.append(self._error(d, text))
            return out
        branch = self._branch(d)
        key = _key(d, msg)
        p = self._pending
        if p is not None and _same(p.key, key) and p.branch == branch:
            p.add(d, msg, line, self._names)
            return []
        out = self._flush(carry=True)
        model = msg.get("model")
        main_model = model if branch is None and isinstance(model, str) and model != SYNTHETIC else None
        self._context(d, out, main_model)
        p = _Pending(d, msg, key, branch, self._chain.lines - 1 if branch is None else -1)
        if branch is None:
            self._chain.note(get_str(d, "uuid"))
        p.add(d, msg, line, self._names)
        self._pending = p
        return out

    def _user(self, d: dict[str, Any], line: Line) -> list[Entry]:
        msg = need(d, "message", line, dict)
        content = need(msg, "content", line, (str, list))
        branch = self._branch(d)
        extra = rest(d, _LINE_USED)
        more = rest(msg, ("content", "role"))
        if more:
            extra["message"] = more
        message = Message(
            role="user",
            parts=user_parts(content, line, self._names),
            id=get_str(d, "uuid"),
            timestamp=get_str(d, "timestamp"),
            branch=branch,
            extra=extra,
        )
        p = self._pending
        results_only = bool(
            p is not None
            and p.branch == branch
            and isinstance(content, list)
            and content
            and all(isinstance(x, ToolResultPart) for x in message.parts)
        )
        return self._emit(d, message, defer=results_only)

    def _emit(self, d: dict[str, Any], message: Message, *, defer: bool) -> list[Entry]:
        """A user-side message: held behind the response being assembled (more of its lines may
        follow), or emitted after it."""
        if message.branch is None:
            self._chain.note(message.id)
        if defer:
            self._deferred.append(message)
            return []
        out = self._flush()
        self._context(d, out)
        out.append(message)
        return out

    def _attachment(self, d: dict[str, Any]) -> list[Entry]:
        """A system reminder the harness adds to the next request; the raw line stays in extra."""
        text = render_attachment(d.get("attachment"))
        if text is None:
            return []
        message = Message(
            role="user",
            parts=(TextPart(text),),
            id=get_str(d, "uuid"),
            timestamp=get_str(d, "timestamp"),
            branch=self._branch(d),
            extra=rest(d, _LINE_USED),
        )
        return self._emit(d, message, defer=self._pending is not None)

    def _system(self, d: dict[str, Any], line: Line) -> list[Entry]:
        sub = d.get("subtype")
        if sub == "compact_boundary":
            out = self._flush()
            meta = get_dict(d, "compactMetadata")
            kept = preserved(self._chain, meta)
            if kept is not None and kept.after:
                out.append(Rewind(kept.after))  # read after what it kept: not kept
            self._chain.clear(d.get("uuid"))  # the chain starts again at the boundary
            self._kept, self._anchor = kept, None
            self._context(d, out)
            out.append(
                CompactionMarker(
                    source=NAME,
                    tokens_before=as_int(meta["preTokens"]) if "preTokens" in meta else None,
                    tokens_after=as_int(meta["postTokens"]) if "postTokens" in meta else None,
                    trigger=get_str(meta, "trigger"),
                    first_kept_id=kept.kept[0] if kept is not None and kept.kept else None,
                    id=get_str(d, "uuid"),
                    timestamp=get_str(d, "timestamp"),
                    extra=rest(d, ("type", "uuid", "timestamp")),
                )
            )
            return out
        if sub == "api_error":
            out = self._flush()
            self._context(d, out)
            out.append(self._error(d, _api_error_text(d)))
            return out
        return []  # turn_duration, away_summary, stop_hook_summary, local_command...

    @staticmethod
    def _error(d: dict[str, Any], text: str) -> ApiError:
        sizes = parse_overflow(text)
        return ApiError(
            message=text,
            prompt_tokens=sizes[0] if sizes else None,
            limit=sizes[1] if sizes else None,
            id=get_str(d, "uuid"),
            timestamp=get_str(d, "timestamp"),
            extra=rest(d, ("uuid", "timestamp")),
        )
