"""What a compaction leaves behind: the compacted transcript and the state file's record.

The compacted transcript is the input's context after the fold: the system prompt, tools and
model of the session, a compaction marker holding the summary (when one was made), then the
kept messages. The state records the watermark, the hashes that tell an appended file from a
rewritten one, the calibration, and a ledger of every pass.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxfold.compaction.statefile import Pass, State, entry_sha256, now
from ctxfold.engine.calibration import Prior
from ctxfold.providers.base import SummaryResult
from ctxfold.tokens.estimate import FileEstimate
from ctxfold.transcript.context import Context
from ctxfold.transcript.model import (
    HARNESS_TOKENS,
    CompactionMarker,
    ContextUpdate,
    Entry,
    Message,
    Transcript,
)


def new_state(
    t: Transcript,
    old: State | None,
    *,
    summary: SummaryResult | None,
    summary_text: str,
    tokens: tuple[int, int],
    est: FileEstimate,
    prior: Prior,
    digest: tuple[str, int],
    strategy: str,
    settings: dict[str, Any] | None = None,
    entries: tuple[int, str] | None = None,
) -> State:
    """The state after this pass: ``tokens`` is (predicted before, predicted after), ``digest``
    the (sha256, size) of the whole input as it was read, ``entries`` (how many, the last one's
    sha256) when ``t`` holds an outline of them only."""
    count, last_sha = entries or (len(t.entries), entry_sha256(t.entries[-1]) if t.entries else "")
    last_real = next((q for q in reversed(est.requests) if q.real is not None), None)
    model = summary.model if summary else None
    before, after = tokens
    full, size = digest
    state = State(
        source_name=Path(t.path or "-").name,
        source_format=t.source_format,
        session_id=t.session_id,
        watermark=count,
        prefix_bytes=size,
        prefix_sha256=full,
        last_entry_sha256=last_sha,
        summary=summary_text,
        tokens_at_summarization=before,
        tokens_after=after,
        last_real=last_real.real if last_real else None,
        last_estimate=last_real.estimate if last_real else None,
        calibration={
            "name": "growth",
            "overhead": prior.overhead,
            "ratio": prior.ratio,
            "source": prior.source,
            **({"first_ratio": prior.first_ratio} if prior.first_ratio is not None else {}),
        },
        strategy=strategy,
        # who wrote the summary held: this pass's summarizer, else an earlier pass's, else nobody
        provider=summary.provider if summary else old.provider if old and summary_text else "none",
        model=model,
        summarizer_usage=dict(summary.usage) if summary else {},
        created_at=old.created_at if old else now(),
        passes=list(old.passes) if old else [],
        settings=dict(settings or {}),
    )
    state.passes.append(Pass(now(), count, before, after, strategy, state.provider, model))
    return state


def compacted_transcript(
    t: Transcript,
    ctx: Context,
    messages: list[Message],
    *,
    summary: SummaryResult | None,
    tokens: tuple[int, int],
    trigger: str,
    model: str | None,
) -> Transcript:
    """The transcript the writer turns into ``NAME.compacted.jsonl``; ``trigger`` is "auto"
    when the decision called for the fold, "manual" when it was forced. A session that has an
    id gets a new one: the compacted session is a session of its own, resumable beside the
    original, which stays untouched and resumable too."""
    session_id = str(uuid.uuid4()) if ctx.session_id or t.session_id else None
    update = ContextUpdate(
        system=ctx.system,
        tools=ctx.tools,
        model=model,
        context_window=ctx.context_window,
        session_id=session_id,
        extra={HARNESS_TOKENS: ctx.harness} if ctx.harness else {},
    )
    entries: list[Entry] = [update]
    if summary is not None:
        before, after = tokens
        entries.append(
            CompactionMarker(
                source="ctxfold",
                summary=summary.text,
                tokens_before=before,
                tokens_after=after,
                trigger=trigger,
            )
        )
    # a kept message's usage counted the request it answered, in the context before this pass:
    # left in, it would read as the size of the compacted context (and teach the profile so)
    entries.extend(replace(m, usage=None) if m.usage is not None else m for m in messages)
    return Transcript(
        source_format=t.source_format,
        entries=tuple(entries),
        path=t.path,
        session_id=session_id,
        models=t.models,
        context_window=t.context_window,
        system=t.system,
        tools=t.tools,
        extra={"original": t},
    )
