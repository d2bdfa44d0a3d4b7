"""Replay a transcript's entries and find its model requests, with their estimated sizes.

A request starts at each run of main-branch assistant messages: what was sent is the
system prompt, the tool definitions and every message of the current context before the
run. The real count, when the log has one, is the usage on the run's last message (or the
count stated in a "prompt is too long" error). Recorded compactions reset the context the
way the recording tool did. Messages are tokenized in batches and the context keeps only
per-message counts, by column (``context_counts``), so memory stays near what one request needs.

A compaction's summary heads the context after it, unless the message that follows holds it
(ctxfold's own compactions: the marker records the summary and the summary message after it is
what the model reads, as ``api_writing.current`` writes them): counted once, as that message.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from ctxfold.tokens.context_counts import ContextCounts
from ctxfold.tokens.counting import CATEGORIES, Batch, Counter, MessageCount
from ctxfold.tokens.harness_prompts import LogFacts
from ctxfold.tokens.parallel import Counting, Pending
from ctxfold.transcript.model import (
    REQUEST_SHAPE,
    TOOL_SEARCH,
    ApiError,
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    OpaquePart,
    Rewind,
    TextPart,
    ToolDef,
    ToolResultPart,
    Usage,
    harness_tokens,
)

BATCH_MESSAGES = 256
# Tools the provider runs inside a response, whose results the model reads but the log does not
# hold (OpenAI Responses' built-in tools, Anthropic's server tools): the calibrator learns what
# each adds from the jump in the real count it causes.
SERVER_TOOLS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "server_tool_use",
    }
)
BATCH_CHARS = 1_000_000


@dataclass(slots=True)
class Request:
    """One model request found in the log."""

    index: int
    estimate: int
    messages: int  # messages in the context sent
    fixed: int = 0  # system prompt + tool definitions + request framing, included in estimate
    elided: int = 0  # tool results and media in the context: what a summarizer's prompt leaves out
    real: int | None = None
    real_source: str | None = None  # "usage" | "error"
    model: str | None = None
    context_window: int | None = None
    segment: int = 0  # bumps at every recorded compaction or reset
    first_in_segment: bool = False
    usage: Usage | None = None  # the provider's whole record (output, cache writes: for cost)
    timestamp: str | None = None  # when the answer carrying the usage was logged
    turn_start: bool = False  # the context ends with the user's own message (not a tool's result)
    server_tools: int = 0  # server-side tool calls in the context (web searches: SERVER_TOOLS)
    # ... and once its response is in: its real count covers the calls the response made itself
    server_tools_after: int = 0

    def __reduce__(self) -> tuple[Any, ...]:
        # the count cache pickles every request: rebuilt by the constructor from a tuple, faster
        # than the slots default's per-object dict of fields
        return (Request, _REQUEST_STATE(self))

    @property
    def cache_read(self) -> int:
        return self.usage.cache_read_tokens if self.usage is not None else 0


_REQUEST_FIELDS = tuple(f.name for f in fields(Request))
_REQUEST_STATE = attrgetter(*_REQUEST_FIELDS)


@dataclass(slots=True)
class RecordedCompaction:
    before_request: int  # index of the next request after it
    source: str
    tokens_before: int | None
    tokens_after: int | None
    trigger: str | None


@dataclass
class Replay:
    """State after replaying a whole stream: the request rows and the context now."""

    requests: list[Request] = field(default_factory=list)
    compactions: list[RecordedCompaction] = field(default_factory=list)
    context: ContextCounts = field(default_factory=ContextCounts)
    by_category: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    system: tuple[str, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    model: str | None = None
    context_window: int | None = None
    session_id: str | None = None
    agent: str | None = None  # set for a sub-agent's own transcript (its id)
    harness: int = 0  # tokens of unlogged text the harness sends with every request
    project: str | None = None  # the working directory the log names (cwd), if any
    messages_seen: int = 0
    side_messages: int = 0
    side_requests: int = 0
    # calls that are billed but are no request of the main context: sub-agents' calls, and
    # responses cut short (an aborted stream: its usage is not a real count, but it was billed)
    other_calls: list[Usage] = field(default_factory=list)
    other_times: list[str | None] = field(default_factory=list)  # each other call's timestamp
    per_request: int = 0
    server_tools: int = 0  # server-side tool calls in the context now
    segment: int = 0  # of the context now: recorded compactions and resets so far
    facts: LogFacts = field(default_factory=LogFacts)  # the harness version and what else it shows

    @property
    def context_total(self) -> int:
        return sum(self.by_category.values()) + self.per_request

    @property
    def fixed_total(self) -> int:
        return self.by_category["system"] + self.by_category["tools"] + self.per_request


class SessionCounter:
    """Feeds entries through a :class:`Counter` and keeps the replay state up to date."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.state = Replay(per_request=counter.framing.per_request)
        self._in_run = False
        self._segment_has_real = False
        self._held_summary: str | None = None  # a compaction's, until the next message is seen

    def feed(
        self,
        entries: Iterable[Entry],
        *,
        size: int | None = 0,
        finish: bool = True,
        read: Callable[[], int] | None = None,
    ) -> Replay:
        """Replay ``entries`` (any iterable, consumed once; ``size`` bytes of log, 0 if unknown,
        None for the last lines of an input an earlier call was told the size of; ``read``: how
        many of them have been read so far) and return the final state.

        A large input's batches are tokenized by a helper while the next ones are read and
        parsed here (``tokens/parallel.py``); results are applied in order, so the replay is
        the same. With
        ``finish=False`` more entries may follow in another call (a compaction's summary is still
        held for the message after it): the count cache snapshots the state in between.
        """
        counting = Counting(self.counter.tokenizer, size, read)
        inflight: deque[tuple[list[Entry], Batch, Pending]] = deque()
        buf: list[Entry] = []
        pending: list[Message] = []
        chars = 0
        with collector_paused():
            try:
                for e in entries:
                    buf.append(e)
                    if isinstance(e, Message):
                        pending.append(e)
                        chars += _chars(e)
                        if len(pending) >= BATCH_MESSAGES or chars >= BATCH_CHARS:
                            batch = self.counter.prepare(pending)
                            inflight.append((buf, batch, counting.submit(batch.texts)))
                            while len(inflight) > counting.in_flight:
                                self._settle(inflight.popleft())
                            buf, pending, chars = [], [], 0
                while inflight:
                    self._settle(inflight.popleft())
            finally:
                counting.close()
            self._apply(buf, self.counter.count_messages(pending) if pending else [])
        if finish:
            self._release_summary()
        return self.state

    def snapshot(self) -> dict[str, Any]:
        """What resuming needs besides the counter (rebuilt from the settings): plain data."""
        return {
            "state": self.state,
            "in_run": self._in_run,
            "segment_has_real": self._segment_has_real,
            "held_summary": self._held_summary,
        }

    @classmethod
    def restore(cls, counter: Counter, snap: dict[str, Any]) -> SessionCounter:
        """A counter that goes on from ``snapshot()``, with the counter it was made with."""
        sc = cls(counter)
        sc.go_on_from(snap)
        return sc

    def go_on_from(self, snap: dict[str, Any]) -> None:
        """Go on from ``snapshot()`` (another replay's, or one joined from two: ``replay_join``)."""
        self.state = snap["state"]
        self._in_run = snap["in_run"]
        self._segment_has_real = snap["segment_has_real"]
        self._held_summary = snap["held_summary"]

    def _settle(self, item: tuple[list[Entry], Batch, Pending]) -> None:
        buf, batch, future = item
        self._apply(buf, Counter.finish(batch, future.result()))

    def _apply(self, buf: list[Entry], message_counts: list[MessageCount]) -> None:
        counts = iter(message_counts)
        facts = self.state.facts
        for e in buf:
            if not facts.done:
                facts.see(e)
            if self._held_summary is not None and not isinstance(e, (Message, ContextUpdate)):
                self._release_summary()
            if isinstance(e, Message):
                self._message(e, next(counts))
            elif isinstance(e, ContextUpdate):
                self._update(e)
            elif isinstance(e, CompactionMarker):
                self._compaction(e)
            elif isinstance(e, ApiError):
                self._api_error(e)
            elif isinstance(e, ContextReset):
                self._clear()
            elif isinstance(e, Rewind):
                self._rewind(e)

    # ------------------------------------------------------------------------ entries

    def _message(self, msg: Message, mc: MessageCount) -> None:
        s = self.state
        s.messages_seen += 1
        if s.project is None and isinstance(msg.extra.get("cwd"), str):
            s.project = msg.extra["cwd"]  # Claude Code names it on every line
        if self._held_summary is not None and msg.branch is None:
            if self._held_summary in msg.text:
                self._held_summary = None  # this message is the summary: counted as itself
            else:
                self._release_summary()
        if msg.branch is not None:
            s.side_messages += 1
            if msg.usage is not None and msg.usage.final:
                s.side_requests += 1
            if msg.usage is not None and (msg.usage.prompt_tokens or msg.usage.output_tokens):
                s.other_calls.append(msg.usage)
                s.other_times.append(msg.timestamp)
            return
        if msg.role != "assistant":
            self._in_run = False
            self._append(mc)
            return
        if not self._in_run:
            self._open_request(msg.model)
        if not msg.dropped:
            s.server_tools += sum(
                1 for p in msg.parts if isinstance(p, OpaquePart) and p.type in SERVER_TOOLS
            )
        if msg.usage is not None and not msg.usage.final and msg.usage.prompt_tokens > 0:
            s.other_calls.append(msg.usage)
            s.other_times.append(msg.timestamp)
        # a prompt of 0 tokens was never sent: an aborted response's, or the zeroed usage of a
        # message kept across a compaction (its count described the context before it)
        if msg.usage is not None and msg.usage.final and msg.usage.prompt_tokens > 0:
            req = s.requests[-1]
            req.real, req.real_source = msg.usage.prompt_tokens, "usage"
            req.usage = msg.usage
            req.timestamp = msg.timestamp
            req.server_tools_after = s.server_tools
            req.model = msg.usage.model or msg.model or req.model
            if msg.usage.context_window:
                req.context_window = s.context_window = msg.usage.context_window
            self._segment_has_real = True
            self._in_run = False  # the next assistant message is another response
        if msg.dropped:  # counted 0, as the harness leaves it out: the next response is another request
            self._in_run = False
        self._append(mc)

    def _open_request(self, model: str | None, real: int | None = None, source: str | None = None) -> Request:
        s = self.state
        req = Request(
            turn_start=s.context.ends_with_user_turn(),
            index=len(s.requests),
            estimate=s.context_total,
            messages=len(s.context),
            fixed=s.fixed_total,
            elided=s.by_category["tool_results"] + s.by_category["media"],
            real=real,
            real_source=source,
            model=model or s.model,
            context_window=s.context_window,
            segment=self.state.segment,
            first_in_segment=not self._segment_has_real,
            server_tools=s.server_tools,
            server_tools_after=s.server_tools,
        )
        s.requests.append(req)
        self._in_run = True
        return req

    def _api_error(self, err: ApiError) -> None:
        """A refused request that states its size: a real count for a request never answered."""
        if err.prompt_tokens is None:
            return
        req = self._open_request(None, err.prompt_tokens, "error")
        if err.limit:
            req.context_window = err.limit
        self._segment_has_real = True
        self._in_run = False

    def _append(self, mc: MessageCount) -> None:
        s = self.state
        s.context.append(mc)
        for cat, n in mc.by_category.items():
            s.by_category[cat] = s.by_category.get(cat, 0) + n

    def _update(self, u: ContextUpdate) -> None:
        s = self.state
        harness = harness_tokens(u)
        if harness is not None:
            s.harness = harness
        if u.system is not None or harness is not None:
            s.system = u.system if u.system is not None else s.system
            s.by_category["system"] = self.counter.count_system(s.system) + s.harness
        if u.tools is not None:
            s.tools = u.tools
            s.by_category["tools"] = self.counter.count_tools(u.tools)
        if REQUEST_SHAPE in u.extra:  # (after the first response too: a log resumed by a later version)
            s.facts.logged = True
            searched = u.extra.get(TOOL_SEARCH)
            s.facts.tool_search = searched if isinstance(searched, bool) else s.facts.tool_search
        s.model = u.model or s.model
        s.context_window = u.context_window or s.context_window
        s.session_id = u.session_id or s.session_id
        agent = u.extra.get("agent_id")
        s.agent = agent if isinstance(agent, str) else s.agent
        cwd = u.extra.get("cwd")  # Codex's session_meta, pi's session header
        s.project = cwd if s.project is None and isinstance(cwd, str) and cwd else s.project

    def _compaction(self, m: CompactionMarker) -> None:
        s = self.state
        kept = None
        if m.first_kept_id is not None:
            first = s.context.index(m.first_kept_id)
            kept = s.context.suffix(first) if first is not None else None
        self._in_run = False
        s.compactions.append(
            RecordedCompaction(len(s.requests), m.source, m.tokens_before, m.tokens_after, m.trigger)
        )
        self._clear()
        if m.replacement is not None:
            for mc in self.counter.count_messages(m.replacement):
                self._append(mc)
        elif m.summary and not kept:
            self._held_summary = m.summary  # counted when the next message does not hold it
        elif m.summary:
            self._append_summary(m.summary)
        if kept:
            s.context.extend(kept)
            for cat, n in kept.sums().items():
                s.by_category[cat] += n

    def _rewind(self, r: Rewind) -> None:
        """The messages the conversation went back past leave the context, or it is the context
        the rewind gives whole (``to``); the next assistant message is another request.
        (Server-side tool calls among those left are still counted: the logs that rewind record
        none in the context.)"""
        s = self.state
        self._in_run = False
        if r.to is not None:  # a point the context no longer holds: the context from there, whole
            self._held_summary = None
            self._empty()
            for mc in self.counter.count_messages(list(r.to)):
                self._append(mc)
            return
        for cat, n in s.context.drop(set(r.ids), r.last).items():
            s.by_category[cat] -= n

    def _release_summary(self) -> None:
        """The held summary was not repeated by a message: it heads the context."""
        if self._held_summary is not None:
            summary, self._held_summary = self._held_summary, None
            self._append_summary(summary)

    def _append_summary(self, text: str) -> None:
        self._append(self.counter.count_messages([Message("user", (TextPart(text),))])[0])

    def _clear(self) -> None:
        self._empty()
        self._in_run = False
        self.state.segment += 1
        self._segment_has_real = False

    def _empty(self) -> None:
        """No message in the context (the system prompt and tools stay)."""
        s = self.state
        s.context = ContextCounts()
        s.server_tools = 0
        for cat in CATEGORIES:
            if cat not in ("system", "tools"):
                s.by_category[cat] = 0


def _chars(msg: Message) -> int:
    """Rough size of a message's text, to cut batches (cheap: no joins)."""
    n = 0
    for p in msg.parts:
        if isinstance(p, TextPart):
            n += len(p.text)
        elif isinstance(p, ToolResultPart):
            n += sum(len(c.text) for c in p.content if isinstance(c, TextPart))
    return n


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a log is read (or a kept state unpickled): reading
    makes millions of short-lived dicts and lists (no cycles among them), and each of the
    collector's passes also walks what the replay keeps, 10–15 % of a 200 MB read (a third of
    unpickling a 7 MB state). Back on as it was when done (even on error), with what was made
    meanwhile moved to the oldest generation: its first pass would otherwise walk all of it,
    15 ms after unpickling a 200 MB session's state. (``freeze`` then ``unfreeze`` moves every
    tracked object there in constant time; each stays collectable.)"""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()
