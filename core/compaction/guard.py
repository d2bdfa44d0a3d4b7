"""``ContextGuard``: the decision engine around each model call, for use in an agent loop.

    guard = ContextGuard(model="claude-sonnet-4-5")
    for step in agent:
        prepared = guard.before_request(events, system=system, tools=tools)
        try:
            response = call_model(prepared.messages)
        except ProviderError as err:
            if guard.on_error(str(err)):   # "prompt is too long: 200819 tokens > 200000"
                continue                    # learned the real count; next call compacts
            raise
        guard.after_response(response.usage.prompt_tokens)

``events`` is the agent's full, append-only history: the guard never asks the caller to
rewrite it. After a compaction it remembers how many events the summary covers (the
watermark) and from then on sends ``[summary] + events[watermark:]``: the seeds' fix for
compaction that "had zero effect in production".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxfold.core.engine.budget import WindowTooSmallError, fit_budget
from ctxfold.core.engine.calibration import DEFAULT_CALIBRATOR, Calibrator, Prediction, Prior, make_calibrator
from ctxfold.core.engine.policy import Policy, make_policy
from ctxfold.core.engine.state import AgentState, MemoryStore, StateStore
from ctxfold.core.formats.base import parse_overflow
from ctxfold.core.providers.base import Summarizer, SummaryResult, budget_summarizer
from ctxfold.core.strategies.summary import fold, summary_message
from ctxfold.core.tokens.counting import Counter
from ctxfold.core.tokens.models import resolve
from ctxfold.core.tokens.tokenizers import get_tokenizer
from ctxfold.core.transcript.model import Message, ToolDef

__all__ = ["ContextGuard", "Decision", "Prepared", "WindowTooSmallError"]


@dataclass(frozen=True)
class Decision:
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


@dataclass(frozen=True)
class Prepared:
    """What to send: the messages (after the watermark and any compaction) and why."""

    messages: list[Message]
    decision: Decision
    compacted: bool = False
    after: Decision | None = None  # the decision on the compacted request
    summary: SummaryResult | None = None


class ContextGuard:
    def __init__(
        self,
        model: str | None = None,
        *,
        window: int | None = None,
        max_tokens: int | None = None,
        buffer: str | int | None = None,
        tokenizer: str | None = None,
        provider: str | None = None,
        calibration: str = DEFAULT_CALIBRATOR,
        prior: Prior | None = None,
        store: StateStore | None = None,
        agent: str = "default",
        summarizer: Summarizer | None = None,
        summarizer_window: int | None = None,
    ) -> None:
        resolved = resolve(model, window=window, tokenizer=tokenizer)
        self.model = resolved
        self.counter = Counter(get_tokenizer(resolved.tokenizer), provider or resolved.provider)
        self.max_tokens, self.buffer = max_tokens, buffer
        self.policy: Policy = make_policy(resolved.window, max_tokens=max_tokens, buffer=buffer)
        self.state = AgentState(store if store is not None else MemoryStore(), agent)
        self.calibrator: Calibrator = make_calibrator(calibration, prior, resolved.tokenizer)
        for est, real in self.state.get("calibration", {}).get("points", []):
            self.calibrator.observe(int(est), int(real))
        self.summarizer = summarizer or budget_summarizer
        self.summarizer_window = (
            summarizer_window or getattr(self.summarizer, "window", None) or resolved.window
        )
        self._forced = False
        self.compactions = 0
        self._cache: dict[int, tuple[Message, int]] = {}
        self._summary: tuple[str, Message] | None = None

    # ------------------------------------------------------------------------ counting

    def fixed_tokens(self, system: Sequence[str], tools: Sequence[ToolDef]) -> int:
        return (
            self.counter.count_system(system)
            + self.counter.count_tools(tools)
            + self.counter.framing.per_request
        )

    def estimate(
        self, messages: Sequence[Message], system: Sequence[str] = (), tools: Sequence[ToolDef] = ()
    ) -> int:
        body = sum(c.total for c in self.counter.count_messages(messages))
        return body + self.fixed_tokens(system, tools)

    def decide(self, estimate: int) -> Decision:
        p: Prediction = self.calibrator.predict(estimate)
        forced = self._forced
        return Decision(
            estimate=estimate,
            predicted=p.tokens,
            threshold=self.policy.threshold,
            window=self.policy.window,
            due=forced or self.policy.due(p.tokens),
            factor=p.factor,
            basis=p.basis,
            first_in_segment=not self.calibrator.history,
            forced=forced,
        )

    # ---------------------------------------------------------------------- the loop

    def view(self, events: Sequence[Message]) -> list[Message]:
        """The events the model should see: the summary replaces what it covers."""
        summary, mark = self.state.summary, self.state.watermark
        if summary is None or mark <= 0 or mark > len(events):
            return list(events)
        if self._summary is None or self._summary[0] != summary:
            self._summary = (summary, summary_message(summary))  # one object: counted once
        return [self._summary[1], *events[mark:]]

    def before_request(
        self,
        events: Sequence[Message],
        system: Sequence[str] = (),
        tools: Sequence[ToolDef] = (),
        *,
        instructions: str | None = None,
    ) -> Prepared:
        messages = self.view(events)
        decision = self.decide(self.estimate(messages, system, tools))
        if not decision.due:
            self.state.set("last_heuristic", decision.estimate)
            return Prepared(messages, decision)
        if self._nothing_to_fold(events):
            if decision.forced:
                raise WindowTooSmallError(
                    f"the provider refused even the compacted request ({self.state.get('real_tokens'):,} tokens "
                    f"in a {self.policy.window:,}-token window): the system prompt and tools alone are too large"
                )
            self.state.set("last_heuristic", decision.estimate)
            return Prepared(messages, decision)  # compacted already; only the provider can tell more
        fixed = self.fixed_tokens(system, tools)
        self.calibrator.reset()  # no stale factor survives a compaction (the seeds' step 6)
        self._forced = False
        budget = fit_budget(self.calibrator, self.policy, fixed, decision.estimate - fixed)
        folded = fold(
            messages,
            counter=self.counter,
            summarizer=self.summarizer,
            budget_tokens=budget,
            summarizer_window=self.summarizer_window,
            instructions=instructions,
        )
        new_estimate = self.estimate(folded.messages, system, tools)
        after = self.decide(new_estimate)
        if after.due or new_estimate >= decision.estimate:
            raise WindowTooSmallError(
                f"the request cannot fit: compacted, it is still predicted at {after.predicted:,} tokens against "
                f"a threshold of {self.policy.threshold:,} in a {self.policy.window:,}-token window (before: "
                f"{decision.predicted:,}); use a model with a larger window or fewer tools"
            )
        self.state.set("summary", folded.summary.text)
        self.state.set("contents_at_compaction", len(events))
        self.state.set("summarized_at", decision.predicted)
        self.state.delete("real_tokens")
        self.state.set("calibration", {"name": self.calibrator.name, "points": []})
        self.state.set("last_heuristic", new_estimate)
        self.compactions += 1
        return Prepared(folded.messages, decision, compacted=True, after=after, summary=folded.summary)

    def _nothing_to_fold(self, events: Sequence[Message]) -> bool:
        """True right after a compaction: no event has arrived since the summary was made."""
        return self.state.summary is not None and self.state.watermark >= len(events)

    def after_response(self, prompt_tokens: int | None, *, final: bool = True) -> None:
        """Record the provider's prompt-token count; streaming partials are ignored."""
        if not final or prompt_tokens is None:
            return
        self._learn(int(prompt_tokens))

    def on_error(self, message: str) -> bool:
        """Learn from a "prompt is too long: N tokens > M maximum" refusal. True when it did:
        the count is recorded, the window shrinks to the stated limit if smaller, and the next
        ``before_request`` compacts whatever the prediction says."""
        parsed = parse_overflow(message)
        if parsed is None:
            return False
        tokens, limit = parsed
        if limit < self.policy.window:
            self.policy = make_policy(limit, max_tokens=None, buffer=self.buffer)
        self._learn(tokens)
        self._forced = True
        return True

    def _learn(self, real: int) -> None:
        last = self.state.get("last_heuristic")
        self.state.set("real_tokens", real)
        if last:
            self.calibrator.observe(int(last), real)
            self.state.set("calibration", {"name": self.calibrator.name, "points": self.calibrator.history})
