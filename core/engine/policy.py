"""The threshold rule of the ContextGuard reference design: when is compaction due, and how big
may a summary be; and :func:`decide`, the one place a prediction meets the rule (``report``'s
replay, ``compact`` and ``ContextGuard`` all decide through it).

``buffer = 20,000`` for windows of 200,000 tokens or more (the seeds' off-by-one fix: ``>=``),
else 20 % of the window; ``threshold = window − buffer``; the summary's output budget is
``buffer × 0.5``. ``max_tokens`` (the seeds' ``WithMaxTokens``) replaces the window for the
rule, and ``buffer`` may be set explicitly as tokens or a percentage.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxfold.engine.calibration import Calibrator
from ctxfold.errors import UsageError

LARGE_WINDOW = 200_000
FIXED_BUFFER = 20_000
SMALL_WINDOW_BUFFER_RATIO = 0.20
SUMMARY_BUDGET_RATIO = 0.50


@dataclass(frozen=True, slots=True)
class Policy:
    window: int
    buffer: int
    buffer_rule: str  # how the buffer was chosen, for --explain
    window_source: str | None = None  # "--max-tokens" when it replaced the model's window

    @property
    def threshold(self) -> int:
        return self.window - self.buffer

    @property
    def summary_budget(self) -> int:
        return int(self.buffer * SUMMARY_BUDGET_RATIO)

    def due(self, tokens: int) -> bool:
        """Compaction is due when the predicted request reaches the threshold."""
        return tokens >= self.threshold


def compute_buffer(window: int) -> tuple[int, str]:
    if window >= LARGE_WINDOW:
        return FIXED_BUFFER, f"fixed {FIXED_BUFFER:,} (window ≥ {LARGE_WINDOW:,})"
    return int(window * SMALL_WINDOW_BUFFER_RATIO), f"20% of the window (window < {LARGE_WINDOW:,})"


def parse_buffer(text: str, window: int) -> int:
    """``"15000"`` → 15000; ``"12.5%"`` → 12.5 % of the window."""
    t = text.strip()
    try:
        value = (
            int(window * float(t[:-1]) / 100) if t.endswith("%") else int(t.replace(",", "").replace("_", ""))
        )
    except ValueError:
        raise UsageError(f"the buffer must be a token count or a percentage, not {text!r}") from None
    if not 0 <= value < window:
        raise UsageError(f"a buffer of {text} must leave room in a {window:,}-token window")
    return value


def make_policy(window: int, *, max_tokens: int | None = None, buffer: str | int | None = None) -> Policy:
    effective = max_tokens or window
    if effective <= 0:
        raise UsageError("the context window must be positive")
    if buffer is None:
        size, rule = compute_buffer(effective)
    elif isinstance(buffer, int):
        if not 0 <= buffer < effective:
            raise UsageError(f"a buffer of {buffer:,} tokens must leave room in a {effective:,}-token window")
        size, rule = buffer, "set explicitly"
    else:
        size, rule = parse_buffer(buffer, effective), f"set explicitly ({buffer})"
    return Policy(effective, size, rule, "--max-tokens" if max_tokens else None)


@dataclass(frozen=True)
class Decision:
    """Whether a request is due for compaction, with the numbers behind it.

    >>> d = ctxfold.ContextGuard("claude-sonnet-4-5").decide(150_000)
    >>> d.threshold, d.predicted, d.due
    (180000, 195000, True)
    """

    estimate: int  # tokens ctxfold counted in the request
    predicted: int  # the calibrated prediction the decision used
    threshold: int
    window: int
    due: bool
    factor: float
    basis: str
    first_in_segment: bool  # no real count of this segment to calibrate with
    forced: bool = False  # due because the provider refused the last request as too long

    @property
    def margin(self) -> int:
        return self.threshold - self.predicted


def decide(
    calibrator: Calibrator, policy: Policy, estimate: int, *, forced: bool = False, server_tools: int = 0
) -> Decision:
    """Predict the real size of a request of ``estimate`` counted tokens and hold it against
    the threshold; ``forced`` (a refusal as too long) makes it due whatever the prediction.
    ``server_tools``: the server-side tool calls (web searches) in its context, whose results
    the count does not hold."""
    p = calibrator.predict(estimate, server_tools)
    return Decision(
        estimate=estimate,
        predicted=p.tokens,
        threshold=policy.threshold,
        window=policy.window,
        due=forced or policy.due(p.tokens),
        factor=p.factor,
        basis=p.basis,
        first_in_segment=not calibrator.history,
        forced=forced,
    )
