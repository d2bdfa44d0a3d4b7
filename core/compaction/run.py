"""``compact``: fold a session file into a compacted transcript, a summary and a state file.

1. Read the transcript (the input is never written to).
2. With a state file from an earlier run, check that the summarized prefix is unchanged and
   continue from the watermark: ``[summary] + what came after``.
3. Decide with the engine: the context now, predicted with the calibrator fed by the log's own
   real counts. Not due → nothing is written (``force`` compacts anyway).
4. Apply the strategy; refuse a pass that does not shrink the request by 10 %.
5. Write ``NAME.compacted.jsonl`` (the input's own format), ``NAME.summary.md`` and
   ``NAME.ctxfold.json``, each atomically, only after everything succeeded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ctxfold.compaction.outputs import Outputs, ensure_writable, outputs_for, write_outputs
from ctxfold.compaction.statefile import Pass, State, entry_sha256, file_hashes, load_state, now
from ctxfold.config import Config
from ctxfold.engine.budget import fit_budget
from ctxfold.engine.calibration import DEFAULT_CALIBRATOR, Prior, make_calibrator
from ctxfold.engine.now import calibrated, learn_from, prior_for
from ctxfold.engine.policy import Policy, make_policy
from ctxfold.engine.profile import Profiles
from ctxfold.errors import ChangedPrefixError, NoShrinkError, UsageError, WindowTooSmallError
from ctxfold.formats.loader import materialize, open_transcript
from ctxfold.providers.base import Summarizer, SummaryRequest, SummaryResult
from ctxfold.strategies.base import MIN_SHRINK, StrategyInput, get_strategy
from ctxfold.strategies.summary import UNLIMITED_WINDOW, summary_message
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.estimate import FileEstimate, estimate_entries
from ctxfold.tokens.parallel import workers_for
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.context import Context, current_context
from ctxfold.transcript.model import (
    HARNESS_TOKENS,
    CompactionMarker,
    ContextUpdate,
    Entry,
    Message,
    Transcript,
)
from ctxfold.transcript.repair import repair_pairs


class _WouldSummarize(Exception):
    """A dry run's pass reached the summarizer, which a dry run does not call."""


@dataclass
class CompactResult:
    status: str  # "compacted" | "not-due" | "up-to-date" | "dry-run"
    path: str
    format: str
    outputs: Outputs
    policy: Policy
    tokens_before: int  # predicted prompt tokens of the context now
    estimate_before: int
    tokens_after: int | None = None
    estimate_after: int | None = None
    messages_before: int = 0
    messages_after: int | None = None
    strategy: str = "summary"
    summary: SummaryResult | None = None
    incremental: bool = False
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # bad lines passed over (--skip-invalid)


@dataclass(frozen=True)
class CompactOptions:
    strategy: str = "summary"
    instructions: str | None = None
    model: str | None = None
    window: int | None = None
    buffer: str | None = None
    max_tokens: int | None = None
    fmt: str | None = None
    skip_invalid: bool = False
    out_dir: str | None = None
    output: str | None = None
    dry_run: bool = False
    force: bool = False
    keep_observations: int = 10
    calibration: str = DEFAULT_CALIBRATOR


def compact_file(
    path: str,
    summarizer: Summarizer,
    *,
    summarizer_window: int | None,
    options: CompactOptions | None = None,
    config: Config | None = None,
    profiles: Profiles | None = None,
) -> CompactResult:
    """Compact one file; ``profiles`` (when given) supply the prior and learn the session."""
    opts = options or CompactOptions()
    strategy = get_strategy(opts.strategy)
    if path == "-" and not (opts.output or opts.dry_run):
        raise UsageError(
            "compacting stdin needs -o/--output (there is no file name to name the outputs after)"
        )
    if opts.output and opts.out_dir:
        raise UsageError("give -o/--output or --out-dir, not both (-o names the outputs' folder too)")
    # one pass: the file is parsed once, kept in memory for writing, and estimated as it streams
    opened = open_transcript(path, fmt=opts.fmt, skip_invalid=opts.skip_invalid)
    kept: list[Entry] = []
    size = Path(path).stat().st_size if path != "-" else 0
    est = estimate_entries(
        _keeping(opened.entries, kept),
        opened.format,
        opened.path,
        model=opts.model,
        window=opts.window,
        config=config,
        workers=workers_for(size),
    )
    transcript = materialize(kept, opened.format, opened.path)
    outs = outputs_for(path, out_dir=opts.out_dir, output=opts.output)
    # stdin leaves nothing to check a state file against: its outputs are new ones (--force)
    state = load_state(outs.state) if path != "-" else None
    policy = make_policy(est.model.window, max_tokens=opts.max_tokens, buffer=opts.buffer)
    counter = Counter(get_tokenizer(est.model.tokenizer), est.model.provider, memo=True)

    if state is not None and path != "-":
        state, start, digest = _resume_point(transcript, state, outs.state, opts.force)
    else:
        start, digest = 0, None
    ctx = current_context(transcript.entries, start)
    messages = list(ctx.messages)
    incremental = state is not None and start > 0 and ctx.start == start
    if incremental and state is not None:
        messages = [summary_message(state.summary), *messages]
    fixed = (
        counter.count_system(ctx.system)
        + ctx.harness
        + counter.count_tools(ctx.tools)
        + counter.framing.per_request
    )

    def estimate_of(msgs: Sequence[Message]) -> int:
        return fixed + sum(c.total for c in counter.count_messages(list(msgs)))

    # the estimate already counted exactly this context unless a state file's summary heads it
    before_est = estimate_of(messages) if incremental else est.context_tokens
    prior = prior_for(est, profiles)
    if profiles is not None and not opts.dry_run:  # a dry run writes nothing, the profile included
        learn_from(profiles, est)  # like estimate and report: every session read teaches the profile
        profiles.save()
    if incremental and state is not None:
        cal = make_calibrator(opts.calibration, _state_prior(state, prior), est.model.tokenizer)
    else:
        cal = calibrated(est, prior, opts.calibration)
    before = cal.predict(before_est).tokens
    result = CompactResult(
        "not-due",
        path,
        transcript.source_format,
        outs,
        policy,
        before,
        before_est,
        messages_before=len(messages),
        strategy=strategy.name,
        incremental=incremental,
        warnings=list(est.model.warnings),
        skipped=[str(e) for e in opened.skipped],
    )
    if incremental and len(messages) == 1:
        result.status = "up-to-date"  # nothing arrived since the summary: a second run is a no-op
        return result
    if not policy.due(before) and not opts.force:
        return result
    if not opts.dry_run:
        ensure_writable(outs, force=opts.force or state is not None)  # before any summarizer is paid for
    cal.reset()  # what the log taught becomes the prior; the compacted request starts afresh

    def predict(msgs: Sequence[Message]) -> int:
        return cal.predict(estimate_of(msgs)).tokens

    def stop_before_summarizing(request: SummaryRequest) -> SummaryResult:
        raise _WouldSummarize

    try:
        out = strategy.apply(
            StrategyInput(
                messages=messages,
                counter=counter,
                policy=policy,
                predict=predict,
                # a dry run calls nothing, but a pass that needs no summary (a sliding window,
                # masking) is run, so that it shows the result, or the refusal, of the real one
                summarizer=stop_before_summarizing if opts.dry_run else summarizer,
                summarizer_window=summarizer_window or UNLIMITED_WINDOW,
                budget_tokens=fit_budget(cal, policy, fixed, before_est - fixed),
                instructions=opts.instructions,
                keep_observations=opts.keep_observations,
            )
        )
    except _WouldSummarize:
        result.status = "dry-run"
        return result
    final, repairs = repair_pairs(out.messages)
    if final == list(messages):  # a count that disagrees with the content must not pass for a shrink
        raise NoShrinkError(
            f"{path}: refused: the {strategy.name} pass changed nothing ({'; '.join(out.notes) or 'no note'}); "
            "try --strategy summary (nothing written)"
        )
    after_est = estimate_of(final)
    after = predict(final)
    if policy.due(after):
        raise WindowTooSmallError(
            f"{path}: the {strategy.name} pass leaves the request at {after:,} predicted tokens, still over the "
            f"threshold of {policy.threshold:,} (window {policy.window:,}); try --strategy summary, a larger "
            "window, or fewer tools (nothing written)"
        )
    if after > before * (1 - MIN_SHRINK):
        raise NoShrinkError(
            f"{path}: refused: the {strategy.name} pass would take the request from {before:,} to {after:,} "
            f"predicted tokens, less than the {MIN_SHRINK:.0%} reduction a pass must make (nothing written)"
        )
    result.status = "dry-run" if opts.dry_run else "compacted"
    result.tokens_after, result.estimate_after, result.messages_after = after, after_est, len(final)
    result.summary, result.notes = out.summary, [*out.notes, *repairs]
    if opts.dry_run:
        return result
    summary_text = out.summary.text if out.summary else (state.summary if state else "")
    if digest is None:
        digest = ("", 0) if path == "-" else file_hashes(path)[1:]  # stdin: nothing to compare later
    new_state = _new_state(transcript, state, result, summary_text, est, cal.prior, digest, strategy.name)
    # the model the estimate settled on (the session's current one) when the log named it
    model = est.model.name if est.model_source == "log" else ctx.model
    compacted = _compacted_transcript(transcript, ctx, final, result, out.summary is not None, model)
    result.outputs = write_outputs(outs, compacted, new_state, force=opts.force or state is not None)
    return result


def _keeping(entries: Iterator[Entry], kept: list[Entry]) -> Iterator[Entry]:
    for e in entries:
        kept.append(e)
        yield e


def _resume_point(
    t: Transcript, state: State, state_path: Path, force: bool
) -> tuple[State | None, int, tuple[str, int] | None]:
    """The state to go on from (None: start over), where the new part starts, and (sha256,
    size) of the whole file as it is now. A state file of another session, or of a file since
    rewritten, is refused; with ``force`` it is replaced, its passes forgotten."""
    if state.session_id and t.session_id:  # a renamed copy of the session is still the session
        other = state.session_id != t.session_id
    else:
        other = state.source_name != Path(str(t.path)).name
    if other:
        if force:
            return None, 0, None
        raise ChangedPrefixError(
            f"{state_path} belongs to another session ({state.source_name}, session "
            f"{state.session_id or '?'}); pass --force to replace it, or give another --out-dir"
        )
    prefix, whole, size = file_hashes(str(t.path), state.prefix_bytes)
    wm = state.watermark
    if prefix == state.prefix_sha256 and size >= state.prefix_bytes and 0 < wm <= len(t.entries):
        same_last = entry_sha256(t.entries[wm - 1]) == state.last_entry_sha256
        return state, (wm if same_last else wm - 1), (whole, size)
    if force:
        return None, 0, (whole, size)
    raise ChangedPrefixError(
        f"{t.path}: its first {state.prefix_bytes:,} bytes no longer match the state file's summary (the "
        "file was rewritten, not appended); pass --force to start over"
    )


def _state_prior(state: State, fallback: Prior) -> Prior:
    c = state.calibration
    if "ratio" in c and "overhead" in c:
        first = c.get("first_ratio")
        return Prior(int(c["overhead"]), float(c["ratio"]), "state file", float(first) if first else None)
    return fallback


def _new_state(
    t: Transcript,
    old: State | None,
    r: CompactResult,
    summary: str,
    est: FileEstimate,
    prior: Prior,
    digest: tuple[str, int],
    strategy: str,
) -> State:
    last_real = next((q for q in reversed(est.requests) if q.real is not None), None)
    usage = dict(r.summary.usage) if r.summary else {}
    model = r.summary.model if r.summary else None
    wm = len(t.entries)
    full, size = digest
    state = State(
        source_name=Path(t.path or "-").name,
        source_format=t.source_format,
        session_id=t.session_id,
        watermark=wm,
        prefix_bytes=size,
        prefix_sha256=full,
        last_entry_sha256=entry_sha256(t.entries[-1]) if t.entries else "",
        summary=summary,
        tokens_at_summarization=r.tokens_before,
        tokens_after=r.tokens_after or 0,
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
        provider=r.summary.provider if r.summary else old.provider if old and summary else "none",
        model=model,
        summarizer_usage=usage,
        created_at=old.created_at if old else now(),
        passes=list(old.passes) if old else [],
    )
    state.passes.append(
        Pass(now(), wm, r.tokens_before, r.tokens_after or 0, strategy, state.provider, model)
    )
    return state


def _compacted_transcript(
    t: Transcript,
    ctx: Context,
    messages: list[Message],
    r: CompactResult,
    summarized: bool,
    model: str | None,
) -> Transcript:
    update = ContextUpdate(
        system=ctx.system,
        tools=ctx.tools,
        model=model,
        context_window=ctx.context_window,
        session_id=ctx.session_id,
        extra={HARNESS_TOKENS: ctx.harness} if ctx.harness else {},
    )
    entries: list[Entry] = [update]
    if summarized:
        entries.append(
            CompactionMarker(
                source="ctxfold",
                summary=r.summary.text if r.summary else None,
                tokens_before=r.tokens_before,
                tokens_after=r.tokens_after,
                trigger="manual" if not r.policy.due(r.tokens_before) else "auto",
            )
        )
    # a kept message's usage counted the request it answered, in the context before this pass:
    # left in, it would read as the size of the compacted context (and teach the profile so)
    entries.extend(replace(m, usage=None) if m.usage is not None else m for m in messages)
    return Transcript(
        source_format=t.source_format,
        entries=tuple(entries),
        path=t.path,
        session_id=t.session_id,
        models=t.models,
        context_window=t.context_window,
        system=t.system,
        tools=t.tools,
        extra={"original": t},
    )
