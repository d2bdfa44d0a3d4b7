"""The learned sessions of a profile, grouped as ``Profiles.prior`` asks for them.

A prior is a median over the sessions of one scope (a project, a model family, a log format,
a provider), leaving out the session being predicted. A folder's report asks for one per file
and learns one session after each: scanning every session of the format each time cost 0.45 ms
a file with a full profile (2,000 logs: 1.8 s in all, against 0.85 s without the profile). Here
each scope asked about keeps its sessions' values sorted, kept up to date as sessions are
learned and forgotten, so a median leaving one session out is a lookup.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from ctxfold.tokens.models import lookup

FIELDS = ("overhead", "ratio", "first", "server_tool")
Values = tuple[float, float, float, float | None]  # a session's, by FIELDS (server_tool may be absent)
Scope = tuple[str, ...]  # ("format", fmt, provider), ("key", key, provider), ("project", fmt,
# provider, project), ("family", fmt, provider, family), ("provider", provider)


def values_of(v: dict[str, Any]) -> Values:
    server = v.get("server_tool")
    return (
        v["overhead"],
        v["ratio"],
        v.get("first_ratio", v["ratio"]),
        server if isinstance(server, (int, float)) else None,
    )


class Bucket:
    """The sessions of one scope: each field's values sorted, and each session's own values
    (a session id may be learned under two keys of a scope)."""

    def __init__(self) -> None:
        self.sorted: list[list[float]] = [[] for _ in FIELDS]
        self.members: dict[str, list[Values]] = {}
        self.size = 0

    def add(self, session: str, values: Values) -> None:
        self.members.setdefault(session, []).append(values)
        self.size += 1
        for column, x in zip(self.sorted, values, strict=True):
            if x is not None:
                bisect.insort(column, x)

    def remove(self, session: str, values: Values) -> None:
        mine = self.members[session]
        mine.remove(values)
        if not mine:
            del self.members[session]
        self.size -= 1
        for column, x in zip(self.sorted, values, strict=True):
            if x is not None:
                del column[bisect.bisect_left(column, x)]

    def count(self, exclude: str | None, field: str | None = None) -> int:
        """Sessions (with a value of ``field``, when given) other than ``exclude``."""
        out = self.size if field is None else len(self.sorted[FIELDS.index(field)])
        left_out = self.members.get(exclude) if exclude is not None else None
        if left_out:
            i = None if field is None else FIELDS.index(field)
            out -= sum(1 for vals in left_out if i is None or vals[i] is not None)
        return out

    def median(self, field: str, exclude: str | None) -> float:
        """The median of ``field`` over the sessions other than ``exclude`` (as
        ``calibration.median`` gives it: the mean of the middle two of an even count)."""
        i = FIELDS.index(field)
        column = self.sorted[i]
        left_out = self.members.get(exclude) if exclude is not None else None
        gone = [x for vals in left_out or () if (x := vals[i]) is not None]
        if len(gone) > 1:  # (the same session under two keys of the scope: seldom)
            column = list(column)
            for x in gone:
                del column[bisect.bisect_left(column, x)]
            gone = []
        n = len(column) - len(gone)
        if n <= 0:
            raise ValueError("no median of no values")
        skip = bisect.bisect_left(column, gone[0]) if gone else n + 1

        def at(j: int) -> float:
            return column[j if j < skip else j + 1]

        mid = n // 2
        return at(mid) if n % 2 else (at(mid - 1) + at(mid)) / 2


class ProfileIndex:
    """Buckets of the scopes asked about, over one profile table (``Profiles.profiles``), kept
    up to date by :meth:`changed`. A table changed otherwise (a key's sessions replaced) is told
    by :meth:`fits`, and the index is then built again."""

    def __init__(self, profiles: dict[str, dict[str, Any]]) -> None:
        self.profiles = profiles
        self.buckets: dict[Scope, Bucket] = {}
        self.providers: dict[str, str | None] = {}  # a key's model family's provider
        self.shape = self._shape()

    def _shape(self) -> tuple[Any, ...]:
        return tuple(
            (k, id(e), id(e.get("sessions")), len(e.get("sessions", ()))) for k, e in self.profiles.items()
        )

    def fits(self, profiles: dict[str, dict[str, Any]]) -> bool:
        return profiles is self.profiles and self._shape() == self.shape

    def bucket(self, scope: Scope) -> Bucket:
        found = self.buckets.get(scope)
        if found is None:
            found = self.buckets[scope] = Bucket()
            test = self._test(scope)
            for key, session, v, provider in self._sessions():
                if test(key, v, provider):
                    found.add(session, values_of(v))
        return found

    def changed(self, key: str, session: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Session ``session`` of ``key`` went from ``old`` to ``new`` (None: absent)."""
        if old is not None:
            for b in self._holding(key, old):
                b.remove(session, values_of(old))
        if new is not None:
            for b in self._holding(key, new):
                b.add(session, values_of(new))

    def _holding(self, key: str, v: dict[str, Any]) -> Iterator[Bucket]:
        """The buckets made so far whose scope holds session ``v`` of ``key`` (as ``_test``
        tells), looked up by the scopes it can be in, not by testing every bucket."""
        provider = self.provider(key, v)
        # a session of no known provider is in the scopes of every provider asked about
        providers = [provider] if provider is not None else {s[2] for s in self.buckets if s[0] != "provider"}
        fmt = key.split("|", 1)[0] if "|" in key else None
        scopes: list[Scope] = [("provider", provider)] if provider is not None else []
        for p in providers:
            scopes.append(("key", key, p))
            if fmt is not None:
                scopes.append(("format", fmt, p))
                scopes.extend(
                    (kind, fmt, p, v[kind]) for kind in ("project", "family") if isinstance(v.get(kind), str)
                )
        for scope in scopes:
            b = self.buckets.get(scope)
            if b is not None:
                yield b

    def settled(self) -> None:
        """The table's keys and sizes are as :meth:`changed` left them."""
        self.shape = self._shape()

    def provider(self, key: str, session: dict[str, Any]) -> str | None:
        """``profile.provider_of``, the lookup of a key's model family done once per key."""
        stored = session.get("provider")
        if isinstance(stored, str):
            return stored
        if key not in self.providers:
            info = lookup(key.split("|", 1)[-1])
            self.providers[key] = info.provider if info else None
        return self.providers[key]

    def _sessions(self) -> Iterator[tuple[str, str, dict[str, Any], str | None]]:
        for key, entry in self.profiles.items():
            for session, v in entry.get("sessions", {}).items():
                yield key, session, v, self.provider(key, v)

    @staticmethod
    def _test(scope: Scope) -> Callable[[str, dict[str, Any], str | None], bool]:
        """Whether a session (its key, values and provider) is in ``scope``. Counts are in the
        provider's tokens: a format that carries any model (a request log, ctxfold's own) must
        not lend one provider's ratio to another's (a session of no known provider lends to all)."""
        kind, rest = scope[0], scope[1:]
        if kind == "provider":
            return lambda key, v, p: p == rest[0]
        if kind == "key":
            return lambda key, v, p: key == rest[0] and p in (rest[1], None)
        fmt, provider = rest[0], rest[1]

        def same_format(key: str, p: str | None) -> bool:
            return p in (provider, None) and key.startswith(fmt + "|")

        if kind == "format":
            return lambda key, v, p: same_format(key, p)
        field = {"project": "project", "family": "family"}[kind]
        return lambda key, v, p: same_format(key, p) and v.get(field) == rest[2]
