"""What sessions used, call by call, and its totals by day, project or session
(``report --by``): the tables people keep for their agents' bills (ccusage's daily, project and
session reports), from the same usage records the report prices.

Every billed call counts once: each request's usage and the calls that are no request of the
main context (sub-agents, responses cut short). Tokens are split the way they are billed:
``input`` (not read from or written to the cache), ``cache_write``, ``cache_read``, ``output``.
A call's day is the local date of its timestamp (a timestamp without a zone is taken as local
time); a call the log gives no time is counted under ``unknown``. A session's project is the
working directory its log names, else the folder the file is in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxfold.engine.cost import Call, Cost
from ctxfold.errors import UsageError
from ctxfold.prices import PriceList
from ctxfold.tokens.estimate import FileEstimate

GROUPINGS = ("day", "project", "session")
UNKNOWN_DAY = "unknown"


@dataclass(frozen=True, slots=True)
class Billed:
    """One billed call: its tokens, model and when it was logged."""

    call: Call
    model: str | None
    timestamp: str | None


@dataclass
class Group:
    """The totals of the calls of one day, project or session."""

    key: str
    calls: int = 0
    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    models: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    first: str | None = None  # ISO timestamps of the first and last call, when the log has them
    last: str | None = None
    cost: Cost = field(default_factory=Cost)
    # read once: a group adds thousands of calls (a 200 MB session's, a folder's day)
    _models: set[str] = field(default_factory=set, repr=False, compare=False)
    _sessions: set[str] = field(default_factory=set, repr=False, compare=False)
    _earliest: datetime | None = field(default=None, repr=False, compare=False)  # first's, last's
    _latest: datetime | None = field(default=None, repr=False, compare=False)

    @property
    def total(self) -> int:
        return self.input + self.cache_write + self.cache_read + self.output

    def add(self, b: Billed, session: str, prices: PriceList) -> None:
        self.calls += 1
        self.input += b.call.uncached
        self.cache_write += b.call.cache_write
        self.cache_read += b.call.cache_read
        self.output += b.call.output
        if b.model and b.model not in self._models:
            self._models.add(b.model)
            self.models.append(b.model)
        if session not in self._sessions:
            self._sessions.add(session)
            self.sessions.append(session)
        when = parse_time(b.timestamp) if b.timestamp else None
        if when is not None:
            if self._earliest is None or when < self._earliest:
                self._earliest, self.first = when, b.timestamp
            if self._latest is None or when > self._latest:
                self._latest, self.last = when, b.timestamp
        self.cost.charge(b.call, b.model, prices)

    def to_dict(self) -> dict[str, Any]:
        priced = self.cost.calls - self.cost.unpriced_calls
        return {
            "key": self.key,
            "calls": self.calls,
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cache_write_tokens": self.cache_write,
            "cache_read_tokens": self.cache_read,
            "total_tokens": self.total,
            "cost_usd": round(self.cost.bill.total, 6) if priced else None,
            "unpriced_calls": self.cost.unpriced_calls,
            "unpriced_models": list(self.cost.unpriced_models),
            "models": list(self.models),
            "sessions": len(self.sessions),
            "first": self.first,
            "last": self.last,
        }


def billed(est: FileEstimate) -> Iterator[Billed]:
    """Every billed call of a session, in the log's order."""
    for q in est.requests:
        if q.usage is not None:
            yield Billed(Call.of(q.usage), q.usage.model or q.model or est.model.name, q.timestamp)
    times = est.replay.other_times
    for i, u in enumerate(est.replay.other_calls):
        yield Billed(Call.of(u), u.model or est.model.name, times[i] if i < len(times) else None)


def parse_time(ts: str) -> datetime | None:
    """An ISO 8601 timestamp (``Z`` or an offset; none: local time), as an aware local time."""
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone()  # a naive time is read as local


def day_of(ts: str | None) -> str:
    when = parse_time(ts) if ts else None
    return when.date().isoformat() if when is not None else UNKNOWN_DAY


def project_of(est: FileEstimate) -> str:
    """The working directory the log names, else the folder the file is in."""
    if est.replay.project:
        return est.replay.project
    return str(Path(est.path).resolve().parent) if est.path != "-" else "-"


def session_of(est: FileEstimate) -> str:
    return est.path


@dataclass(frozen=True)
class Sheet:
    """What the usage tables take of one session: its billed calls, the session and project
    they are totalled under, and what to warn of (its warnings, the lines it skipped). Plain
    data: kept from one run to the next by ``report_memo``."""

    session: str
    project: str
    calls: tuple[Billed, ...]
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()


def sheet(est: FileEstimate) -> Sheet:
    return Sheet(
        session_of(est), project_of(est), tuple(billed(est)), tuple(est.warnings), tuple(est.skipped)
    )


def group(sheets: Iterable[Sheet], by: str, prices: PriceList) -> list[Group]:
    """The calls of ``sheets`` totalled per day, project or session: days in date order
    (``unknown`` last), projects and sessions in the order first seen."""
    if by not in GROUPINGS:
        raise UsageError(f"--by takes {', '.join(GROUPINGS)}, not {by!r}")
    groups: dict[str, Group] = {}
    for s in sheets:
        for b in s.calls:
            key = day_of(b.timestamp) if by == "day" else s.project if by == "project" else s.session
            groups.setdefault(key, Group(key)).add(b, s.session, prices)
    out = list(groups.values())
    if by == "day":
        out.sort(key=lambda g: (g.key == UNKNOWN_DAY, g.key))
    return out


def total(groups: Sequence[Group]) -> Group:
    """The sum of ``groups`` (its cost re-priced call by call would be the same: it adds up)."""
    t = Group("total")
    for g in groups:
        t.calls += g.calls
        t.input += g.input
        t.cache_write += g.cache_write
        t.cache_read += g.cache_read
        t.output += g.output
        t.models.extend(m for m in g.models if m not in t.models)
        t.sessions.extend(s for s in g.sessions if s not in t.sessions)
        for ts in (g.first, g.last):
            if ts is None:
                continue
            when = parse_time(ts)
            if t.first is None or (when and when < (parse_time(t.first) or when)):
                t.first = ts
            if t.last is None or (when and when > (parse_time(t.last) or when)):
                t.last = ts
        t.cost.calls += g.cost.calls
        t.cost.unpriced_calls += g.cost.unpriced_calls
        t.cost.unpriced_models.extend(m for m in g.cost.unpriced_models if m not in t.cost.unpriced_models)
        bill, add = t.cost.bill, g.cost.bill
        bill.input += add.input
        bill.cache_write += add.cache_write
        bill.cache_read += add.cache_read
        bill.output += add.output
    return t


def table_doc(estimates: Sequence[FileEstimate], by: str, prices: PriceList) -> dict[str, Any]:
    """``report --by``'s part of the ``--json`` document."""
    groups = group(map(sheet, estimates), by, prices)
    return {"by": by, "rows": [g.to_dict() for g in groups], "total": total(groups).to_dict()}


def session_usage(est: FileEstimate, prices: PriceList) -> dict[str, Any]:
    """One session's totals (its ``report --json`` ``usage``): tokens by how they are billed,
    cost, and the time of its first and last call."""
    g = Group(session_of(est))
    for b in billed(est):
        g.add(b, g.key, prices)
    doc = g.to_dict()
    del doc["key"], doc["sessions"]
    return doc
