"""A session's bill, read off its usage records, and what it would have been had ctxfold
compacted (``report --simulate-compaction``).

The recorded bill prices every billed call once: each request's usage (uncached input, cache
writes at the 5-minute or 1-hour rate, cache reads, output) plus the calls that are no request
of the main context (sub-agents, responses cut short). pi and LiteLLM logs carry their own
cost; the tests check that this one agrees with them.

The simulated bill does not model a prompt cache from scratch: in an agent's session the cache
misses (a pause longer than its lifetime, a changed prefix) move the bill by tens of percent,
and nothing but the log knows where they fell. It starts from the recorded bill, call by call:
what a compaction removed comes off the tokens read from the cache first (the removed history
was the cached prefix), then off the writes (a call that missed the cache wrote it all); a
firing request sends the compacted request instead, its system prompt and tools read from the
cache (they did not change) and the rest written to it (or all sent as plain input where the
session shows no caching), and adds the summarizer's call: its prompt as ctxfold renders it
(tool results elided), priced at the session's own model, the summary budget as its output. Nothing removed, nothing changed:
the simulated bill of a session that never fires is its recorded bill.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ctxfold.engine.replay import Report, Simulation
from ctxfold.prices import Price, PriceList
from ctxfold.tokens.estimate import FileEstimate
from ctxfold.transcript.model import Usage


@dataclass(frozen=True, slots=True)
class Call:
    """One billed call's tokens, by how they are billed."""

    prompt: int
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0  # of cache_write
    output: int = 0

    @classmethod
    def of(cls, u: Usage) -> Call:
        write = min(u.cache_write_tokens, max(u.prompt_tokens - u.cache_read_tokens, 0))
        return cls(
            u.prompt_tokens, u.cache_read_tokens, write, min(u.cache_write_1h_tokens, write), u.output_tokens
        )

    @property
    def uncached(self) -> int:
        return max(self.prompt - self.cache_read - self.cache_write, 0)

    def without(self, n: int) -> Call:
        """The same call with ``n`` fewer prompt tokens: off the cache reads, then the writes,
        then the plain input."""
        read = max(self.cache_read - n, 0)
        n -= self.cache_read - read
        write = max(self.cache_write - n, 0)
        n -= self.cache_write - write
        uncached = max(self.uncached - n, 0)
        return Call(read + write + uncached, read, write, self._hour(write), self.output)

    def _hour(self, write: int) -> int:
        """Of ``write`` tokens written, those kept an hour, in this call's proportion."""
        return round(self.cache_write_1h * write / self.cache_write) if self.cache_write else 0

    def replaced_by(self, prompt: int, prefix: int, *, reads: bool, writes: bool) -> Call:
        """A call sending ``prompt`` tokens instead (a compacted request), of which ``prefix``
        (the system prompt and tools) is unchanged: read from the cache when the session reads
        one; the rest written to it, in this call's 5-minute / 1-hour proportion, when the
        session writes one (else plain input)."""
        read = min(prefix, prompt) if reads else 0
        write = prompt - read if writes else 0
        return Call(prompt, read, write, self._hour(write), self.output)


@dataclass
class Bill:
    """USD, split by what was paid for."""

    input: float = 0.0
    cache_write: float = 0.0
    cache_read: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.cache_write + self.cache_read + self.output

    def add(self, call: Call, p: Price) -> None:
        long = p.long_above is not None and call.prompt > p.long_above
        mi, mo = (p.long_input, p.long_output) if long else (1.0, 1.0)
        five = call.cache_write - call.cache_write_1h
        w5 = p.cache_write if p.cache_write is not None else p.input
        w1h = p.cache_write_1h if p.cache_write_1h is not None else w5
        read = p.cache_read if p.cache_read is not None else p.input
        self.input += call.uncached * p.input * mi / 1e6
        self.cache_write += (five * w5 + call.cache_write_1h * w1h) * mi / 1e6
        self.cache_read += call.cache_read * read * mi / 1e6
        self.output += call.output * p.output * mo / 1e6


@dataclass
class Cost:
    """A priced set of calls, and what could not be priced."""

    bill: Bill = field(default_factory=Bill)
    calls: int = 0
    unpriced_calls: int = 0
    unpriced_models: list[str] = field(default_factory=list)
    prices: dict[str, Price] = field(default_factory=dict)  # model name → the row used
    summarizer: Bill = field(default_factory=Bill)  # of the bill, the summarizer's calls

    def charge(self, call: Call, model: str | None, prices: PriceList, *, summarizer: bool = False) -> None:
        self.calls += 1
        p = prices.price(model)
        if p is None:
            self.unpriced_calls += 1
            name = model or "(no model named)"
            if name not in self.unpriced_models:
                self.unpriced_models.append(name)
            return
        self.prices.setdefault(model or "", p)
        self.bill.add(call, p)
        if summarizer:
            self.summarizer.add(call, p)


def _calls(est: FileEstimate) -> Iterable[tuple[int | None, Call, str | None]]:
    """Every billed call: (request index or None, tokens, model)."""
    for q in est.requests:
        if q.usage is not None:
            yield q.index, Call.of(q.usage), q.usage.model or q.model or est.model.name
    for u in est.replay.other_calls:
        yield None, Call.of(u), u.model or est.model.name


def recorded_cost(est: FileEstimate, prices: PriceList) -> Cost:
    cost = Cost()
    for _, call, model in _calls(est):
        cost.charge(call, model, prices)
    return cost


def simulated_cost(report: Report, prices: PriceList) -> Cost | None:
    """The recorded bill with the simulation's changes (see the module docstring); None when the
    simulation stopped (no compaction fits the session) or was not run."""
    sim: Simulation | None = report.simulation
    if sim is None or sim.cannot_fit_at is not None:
        return None
    est = report.estimate
    reads = any(q.usage.cache_read_tokens for q in est.requests if q.usage)
    writes = any(q.usage.cache_write_tokens for q in est.requests if q.usage)
    cost = Cost()
    for index, call, model in _calls(est):
        fired = sim.fired.get(index) if index is not None else None
        if fired is not None:
            cost.charge(call.replaced_by(fired.sent, fired.prefix, reads=reads, writes=writes), model, prices)
            summarizer = Call(fired.summarizer_input, output=report.policy.summary_budget)
            cost.charge(summarizer, model, prices, summarizer=True)
        elif index in sim.removed:
            cost.charge(call.without(sim.removed[index]), model, prices)
        else:
            cost.charge(call, model, prices)
    return cost
