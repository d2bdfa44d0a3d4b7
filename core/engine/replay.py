"""Replay a recorded session through the decision engine: request by request, what ctxfold
would have predicted, what the provider really counted, and where compaction would fire.

It works on the request rows of a :class:`FileEstimate` (each message tokenized once), so a
report costs little more than an estimate. Calibration sees only what a live engine would
have seen: each real count after its own request, never before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxfold.config import Config
from ctxfold.engine.budget import CONTINUATION_TOKENS, SUMMARY_PROMPT_TOKENS
from ctxfold.engine.calibration import (
    DEFAULT_CALIBRATOR,
    MAX_RATIO,
    MIN_RATIO,
    SLOPE_MIN_SPAN,
    Calibrator,
    Prior,
    make_calibrator,
    report_tokenizer,
)
from ctxfold.engine.now import learn_from, prior_for
from ctxfold.engine.policy import Policy, decide, make_policy
from ctxfold.engine.profile import Profiles
from ctxfold.engine.triggers import Trigger, TriggerReplay, parse_trigger, replay_trigger
from ctxfold.formats.loader import Opened
from ctxfold.prices import PriceList
from ctxfold.tokens.estimate import FileEstimate
from ctxfold.tokens.incremental import count_file

SUMMARIZER_SHARE = 0.80  # the seeds' cap on the summarizing call's input, of the window


@dataclass(slots=True)
class Row:
    index: int
    estimate: int
    calibrated: int  # the prediction the decision used
    real: int | None
    real_source: str | None
    threshold: int
    window: int
    decision: str  # "compact" | "ok"
    first_in_segment: bool
    segment: int
    factor: float
    basis: str
    recorded_compaction: bool = False  # the recording tool compacted just before this request
    server_tool_calls: int = 0  # server-side tool calls (web searches) its own response made
    model_window: int | None = None  # the model's own window, when --max-tokens set the rule's

    @property
    def margin(self) -> int:
        return self.threshold - self.calibrated

    @property
    def error(self) -> float | None:
        return (self.calibrated - self.real) / self.real if self.real else None

    @property
    def late(self) -> bool:
        return self.real is not None and self.real >= self.threshold and self.decision != "compact"

    @property
    def early(self) -> bool:
        return self.real is not None and self.real < self.threshold and self.decision == "compact"

    @property
    def overflow(self) -> bool:
        """Over the model's window: ``--max-tokens`` moves the rule, not what the provider accepts."""
        return self.real is not None and self.real > (self.model_window or self.window)


@dataclass(frozen=True, slots=True)
class Fired:
    """A simulated firing: the compacted request's predicted size, of which ``prefix`` is the
    system prompt and tools, and the summarizer's prompt."""

    sent: int
    prefix: int
    summarizer_input: int


@dataclass
class Simulation:
    """``--simulate-compaction``: the session as it would have gone had ctxfold compacted."""

    compactions: list[int] = field(default_factory=list)  # request indices where it fired
    overflows: int = 0
    max_predicted: int = 0
    prompt_tokens: int = 0  # summed over the session's requests, as they would have been sent
    # the summarizer's prompts: each folded context as its prompt renders it (tool results and
    # media elided, as in the seeds), with its instructions, at most 80 % of the window
    summarizer_input: int = 0
    cannot_fit_at: int | None = None  # the request whose compacted form is still over the threshold
    cannot_fit_tokens: int = 0  # that compacted request's prediction (system, tools, summary)
    # per request, what the simulation changed (for its cost): at a firing, the compacted request
    # sent in its place, the part of it that is the unchanged system prompt and tools (the cache
    # keeps it), and the summarizer's input; after it, the real tokens no longer sent
    fired: dict[int, Fired] = field(default_factory=dict)
    removed: dict[int, int] = field(default_factory=dict)
    # (request, predicted, real) of each request as the simulated run sends it (the compacted
    # request at a firing; real: the log's count less what was removed), for the plot
    series: list[tuple[int, int, int | None]] = field(default_factory=list)


@dataclass
class Report:
    """A session replayed request by request: one :class:`Row` per model request (estimate,
    prediction, real count, threshold, decision), and with ``simulate`` the compacted run.

    >>> r = ctxfold.report("fixtures/real/claude-code-sidechains.jsonl", window=24_000)
    >>> last = r.rows[-1]
    >>> last.calibrated, last.real, last.threshold, last.decision
    (21683, 21552, 19200, 'compact')
    """

    estimate: FileEstimate
    policy: Policy
    calibration: str
    prior: Prior
    rows: list[Row]
    simulation: Simulation | None = None
    prices: PriceList = field(default_factory=PriceList)  # to price its usage records
    trigger: TriggerReplay | None = None  # with --trigger: where that harness's own rule fires
    # report_doc.summary's figures, once worked out: a folder's are worked out as each file comes
    # in (while the workers read on), and the table, the JSON and the totals reuse them
    _summary: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def first_fire(self) -> Row | None:
        return next((r for r in self.rows if r.decision == "compact"), None)

    def count(self, attr: str) -> int:
        return sum(1 for r in self.rows if getattr(r, attr))


def replay(
    est: FileEstimate,
    *,
    calibration: str,
    prior: Prior,
    max_tokens: int | None = None,
    buffer: str | None = None,
    simulate: bool = False,
) -> Report:
    policy = make_policy(est.model.window, max_tokens=max_tokens, buffer=buffer)
    cal = make_calibrator(calibration, prior, est.model.tokenizer)
    used = cal.prior  # what the calibrator starts from (the seed rule has its own default factor)
    marks = {c.before_request for c in est.replay.compactions}
    rows: list[Row] = []
    segment = -1
    threshold, window = policy.threshold, policy.window
    for q in est.requests:
        if q.segment != segment:
            if segment != -1:
                cal.reset()
            segment = q.segment
        # ``decide``'s numbers, without a Decision made for each of a long session's requests
        first = not cal.history
        p = cal.predict(q.estimate, q.server_tools)
        rows.append(
            Row(
                index=q.index,
                estimate=q.estimate,
                calibrated=p.tokens,
                real=q.real,
                real_source=q.real_source,
                threshold=threshold,
                window=window,
                decision="compact" if policy.due(p.tokens) else "ok",
                first_in_segment=first,
                segment=q.segment,
                factor=p.factor,
                basis=p.basis,
                recorded_compaction=q.index in marks,
                model_window=est.model.window,
                server_tool_calls=q.server_tools_after - q.server_tools,
            )
        )
        if q.real is not None:
            cal.observe(q.estimate, q.real, q.server_tools_after)
    sim = _simulate(est, policy, calibration, prior) if simulate else None
    return Report(est, policy, calibration, used, rows, sim)


def _simulate(est: FileEstimate, policy: Policy, calibration: str, prior: Prior) -> Simulation:
    """Continue after each firing with the context replaced by a summary of the budgeted size
    plus whatever follows the watermark. Real counts are shifted by what was removed, scaled
    by the segment's tokenizer ratio so far (first to latest real count: the removed part is
    most of the segment, not its latest steps). A firing whose compacted request would still be
    due ends the simulation: no policy fits such a session in the window."""
    sim = Simulation()
    cal: Calibrator = make_calibrator(calibration, prior, est.model.tokenizer)
    summary = policy.summary_budget + CONTINUATION_TOKENS
    base: int | None = None  # body tokens (original space) folded at the last firing
    base_elided = 0  # tool results and media among them
    segment = -1
    first: tuple[int, int] | None = None  # the segment's first (estimate, real)
    ratio = prior.ratio
    for q in est.requests:
        if q.segment != segment:
            segment, base, base_elided, first, ratio = q.segment, None, 0, None, prior.ratio
            cal.reset()
        body = q.estimate - q.fixed
        removed = 0 if base is None else base - summary
        sim_est = q.estimate - removed
        sim_real = None if q.real is None else max(0, int(q.real - ratio * removed))
        now = decide(cal, policy, sim_est)
        predicted = now.predicted
        sim.max_predicted = max(sim.max_predicted, predicted)
        if now.due:
            cal.reset()
            sim_est = q.fixed + summary
            folded = decide(cal, policy, sim_est)
            after = folded.predicted
            if folded.due:
                sim.cannot_fit_at, sim.cannot_fit_tokens = q.index, after
                break
            sim.compactions.append(q.index)
            rendered = max(0, body - removed - (q.elided - base_elided))
            prompt = min(int(ratio * rendered) + SUMMARY_PROMPT_TOKENS, int(SUMMARIZER_SHARE * policy.window))
            sim.summarizer_input += prompt
            sim.fired[q.index] = Fired(after, min(cal.predict(q.fixed).tokens, after), prompt)
            base, base_elided = body, q.elided  # everything up to here is folded into the summary
            sim.prompt_tokens += after  # the log's real count was for the uncompacted request
            sim.series.append((q.index, after, None))
        else:
            sim.series.append((q.index, predicted, sim_real))
            sim.prompt_tokens += sim_real if sim_real is not None else predicted
            if q.real is not None and sim_real is not None and removed:
                sim.removed[q.index] = q.real - sim_real
            if sim_real is not None:
                if sim_real > est.model.window:
                    sim.overflows += 1
                cal.observe(sim_est, sim_real)
        if q.real is not None:
            first = first or (q.estimate, q.real)
            if q.estimate - first[0] >= SLOPE_MIN_SPAN:
                ratio = min(MAX_RATIO, max(MIN_RATIO, (q.real - first[1]) / (q.estimate - first[0])))
    return sim


def report_file(
    path: str,
    *,
    model: str | None = None,
    tokenizer: str | None = None,
    window: int | None = None,
    fmt: str | None = None,
    skip_invalid: bool = False,
    calibration: str = DEFAULT_CALIBRATOR,
    max_tokens: int | None = None,
    buffer: str | None = None,
    simulate: bool = False,
    profiles: Profiles | None = None,
    config: Config | None = None,
    on_progress: Callable[[Opened], None] | None = None,
    trigger: str | None = None,
    cache: bool = False,
) -> Report:
    """Estimate a file, replay it through the engine, and teach ``profiles`` (when given; the
    caller saves them) what it showed. ``trigger`` (``NAME[:SETTING=VALUE]``, see
    :mod:`ctxfold.engine.triggers`) replays it under that harness's own compaction rule too.
    ``cache``: read on from where an earlier run ended (``tokens/incremental.py``)."""
    rule = parse_trigger(trigger) if trigger else None  # a typo fails before the file is read
    est = count_file(
        path,
        cache=cache,
        model=model,
        tokenizer=report_tokenizer(calibration, tokenizer, config),
        window=window,
        fmt=fmt,
        skip_invalid=skip_invalid,
        config=config,
        on_progress=on_progress,
    )
    return report_from(
        est,
        calibration=calibration,
        max_tokens=max_tokens,
        buffer=buffer,
        simulate=simulate,
        profiles=profiles,
        config=config,
        rule=rule,
    )


def report_from(
    est: FileEstimate,
    *,
    calibration: str = DEFAULT_CALIBRATOR,
    max_tokens: int | None = None,
    buffer: str | None = None,
    simulate: bool = False,
    profiles: Profiles | None = None,
    config: Config | None = None,
    rule: Trigger | None = None,
) -> Report:
    """The engine's half of ``report_file``, on a file already counted (``estimate_file`` with
    :func:`report_tokenizer`); called in file order, the profile evolves as in a serial run."""
    # What ctxfold would have predicted before this session's first real count: learned from the
    # *other* sessions, so replaying a file twice gives the same report, not an in-sample fit.
    prior = prior_for(est, profiles, leave_out=True)
    report = replay(
        est, calibration=calibration, prior=prior, max_tokens=max_tokens, buffer=buffer, simulate=simulate
    )
    if profiles is not None:
        learn_from(profiles, est)
    report.prices = (config or Config()).prices
    if rule is not None:
        recorded = (est.model.window_source or "").startswith("recorded")
        window = rule.window_for(est.model.window, recorded)
        report.trigger = replay_trigger(est.requests, rule, window)
    return report
