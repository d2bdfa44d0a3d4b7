"""The summary's output budget, and the error for a window too small for any summary.

Shared by the agent-loop guard and the ``compact`` pipeline, so both size a summary the same way.
"""

from __future__ import annotations

from ctxfold.engine.calibration import Calibrator
from ctxfold.engine.policy import Policy
from ctxfold.errors import WindowTooSmallError

MIN_SUMMARY_TOKENS = 200
CONTINUATION_TOKENS = 100
# the summarizer's instructions and closing lines around the rendered conversation (its system
# prompt is ~450 o200k tokens, the facts it is given a few dozen more; a test keeps this near what
# providers.render builds)
SUMMARY_PROMPT_TOKENS = 500
ROOM = 0.9  # a compacted request must land at most at 90 % of the threshold


def summary_budget(policy_budget: int, folded_tokens: int) -> int:
    """The seeds' ``buffer × 0.5``, but never more than half of what the summary replaces:
    a summary must make the request smaller, whatever forced the compaction."""
    return max(MIN_SUMMARY_TOKENS, min(policy_budget, folded_tokens // 2))


def fit_budget(calibrator: Calibrator, policy: Policy, fixed: int, folded: int) -> int:
    """The summary's output budget: ``buffer × 0.5``, at most half of what it folds, and at most
    what leaves the compacted request at 90 % of the threshold once calibrated. ``calibrator``
    must already be reset (the compacted request is a new segment)."""
    floor = calibrator.predict(fixed + CONTINUATION_TOKENS).tokens
    ratio = max(1.0, calibrator.predict(fixed + CONTINUATION_TOKENS + 1_000).tokens - floor) / 1_000
    room = int((ROOM * policy.threshold - floor) / ratio)
    if room < MIN_SUMMARY_TOKENS:
        raise WindowTooSmallError(
            f"the request cannot fit: the system prompt and tools alone are predicted at {floor:,} tokens "
            f"against a threshold of {policy.threshold:,} in a {policy.window:,}-token window, leaving no "
            "room for a summary; use a model with a larger window or fewer tools"
        )
    return min(summary_budget(policy.summary_budget, folded), room)
