"""What ``compact`` keeps of a session as it reads it once, so that its memory stays flat.

The old read kept every entry (a 200 MB log held ~450 MB). What the later steps read is much
less: the context the pass folds (:class:`~ctxfold.transcript.context.Building`, whose messages
stream through a :class:`~ctxfold.strategies.streamed.StreamedContext` once they pass
``threshold`` characters), the number of entries and a hash of the last, and for the writers an
outline of the session: every context update, and of the messages only those a writer looks
up (the first and last that name a working directory, a model, a provider...), in their order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ctxfold.compaction.statefile import entry_sha256
from ctxfold.formats.origin import SYNTHETIC_MODELS
from ctxfold.strategies.masked import MaskedCount, Masking
from ctxfold.strategies.streamed import KeepFrom, StreamedContext, weight
from ctxfold.tokens.counting import Counter
from ctxfold.transcript.context import Building, Context
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    Rewind,
    ToolDef,
    Transcript,
)

SHARED = 16  # distinct values of each part of the updates held for sharing
STREAM_CHARS = 2_000_000  # a context past about this many characters streams (its messages are not kept)
# ... for a mask pass alone: a masked context past this (about a million tokens) is over any
# usual window, so it is counted and let go; one that fits after all is read again
MASK_COUNT_CHARS = 4_000_000


def _cwd_main(m: Message) -> bool:
    return m.branch is None and isinstance(m.extra.get("cwd"), str)


def _cwd(m: Message) -> bool:
    cwd = m.extra.get("cwd")
    return isinstance(cwd, str) and bool(cwd)


def _answer_model(m: Message) -> bool:
    return m.role == "assistant" and bool(m.model) and m.model not in SYNTHETIC_MODELS


def _provider(m: Message) -> bool:
    inner = m.extra.get("message")
    return m.role == "assistant" and isinstance(inner, dict) and isinstance(inner.get("provider"), str)


def _named_model(m: Message) -> bool:
    return m.branch is None and bool((m.usage.model if m.usage is not None else None) or m.model)


# what the writers look up in the transcript a compacted one came from (formats/origin.py,
# the claude-code, codex, gemini-cli and pi writers, api_writing.model_in_force)
LOOKUPS: tuple[Callable[[Message], bool], ...] = (_cwd_main, _cwd, _answer_model, _provider, _named_model)


@dataclass(frozen=True)
class Outline:
    """The session as ``compact`` kept it: the writers' outline, the entry count and the last
    entry's hash, and the current context (its messages a list, or streamed); for a state
    file's pass, the context from each entry it may go on from, and the hash of the entry
    before each."""

    transcript: Transcript  # entries: the outline only
    entries: int
    last_sha256: str
    contexts: dict[int, Context]  # first entry → the context built from it (0: the current one)
    shas: dict[int, str]  # entry index → its sha256, for the entries before those starts

    @property
    def context(self) -> Context:
        """The current context, built from the first entry."""
        return self.contexts[0]


class Outlining:
    """Fed every entry in order; ``stream`` lets a long context stream instead of being kept
    (and ``helper`` have its readings made in a helper process; ``keep``: a sliding window's
    tail that fits is kept whole, :class:`~ctxfold.strategies.streamed.TailFits`); ``mask`` masks all but that
    many of the newest tool results as they come (:mod:`ctxfold.strategies.masked`), and with
    ``stream`` a long masked context is counted instead of kept."""

    def __init__(
        self,
        stream: bool,
        threshold: int = STREAM_CHARS,
        helper: bool = False,
        starts: tuple[int, ...] = (),
        mask: int | None = None,
        cuts: bool = False,
        keep: KeepFrom | None = None,
    ) -> None:
        self.stream, self.threshold = stream, threshold
        self.cuts = cuts  # a streamed context keeps what a sliding window's passes read
        self.keep = keep  # ... and a sliding window's tail that fits, in the context it is in
        self.helper = helper  # a streamed context's readings go to a helper process
        self.building = Building()
        # masking needs the context alone (a state file's pass builds others from its watermark)
        self.masking = Masking(mask) if mask is not None and not starts else None
        # a state file's pass may go on from one of ``starts`` (its watermark, or the entry
        # before it): the context from each, built beside the whole one (the same messages)
        self.from_start = {s: Building(s) for s in starts if s > 0}
        self.before = {s - 1 for s in self.from_start}
        self.shas: dict[int, str] = {}
        self.count = 0
        self.last: Entry | None = None
        self.kept: dict[int, Entry] = {}  # entry index → entry, in order
        self.refs: dict[int, int] = {}  # how many lookups hold a kept message
        self.first: dict[int, int] = {}  # lookup → index of its first message
        self.newest: dict[int, int] = {}  # lookup → index of its last message
        self.session_id: str | None = None
        self.window: int | None = None
        self.system: tuple[str, ...] = ()
        self.tools: tuple[ToolDef, ...] = ()
        self.models: dict[str, None] = {}
        self._last: dict[object, list[Any]] = {}  # the last values of each part of the updates
        self._list: list[Message] | None = None
        self._chars = 0

    def feed(self, entries: Iterator[Entry]) -> Iterator[Entry]:
        for e in entries:
            self.add(e)
            yield e

    def add(self, e: Entry) -> None:
        i = self.count
        self.count += 1
        self.last = e
        if isinstance(e, ContextUpdate):
            self.kept[i] = self._share(e)
            self.session_id = e.session_id or self.session_id  # as loader.materialize
            self.window = e.context_window or self.window
            self.system = e.system if e.system is not None else self.system
            self.tools = e.tools if e.tools is not None else self.tools
            if e.model:
                self.models[e.model] = None
        elif isinstance(e, Message):
            if e.model:
                self.models[e.model] = None
            self._outline(i, e)
        if self.masking is None:
            self.building.add(e)
        else:
            for ready in self.masking.push(e):
                self._build(ready)
        for building in self.from_start.values():
            building.add(e)
        if i in self.before:
            self.shas[i] = entry_sha256(e)
        if self.stream:
            self._bound()

    def counted(self, counter: Counter) -> None:
        """The session's counter, once the estimate has chosen it: masking may start."""
        if self.masking is not None:
            self.masking.counter = counter

    def _build(self, e: Entry) -> None:
        self.building.add(e)
        if isinstance(e, (CompactionMarker, ContextReset, Rewind)) and self.masking is not None:
            # (what a Claude Code compaction kept waits behind its summary line: still live)
            self.masking.retain([*self.building.ctx.messages, *(self.building.behind or ())])

    def _share(self, e: ContextUpdate) -> ContextUpdate:
        """``e`` holding the objects of the last update with equal parts: a harness repeats its
        instructions and tools in every turn's update (Codex), thousands of copies otherwise."""
        extra = e.extra
        if type(extra) is dict:
            extra = {k: self._same(("extra", k), v) for k, v in extra.items()}
        system, tools = self._same("system", e.system), self._same("tools", e.tools)
        if system is e.system and tools is e.tools and all(extra[k] is v for k, v in e.extra.items()):
            return e
        return replace(e, system=system, tools=tools, extra=extra)

    def _same(self, key: object, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        seen = self._last.setdefault(key, [])
        for old in seen:
            if old is value or old == value:
                return old
        seen.insert(0, value)
        del seen[SHARED:]
        return value

    def _outline(self, i: int, m: Message) -> None:
        for k, wanted in enumerate(LOOKUPS):
            if not wanted(m):
                continue
            if k not in self.first:
                self.first[k] = i
                self._hold(i, m)
            old = self.newest.get(k)
            self.newest[k] = i
            self._hold(i, m)
            if old is not None:
                self._release(old)

    def _hold(self, i: int, m: Message) -> None:
        self.kept[i] = m
        self.refs[i] = self.refs.get(i, 0) + 1

    def _release(self, i: int) -> None:
        self.refs[i] -= 1
        if not self.refs[i]:
            del self.refs[i], self.kept[i]

    def _bound(self) -> None:
        """Once the context's kept messages pass the threshold, they stream from then on (a
        masked context is counted from then on)."""
        ctx = self.building.ctx
        messages = ctx.messages
        if not isinstance(messages, list):
            return
        if messages is not self._list or len(messages) < self._len:
            self._list, self._chars = messages, sum(weight(m) for m in messages)
        elif len(messages) > self._len:
            self._chars += sum(weight(m) for m in messages[self._len :])
        self._len = len(messages)
        masking = self.masking
        if self._chars > self.threshold and len(messages) >= 2:
            if masking is None:
                keep = self.keep if self.keep is not None and self.keep.start == ctx.start else None
                stand_in: StreamedContext | MaskedCount = StreamedContext(
                    messages, helper=self.helper, cuts=self.cuts, keep=keep
                )
            elif masking.counter is not None:  # (masked messages come only once it is known)
                stand_in = MaskedCount(messages, masking)
            else:
                return
            # stands in for the list from here on: the walker only appends to it and reads it
            ctx.messages = stand_in  # type: ignore[assignment]
            self._list, self._chars = None, 0

    _len = 0

    def result(self, source_format: str, path: str | None) -> Outline:
        for b in (self.building, *self.from_start.values()):
            b.finish()  # (what a compaction kept, its summary line not read yet)
        if self.masking is not None:
            for e in self.masking.flush():
                self._build(e)
            # a list, or a MaskedCount standing in for one (as above)
            self.building.ctx.messages = self.masking.context(self.building.ctx.messages)  # type: ignore[assignment]
        t = Transcript(
            source_format=source_format,
            entries=tuple(self.kept.values()),
            path=path,
            session_id=self.session_id,
            models=tuple(self.models),
            context_window=self.window,
            system=self.system,
            tools=self.tools,
        )
        last = entry_sha256(self.last) if self.last is not None else ""
        contexts = {0: self.building.ctx, **{s: b.ctx for s, b in self.from_start.items()}}
        return Outline(t, self.count, last, contexts, self.shas)
