"""The decide step of ``compact``: the request the context makes now, calibrated, against the
threshold; and, before anything is read for the summary, the same decision from the count cache.

``compact`` reads a session once for everything: the counts, the decision and, as it streams,
what the summary needs. That last part is most of its time (the facts of every message: files,
commands, errors, values), and a hook that runs ``compact`` after each turn hears "not due"
almost every time. So, with the count cache on and no state file (this session was not folded
here before), :func:`decide_early` decides first from the cache, which reads on from where the
last run ended, and the session is read for the summary only when it is due. With a state file
the decision depends on what the state folded (:func:`decide_now`), and the single read stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxfold.compaction.options import CompactOptions
from ctxfold.compaction.read import Read
from ctxfold.compaction.resume import Resumed
from ctxfold.compaction.statefile import State
from ctxfold.config import Config
from ctxfold.engine.calibration import Calibrator, Prior, make_calibrator
from ctxfold.engine.now import calibrated, learn_from, prior_for
from ctxfold.engine.policy import Decision, Policy, decide, make_policy
from ctxfold.engine.profile import Profiles
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.estimate import FileEstimate
from ctxfold.tokens.incremental import cache_enabled, count_file
from ctxfold.tokens.tokenizers import get_tokenizer


@dataclass(frozen=True)
class Early:
    """The session's counts and the decision on them, made before any reading for the summary."""

    est: FileEstimate
    policy: Policy
    decision: Decision


def decide_early(
    path: str, opts: CompactOptions, config: Config | None, profiles: Profiles | None, *, folded_before: bool
) -> Early | None:
    """The decision from the count cache, or None when this run reads once for everything
    (no cache, ``--force``, ``--skip-invalid``, stdin, or a state file: ``folded_before``).
    What the profile learns from the session is learned here only when nothing follows."""
    if not opts.cache or opts.force or opts.skip_invalid or folded_before or not cache_enabled(path):
        return None
    est = count_file(path, model=opts.model, window=opts.window, fmt=opts.fmt, config=config)
    policy, _, _, decision = first_decision(est, opts, profiles)
    if not decision.due and profiles is not None and not opts.dry_run:
        learn_from(profiles, est)  # as the whole read would have, had it been made
        profiles.save()
    return Early(est, policy, decision)


def first_decision(
    est: FileEstimate, opts: CompactOptions, profiles: Profiles | None
) -> tuple[Policy, Prior, Calibrator, Decision]:
    """The decision on a session no state file has folded: its own counts, calibrated by its
    real ones (or the profile's prior, taken before the session teaches the profile)."""
    policy = make_policy(est.model.window, max_tokens=opts.max_tokens, buffer=opts.buffer)
    prior = prior_for(est, profiles)
    cal = calibrated(est, prior, opts.calibration)
    return policy, prior, cal, decide(cal, policy, est.context_tokens)


@dataclass(frozen=True)
class Now:
    """The request the context makes now and the decision on it."""

    policy: Policy
    counter: Counter
    calibrator: Calibrator
    prior: Prior
    fixed: int  # system prompt, tools, harness text and per-request framing, counted
    decision: Decision


def decide_now(read: Read, resumed: Resumed, opts: CompactOptions, profiles: Profiles | None) -> Now:
    """Count the request the context makes now, calibrate it with the log's own real counts
    (or, after a state file's summary, with the state's calibration) and decide."""
    est, ctx = read.est, resumed.ctx
    counter = Counter(get_tokenizer(est.model.tokenizer), est.model.provider, memo=True)
    fixed = (
        counter.count_system(ctx.system)
        + ctx.harness
        + counter.count_tools(ctx.tools)
        + counter.framing.per_request
    )
    policy, prior, cal, decision = first_decision(est, opts, profiles)
    if profiles is not None and not opts.dry_run:  # a dry run writes nothing, the profile included
        learn_from(profiles, est)  # like estimate and report: every session read teaches the profile
        profiles.save()
    # the estimate already counted exactly this context unless a state file's summary heads it
    if resumed.incremental and resumed.state is not None:
        estimate = fixed + sum(c.total for c in counter.count_messages(resumed.messages))
        cal = make_calibrator(opts.calibration, _state_prior(resumed.state, prior), est.model.tokenizer)
        decision = decide(cal, policy, estimate)
    return Now(policy, counter, cal, prior, fixed, decision)


def _state_prior(state: State, fallback: Prior) -> Prior:
    c = state.calibration
    if "ratio" in c and "overhead" in c:
        first = c.get("first_ratio")
        return Prior(int(c["overhead"]), float(c["ratio"]), "state file", float(first) if first else None)
    return fallback
