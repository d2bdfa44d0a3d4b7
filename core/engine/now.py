"""A session as it stands: what the engine knows of it and what it predicts for the next request.

``estimate`` shows the prediction next to the raw count and ``compact`` decides with it;
``report`` starts its replay from the same kind of prior, leaving the replayed session out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ctxfold.config import Config
from ctxfold.engine.calibration import DEFAULT_CALIBRATOR, Calibrator, Prediction, Prior, make_calibrator
from ctxfold.engine.profile import (
    Observation,
    Profiles,
    default_prior,
    key_for,
    observe_session,
    project_key,
    session_key,
    source_of,
)
from ctxfold.formats.loader import Opened
from ctxfold.tokens.estimate import FileEstimate, estimate_to_dict
from ctxfold.tokens.harness_prompts import HarnessPrompt
from ctxfold.tokens.incremental import count_file


class Estimate(NamedTuple):
    """A session's count now and the engine's prediction of the next request's real size.

    >>> counts, predicted = ctxfold.estimate("fixtures/real/claude-code-sidechains.jsonl")
    >>> counts.format, len(counts.requests), predicted.basis.startswith("last real")
    ('claude-code', 9, True)
    """

    counts: FileEstimate  # ctxfold's count of the context now, by part, and every request's
    predicted: Prediction  # the calibrated real size of the next request

    def to_dict(self, calibration: str = DEFAULT_CALIBRATOR) -> dict[str, Any]:
        """The ``estimate --json`` document of this file."""
        return estimate_doc(self.counts, self.predicted, calibration)


def _key(est: FileEstimate) -> str:
    return key_for(est.format, est.model.name, est.replay.agent)


def _session(est: FileEstimate) -> str:
    """The session's id; a log that records none (a request log) is known by its first real
    counts, so a copy of it under another path is still the same session."""
    session_id = est.replay.session_id
    if not session_id:
        counts = [f"{q.estimate}/{q.real}" for q in est.requests if q.real is not None][:3]
        session_id = f"counts:{','.join(counts)}" if counts else None
    return session_key(est.path, session_id, est.replay.agent)


def _project(est: FileEstimate) -> str | None:
    return project_key(est.replay.project)


def prior_for(est: FileEstimate, profiles: Profiles | None, *, leave_out: bool = False) -> Prior:
    """What is known of a session before its first real count: the measured prompt of the
    harness version that wrote it, plus what the learned profile of its source and model
    (without the session itself when ``leave_out``), else the shipped default, adds to it."""
    return with_prompt(base_prior(est, profiles, leave_out=leave_out), est.harness_prompt)


def base_prior(est: FileEstimate, profiles: Profiles | None, *, leave_out: bool = False) -> Prior:
    """:func:`prior_for` before the measured prompt is added: the profile's answer to
    :func:`profile_question` (or the shipped default)."""
    if profiles is None:
        return default_prior(source_of(est.format, est.replay.agent), est.model.provider)
    return profile_answer(profiles, profile_question(est), leave_out=leave_out)


def profile_question(est: FileEstimate) -> tuple[str, str, str, str | None, str | None]:
    """What the profile is asked about a session: its key, provider, session, project and
    harness prompt family (``Profiles.prior``'s arguments)."""
    family = est.harness_prompt.family if est.harness_prompt else None
    return _key(est), est.model.provider, _session(est), _project(est), family


def profile_answer(profiles: Profiles, question: Sequence[Any], *, leave_out: bool = True) -> Prior:
    """The profile's prior for a :func:`profile_question` (without that session's own values
    when ``leave_out``), as it answers now."""
    key, provider, session, project, family = question
    return profiles.prior(
        key, provider, exclude=session if leave_out else None, project=project, family=family
    )


def with_prompt(prior: Prior, prompt: HarnessPrompt | None) -> Prior:
    """``prior`` with the measured prompt added to its hidden overhead, in the provider's tokens
    (the prior's ratio): the overhead a profile learns is what a session sent beyond it."""
    if prompt is None or not prompt.tokens:
        return prior
    hidden = max(0, prior.overhead + round(prior.ratio * prompt.tokens))
    source = (
        f"{prompt.describe()} sends {prompt.tokens:,} tokens its log leaves out (measured); {prior.source}"
    )
    return Prior(hidden, prior.ratio, source, prior.first_ratio)


def learn_from(profiles: Profiles, est: FileEstimate) -> None:
    """Add one session to the profile; the caller saves it once its run has read every file."""
    taught = lesson(est)
    if taught is not None:
        profiles.learn(*taught)


def lesson(est: FileEstimate) -> tuple[str, str, Observation, str | None, str] | None:
    """What one session teaches the profile (``Profiles.learn``'s arguments), or None. Only
    o200k estimates (the profile is in o200k units), and only under the model that made the
    counts: not when ``--model`` overrides the log's model or a model is merely assumed
    (settings, the harness's provider)."""
    if est.model.tokenizer != "o200k" or est.model_source not in ("log", "--model"):
        return None
    hp = est.harness_prompt
    obs = observe_session(est.requests, est.model.provider, hp.tokens if hp else 0, hp.family if hp else None)
    if obs is None:
        return None
    return _key(est), _session(est), obs, _project(est), est.model.provider


def estimate_session(
    path: str,
    *,
    profiles: Profiles | None = None,
    model: str | None = None,
    tokenizer: str | None = None,
    window: int | None = None,
    fmt: str | None = None,
    skip_invalid: bool = False,
    config: Config | None = None,
    on_progress: Callable[[Opened], None] | None = None,
    cache: bool = False,
) -> Estimate:
    """``estimate``: a file's count, the next request's predicted size, and what it teaches
    ``profiles`` (when given; the caller saves them). ``report_file`` is its replaying twin.
    ``cache``: read on from where an earlier run ended (``tokens/incremental.py``)."""
    est = count_file(
        path,
        model=model,
        tokenizer=tokenizer,
        window=window,
        fmt=fmt,
        skip_invalid=skip_invalid,
        config=config,
        on_progress=on_progress,
        cache=cache,
    )
    return estimate_from(est, profiles)


def estimate_from(est: FileEstimate, profiles: Profiles | None = None) -> Estimate:
    """The engine's half of ``estimate_session``, on a file already counted: the prediction from
    what ``profiles`` knew before, then what the file teaches them. A run over many files counts
    them anywhere (``estimate_file`` is a pure function of the file and the settings) and calls
    this in file order, so the profile evolves as in a serial run."""
    predicted = predict_now(est, prior_for(est, profiles))
    if profiles is not None:
        learn_from(profiles, est)
    return Estimate(est, predicted)


def calibrated(est: FileEstimate, prior: Prior, calibration: str = DEFAULT_CALIBRATOR) -> Calibrator:
    """A calibrator in the state a live engine would be in after the session: fed every real
    count in order and reset at each recorded compaction, ready to predict the next request."""
    cal = make_calibrator(calibration, prior, est.model.tokenizer)
    segment = 0
    for q in est.requests:
        if q.segment != segment:
            cal.reset()
            segment = q.segment
        if q.real is not None:
            cal.observe(q.estimate, q.real, q.server_tools_after)
    if est.replay.segment != segment:
        cal.reset()
    return cal


def predict_now(est: FileEstimate, prior: Prior, calibration: str = DEFAULT_CALIBRATOR) -> Prediction:
    """The real size of the context now, i.e. of the next request."""
    return calibrated(est, prior, calibration).predict(est.context_tokens, est.replay.server_tools)


def estimate_doc(
    est: FileEstimate, predicted: Prediction, calibration: str = DEFAULT_CALIBRATOR
) -> dict[str, Any]:
    """The ``--json`` form of one file's estimate with the engine's prediction (docs/commands.md, "estimate")."""
    doc = estimate_to_dict(est)
    window = est.model.window
    doc["predicted"] = {
        "tokens": predicted.tokens,
        "used_fraction": round(predicted.tokens / window, 4) if window else None,
        "calibration": calibration,
        "factor": round(predicted.factor, 4),
        "basis": predicted.basis,
    }
    return doc
