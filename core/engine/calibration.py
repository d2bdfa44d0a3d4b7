"""Calibrators: turn ctxfold's estimate of a request into a prediction of the real count.

All share one small interface. ``observe`` is fed each (estimate, real) pair as the provider
reports it; ``predict`` is asked before the next request; ``reset`` runs after a compaction,
so a stale factor can never cause a compaction loop (the seeds' step 6).

* ``seed`` – the reference plugin's rule, unchanged: ``correction = clamp(real_prev /
  estimate_prev, 1, 5)``, ``max(real_prev, estimate × correction)``, and ``estimate ×
  default_factor`` before any real count.
* ``growth`` – trust the last real count and add the growth since then, tokenized and scaled
  by the model's tokenizer ratio (real tokens per estimated token), learned from the session's
  own real counts (its slope), starting from the provider's or the profile's ratio.
* ``affine`` – least-squares fit ``real ≈ a + b·estimate`` over the segment, which absorbs a
  hidden system prompt and tool schemas (``a``) and the tokenizer ratio (``b``).

Before the first real count of a segment every calibrator but ``seed`` uses the profile's
``overhead + ratio × estimate`` (hidden prompt and tokenizer ratio learned per log source and
model), else the provider default.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ctxfold.errors import UsageError
from ctxfold.names import did_you_mean

if TYPE_CHECKING:
    from ctxfold.config import Config

MIN_FACTOR, MAX_FACTOR = 1.0, 5.0
# Real tokens per o200k token, by provider, when nothing better is known. Measured on the real
# fixtures' growth between consecutive requests (Claude Code, pi, LiteLLM: 1.2–1.35 per token;
# Codex: 1.0). Llama 4 (the only "meta" models known) has a 202k-token BPE vocabulary, o200k's
# size, so its counts are close (1.03 on the OpenHands log). Used for growth only; the hidden
# overhead comes from the profile.
PROVIDER_RATIO = {"anthropic": 1.3, "openai": 1.0, "google": 1.1, "meta": 1.05, "other": 1.15}
MIN_RATIO, MAX_RATIO = 0.8, 5.0  # 5.0: the seeds' cap on a correction factor
SLOPE_MIN_SPAN = 2_000  # estimated tokens of growth before a session's own slope is trusted
SLOPE_MIN_STEP = 500  # smaller steps are mostly framing and rounding: too noisy to read a ratio off
VISIBLE_SHARE = 0.25  # a single point speaks for the ratio only if this much of it is visible


@dataclass(frozen=True, slots=True)
class Prediction:
    tokens: int
    factor: float  # the multiplier applied to the estimate (or to the growth)
    basis: str  # how the number was reached, for --explain


@dataclass(frozen=True, slots=True)
class Prior:
    """What is known before the first real count: hidden overhead and tokenizer ratio.

    ``first_ratio`` is set when a first request showed everything it sent and counted less
    than ``ratio ×`` its estimate (a request log: system prompt and tool schemas tokenize
    closer to o200k than the conversation that grows after them). The first request is then
    predicted as ``estimate × first_ratio``; growth still uses ``ratio``.
    """

    overhead: int = 0
    ratio: float = 1.0
    source: str = "provider default"
    first_ratio: float | None = None
    # real tokens one server-side tool call adds that the log does not show (a web search's
    # results): learned from the jumps such calls caused, in this session or others of its source
    server_tool: int = 0

    @property
    def first(self) -> float:
        return self.ratio if self.first_ratio is None else self.first_ratio


def slope(points: Sequence[tuple[int, int]], server: Sequence[int] = ()) -> float | None:
    """Real tokens per estimated token over a run of (estimate, real) points, once they span
    ``SLOPE_MIN_SPAN``: the median of the ratios of the steps of at least ``SLOPE_MIN_STEP``
    (leaving out the steps over which server-side tool calls were made: ``server`` holds each
    point's count of them, whose results are a bump, not the tokenizer).

    A median, because content the log does not show comes in bumps (a Codex web search's results,
    injected server-side, add 8.6k real tokens to one step): the first-to-last slope would read
    such a bump as the tokenizer's ratio for the rest of the session (+40 % on a later request),
    while it is already in the last real count the prediction starts from.
    """
    return _Steps.of(points, server).slope(points)


class _Steps:
    """The steps between consecutive points, with what ``slope`` reads off them kept up to date
    as points come and go (a replay asks for the slope at every request of a long session:
    12,900 times for a 200 MB one): the ratios of the steps it takes, sorted, and the growth of
    the steps without server-side calls, summed."""

    __slots__ = ("gained", "grown", "ratios", "steps")

    def __init__(self) -> None:
        self.steps: list[tuple[int, int, bool]] = []  # estimate's growth, real's, no server call
        self.ratios: list[float] = []
        self.grown = self.gained = 0

    @classmethod
    def of(cls, points: Sequence[tuple[int, int]], server: Sequence[int]) -> _Steps:
        calls = list(server) if len(server) == len(points) else [0] * len(points)
        out = cls()
        out.steps = steps = [
            (points[i + 1][0] - points[i][0], points[i + 1][1] - points[i][1], calls[i] == calls[i + 1])
            for i in range(len(points) - 1)
        ]
        out.ratios = sorted(dr / de for de, dr, clean in steps if clean and de >= SLOPE_MIN_STEP)
        out.grown = sum(de for de, _, clean in steps if clean)
        out.gained = sum(dr for _, dr, clean in steps if clean)
        return out

    def add(self, p0: tuple[int, int], p1: tuple[int, int], k0: int, k1: int, at: int | None = None) -> None:
        step = (p1[0] - p0[0], p1[1] - p0[1], k0 == k1)
        self.steps.insert(len(self.steps) if at is None else at, step)
        self._count(step, 1)

    def drop_first(self) -> None:
        self._count(self.steps.pop(0), -1)

    def _count(self, step: tuple[int, int, bool], sign: int) -> None:
        de, dr, clean = step
        if not clean:
            return
        self.grown += sign * de
        self.gained += sign * dr
        if de >= SLOPE_MIN_STEP:
            if sign > 0:
                bisect.insort(self.ratios, dr / de)
            else:
                del self.ratios[bisect.bisect_left(self.ratios, dr / de)]

    def slope(self, points: Sequence[tuple[int, int]]) -> float | None:
        if len(points) < 2 or points[-1][0] - points[0][0] < SLOPE_MIN_SPAN:
            return None
        data, n = self.ratios, len(self.ratios)
        if n:  # their median (``median``'s, from values sorted already)
            ratio = data[n // 2] if n % 2 else (data[n // 2 - 1] + data[n // 2]) / 2
        else:  # only small steps: the run as a whole, without the steps over server-side calls
            if self.grown < SLOPE_MIN_STEP:
                return None
            ratio = self.gained / self.grown
        return min(MAX_RATIO, max(MIN_RATIO, ratio))


def split_first(estimate: int, real: int, ratio: float) -> tuple[int, float | None]:
    """A first request's (hidden overhead, first-request ratio): what ``ratio`` leaves over is
    hidden; when it leaves less than nothing, nothing was hidden and the request's own ratio
    is kept instead."""
    hidden = real - ratio * estimate
    if hidden >= 0 or estimate <= 0:
        return int(hidden), None
    return 0, round(real / estimate, 4)


class Calibrator(Protocol):
    name: str
    prior: Prior
    history: list[tuple[int, int]]

    def predict(self, estimate: int, server_tools: int = 0) -> Prediction: ...

    def observe(self, estimate: int, real: int, server_tools: int = 0) -> None: ...

    def reset(self) -> None: ...


HISTORY_KEEP = 32  # first point + the latest ones: enough for slopes and fits, bounded state


@dataclass
class _Base:
    """(estimate, real) points of the current segment, bounded, with the number of server-side
    tool calls (web searches) the context held at each; what each such call was seen to add; and
    the smallest real count of the session (every request sends the system prompt and tools:
    none is smaller than them)."""

    prior: Prior = field(default_factory=Prior)
    history: list[tuple[int, int]] = field(default_factory=list)
    server: list[int] = field(default_factory=list)
    per_call: list[int] = field(default_factory=list)  # real tokens each server call added, as seen
    smallest: int | None = None  # kept across compactions: it is the session's
    # the steps between the points, and copies of the points and server counts they are the
    # steps of (the lists are public: points changed elsewhere are stepped afresh), kept as points
    # come and go while a slope is asked for between them (a replay asks at every request of a
    # long session: 12,900 times for a 200 MB one; an estimate once, at the end)
    _steps: _Steps = field(default_factory=_Steps, init=False, repr=False, compare=False)
    _stepped: tuple[list[tuple[int, int]], list[int]] = field(
        default_factory=lambda: ([], []), init=False, repr=False, compare=False
    )
    _asked: bool = field(default=False, init=False, repr=False, compare=False)

    def observe(self, estimate: int, real: int, server_tools: int = 0) -> None:
        h, s = self.history, self.server
        if h and len(s) == len(h) and server_tools > s[-1]:
            self._learn_call(estimate, real, server_tools)
        # kept up to date only between asks (a replay's predict, observe, predict...); after a
        # run of observations with no slope asked for (an estimate's), stepped afresh at the ask
        kept = self._asked and self._kept()
        self._asked = False
        h.append((estimate, real))
        s.append(server_tools)
        if kept:
            points, calls = self._stepped
            points.append(h[-1])
            calls.append(server_tools)
            steps = self._steps
            steps.add(h[-2], h[-1], s[-2], s[-1])
            if len(h) > HISTORY_KEEP:
                steps.drop_first()  # the first two steps become one
                steps.drop_first()
                steps.add(h[0], h[2], s[0], s[2], at=0)
                del points[1]
                del calls[1]
        if len(h) > HISTORY_KEEP:
            del h[1]
            del s[1]
        self.smallest = real if self.smallest is None else min(self.smallest, real)

    def _kept(self) -> bool:
        """Whether ``_steps`` are the steps of the points as they are (with a server count for
        each point: ``slope`` reads none otherwise), and there are points to step on from."""
        points, calls = self._stepped
        return bool(points) and points == self.history and calls == self.server

    def session_slope(self) -> float | None:
        """``slope(self.history, self.server)``, from the steps kept."""
        h, s = self.history, self.server
        self._asked = True
        if not self._kept():
            self._steps = _Steps.of(h, s)
            self._stepped = (list(h), list(s)) if len(h) == len(s) else ([], [])
        return self._steps.slope(h)

    def _learn_call(self, estimate: int, real: int, calls: int) -> None:
        """A step over which server-side tools ran: what it added beyond the tokenizer's growth
        is their results (the log shows only the call), per call."""
        (e0, r0), k0 = self.history[-1], self.server[-1]
        ratio = self.session_slope() or self.prior.ratio
        excess = (real - r0) - ratio * (estimate - e0)
        self.per_call.append(round(excess / (calls - k0)))
        del self.per_call[:-HISTORY_KEEP]

    def server_tool(self) -> int:
        """Real tokens a server-side tool call adds: the session's median, else the prior's."""
        return max(0, int(median(self.per_call))) if self.per_call else self.prior.server_tool

    def reset(self) -> None:
        self.history.clear()
        self.server.clear()


@dataclass
class SeedCalibrator(_Base):
    """The seeds' rule, exactly: the prior's ratio is the seed's default factor."""

    name: str = "seed"

    def predict(self, estimate: int, server_tools: int = 0) -> Prediction:
        if not self.history or not self.history[-1][0]:
            f = self.prior.ratio
            return Prediction(int(estimate * f), f, f"no real count yet: estimate × default factor {f}")
        last_estimate, real = self.history[-1]
        correction = min(MAX_FACTOR, max(MIN_FACTOR, real / last_estimate))
        calibrated = int(estimate * correction)
        basis = (
            f"correction = clamp({real:,} / {last_estimate:,}, 1, 5) = {correction:.3f}; "
            f"max(real {real:,}, {estimate:,} × {correction:.3f})"
        )
        return Prediction(max(real, calibrated), correction, basis)


@dataclass
class GrowthCalibrator(_Base):
    """Last real count + tokenized growth × the session's tokenizer ratio.

    After a compaction the points are dropped (no stale factor survives), but what they taught
    is kept as the next segment's prior: the line through the segment's first and latest real
    counts, i.e. the ratio over the whole segment and the hidden overhead of its first request
    (``real − ratio × estimate``): the system prompt and tools the log does not show, before
    anything else hidden (such as encrypted reasoning) had piled up. (The ratio of the latest
    steps alone, paired with the first point, read 8.3k of "hidden" prompt off a pi segment
    whose system prompt is 2.5k.) That reading never exceeds the session's smallest real count:
    every request sends the system prompt and tools, so none is smaller than all of them. A
    segment whose first count is far more than the log shows (an overflow error's count, or a
    compaction whose kept messages were not read) would otherwise pass for a hidden prompt of
    hundreds of thousands of tokens, and ``compact`` would refuse any fold as not fitting.
    """

    name: str = "growth"

    def ratio(self) -> tuple[float, str]:
        """The session's slope once its points span enough growth. Before that, one point
        cannot tell hidden overhead from tokenizer ratio; of the two readings the larger ratio
        is taken (the prior's, or the point's own after the prior's overhead), because an
        underestimate is the mistake that overflows the window. The point's own reading is used
        only when the log shows a fair share of what was counted: a 50-token estimate against
        26k real tokens says nothing about a ratio, only about a hidden prompt."""
        session = self.session_slope()
        if session is not None:
            return session, "session slope"
        if self.history and 0 < self.history[-1][0] >= VISIBLE_SHARE * self.history[-1][1]:
            e, r = self.history[-1]
            point = min(MAX_RATIO, (r - self.prior.overhead) / e)
            if point > self.prior.ratio:
                return point, "last real count over the prior's hidden overhead"
        return self.prior.ratio, self.prior.source

    def predict(self, estimate: int, server_tools: int = 0) -> Prediction:
        if not self.history:
            return _from_prior(self.prior, estimate, server_tools)
        last_est, last_real = self.history[-1]
        ratio, why = self.ratio()
        growth = estimate - last_est
        tokens = max(0, int(last_real + growth * ratio))
        basis = f"last real {last_real:,} + growth {growth:,} × ratio {ratio:.3f} ({why})"
        new_calls = server_tools - (self.server[-1] if self.server else 0)
        if new_calls > 0 and self.server_tool():
            tokens += new_calls * self.server_tool()
            basis += (
                f" + {new_calls} server-side tool call(s) × {self.server_tool():,} (their results, unlogged)"
            )
        return Prediction(tokens, ratio, basis)

    def reset(self) -> None:
        if self.history:
            ratio, _ = self.ratio()
            (e0, r0), (e1, r1) = self.history[0], self.history[-1]
            if e1 - e0 >= SLOPE_MIN_SPAN:  # the line through the segment's first and latest counts
                ratio = min(MAX_RATIO, max(MIN_RATIO, (r1 - r0) / (e1 - e0)))
            hidden, first = split_first(e0, r0, ratio)
            if self.smallest is not None:
                hidden = min(hidden, self.smallest)
            learned = "learned before the last compaction"
            self.prior = Prior(max(0, hidden), ratio, learned, first, self.server_tool())
        super().reset()


@dataclass
class AffineCalibrator(GrowthCalibrator):
    """``real ≈ a + b·estimate`` fitted over the segment; growth until the points span enough."""

    name: str = "affine"

    def predict(self, estimate: int, server_tools: int = 0) -> Prediction:
        fit = _fit(self.history)
        if fit is None:
            return super().predict(estimate, server_tools)
        a, b = fit
        return Prediction(
            int(a + b * estimate), b, f"fit real ≈ {a:,.0f} + {b:.3f} × estimate over {len(self.history)}"
        )


def _fit(points: list[tuple[int, int]]) -> tuple[float, float] | None:
    if len(points) < 2 or points[-1][0] - points[0][0] < SLOPE_MIN_SPAN:
        return None
    n = len(points)
    mx = sum(e for e, _ in points) / n
    my = sum(r for _, r in points) / n
    sxx = sum((e - mx) ** 2 for e, _ in points)
    if sxx <= 0:
        return None
    b = min(MAX_RATIO, max(MIN_RATIO, sum((e - mx) * (r - my) for e, r in points) / sxx))
    return my - b * mx, b


def _from_prior(prior: Prior, estimate: int, server_tools: int = 0) -> Prediction:
    tokens = int(prior.overhead + estimate * prior.first)
    basis = f"no real count yet: hidden {prior.overhead:,} + estimate × {prior.first:.3f} ({prior.source})"
    if server_tools and prior.server_tool:
        tokens += server_tools * prior.server_tool
        basis += f" + {server_tools} server-side tool call(s) × {prior.server_tool:,}"
    return Prediction(tokens, prior.first, basis)


SEED_DEFAULT_FACTOR = {"heuristic": 2.5, "o200k": 1.5, "cl100k": 1.5}

CALIBRATORS: dict[str, Callable[[Prior, str], Calibrator]] = {
    "growth": lambda prior, tokenizer: GrowthCalibrator(prior),
    "affine": lambda prior, tokenizer: AffineCalibrator(prior),
    "seed": lambda prior, tokenizer: SeedCalibrator(
        Prior(0, SEED_DEFAULT_FACTOR.get(tokenizer, 2.5), "seed default")
    ),
}
DEFAULT_CALIBRATOR = "growth"


def report_tokenizer(calibration: str, tokenizer: str | None, config: Config | None) -> str | None:
    """The tokenizer a report counts with: the seed rule is defined on len/4, unless one was chosen."""
    from ctxfold.config import Config  # here: the statusline imports this module, not the settings
    from ctxfold.settings import setting

    if calibration == "seed" and setting("tokenizer", tokenizer, config or Config()).source == "default":
        return "heuristic"
    return tokenizer


def make_calibrator(name: str, prior: Prior | None = None, tokenizer: str = "o200k") -> Calibrator:
    if name not in CALIBRATORS:
        raise UsageError(f"unknown calibration {name!r}{did_you_mean(name, list(CALIBRATORS))}")
    return CALIBRATORS[name](prior or Prior(), tokenizer)


def median(values: Iterable[float]) -> float:
    """The median as ``statistics.median`` gives it (an even count: the mean of the middle two),
    without importing ``statistics``: its decimal, fractions and random cost the statusline,
    which calibrates at every run, 3 ms."""
    data = sorted(values)
    n = len(data)
    if not n:
        raise ValueError("no median of no values")
    mid = n // 2
    return data[mid] if n % 2 else (data[mid - 1] + data[mid]) / 2
