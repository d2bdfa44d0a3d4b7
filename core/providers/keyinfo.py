"""The summary's Key Information: files touched (repeated reads as one line), exact values,
commands grouped by purpose and those the user ran, and the errors that still stand; each line
tagged with how badly it is needed, for :func:`~ctxfold.providers.lines.fit` to drop the least
needed first.
"""

from __future__ import annotations

import re

from ctxfold.providers.facts import Facts
from ctxfold.providers.lines import (
    INFO,
    T_COMMANDS,
    T_ERRORS,
    T_FILES,
    T_VALUES,
    TYPED,
    Line,
    plural,
)
from ctxfold.providers.render import clip

COMMAND_CHARS = 160
ERROR_CHARS = 400


def info_lines(facts: Facts) -> list[Line]:
    """The Key Information section: files touched, exact values, commands by purpose and the
    user's own, the errors that still stand."""
    out: list[Line] = []
    for path, use in sorted(facts.files.items(), key=lambda kv: kv[1].last):
        actions = [f"read ×{use.reads}" if a == "read" and use.reads > 1 else a for a in use.actions]
        if use.lines and not use.whole:
            actions.append(f"lines {use.lines[0]}–{use.lines[1]}")
        text = f"`{path}` ({', '.join(actions)})"
        changed = any(a != "read" for a in use.actions)
        out.append(Line(INFO, "Files touched", text, use.last, tier=T_FILES if changed else T_VALUES))
    for v in facts.values.items():
        out.append(Line(INFO, "Exact values", f"{v.kind}: `{v.text}`", v.age, tier=T_VALUES))
    groups: dict[str, list[tuple[int, str, str]]] = {}
    for i, cmd, status in facts.commands:
        groups.setdefault(_purpose(cmd), []).append((i, cmd, status))
    for purpose, runs in groups.items():
        i, cmd, status = runs[-1]
        failed = sum(1 for _, _, s in runs if s not in ("exit 0", "ok"))
        text = f"{purpose}: {plural(len(runs), 'run')}" + (f" ({failed} not exit 0)" if failed else "")
        out.append(
            Line(
                INFO,
                "Commands, by purpose",
                f"{text}; last `{clip(cmd, COMMAND_CHARS)}` → {status}",
                i,
                tier=T_COMMANDS,
            )
        )
    typed: dict[str, tuple[int, str]] = {}  # each command once, where it was last run
    for i, cmd, status in facts.typed:
        typed.pop(cmd, None)
        typed[cmd] = (i, status)
    for cmd, (i, status) in list(typed.items())[-3:]:
        text = f"`{clip(cmd, COMMAND_CHARS)}` → {status}"
        out.append(Line(INFO, TYPED, text, i, tier=T_COMMANDS))
    since = facts.requests[-1][0] if facts.requests else -1
    for i, what, line in facts.open_errors[-3:]:
        when = "" if i > since else " (before the newest request; it may no longer matter)"
        out.append(
            Line(
                INFO,
                "Errors still open",
                f"`{clip(what, COMMAND_CHARS)}` → {clip(line, ERROR_CHARS)}{when}",
                i,
                tier=T_ERRORS,
            )
        )
    if facts.settled:
        out.append(
            Line(
                INFO,
                "",
                f"{plural(facts.settled, 'failure')} along the way {'was' if facts.settled == 1 else 'were'} fixed "
                "later, expected, or left nothing to do (a search that found nothing, an edit already made, "
                "a run the user stopped): none of them is open.",
                -10,
                tier=T_COMMANDS,
            )
        )
    return out


_PURPOSES = (
    ("tests", r"pytest|test|tests|jest|vitest|mocha|ctest|tox|nox|unittest"),
    (
        "build and checks",
        r"build|tsc|tsgo|make|cmake|lint|check|ruff|mypy|clippy|eslint|biome|typecheck|compile",
    ),
    ("git", r"git|gh"),
    ("install", r"install|add|apt-get|apt|brew|pip|pip3|ci"),
    ("reading and searching", r"cat|sed|nl|rg|grep|ls|find|head|tail|wc|get-content|tree|pwd|stat|file"),
)


# ``cat << 'EOF' > notes.md``, ``echo x > a.txt``, ``tee a.txt``: a file written, not read
_WRITES = re.compile(r"(?:cat|echo|printf)\b[^<>|;&]*(?:<<[^>|;&]*)?(?<![\d&])>(?!&)|tee\b")


def _purpose(cmd: str) -> str:
    """The purpose of a command, from its program and subcommand words."""
    words = [w.lower() for w in re.split(r"[\s&|;]+", cmd) if w and "=" not in w][:6]
    words = words[2:] if words[:1] == ["cd"] else words
    if _WRITES.match(re.sub(r"^\s*cd\s+\S+\s*&&\s*", "", cmd)):
        return "writing files"
    for name, pattern in _PURPOSES:
        if any(re.fullmatch(pattern, w.rsplit("/", 1)[-1]) for w in words[:3]):
            return name
    return "other commands"
