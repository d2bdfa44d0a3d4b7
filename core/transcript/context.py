"""The context a transcript ends with: what the next request would send.

Walks the entries the way the recording tool rebuilt its prompt: side branches are left out, a
recorded compaction replaces what came before it (Codex's replacement history, pi's summary plus
the entries it kept, Claude Code's summary line that follows the boundary; a summary the next
message holds, as ctxfold writes its own, only once), and a reset starts over. The token counter (``tokens/session.py``) follows the same rules on counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ctxfold.transcript.model import (
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
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
    ctx = Context(start=start)
    held: str | None = None  # a compaction's summary, until the next message says if it holds it
    for i, e in enumerate(entries):
        if isinstance(e, ContextUpdate):
            ctx.system = e.system if e.system is not None else ctx.system
            ctx.tools = e.tools if e.tools is not None else ctx.tools
            harness = harness_tokens(e)
            ctx.harness = harness if harness is not None else ctx.harness
            ctx.model = e.model or ctx.model
            ctx.context_window = e.context_window or ctx.context_window
            ctx.session_id = e.session_id or ctx.session_id
        if i < start:
            continue
        if isinstance(e, Message):
            if e.branch is None:
                if held is not None and held in e.text and ctx.messages:
                    del ctx.messages[0]  # ctxfold's own: the summary message is what was sent
                held = None
                ctx.messages.append(e)
        elif isinstance(e, CompactionMarker):
            ctx.messages = after_compaction(ctx.messages, e)
            ctx.start = i + 1
            only_summary = e.replacement is None and len(ctx.messages) == 1  # nothing kept after it
            held = e.summary if e.summary and only_summary else None  # as tokens/session.py holds it
        elif isinstance(e, ContextReset):
            ctx.messages = []
            ctx.start = i + 1
            held = None
        elif not isinstance(e, ContextUpdate):
            held = None  # an API error between: the summary stays at the head, as the counter has it
    return ctx


def after_compaction(messages: list[Message], m: CompactionMarker) -> list[Message]:
    if m.replacement is not None:
        return list(m.replacement)
    kept: list[Message] = []
    if m.first_kept_id is not None:
        ids = [x.id for x in messages]
        if m.first_kept_id in ids:
            kept = messages[ids.index(m.first_kept_id) :]
    head = (
        [Message("user", (TextPart(m.summary),), extra={"ctxfold": "recorded-summary"})] if m.summary else []
    )
    return head + kept
