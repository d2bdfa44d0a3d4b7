"""``validate``: check a transcript against its format's rules, violation by violation, with lines.

Generic rules hold in every format (a tool result answers an earlier call of the same branch;
call ids are unique; a call is answered before the next user turn); each format's writer module
adds its API's own rules (``check(items)`` on the entries read back, and/or ``check_file(path)``
on the raw lines). A file that cannot be read at all is one violation at its bad line.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxfold.errors import InputError, LineError
from ctxfold.formats.loader import LEFT_OUT, Opened, open_transcript
from ctxfold.formats.registry import WRITERS
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextReset,
    Entry,
    Message,
    Rewind,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)


@dataclass(frozen=True, order=True)
class Violation:
    line: int
    message: str


@dataclass(frozen=True)
class Validation:
    path: str
    format: str | None
    entries: int
    violations: list[Violation]
    warnings: list[str] = field(default_factory=list)  # a half-written last line, left out
    skipped: list[str] = field(default_factory=list)  # bad lines passed over (skip_invalid)
    unread_from: int | None = None  # the bad line reading stopped at: nothing after it was checked

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        """This file's entry in ``validate --json``."""
        return {
            "path": self.path,
            "format": self.format,
            "entries": self.entries,
            "ok": self.ok,
            "violations": [{"line": x.line, "message": x.message} for x in self.violations],
            "warnings": self.warnings,
            "skipped_lines": self.skipped,
        }


def validate(path: str, fmt: str | None = None, *, skip_invalid: bool = False) -> Validation:
    """The file's violations; one that cannot be read is a single violation, at its bad line or,
    for the file as a whole (empty, unknown format), at line 0. With ``skip_invalid`` a bad line
    is passed over (named in ``skipped``) and the rest is checked; a half-written last line (a
    session still being written) is always left out with a warning."""
    opened: Opened | None = None
    items: list[tuple[int, Entry]] = []
    try:
        opened = open_transcript(path, fmt=fmt, skip_invalid=skip_invalid)
        for e in opened.entries:
            items.append((opened.current_line, e))
    except InputError as err:
        detected = opened.format if opened is not None else fmt  # None: not even detected
        line = err.line if isinstance(err, LineError) else 0
        stopped = line if isinstance(err, LineError) else None
        return Validation(path, detected, 0, [Violation(line, err.reason)], unread_from=stopped)
    found = generic_checks(items)
    if opened.format in WRITERS:
        module = importlib.import_module(WRITERS[opened.format])
        if hasattr(module, "check"):
            found += [Violation(n, m) for n, m in module.check(items)]
        if hasattr(module, "check_file") and path != "-":
            found += [Violation(n, m) for n, m in module.check_file(path)]
    # the lines left out were said once, as skipped or as a warning: not again as violations
    left_out = {e.line for e in opened.skipped} | {
        _line_of(w) for w in opened.warnings if w.endswith(LEFT_OUT)
    }
    found = [v for v in found if v.line not in left_out]
    skipped = [str(e) for e in opened.skipped]
    return Validation(path, opened.format, len(items), sorted(set(found)), list(opened.warnings), skipped)


def _line_of(warning: str) -> int:
    """The line number of a loader warning ("line 12: …")."""
    head = warning.split(":", 1)[0].removeprefix("line ")
    return int(head) if head.isdigit() else -1


class TurnCalls:
    """The Anthropic-style pairing rule: a tool result answers a call of the assistant turn
    right before it (several assistant messages in a row count as one turn)."""

    def __init__(self) -> None:
        self.open: set[str] = set()
        self.prev_assistant = False

    def reset(self) -> None:
        self.open, self.prev_assistant = set(), False

    def unanswered(self, msg: Message) -> list[str]:
        """Feed one main-branch message; the call ids its results answer that the turn did not ask."""
        if msg.role == "assistant":
            if not self.prev_assistant:
                self.open = set()
            self.open.update(c.id for c in msg.tool_calls)
            self.prev_assistant = True
            return []
        results = msg.tool_results
        bad = [r.call_id for r in results if r.call_id not in self.open]
        if not results:
            self.open = set()
        self.prev_assistant = False
        return bad


def generic_checks(items: Sequence[tuple[int, Entry]]) -> list[Violation]:
    out: list[Violation] = []
    calls: dict[tuple[str | None, str], int] = {}  # (branch, call id) → line of the call
    open_calls: dict[str | None, dict[str, int]] = {}
    made: list[tuple[str | None, list[str]]] = []  # each main-branch message: its id, its calls
    for line, e in items:
        if isinstance(e, Rewind) and e.to is not None:  # the context from an earlier point, whole
            made = [(m.id, [c.id for c in m.tool_calls]) for m in e.to]
            answered = {r.call_id for m in e.to for r in m.tool_results}
            open_calls[None] = {c: line for _, cs in made for c in cs if c not in answered}
            continue
        if isinstance(e, Rewind):  # calls of the messages it leaves out need no result
            main, end = open_calls.get(None, {}), len(made) - e.last
            for cid in (c for i, (mid, cs) in enumerate(made) if i >= end or mid in e.ids for c in cs):
                main.pop(cid, None)
            made = [(mid, cs) for i, (mid, cs) in enumerate(made) if i < end and mid not in e.ids]
            continue
        if isinstance(e, (ContextReset, CompactionMarker)):
            calls.clear()  # a new conversation, or a new context built from a summary
            open_calls.clear()
            made.clear()
            for m in e.replacement or () if isinstance(e, CompactionMarker) else ():
                for c in m.tool_calls:  # calls the new context holds: results may follow it
                    calls[(m.branch, c.id)] = line
            continue
        if not isinstance(e, Message):
            continue
        branch = e.branch
        pending = open_calls.setdefault(branch, {})
        if branch is None:
            made.append((e.id, []))
        starts_turn = (
            e.role == "user" and any(isinstance(p, TextPart) for p in e.parts) and not e.tool_results
        )
        if starts_turn and pending and not e.extra.get("ctxfold"):
            for cid, at in pending.items():
                out.append(
                    Violation(at, f"tool call {cid!r} has no result before the next user turn (line {line})")
                )
            pending.clear()
        for p in e.parts:
            if isinstance(p, ToolCallPart):
                key = (branch, p.id)
                if key in calls:
                    out.append(
                        Violation(line, f"duplicate tool call id {p.id!r} (first at line {calls[key]})")
                    )
                calls[key] = line
                if not e.dropped:  # a response the harness leaves out (pi's failed one) needs no result
                    pending[p.id] = line
                    if branch is None:
                        made[-1][1].append(p.id)
            elif isinstance(p, ToolResultPart):
                if (branch, p.call_id) not in calls:
                    out.append(Violation(line, f"tool result for {p.call_id!r} answers no earlier tool call"))
                pending.pop(p.call_id, None)
    return out
