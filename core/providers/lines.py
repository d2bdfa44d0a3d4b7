"""The digest's lines: what each says, where it goes, how badly it is needed; rendering them
within a token budget (the least needed dropped first, the protected only trimmed); and reading
a previous summary back into lines, so a second compaction rolls the first in.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from ctxfold.providers.deliverable import sections
from ctxfold.providers.render import SECTIONS, clip
from ctxfold.tokens.tokenizers import Tokenizer

PROTECTED = 10**9  # rank of lines dropped only as a last resort (and then only trimmed)
# tiers: what goes first when the summary does not fit (lower first; within a tier, older first)
T_EARLIER, T_COMMANDS, T_VALUES, T_FILES, T_ERRORS, T_DELIVERABLE, T_REQUESTS = range(7)
STATE, RULES, REQUESTS, LAST, INFO, CONTEXT, NEXT, TODO = SECTIONS
CURRENT = "Current user request (verbatim)"
EARLIER_REQUESTS = "Earlier user requests, oldest first"
DELIVERABLE = "deliverable"
EARLIER = "Earlier (previous summary)"
TYPED = "Commands the user ran in the harness's shell mode"
EARLIER_DELIVERABLE = "It answered an earlier request, not the current one (above), which came after it."
_CLASSIC = (STATE, INFO, CONTEXT, NEXT)  # sections that say "(nothing recorded)" when empty
_PLACEHOLDERS = ("(nothing recorded)", "(no todo list recorded)", "(none)")
_OLD_GROUPS = {  # groups of this digest's earlier layouts, and their place now
    "Files touched": (INFO, "Files touched", 3),
    "Exact values": (INFO, "Exact values", 2),
    "Commands run": (INFO, "Commands, by purpose", 1),
    "Commands, by purpose": (INFO, "Commands, by purpose", 1),
    TYPED: (INFO, TYPED, 1),
    "Earlier user requests": (REQUESTS, EARLIER_REQUESTS, 6),
    EARLIER_REQUESTS: (REQUESTS, EARLIER_REQUESTS, 6),
}


@dataclass
class Line:
    section: str
    group: str  # "" = a top-level bullet; else the bullet it is nested under
    text: str
    age: int  # index of the source message (lower: older); PROTECTED: kept whatever it costs
    block: bool = False  # a multi-line text shown indented under its group
    tier: int = 0  # how badly it is needed: lower tiers go first when the budget is short
    title: str = ""  # a deliverable section's title, to name it when it is left out

    @property
    def protected(self) -> bool:
        return self.age >= PROTECTED - 1

    def rank(self, k: int) -> tuple[int, int, int]:
        return (PROTECTED if self.protected else self.tier, self.age, k)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def clip_tokens(text: str, budget: int, tok: Tokenizer) -> str:
    while text and tok.count(text) > budget:
        text = clip(text, len(text) * 3 // 4)
    return text


@functools.lru_cache(maxsize=4096)
def indent(text: str) -> str:
    return "\n".join(f"  {ln}" if ln.strip() else "" for ln in text.splitlines())


@functools.lru_cache(maxsize=4096)
def _bullet(text: str) -> str:
    """A nested bullet; the lines of a multi-line text stay under it. (Both are kept per text
    while ``fit`` runs: it renders the summary again for every line it tries to put back.)"""
    first, *rest = text.splitlines() or [""]
    return "\n".join([f"  - {first}", *(f"    {ln}" if ln.strip() else "" for ln in rest)])


def deliverable_lines(text: str, tier: int) -> list[Line]:
    """One line per section of the deliverable; the last sections rank lowest."""
    parts = sections(text)
    return [
        Line(LAST, DELIVERABLE, body, -k, block=True, tier=tier, title=title)
        for k, (title, body) in enumerate(parts)
    ]


def render(lines: Sequence[Line], todo_lines: list[str], left_out: Sequence[Line] = ()) -> str:
    parts: list[str] = []
    by_section: dict[str, list[Line]] = {}  # in one pass: fit renders again for every line it tries
    for ln in lines:
        by_section.setdefault(ln.section, []).append(ln)
    gone = [ln.title for ln in left_out if ln.group == DELIVERABLE]
    for section in SECTIONS:
        mine = by_section.get(section, [])
        if section not in _CLASSIC and section != TODO and not mine and not (section == LAST and gone):
            continue  # an empty section of its own says nothing: only the classic ones stay
        parts.append(f"## {section}")
        if section == TODO:
            parts.append("\n".join(todo_lines) if todo_lines else "- (no todo list recorded)")
            continue
        groups: dict[str, list[Line]] = {}
        for ln in mine:
            groups.setdefault(ln.group, []).append(ln)
        body: list[str] = []
        for group, items in groups.items():
            if group == DELIVERABLE:
                body.append("\n\n".join(indent(ln.text) for ln in items))
            elif not group:
                body += [f"- {ln.text}" for ln in items]
            else:
                nested = [indent(ln.text) if ln.block else _bullet(ln.text) for ln in items]
                body.append(f"- {group}:\n" + "\n".join(nested))
        if section == LAST and gone:
            names = ", ".join(f"“{t}”" for t in gone)
            verb = "was" if len(gone) == 1 else "were"
            whole = (
                "The whole message is"
                if groups.get(DELIVERABLE)
                else "The message, left out whole for room, is"
            )
            body.append(
                f"- Sections left out for room: {names} {verb} not kept here. {whole} in the original session."
            )
        if body or section in _CLASSIC:
            parts.append("\n".join(body) if body else "- (nothing recorded)")
        parts.append("")
    return "\n".join(parts).strip() + "\n"


def _section_of(title: str) -> str:
    low = title.lower()
    for s in SECTIONS:
        if s.lower() == low:
            return s
    if low.startswith("key info"):
        return INFO
    if "todo" in low:
        return TODO
    if "deliverable" in low:
        return LAST
    if "rule" in low:
        return RULES
    if "request" in low:
        return REQUESTS
    if "next step" in low:
        return NEXT
    return ""


def carried(summary: str | None) -> list[Line]:
    """A previous summary's lines, older than anything folded now, under this digest's sections.

    Rules stay rules and requests stay requests (the current one is marked, for the caller to
    demote once a newer request came); the deliverable is kept whole for a caller with no newer
    one; files, values and commands keep their groups; state, next steps and the todo list are
    made afresh; lines of a summary written otherwise (an LLM's, a harness's) go under "Earlier
    (previous summary)"."""
    if not summary:
        return []
    lines = [ln.rstrip() for ln in summary.splitlines()]
    section, group, out, current, deliverable = CONTEXT, "", [], [], []
    for n, line in enumerate(lines):
        age = n - len(lines) - 1
        if line.startswith("## ") or (line.startswith("#") and not line.startswith("  ")):
            section = _section_of(line.lstrip("#").strip()) or CONTEXT
            group = ""
            continue
        if section == LAST:
            deliverable.append(line[2:] if line.startswith("  ") else line)
            continue
        text = line.strip().removeprefix("- ").removeprefix("* ").strip()
        if not text or text in _PLACEHOLDERS or section in (NEXT, TODO):
            continue
        if not line.startswith(" ") and text.endswith(":"):
            group = text[:-1]
            continue
        if not line.startswith(" "):
            group = ""
        if group == CURRENT:
            current.append(line[2:] if line.startswith("  ") else line)
        elif section == RULES:
            out.append(Line(RULES, "", text, PROTECTED))
        elif group in _OLD_GROUPS:
            where, name, tier = _OLD_GROUPS[group]
            out.append(Line(where, name, text, age, tier=tier))
        elif section == STATE and (
            text.startswith(("**Where things stand", "Folded ", "Original session")) or group
        ):
            continue  # made afresh
        elif not text.startswith(("Focus requested", "Sections left out")):
            out.append(Line(CONTEXT, EARLIER, text, age - len(lines), tier=0))
    request = "\n".join(current).strip()
    if request:
        out.append(Line(REQUESTS, CURRENT, request, PROTECTED, block=True))
    text = "\n".join(deliverable).strip()
    if text and not text.startswith("- (nothing recorded)"):
        made = ("- Sections left out for room", f"- {EARLIER_DELIVERABLE}")  # made afresh
        body = "\n".join(ln for ln in text.splitlines() if not ln.startswith(made))
        out.append(Line(LAST, DELIVERABLE, body.strip(), -1, block=True))
    return out


def fit(lines: list[Line], todo_lines: list[str], budget: int, tok: Tokenizer) -> str:
    """Render within ``budget`` tokens, dropping the lowest-ranked lines first."""
    try:
        return _fit(lines, todo_lines, budget, tok)
    finally:  # the rendered texts are kept while one summary is fitted, not for the process
        _bullet.cache_clear()
        indent.cache_clear()


def _fit(lines: list[Line], todo_lines: list[str], budget: int, tok: Tokenizer) -> str:
    costs = tok.count_batch([ln.text for ln in lines]) if lines else []
    order = sorted(range(len(lines)), key=lambda k: lines[k].rank(k))
    fixed = tok.count(render([], todo_lines)) + 4 * len({(ln.section, ln.group) for ln in lines})
    total = fixed + sum(costs) + 3 * len(lines)
    dropped: set[int] = set()
    for k in order:  # cheaply estimated; then checked exactly below
        if total <= budget or lines[k].protected:
            break
        dropped.add(k)
        total -= costs[k] + 3
    keep = [k for k in range(len(lines)) if k not in dropped]
    for k in sorted(dropped, key=lambda k: lines[k].rank(k), reverse=True):  # the estimate is rough: refill
        trial = sorted([*keep, k])
        if (
            tok.count(render([lines[j] for j in trial], todo_lines, [lines[j] for j in dropped if j != k]))
            <= budget
        ):
            keep = trial
            dropped.discard(k)
    kept = [lines[k] for k in keep]
    left_out = [ln for k, ln in enumerate(lines) if k in dropped]
    text = render(kept, todo_lines, left_out)
    n = tok.count(text)
    while n > budget:
        droppable = [k for k, ln in enumerate(kept) if not ln.protected]
        if droppable:
            left_out.append(kept.pop(min(droppable, key=lambda k: kept[k].rank(k))))
        elif not _trim_protected(kept, todo_lines, n, budget):
            return clip_tokens(text, budget, tok)  # a budget too small for the headings themselves
        text = render(kept, todo_lines, left_out)
        n = tok.count(text)
    return text


def _trim_protected(lines: Sequence[Line], todo_lines: list[str], text_tokens: int, budget: int) -> bool:
    """Last resort: shorten the longest protected block (the newest request, the last reply),
    then drop completed todos, then the others. False when nothing is left to shorten."""
    over = text_tokens - budget
    blocks = [ln for ln in lines if ln.block and len(ln.text) > 40]
    if blocks:
        ln = max(blocks, key=lambda x: (x.group != CURRENT, len(x.text)))
        ln.text = clip(ln.text, max(40, min(len(ln.text) - over * 2, len(ln.text) * 3 // 4)))
        return True
    done = [t for t in todo_lines if "[completed]" in t]
    if done:
        todo_lines.remove(done[0])
        return True
    if todo_lines:
        todo_lines.pop()
        return True
    return False
