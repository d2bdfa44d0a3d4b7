"""The offline digest's readings of a conversation, taken one message at a time.

``compact`` of a long session cannot hold every message of the context it folds (a 200 MB log
is ~2 GB of Python objects). What the digest reads off the folded messages is small: the facts
(:class:`~ctxfold.providers.facts.Gathering`), where things stand (:class:`Assessing`, the
streamed form of :func:`~ctxfold.providers.standing.assess`) and the latest todo list
(:class:`TodoTracking`, of :func:`~ctxfold.providers.todos.extract_todos`). Each gives what its
whole-list function gives on the same messages (``tests/test_streamed_digest.py`` holds them to
it); what they keep grows with the tool calls and requests, not with the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxfold.providers.background import Background
from ctxfold.providers.calls import inner_calls, tool_key
from ctxfold.providers.facts import Facts, Gathering
from ctxfold.providers.harness import is_synthetic, user_words
from ctxfold.providers.standing import (
    DONE,
    FINISH_TOOLS,
    IN_PROGRESS,
    STOPPED,
    STOPPED_REASON,
    SUBSTANTIAL,
    WAITING,
    Standing,
    _described,
    _question,
    _unfinished,
    aborted,
    answered_question,
    failed,
    progress_note,
    stopped_short,
    stops,
)
from ctxfold.providers.todos import TODO_TOOLS, Todo, _reminder, _Tasks, apply_call
from ctxfold.transcript.model import Message, ToolCallPart, ToolResultPart


class Unknowable(Exception):
    """A streamed reading needs a message that was not kept: read the conversation whole."""


class Assessing:
    """:func:`~ctxfold.providers.standing.assess`, fed in order: the newest request and reply,
    the last deliverable (a candidate is settled by the first request or tool-calling answer
    after it, as ``_turn_final`` looks ahead), the calls still unanswered, and the speakers
    since the newest request (where the exchange under way starts)."""

    def __init__(self) -> None:
        self.request: tuple[int, str] | None = None
        self.reply: tuple[int, str] | None = None
        self.deliverable: tuple[int, str] | None = None
        self.open: tuple[int, str] | None = None  # a candidate deliverable not settled yet
        self.answered: set[str] = set()
        # the calls no result answered yet, in their order, and where each id's are: a result
        # removes its calls by id (a long log leaves calls unanswered: no scan of them all)
        self.unanswered: dict[int, tuple[int, ToolCallPart]] = {}
        self.by_id: dict[str, list[int]] = {}
        self.calls_seen = 0
        self.last_act = -1
        self.act_calls = False  # the message at last_act has tool calls
        self.finished = False  # ... and one of them is a finishing tool
        self.last_results = -1  # the last main message holding tool results
        self.speakers: list[int] = []  # assistant messages with words, after the newest request
        self.background = Background()
        self.reply_note = False  # the reply is a progress note (progress_note)
        self.stopped = False  # the conversation so far ends with the user stopping the assistant

    def add(self, i: int, m: Message, words: str | None = None) -> None:
        """Read message ``i``; ``words``: its :func:`user_words`, when the caller has them."""
        words = user_words(m) if words is None and m.role == "user" else words
        if self.open is not None:  # what _turn_final reads after the candidate
            if words:
                self.deliverable, self.open = self.open, None
            elif m.role == "assistant" and m.tool_calls and not is_synthetic(m):
                self.open = None
        text = m.text.strip() if m.role == "assistant" else ""
        if text and not is_synthetic(m):
            self.speakers.append(i)
        if m.branch is not None:
            return
        self.background.add(m)
        self.stopped = stops(m, self.stopped)
        if words:
            self.request = (i, words)
            self.speakers = [j for j in self.speakers if j > i]
        if m.role == "assistant" and not is_synthetic(m):
            self._own(i, m, text)
        if m.tool_results:
            self.last_results = i
            ids = {r.call_id for r in m.tool_results}
            self.answered |= ids
            for call_id in ids:
                for k in self.by_id.pop(call_id, ()):
                    del self.unanswered[k]

    def _own(self, i: int, m: Message, text: str) -> None:
        calls = m.tool_calls
        if text:
            self.reply, self.reply_note = (i, text), progress_note(m)
        if calls or text:
            self.last_act, self.act_calls = i, bool(calls)
            self.finished = any(tool_key(c.name) in FINISH_TOOLS for c in calls)
        for c in () if m.dropped else calls:  # (a response stopped as it streamed ran none)
            if c.id not in self.answered:
                self.unanswered[self.calls_seen] = (i, c)
                self.by_id.setdefault(c.id, []).append(self.calls_seen)
                self.calls_seen += 1
        ends_turn = not calls or any(tool_key(c.name) in FINISH_TOOLS for c in calls)
        ends_turn = ends_turn and not progress_note(m) and not aborted(m)
        if len(text) >= SUBSTANTIAL and ends_turn and not _unfinished(m.text):
            self.open = (i, text)

    def result(self) -> Standing:
        deliverable = self.open or self.deliverable  # the end of the conversation ends its turn
        pending = [_described(c) for _, c in self.unanswered.values()]
        request, last_act = self.request, self.last_act
        running = [t.describe() for t in self.background.result()]
        s = Standing(
            DONE,
            "",
            request=request,
            reply=self.reply,
            deliverable=deliverable,
            pending=pending,
            running=running,
        )
        if self.stopped:
            s.state, s.reason = STOPPED, STOPPED_REASON
            return s
        if request is not None and request[0] > last_act:
            s.state, s.reason = IN_PROGRESS, "the user's newest request has no answer yet"
            s.answers = answered_question(request[1], self.reply)
            return s
        start = max(request[0] + 1 if request else 0, 0)
        if self.finished:
            s.reason = "the assistant called its finishing tool"
            return s
        calls_open = bool(pending) and any(j >= start for j, _ in self.unanswered.values())
        if calls_open or self.last_results > last_act or (last_act >= 0 and self.act_calls):
            s.state = IN_PROGRESS
            s.reason = (
                "a tool call has no result yet" if calls_open else "the assistant was acting on tool results"
            )
            s.tail_start = self._exchange_start(start, last_act)
            return s
        if self.reply is None:
            s.state, s.reason = IN_PROGRESS, "the assistant has not answered yet"
            return s
        question = _question(self.reply[1])
        if question:
            s.state, s.reason, s.question = WAITING, "the assistant's last message asks the user", question
            return s
        short = stopped_short(self.reply[1], bool(running), self.reply_note)
        if short:
            s.state, s.reason = IN_PROGRESS, short
            s.tail_start = self._exchange_start(start, self.reply[0])
            return s
        s.reason = "the assistant's last message delivers and asks nothing"
        return s

    def _exchange_start(self, floor: int, last: int) -> int:
        return max((j for j in self.speakers if floor <= j <= last), default=floor)


class Seen:
    """A set of strings in fixed memory (a Bloom filter of 2**23 bits, 1 MiB): "no" is certain,
    "maybe" is wrong about once in 10**5 after 50,000 strings."""

    BITS = 1 << 23

    def __init__(self) -> None:
        self.bits = bytearray(self.BITS // 8)

    def _spots(self, text: str) -> tuple[int, int, int]:
        h = hash(text) & 0xFFFFFFFFFFFFFFFF
        mask = self.BITS - 1
        return h & mask, (h >> 21) & mask, (h >> 42 | h << 22) & mask

    def add(self, text: str) -> None:
        for k in self._spots(text):
            self.bits[k >> 3] |= 1 << (k & 7)

    def __contains__(self, text: str) -> bool:
        return all(self.bits[k >> 3] & (1 << (k & 7)) for k in self._spots(text))


class TodoTracking:
    """:func:`~ctxfold.providers.todos.extract_todos`, fed in order. A todo call reads the last
    result with its id anywhere in the conversation, so the calls wait for the end; results are
    kept only for ids a todo call used. A todo call whose id may have been answered before it (a
    result ahead of its call, or an id used again) may need a result not kept: unless a later
    result with its id comes, :class:`Unknowable`."""

    def __init__(self) -> None:
        self.events: list[dict[str, Todo] | ToolCallPart] = []
        self.ids: set[str] = set()
        self.results: dict[str, ToolResultPart] = {}
        self.passed = Seen()  # the ids of the results not kept

    def add(self, m: Message, inner: list[list[ToolCallPart]] | None = None) -> None:
        """Read ``m``; ``inner``: the inner calls of each of its tool calls, when read already."""
        if m.branch is not None:
            return
        for r in m.tool_results:
            if r.call_id in self.ids:
                self.results[r.call_id] = r
            else:
                self.passed.add(r.call_id)
        reminded = _reminder(m)
        if reminded:
            self.events.append(reminded)
        if inner is None:
            inner = [inner_calls(outer) for outer in m.tool_calls]
        for call in (c for calls in inner for c in calls):
            key = tool_key(call.name)
            if key in TODO_TOOLS:
                self.events.append(call)
                if call.id not in self.ids and call.id in self.passed:
                    self.results[call.id] = _UNKNOWN  # unless a later result with its id comes
                self.ids.add(call.id)

    def result(self) -> list[Todo] | None:
        latest: list[Todo] | None = None
        tasks = _Tasks()
        for event in self.events:
            if isinstance(event, dict):
                tasks.items = event
                latest = list(event.values())
                continue
            call = event
            result = self.results.get(call.id)
            if result is _UNKNOWN:
                raise Unknowable(f"the result of todo call {call.id} came before the call")
            latest = apply_call(call, result, tasks, latest)
        return latest


_UNKNOWN = ToolResultPart("", ())


@dataclass(frozen=True)
class Digested:
    """What the offline digest reads of the folded conversation, gathered as it streamed by."""

    facts: Facts
    standing: Standing
    todos: list[Todo] | None
    recorded: str | None  # a recording tool's summary at the head of the conversation


class Digesting:
    """The three readings at once, for messages numbered from 0 as the digest numbers them."""

    def __init__(self) -> None:
        self.gathering = Gathering()
        self.assessing = Assessing()
        self.todos = TodoTracking()
        self.count = 0

    def add(self, m: Message, words: str | None = None) -> None:
        """Read the next message; ``words``: its request text (:func:`user_words`), when the
        caller has it (each reading needs it; it is found once)."""
        i = self.count
        self.count += 1
        if m.branch is not None:
            self.assessing.add(i, m)  # the others read the main conversation only
            return
        if failed(m):
            return  # as :func:`assess` reads it: sent no more, none of it ran
        words = user_words(m) if words is None else words
        inner = [inner_calls(outer) for outer in m.tool_calls]
        if not m.dropped:  # (a response the user stopped as it streamed: its calls never ran)
            self.gathering.read(i, m, words, inner)
            self.todos.add(m, inner)
        self.assessing.add(i, m, words)

    def result(self, recorded: str | None) -> Digested:
        return Digested(self.gathering.result(), self.assessing.result(), self.todos.result(), recorded)
