"""Each harness's own auto-compaction rule, to replay a session under it (``report --trigger``).

Every harness compacts by its own rule, on its own count: the usage of the last response, before
the next request. Read from each harness's public source and confirmed against the pinned
binaries by ``bench/harness_triggers.py`` (the counts at which they fired are in the shipped
tables, ``tokens/harnesses/<harness>.json``, key ``trigger``):

* Claude Code: the last response's input (fresh, cache-written and cache-read) plus output
  tokens reach the window less the output it reserves (at most 20,000) less a 13,000-token
  buffer (167,000 of 200,000); ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P`` lowers it to P % of the
  window less the reserve (``claude-code:pct=P``).
* Codex: the last response's input plus output tokens reach 90 % of the context window;
  ``model_auto_compact_token_limit`` can only lower it (``codex:limit=N``).
* pi: the last response's input, output and cache tokens exceed the window less
  ``compaction.reserveTokens`` (16,384; ``pi:reserve=N``), checked when the agent stops.
* Gemini CLI: the last response's prompt tokens reach half of the model's token limit (1,048,576
  for the Gemini models it knows); ``model.compressionThreshold`` sets the fraction
  (``gemini-cli:threshold=F``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ctxfold.errors import UsageError
from ctxfold.names import did_you_mean
from ctxfold.tokens.session import Request
from ctxfold.transcript.model import Usage

CLAUDE_OUTPUT_RESERVE = 20_000
CLAUDE_BUFFER = 13_000
PI_RESERVE = 16_384
GEMINI_TOKEN_LIMIT = 1_048_576
CODEX_EFFECTIVE_PERCENT = 95


@dataclass(frozen=True)
class Trigger:
    """One harness's rule with its setting: when, on which count, it compacts by itself."""

    harness: str
    setting: str | None = None  # the one setting the rule takes: pct, limit, reserve, threshold
    value: float | None = None

    @property
    def default_window(self) -> int:
        return GEMINI_TOKEN_LIMIT if self.harness == "gemini-cli" else 200_000

    def window_for(self, model_window: int, recorded: bool = False) -> int:
        """The window the harness itself counts against: Gemini CLI's own token limit; for
        Codex the model's whole window, which its log records as the 95 % it lets a request
        fill (``effective_context_window_percent``)."""
        if self.harness == "gemini-cli":
            return GEMINI_TOKEN_LIMIT
        if self.harness == "codex" and recorded:
            return round(model_window * 100 / CODEX_EFFECTIVE_PERCENT)
        return model_window

    def threshold(self, window: int) -> int:
        """The count the rule compares with (see ``fires_at`` for strict rules)."""
        h, v = self.harness, self.value
        if h == "claude-code":
            effective = window - CLAUDE_OUTPUT_RESERVE
            default = effective - CLAUDE_BUFFER
            return min(default, int(effective * v / 100)) if v else default
        if h == "codex":
            ninety = window * 9 // 10
            return min(ninety, int(v)) if v else ninety
        if h == "pi":
            return window - int(v if v is not None else PI_RESERVE)
        return math.ceil((v if v is not None else 0.5) * window)

    def fires_at(self, window: int) -> int:
        """The smallest count that makes the harness compact (pi's comparison is strict)."""
        return self.threshold(window) + (1 if self.harness == "pi" else 0)

    @staticmethod
    def count(usage: Usage) -> int:
        """The count every one of these harnesses compares: what the last response read and
        wrote (Gemini CLI reads prompt tokens only, but its output joins the next prompt)."""
        return usage.prompt_tokens + usage.output_tokens

    def name(self) -> str:
        return TRIGGERS[self.harness] + (f" ({self.setting}={_num(self.value)})" if self.setting else "")

    def describe(self, window: int) -> str:
        t = self.fires_at(window)
        if self.harness == "claude-code":
            rule = f"input + output ≥ ({window:,} − {CLAUDE_OUTPUT_RESERVE:,} reserved)"
            rule += f" × {_num(self.value)} %" if self.value else f" − {CLAUDE_BUFFER:,}"
        elif self.harness == "codex":
            rule = "input + output ≥ " + (
                f"min({int(self.value or 0):,}, 90 % of {window:,})" if self.value else f"90 % of {window:,}"
            )
        elif self.harness == "pi":
            reserve = int(self.value if self.value is not None else PI_RESERVE)
            rule = f"input + output + cache > {window:,} − {reserve:,}"
        else:
            rule = f"prompt ≥ {_num(self.value if self.value is not None else 0.5)} × {window:,}"
        return f"{rule} = {t:,}"


TRIGGERS = {"claude-code": "Claude Code", "codex": "Codex", "pi": "pi", "gemini-cli": "Gemini CLI"}
SETTINGS = {"claude-code": "pct", "codex": "limit", "pi": "reserve", "gemini-cli": "threshold"}


def parse_trigger(spec: str) -> Trigger:
    """``NAME`` or ``NAME:SETTING=VALUE`` (``codex:limit=200000``, ``claude-code:pct=80``,
    ``pi:reserve=30000``, ``gemini-cli:threshold=0.7``)."""
    name, _, rest = spec.partition(":")
    if name not in TRIGGERS:
        raise UsageError(f"unknown --trigger {name!r}{did_you_mean(name, list(TRIGGERS))}")
    if not rest:
        return Trigger(name)
    key, _, raw = rest.partition("=")
    want = SETTINGS[name]
    if key != want or not raw:
        raise UsageError(f"--trigger {name} takes one setting, {want}=VALUE (got {rest!r})")
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--trigger {name}:{want} needs a number, not {raw!r}") from None
    bad = (
        (name == "claude-code" and not 0 < value <= 100)
        or (name == "gemini-cli" and not 0 < value <= 1)
        or (name in ("codex", "pi") and value < 0)
    )
    if bad:
        raise UsageError(f"--trigger {name}:{want}={raw} is out of range")
    return Trigger(name, want, value)


def _num(v: float | None) -> str:
    return "" if v is None else (f"{int(v):,}" if v == int(v) and v >= 1000 else f"{v:g}")


@dataclass(frozen=True)
class HarnessFire:
    """A request before which the harness's rule holds: it would have compacted there."""

    request: int
    count: int  # the count it compares: the previous response's usage (+ what followed it)
    real: int | None  # the request's own real count, as recorded


@dataclass(frozen=True)
class TriggerReplay:
    """A recorded session replayed under one harness's rule: where it would compact."""

    trigger: Trigger
    window: int
    fires_at: int
    fires: tuple[HarnessFire, ...]  # the first request of each stretch where the rule holds

    @property
    def first(self) -> HarnessFire | None:
        return self.fires[0] if self.fires else None


# the harnesses that add to the last usage an estimate of what followed it (tool results)
_TRAILING = ("claude-code", "codex")


def replay_trigger(requests: Sequence[Request], trigger: Trigger, window: int) -> TriggerReplay:
    """Where ``trigger``'s harness would compact in this recorded session: before a request whose
    preceding response, by the harness's own count, reached its threshold. pi checks only when
    the agent stops (before the user's next message); the others before every request. After a
    recorded compaction the count starts over, so each stretch has at most one first firing."""
    fires: list[HarnessFire] = []
    fired_segment: int | None = None
    at = trigger.fires_at(window)
    for prev, q in itertools.pairwise(requests):
        # a recorded compaction between them: the harness's count before ``q`` is still the
        # one ``prev`` ended with (this is where its own rule fired, if it was the rule)
        if prev.segment == fired_segment:
            continue
        if prev.real is None or prev.usage is None or prev.real_source != "usage":
            continue
        if trigger.harness == "pi" and not q.turn_start:
            continue
        count = trigger.count(prev.usage)
        if trigger.harness in _TRAILING and q.segment == prev.segment:
            count += max(0, q.estimate - prev.estimate - prev.usage.output_tokens)
        if count >= at:
            fires.append(HarnessFire(q.index, count, q.real))
            fired_segment = prev.segment
    return TriggerReplay(trigger, window, at, tuple(fires))
