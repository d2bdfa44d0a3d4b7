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

``decide`` and ``fold`` are the steps ``ContextGuard`` takes in an agent loop too. Not due →
nothing is written (``force`` folds anyway); a dry run stops before the summarizer is called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxfold.compaction.carry_on import in_a_store, install, plan
from ctxfold.compaction.fold import Folded, FoldInput, fold
from ctxfold.compaction.outputs import (
    Outputs,
    ensure_writable,
    locked,
    outputs_for,
    set_is_whole,
    write_outputs,
)
from ctxfold.compaction.record import compacted_transcript, new_state
from ctxfold.compaction.statefile import State, entry_sha256, file_hashes, load_state, settings_changes
from ctxfold.config import Config
from ctxfold.engine.calibration import DEFAULT_CALIBRATOR, Calibrator, Prior, make_calibrator
from ctxfold.engine.now import calibrated, learn_from, prior_for
from ctxfold.engine.policy import Decision, Policy, decide, make_policy
from ctxfold.engine.profile import Profiles
from ctxfold.errors import ChangedPrefixError, NoShrinkError, UsageError, WindowTooSmallError
from ctxfold.formats.base import CarryOn
from ctxfold.formats.loader import materialize, open_transcript
from ctxfold.formats.registry import WRITERS
from ctxfold.names import did_you_mean
from ctxfold.providers.base import Summarizer, SummaryRequest, SummaryResult
from ctxfold.strategies.base import MIN_SHRINK, get_strategy
from ctxfold.strategies.summary import UNLIMITED_WINDOW, summary_message
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.estimate import FileEstimate, estimate_entries
from ctxfold.tokens.parallel import workers_for
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.context import Context, current_context
from ctxfold.transcript.model import Entry, Message, Transcript

DEFAULT_OUT_DIR = "ctxfold-out"  # for an input inside a harness's session folder


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
    to: str | None = None  # write for another harness's format (default: the input's own)
    install: bool = False  # place the compacted session where its harness looks for it
    home: Path | None = None  # the home folder harnesses keep their sessions under (tests)


@dataclass(frozen=True)
class Read:
    """The input parsed once: the transcript, its estimate, where outputs go, and the state
    file found there (None for stdin, which leaves nothing to check a state file against)."""

    transcript: Transcript
    est: FileEstimate
    outs: Outputs
    state: State | None
    skipped: list[str]
    in_store: str | None = None  # the harness whose session folder holds the input


@dataclass(frozen=True)
class Resumed:
    """The context to decide on: after the state's watermark, its summary first (incremental),
    or the whole current context; ``digest`` is (sha256, size) of the input when known."""

    state: State | None
    ctx: Context
    messages: list[Message]
    incremental: bool
    digest: tuple[str, int] | None
    changed: tuple[str, ...] = ()  # the settings that differ from the state's (it was set aside)


@dataclass(frozen=True)
class Now:
    """The request the context makes now and the decision on it."""

    policy: Policy
    counter: Counter
    calibrator: Calibrator
    prior: Prior
    fixed: int  # system prompt, tools, harness text and per-request framing, counted
    decision: Decision


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


@dataclass(frozen=True)
class Place:
    outs: Outputs
    in_store: str | None  # the harness whose session folder holds the input


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
        result.notes.append(
            f"the input is in {read.in_store}'s session folder: the outputs go to {read.outs.compacted.parent}/ "
            "(--out-dir to choose; --install places the compacted session where the harness finds it)"
        )
    if resumed.incremental and len(resumed.messages) == 1:
        result.status = "up-to-date"  # nothing arrived since the summary: a second run is a no-op
        return result
    if not now.decision.due and not opts.force:
        return result
    if not opts.dry_run:  # before any summarizer is paid for
        ensure_writable(read.outs, force=opts.force or read.state is not None)
    try:
        folded = fold(
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
                source_range=_folded_range(read.transcript, resumed),
            )
        )
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


def _carry_on(outs: Outputs, compacted: Transcript, opts: CompactOptions) -> CarryOn | None:
    fmt = outs.written_format or compacted.source_format
    carry = plan(fmt, compacted, outs.compacted, opts.home)
    if carry is not None and opts.install:
        carry = install(carry, outs.compacted)
    return carry


def _folded_range(t: Transcript, resumed: Resumed) -> str:
    """Which entries of the session the pass folds, in words the summary can quote."""
    total = len(t.entries)
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


def place_outputs(path: str, opts: CompactOptions) -> tuple[Outputs, str | None]:
    """Where the outputs go, and the harness whose session folder holds the input (outputs
    written beside it would show up as sessions of their own: they go to ./ctxfold-out)."""
    out_dir, harness = opts.out_dir, None
    if out_dir is None and opts.output is None and path != "-":
        harness = in_a_store(Path(path).parent, opts.home)
        if harness is not None:
            out_dir = DEFAULT_OUT_DIR
    return outputs_for(path, out_dir=out_dir, output=opts.output), harness


def read_input(path: str, opts: CompactOptions, config: Config | None, place: Place) -> Read:
    """Parse the file once: it is kept in memory for writing and estimated as it streams."""
    opened = open_transcript(path, fmt=opts.fmt, skip_invalid=opts.skip_invalid)
    kept: list[Entry] = []
    est = estimate_entries(
        _keeping(opened.entries, kept),
        opened.format,
        opened.path,
        model=opts.model,
        window=opts.window,
        config=config,
        workers=workers_for(Path(path).stat().st_size if path != "-" else 0),
    )
    outs = place.outs
    state = load_state(outs.state) if path != "-" else None
    est.notes = list(opened.warnings)  # filled as the entries were read
    transcript = materialize(kept, opened.format, opened.path)
    return Read(transcript, est, outs, state, [str(e) for e in opened.skipped], place.in_store)


def _keeping(entries: Iterator[Entry], kept: list[Entry]) -> Iterator[Entry]:
    for e in entries:
        kept.append(e)
        yield e


def decision_settings(est: FileEstimate, opts: CompactOptions, summarizer: Summarizer) -> dict[str, Any]:
    """What the user chose that the decision and the fold depend on (flags, environment, config
    file): recorded in the state, so a run with other choices (another window, model, strategy,
    summarizer…) is not "up to date". What the session itself decides (the model it switches to,
    the window its log records) is not a choice: a grown session stays incremental."""
    chosen_window = not (
        est.model.window_source in ("recorded in the log", "default")
        or est.model.window_source.startswith(("model registry", "the log's"))
    )
    chosen_model = est.model_source in ("--model", "--model over the log's", "settings")
    masks = "mask-observations" in opts.strategy
    return {
        "model": est.model.name if chosen_model else None,
        "window": est.model.window if chosen_window else None,
        "max_tokens": opts.max_tokens,
        "buffer": opts.buffer,
        "calibration": opts.calibration,
        "strategy": opts.strategy,
        "summarizer": getattr(summarizer, "spec", None) or type(summarizer).__name__,
        "instructions": opts.instructions,
        "keep_observations": opts.keep_observations if masks else None,
        "to": opts.to,
    }


def resume(read: Read, path: str, force: bool, settings: dict[str, Any] | None = None) -> Resumed:
    """The context to decide on. With ``force`` and nothing new since the state's summary, the
    whole session is folded again (``--force`` always redoes, never answers "up to date"); so it
    is when the state was written with other ``settings`` (its summary and outputs are not what
    this run asks for)."""
    state, start, digest = read.state, 0, None
    changed: list[str] = []
    if state is not None and path != "-":
        state, start, digest = _resume_point(read.transcript, state, read.outs, force)
        if state is not None and settings is not None:
            changed = settings_changes(state.settings, settings)
            if changed:
                state, start = None, 0
    ctx = current_context(read.transcript.entries, start)
    if force and state is not None and start > 0 and ctx.start == start and not ctx.messages:
        state, start = None, 0
        ctx = current_context(read.transcript.entries)
    messages = list(ctx.messages)
    incremental = state is not None and start > 0 and ctx.start == start
    if incremental and state is not None:
        messages = [summary_message(state.summary), *messages]
    return Resumed(state, ctx, messages, incremental, digest, tuple(changed))


def _resume_point(
    t: Transcript, state: State, outs: Outputs, force: bool
) -> tuple[State | None, int, tuple[str, int] | None]:
    """The state to go on from (None: start over), where the new part starts, and (sha256,
    size) of the whole file as it is now. The same source is the file the state summarized, grown
    (its first bytes unchanged); a rewritten file of the same session is refused unless
    ``force``, which starts over; another session's state is refused even with ``force`` (its
    outputs are another session's: give this one another name or folder). A set whose outputs
    are not those the state was written with (it was never completed) starts over too."""
    prefix, whole, size = file_hashes(str(t.path), state.prefix_bytes)
    if prefix != state.prefix_sha256 or size < state.prefix_bytes:
        if state.session_id and t.session_id:  # a renamed copy of the session is still the session
            other = state.session_id != t.session_id
        else:
            other = state.source_name != Path(str(t.path)).name
        if other:
            raise ChangedPrefixError(
                f"{outs.state} belongs to another session ({state.source_name}, session "
                f"{state.session_id or '?'}); give this one another --out-dir or -o"
            )
        if force:
            return None, 0, (whole, size)
        raise ChangedPrefixError(
            f"{t.path}: its first {state.prefix_bytes:,} bytes no longer match the state file's summary (the "
            "file was rewritten, not appended); pass --force to start over"
        )
    wm = state.watermark
    if not set_is_whole(outs, state) or not 0 < wm <= len(t.entries):
        return None, 0, (whole, size)
    same_last = entry_sha256(t.entries[wm - 1]) == state.last_entry_sha256
    return state, (wm if same_last else wm - 1), (whole, size)


def decide_now(read: Read, resumed: Resumed, opts: CompactOptions, profiles: Profiles | None) -> Now:
    """Count the request the context makes now, calibrate it with the log's own real counts
    (or, after a state file's summary, with the state's calibration) and decide."""
    est, ctx = read.est, resumed.ctx
    policy = make_policy(est.model.window, max_tokens=opts.max_tokens, buffer=opts.buffer)
    counter = Counter(get_tokenizer(est.model.tokenizer), est.model.provider, memo=True)
    fixed = (
        counter.count_system(ctx.system)
        + ctx.harness
        + counter.count_tools(ctx.tools)
        + counter.framing.per_request
    )
    # the estimate already counted exactly this context unless a state file's summary heads it
    if resumed.incremental:
        estimate = fixed + sum(c.total for c in counter.count_messages(resumed.messages))
    else:
        estimate = est.context_tokens
    prior = prior_for(est, profiles)
    if profiles is not None and not opts.dry_run:  # a dry run writes nothing, the profile included
        learn_from(profiles, est)  # like estimate and report: every session read teaches the profile
        profiles.save()
    if resumed.incremental and resumed.state is not None:
        cal = make_calibrator(opts.calibration, _state_prior(resumed.state, prior), est.model.tokenizer)
    else:
        cal = calibrated(est, prior, opts.calibration)
    return Now(policy, counter, cal, prior, fixed, decide(cal, policy, estimate))


def _state_prior(state: State, fallback: Prior) -> Prior:
    c = state.calibration
    if "ratio" in c and "overhead" in c:
        first = c.get("first_ratio")
        return Prior(int(c["overhead"]), float(c["ratio"]), "state file", float(first) if first else None)
    return fallback


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
