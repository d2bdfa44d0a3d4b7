"""The context a transcript ends with: what the next request would send.

Walks the entries the way the recording tool rebuilt its prompt: side branches are left out, a
recorded compaction replaces what came before it (Codex's replacement history, pi's summary plus
the entries it kept, Claude Code's summary line that follows the boundary; a summary the next
message holds, as ctxfold writes its own, only once), a reset starts over, and a rewind leaves
out the messages it names. The token counter (``tokens/session.py``) follows the same rules on
counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ctxfold.transcript.model import (
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    Rewind,
    TextPart,
    ToolDef,
    harness_tokens,
)


@dataclass
class Context:
    messages: list[Message] = field(default_factory=list)
    system: tuple[str, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    harness: int = 0  # tokens of unlogged text the harness sends with every request
    model: str | None = None
    context_window: int | None = None
    session_id: str | None = None
    start: int = 0  # index of the first entry the context is built from (after the last compaction or reset)


def current_context(entries: Iterable[Entry], start: int = 0) -> Context:
    building = Building(start)
    for e in entries:
        building.add(e)
    building.finish()
    return building.ctx


class Building:
    """:func:`current_context` one entry at a time (``compact`` streams a long file through it)."""

    def __init__(self, start: int = 0) -> None:
        self.ctx = Context(start=start)
        self.start = start  # entries before it update the context's settings only
        self.held: str | None = None  # a compaction's summary, until the next message says if it holds it
        self.behind: list[Message] | None = None  # what a compaction kept, until its summary line comes
        self.i = 0

    def add(self, e: Entry) -> None:
        ctx, i = self.ctx, self.i
        self.i += 1
        if isinstance(e, ContextUpdate):
            ctx.system = e.system if e.system is not None else ctx.system
            ctx.tools = e.tools if e.tools is not None else ctx.tools
            harness = harness_tokens(e)
            ctx.harness = harness if harness is not None else ctx.harness
            ctx.model = e.model or ctx.model
            ctx.context_window = e.context_window or ctx.context_window
            ctx.session_id = e.session_id or ctx.session_id
        if i < self.start:
            return
        held = self.held
        if isinstance(e, Message):
            if e.branch is None:
                if held is not None and held in e.text and ctx.messages:
                    del ctx.messages[0]  # ctxfold's own: the summary message is what was sent
                self.held = None
                summary = self.behind is not None and e.extra.get("isCompactSummary") is True
                if summary:  # Claude Code's summary line: what its compaction kept follows it
                    ctx.messages.append(e)
                self.finish()
                if not summary:
                    ctx.messages.append(e)
        elif isinstance(e, CompactionMarker):
            self.finish()
            ctx.messages = after_compaction(ctx.messages, e)
            ctx.start = i + 1
            only_summary = e.replacement is None and len(ctx.messages) == 1  # nothing kept after it
            self.held = e.summary if e.summary and only_summary else None  # as tokens/session.py holds it
            if e.summary is None and e.replacement is None and ctx.messages:  # its summary is a message
                self.behind, ctx.messages = list(ctx.messages), []
        elif isinstance(e, ContextReset):
            ctx.messages = []
            ctx.start = i + 1
            self.held = self.behind = None
        elif isinstance(e, Rewind):
            self.finish()
            ctx.messages = rewound(ctx.messages, set(e.ids), e.last, e.to)
            self.held = None
        elif not isinstance(e, ContextUpdate):
            self.held = None  # an API error between: the summary stays at the head, as the counter has it

    def finish(self) -> None:
        """Put back what a compaction kept, held until its summary line (Claude Code sends that
        line first): at the next message or change, and before the context is read."""
        behind, self.behind = self.behind, None
        for m in behind or ():
            self.ctx.messages.append(m)


def live(entries: Sequence[Entry]) -> Sequence[Entry]:
    """The entries without the rewinds and the messages each leaves out: the conversation a
    harness that resumes the log rebuilds (what the writers write)."""
    if not any(isinstance(e, Rewind) for e in entries):
        return entries
    gone: set[str] = set()
    skip = 0  # main-branch messages still to leave out, back to the last compaction or reset
    out: list[Entry] = []
    whole = False  # a rewind that gave the context whole comes later: what it replaced is gone
    for e in _stood_in(entries):
        if isinstance(e, Rewind):
            gone.update(e.ids)
            skip += e.last
            whole = whole or e.to is not None
            continue
        if isinstance(e, Message) and e.branch is None and (whole or skip or e.id in gone):
            if e.id not in gone and skip:
                skip -= 1
            continue
        if isinstance(e, (CompactionMarker, ContextReset)):
            skip = 0
            if whole:
                continue
        out.append(e)
    out.reverse()
    return out


def _stood_in(entries: Sequence[Entry]) -> Iterator[Entry]:
    """The entries last first, each rewind that gives the context whole after its messages
    (those stand where it is)."""
    for e in reversed(entries):
        if isinstance(e, Rewind) and e.to is not None:
            yield from reversed(e.to)
        yield e


def rewound(
    messages: list[Message], ids: set[str], last: int = 0, to: tuple[Message, ...] | None = None
) -> list[Message]:
    """The messages but those a rewind names and its ``last`` ones, or ``to`` when it gives the
    context whole; a streamed context (``compact`` of a long one) drops them itself, or asks for
    the session to be read whole."""
    if hasattr(messages, "drop"):
        messages.drop(ids)  # (a streamed context the digest has read asks for the whole read)
        return messages if to is None else list(to)
    if to is not None:
        return list(to)
    kept = messages[: max(0, len(messages) - last)]
    return [m for m in kept if m.id not in ids] if ids else kept


def after_compaction(messages: list[Message], m: CompactionMarker) -> list[Message]:
    if m.replacement is not None:
        return list(m.replacement)
    kept: list[Message] = []
    if m.first_kept_id is not None and hasattr(messages, "kept_from"):  # a streamed context
        kept = messages.kept_from(m.first_kept_id)
    elif m.first_kept_id is not None:
        ids = [x.id for x in messages]
        if m.first_kept_id in ids:
            kept = messages[ids.index(m.first_kept_id) :]
    return summary_head(m) + kept


def summary_head(m: CompactionMarker) -> list[Message]:
    """A compaction's summary as the context holds it: a user message, first."""
    return (
        [Message("user", (TextPart(m.summary),), extra={"ctxfold": "recorded-summary"})] if m.summary else []
    )
