"""``compact``: fold a session file into a compacted transcript, a summary and a state file.

::

    read ──▶ resume ──▶ decide ──▶ fold ──▶ write
     │         │           │         │        └ NAME.compacted.jsonl (the input's own format) and
     │         │           │         │          NAME.summary.md, then the state NAME.ctxfold.json
     │         │           │         └ the strategy and its summarizer (compaction.fold); refused
     │         │           │           unless 10 % smaller and under the threshold
     │         │           └ the calibrated prediction against the threshold (engine.policy)
     │         └ a state file from an earlier run: go on after its watermark, its summary first
     └ parse once, estimating as it streams; the input is never written to

Each step is a function with typed input and output: ``read_input`` (read.py), ``resume``
(resume.py), ``decide_now`` (decide.py), ``fold`` (fold.py), ``write`` (record.py builds what it writes).
``decide`` and ``fold`` are the steps ``ContextGuard`` takes in an agent loop too. Not due →
nothing is written (``force`` folds anyway); a dry run stops before the summarizer is called.
With the count cache (``CompactOptions.cache``, the command's default) and no state file, the
decision comes first, from the cache (``decide_early``): the read is made only when due.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ctxfold.compaction.carry_on import install, plan
from ctxfold.compaction.decide import Early, Now, decide_early, decide_now
from ctxfold.compaction.fold import Folded, FoldInput, fold
from ctxfold.compaction.options import CompactOptions
from ctxfold.compaction.outputs import (
    Outputs,
    ensure_writable,
    locked,
    write_outputs,
)
from ctxfold.compaction.read import Place, Read, place_outputs, read_input, read_tail, reread
from ctxfold.compaction.record import compacted_transcript, new_state
from ctxfold.compaction.resume import Resumed, decision_settings, resume
from ctxfold.compaction.statefile import file_hashes
from ctxfold.config import Config
from ctxfold.engine.policy import Policy
from ctxfold.engine.profile import Profiles
from ctxfold.errors import NoShrinkError, UsageError, WindowTooSmallError
from ctxfold.formats.base import CarryOn
from ctxfold.formats.origin import session_cwd
from ctxfold.formats.registry import WRITERS
from ctxfold.names import did_you_mean
from ctxfold.providers.base import Summarizer, SummaryRequest, SummaryResult
from ctxfold.providers.offline import answering_digest
from ctxfold.providers.streamed import Unknowable
from ctxfold.strategies.base import MIN_SHRINK, Strategy, get_strategy
from ctxfold.strategies.streamed import TailFits
from ctxfold.strategies.summary import UNLIMITED_WINDOW
from ctxfold.transcript.model import Transcript


class _WouldSummarize(Exception):
    """A dry run's pass reached the summarizer, which a dry run does not call."""


@dataclass
class CompactResult:
    """What a compaction did (``status``), the request before and after, and where it wrote.

    >>> r = ctxfold.compact("fixtures/real/claude-code-sidechains.jsonl", dry_run=True)
    >>> r.status, r.tokens_before < r.policy.threshold
    ('not-due', True)
    """

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
    carry_on: CarryOn | None = None  # how to resume the compacted session in its harness


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
    get_strategy(opts.strategy)  # a typo fails before anything is read
    _check_paths(path, opts)
    if opts.to is not None and opts.to not in WRITERS:
        raise UsageError(f"--to {opts.to}: no writer for that format{did_you_mean(opts.to, list(WRITERS))}")
    outs, in_store = place_outputs(path, opts)
    # one compact of these outputs at a time, from reading their state to writing them
    with contextlib.nullcontext() if opts.dry_run else locked(outs):
        return _compact(path, summarizer, summarizer_window, opts, config, profiles, Place(outs, in_store))


def _compact(
    path: str,
    summarizer: Summarizer,
    summarizer_window: int | None,
    opts: CompactOptions,
    config: Config | None,
    profiles: Profiles | None,
    place: Place,
) -> CompactResult:
    strategy = get_strategy(opts.strategy)
    folded_before = place.outs.state.exists()  # a state file: this pass goes on after its watermark
    early = decide_early(path, opts, config, profiles, folded_before=folded_before)
    if early is not None and not early.decision.due:
        return _not_due(early, path, strategy.name, place)
    outline = _can_outline(path)
    stream = outline and not folded_before and _can_stream(opts, summarizer, summarizer_window)
    # a mask pass first masks as it reads, so that the old tool results are never held
    masks_first = outline and not folded_before and strategy.name.split("+")[0] == "mask-observations"
    mask = opts.keep_observations if masks_first else None
    try:
        read = read_input(path, opts, config, place, outline=outline, stream=stream, mask=mask)
    except Unknowable:  # a compaction recorded in the log keeps messages that streamed by; a mask
        # counted with a tokenizer the whole log did not settle on
        read = read_input(path, opts, config, place)
    settings = decision_settings(read.est, opts, summarizer)
    resumed = resume(read, path, opts.force, settings)
    now = decide_now(read, resumed, opts, profiles)
    result = CompactResult(
        "not-due",
        path,
        read.transcript.source_format,
        read.outs,
        now.policy,
        now.decision.predicted,
        now.decision.estimate,
        messages_before=len(resumed.messages),
        strategy=strategy.name,
        incremental=resumed.incremental,
        warnings=[*read.est.model.warnings, *(f"{path}: {note}" for note in read.est.notes)],
        skipped=read.skipped,
    )
    if resumed.changed:
        result.notes.append(
            f"the settings changed since the last compaction ({'; '.join(resumed.changed)}): "
            "the whole session is decided again, and folded afresh when due"
        )
    if read.in_store:
        result.notes.append(_in_store(read.in_store, read.outs))
    if resumed.incremental and len(resumed.messages) == 1:
        result.status = "up-to-date"  # nothing arrived since the summary: a second run is a no-op
        return result
    if not now.decision.due and not opts.force:
        return result
    if not opts.dry_run:  # before any summarizer is paid for
        ensure_writable(read.outs, force=opts.force or read.state is not None)
    try:
        folding = partial(
            _fold, now=now, strategy=strategy, summarizer=summarizer, summarizer_window=summarizer_window
        )
        read, resumed, folded = _fold_read(read, resumed, folding, path, opts, settings)
    except _WouldSummarize:
        result.status = "dry-run"
        return result
    except (NoShrinkError, WindowTooSmallError) as err:
        raise type(err)(f"{path}: {err} (nothing written)") from None
    result.status = "dry-run" if opts.dry_run else "compacted"
    result.tokens_after, result.estimate_after = folded.after.predicted, folded.after.estimate
    result.messages_after, result.summary = len(folded.messages), folded.summary
    result.notes.extend(folded.notes)
    if not opts.dry_run:
        result.outputs, compacted = write(
            read, resumed, now, folded, path, strategy=strategy.name, opts=opts, settings=settings
        )
        result.carry_on = _carry_on(result.outputs, compacted, opts)
    return result


def _not_due(early: Early, path: str, strategy: str, place: Place) -> CompactResult:
    """The result of a session decided not due before it was read for the summary."""
    est = early.est
    result = CompactResult(
        "not-due",
        path,
        est.format,
        place.outs,
        early.policy,
        early.decision.predicted,
        early.decision.estimate,
        messages_before=len(est.replay.context),
        strategy=strategy,
        warnings=[*est.model.warnings, *(f"{path}: {note}" for note in est.notes)],
    )
    if place.in_store:
        result.notes.append(_in_store(place.in_store, place.outs))
    return result


def _in_store(harness: str, outs: Outputs) -> str:
    return (
        f"the input is in {harness}'s session folder: the outputs go to {outs.compacted.parent}/ "
        "(--out-dir to choose; --install places the compacted session where the harness finds it)"
    )


def _can_outline(path: str) -> bool:
    """A file is read keeping only the current context (and, after a state file, the context
    from its watermark) and the writers' outline (``compaction.skeleton``); stdin is kept whole."""
    return path != "-"


def _can_stream(opts: CompactOptions, summarizer: Summarizer, window: int | None) -> bool:
    """On a first pass (no state file), a long context may stream by too (``compact`` keeps
    only what the offline digest and the kept tail need) with the summary or sliding-window
    strategy and the offline digest; another strategy or summarizer, or a dry run, keeps the
    context whole."""
    return (
        not opts.dry_run
        and opts.strategy in ("summary", "sliding-window")
        and answering_digest(summarizer) is not None
        and (window is None or window >= UNLIMITED_WINDOW)
    )


def _fold_read(
    read: Read,
    resumed: Resumed,
    folding: Callable[..., Folded],
    path: str,
    opts: CompactOptions,
    settings: dict[str, Any],
) -> tuple[Read, Resumed, Folded]:
    """The fold (``folding(read, resumed, path=, opts=)``), and the read it was made from. When
    the streamed readings cannot tell, the session is read again: keeping a sliding window's
    tail that fits (once per cut its passes try), else whole."""
    asked: set[int] = set()
    while True:
        try:
            return read, resumed, folding(read, resumed, path=path, opts=opts)
        except TailFits as fits:
            if fits.cut in asked:  # that read did not keep it: fall back to the whole session
                break
            asked.add(fits.cut)
            read = read_tail(path, opts, read, fits)
            resumed = resume(read, path, opts.force, settings)
        except Unknowable:
            break
    whole = replace(read, transcript=reread(path, opts, read.entries), outline=None)
    resumed = resume(whole, path, opts.force, settings)
    return whole, resumed, folding(whole, resumed, path=path, opts=opts)


def _fold(
    read: Read,
    resumed: Resumed,
    now: Now,
    strategy: Strategy,
    summarizer: Summarizer,
    summarizer_window: int | None,
    path: str,
    opts: CompactOptions,
) -> Folded:
    return fold(
        FoldInput(
            messages=resumed.messages,
            strategy=strategy,
            counter=now.counter,
            policy=now.policy,
            calibrator=now.calibrator,
            fixed=now.fixed,
            before=now.decision,
            # a dry run calls nothing, but a pass that needs no summary (a sliding window,
            # masking) is run, so that it shows the result, or the refusal, of the real one
            summarizer=_stop_before_summarizing if opts.dry_run else summarizer,
            summarizer_window=summarizer_window or UNLIMITED_WINDOW,
            instructions=opts.instructions,
            keep_observations=opts.keep_observations,
            min_shrink=MIN_SHRINK,
            close_last=True,  # the compacted session is resumed later, with a new turn after it
            source=None if path == "-" else str(Path(path).resolve()),
            source_range=_folded_range(read.entries, resumed),
            cwd=session_cwd(read.transcript),
        )
    )


def _carry_on(outs: Outputs, compacted: Transcript, opts: CompactOptions) -> CarryOn | None:
    fmt = outs.written_format or compacted.source_format
    carry = plan(fmt, compacted, outs.compacted, opts.home)
    if carry is not None and opts.install:
        carry = install(carry, outs.compacted)
    return carry


def _folded_range(total: int, resumed: Resumed) -> str:
    """Which entries of the session the pass folds, in words the summary can quote."""
    first = resumed.ctx.start + 1
    if resumed.incremental:
        return f"entries {first}–{total} of {total}, after an earlier ctxfold summary"
    if first > 1:
        return f"entries {first}–{total} of {total}, after the session's own last compaction"
    return f"entries 1–{total}, the whole session"


def _check_paths(path: str, opts: CompactOptions) -> None:
    if path == "-" and not (opts.output or opts.dry_run):
        raise UsageError(
            "compacting stdin needs -o/--output (there is no file name to name the outputs after)"
        )
    if opts.output and opts.out_dir:
        raise UsageError("give -o/--output or --out-dir, not both (-o names the outputs' folder too)")


def _stop_before_summarizing(request: SummaryRequest) -> SummaryResult:
    raise _WouldSummarize


def write(
    read: Read,
    resumed: Resumed,
    now: Now,
    folded: Folded,
    path: str,
    *,
    strategy: str,
    opts: CompactOptions,
    settings: dict[str, Any] | None = None,
) -> tuple[Outputs, Transcript]:
    """Write the compacted transcript and the summary, then record the state (last)."""
    t, state, est = read.transcript, resumed.state, read.est
    summary_text = folded.summary.text if folded.summary else (state.summary if state else "")
    digest = resumed.digest
    if digest is None:
        digest = ("", 0) if path == "-" else file_hashes(path)[1:]  # stdin: nothing to compare later
    tokens = (now.decision.predicted, folded.after.predicted)
    record = new_state(
        t,
        state,
        summary=folded.summary,
        summary_text=summary_text,
        tokens=tokens,
        est=est,
        prior=now.calibrator.prior,
        digest=digest,
        strategy=strategy,
        settings=settings,
        entries=(read.outline.entries, read.outline.last_sha256) if read.outline is not None else None,
    )
    # the model the estimate settled on (the session's current one) when the log named it
    model = est.model.name if est.model_source == "log" else resumed.ctx.model
    compacted = compacted_transcript(
        t,
        resumed.ctx,
        folded.messages,
        summary=folded.summary,
        tokens=tokens,
        trigger="auto" if now.decision.due else "manual",
        model=model,
    )
    # outputs a state of this session names are its own to replace (another's was refused)
    written = write_outputs(
        read.outs, compacted, record, force=opts.force or read.state is not None, to=opts.to
    )
    return written, compacted
