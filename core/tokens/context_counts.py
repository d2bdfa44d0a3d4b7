"""The current context's count of each message, kept by column.

A Codex log never compacts, so its context is every message of the session: 53,000 messages in
a 200 MB log. Kept as one object per message (a dict of categories, a preview, an id), they
took about 20 MB, and unpickling them was a quarter of going on from a kept state. Here each
message is a row of arrays (its total, its tokens per category, its role) and its id: about 70
bytes, pickled as bytes.

A report shows the ``LARGEST`` largest messages with a preview of each, so only the previews of
messages that may still be among them are kept. A message with ``LARGEST`` strictly larger
messages after it never is again: whatever is appended comes after those too, and a compaction
that keeps recent messages keeps a suffix, which holds them as well. Ties go to the earlier
message, as ``heapq.nlargest`` orders them. Rows dropped from the middle (a rewind) break that
rule: from then on the largest are ranked among every row, and a row whose preview was let go
shows none.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterator
from typing import Any

from ctxfold.tokens.counting import CATEGORIES, MessageCount

LARGEST = 10  # the most largest messages anyone asks for
PRUNE_EVERY = 4096  # rows appended between two passes that let go of previews
ROLES = ("system", "user", "assistant", "tool")
_CATEGORY = {c: i for i, c in enumerate(CATEGORIES)}
_ROLE = {r: i for i, r in enumerate(ROLES)}
_USER, _TOOL_RESULTS = _ROLE["user"], _CATEGORY["tool_results"]


class ContextCounts:
    """Rows of counts: ``totals[i]``, ``cats[c][i]`` (tokens of ``CATEGORIES[c]``), ``roles[i]``
    (an index into ``ROLES``, then ``other_roles``), ``ids[i]``, and ``previews`` of the rows that
    may be among the largest."""

    __slots__ = (
        "_checked",
        "_greater",
        "cats",
        "ids",
        "other_roles",
        "previews",
        "rewound",
        "roles",
        "totals",
    )

    def __init__(self) -> None:
        self.totals = array("q")
        self.cats = tuple(array("q") for _ in CATEGORIES)
        self.roles = bytearray()
        self.other_roles: list[str] = []  # roles past ROLES (a message built by hand), in order met
        self.ids: list[str | None] = []
        self.previews: dict[int, str] = {}
        # for each row before ``_checked`` whose preview is kept: how many rows after it, up to
        # ``_checked``, are strictly larger (fewer than LARGEST); rows from ``_checked`` on are
        # not looked at yet
        self._greater: dict[int, int] = {}
        self._checked = 0
        self.rewound = False  # rows were dropped: a preview let go may be among the largest

    def __len__(self) -> int:
        return len(self.totals)

    def append(self, mc: MessageCount) -> None:
        by = mc.by_category
        if not by.keys() <= _CATEGORY.keys():  # checked first: a row is appended whole or not at all
            raise ValueError(f"unknown token categories {sorted(by.keys() - _CATEGORY.keys())}")
        i = len(self.totals)
        self.totals.append(mc.total)
        cats = self.cats
        for column in cats:
            column.append(0)
        for c, n in by.items():  # a message has one or two categories of the seven
            cats[_CATEGORY[c]][i] = n
        code = _ROLE.get(mc.role)
        self.roles.append(code if code is not None else self._code(mc.role))
        self.ids.append(mc.id)
        self.previews[i] = mc.preview
        if i + 1 - self._checked >= PRUNE_EVERY:
            self._prune()

    def extend(self, other: ContextCounts) -> None:
        """``other``'s rows after these (the previews it let go stay gone)."""
        n = len(self.totals)
        self.totals.extend(other.totals)
        for mine, theirs in zip(self.cats, other.cats, strict=True):
            mine.extend(theirs)
        if other.other_roles:
            self.roles.extend(self._code(other.role(r)) for r in other.roles)
        else:
            self.roles.extend(other.roles)
        self.ids.extend(other.ids)
        self.previews.update((n + i, p) for i, p in other.previews.items())
        self.rewound = self.rewound or other.rewound

    def suffix(self, start: int) -> ContextCounts:
        """The rows from ``start`` on, as a context of their own."""
        out = ContextCounts()
        out.totals = self.totals[start:]
        out.cats = tuple(column[start:] for column in self.cats)
        out.roles = self.roles[start:]
        out.other_roles = list(self.other_roles)
        out.ids = self.ids[start:]
        out.previews = {i - start: p for i, p in self.previews.items() if i >= start}
        out._greater = {i - start: g for i, g in self._greater.items() if i >= start}
        out._checked = max(0, self._checked - start)
        out.rewound = self.rewound
        return out

    def drop(self, message_ids: set[str], last: int = 0) -> dict[str, int]:
        """Leave out the rows of these messages and the ``last`` rows (a rewind): their tokens
        by category."""
        end = max(0, len(self.ids) - last)
        keep = [i for i, mid in enumerate(self.ids) if i < end and mid not in message_ids]
        gone = [i for i, mid in enumerate(self.ids) if i >= end or mid in message_ids]
        dropped = {c: sum(column[i] for i in gone) for c, column in zip(CATEGORIES, self.cats, strict=True)}
        if not gone:
            return dropped
        self._prune()
        self.totals = array("q", (self.totals[i] for i in keep))
        self.cats = tuple(array("q", (column[i] for i in keep)) for column in self.cats)
        self.roles = bytearray(self.roles[i] for i in keep)
        self.ids = [self.ids[i] for i in keep]
        new = {old: j for j, old in enumerate(keep)}
        self.previews = {new[i]: p for i, p in self.previews.items() if i in new}
        self._greater = {new[i]: g for i, g in self._greater.items() if i in new}
        self._checked = len(self.totals)
        self.rewound = True
        return dropped

    def index(self, message_id: str) -> int | None:
        """The row of the first message with ``message_id``, if any."""
        try:
            return self.ids.index(message_id)
        except ValueError:
            return None

    def sums(self) -> dict[str, int]:
        return {c: sum(column) for c, column in zip(CATEGORIES, self.cats, strict=True)}

    def ends_with_user_turn(self) -> bool:
        """Whether the last message is the user's own (not a tool's result sent as the user)."""
        return bool(self.roles) and self.roles[-1] == _USER and not self.cats[_TOOL_RESULTS][-1]

    def names(self) -> Iterator[tuple[str, str | None]]:
        """Each row's role and id."""
        return zip(map(self.role, self.roles), self.ids, strict=True)

    def role(self, code: int) -> str:
        return ROLES[code] if code < len(ROLES) else self.other_roles[code - len(ROLES)]

    def _code(self, role: str) -> int:
        if role in _ROLE:
            return _ROLE[role]
        if role not in self.other_roles:
            if len(ROLES) + len(self.other_roles) > 255:
                raise ValueError("more than 256 message roles")
            self.other_roles.append(role)
        return len(ROLES) + self.other_roles.index(role)

    def largest(self, n: int) -> list[tuple[int, str, int, str]]:
        """The ``n`` largest rows (``n`` ≤ ``LARGEST``), largest first, ties by position: their
        position, role, total and preview."""
        if n > LARGEST:
            raise ValueError(f"at most the {LARGEST} largest messages are known, not {n}")
        self._prune()
        totals = self.totals
        rows = range(len(totals)) if self.rewound else self.previews
        top = heapq.nsmallest(n, rows, key=lambda i: (-totals[i], i))
        return [(i, self.role(self.roles[i]), totals[i], self.previews.get(i, "")) for i in top]

    def _prune(self) -> None:
        """Let go of the previews of rows with ``LARGEST`` strictly larger rows after them."""
        totals, previews, greater = self.totals, self.previews, self._greater
        start = self._checked
        top: list[int] = []  # the LARGEST largest totals after row j among the new rows (a min-heap)
        for j in range(len(totals) - 1, start - 1, -1):
            t = totals[j]
            if j in previews:
                if len(top) == LARGEST and top[0] > t:
                    del previews[j]
                else:
                    greater[j] = sum(v > t for v in top)
            if len(top) < LARGEST:
                heapq.heappush(top, t)
            elif t > top[0]:
                heapq.heapreplace(top, t)
        if top:
            for i in [i for i in greater if i < start]:
                t = totals[i]
                g = greater[i] + sum(v > t for v in top)
                if g >= LARGEST:
                    del greater[i], previews[i]
                else:
                    greater[i] = g
        self._checked = len(totals)

    def __getstate__(self) -> dict[str, Any]:
        # plain bytes and containers: the count cache rebuilds nothing else (countstore._SAFE)
        self._prune()
        return {
            "totals": self.totals.tobytes(),
            "cats": [column.tobytes() for column in self.cats],
            "roles": bytes(self.roles),
            "other_roles": self.other_roles,
            "ids": self.ids,
            "previews": self.previews,
            "greater": self._greater,
            "rewound": self.rewound,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.totals = _column(state["totals"])
        self.cats = tuple(_column(b) for b in state["cats"])
        self.roles = bytearray(state["roles"])
        self.other_roles = state["other_roles"]
        self.ids = state["ids"]
        self.previews = state["previews"]
        self._greater = state["greater"]
        self.rewound = state["rewound"]
        self._checked = len(self.totals)
        n = len(self.totals)
        if not (
            len(self.cats) == len(CATEGORIES)
            and all(len(c) == n for c in self.cats)
            and len(self.roles) == n == len(self.ids)
            and max(self.roles, default=0) < len(ROLES) + len(self.other_roles)
            and self.previews.keys() == self._greater.keys()
            and all(0 <= i < n for i in self.previews)
        ):
            raise ValueError("the columns of a kept context do not add up")


def _column(data: bytes) -> array[int]:
    column = array("q")
    column.frombytes(data)
    return column
