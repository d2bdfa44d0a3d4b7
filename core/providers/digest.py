"""The offline summary: a structured digest of the transcript, within the token budget.

It replaces the seeds' "first 200 characters of each message" fallback with the facts a
resumed agent needs: the newest request in full, the older ones trimmed, files touched,
commands and their exit status, errors, the todo list verbatim and the last assistant
message, under the same five headings an LLM summary has. When it does not fit, the oldest
detail goes first (previous-summary lines, then facts by the age of the message they came
from); the newest request and the todo list go last, and only by trimming.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.facts import Facts, gather, recorded_summary
from ctxfold.providers.render import SECTIONS, clip
from ctxfold.providers.todos import current_todos, todos_from_summary
from ctxfold.tokens.tokenizers import Tokenizer, get_tokenizer

OLD_REQUEST_CHARS = 300
COMMAND_CHARS = 160
ERROR_CHARS = 240
LAST_ASSISTANT_CHARS = 2000
PROTECTED = 10**9  # age of lines dropped only as a last resort
STATE, INFO, CONTEXT, NEXT, TODO = SECTIONS


@dataclass
class _Line:
    section: str
    group: str  # "" = a top-level bullet; else the bullet it is nested under
    text: str
    age: int  # index of the source message; lower goes first
    block: bool = False  # a multi-line text shown indented under its group


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _indent(text: str) -> str:
    return "\n".join(f"  {ln}" if ln.strip() else "" for ln in text.splitlines())


def _clip_tokens(text: str, budget: int, tok: Tokenizer) -> str:
    while text and tok.count(text) > budget:
        text = clip(text, len(text) * 3 // 4)
    return text


_PLACEHOLDERS = ("(nothing recorded)", "(no todo list recorded)")
_CARRIED_GROUPS = ("Files touched", "Commands run", "Errors seen", "Earlier user requests")
_EARLIER = "Earlier (previous summary)"
_CURRENT = "Current user request (verbatim)"


def _previous(summary: str | None, has_request: bool) -> list[_Line]:
    """A previous summary's lines, oldest of all, under this digest's sections and groups.

    Its current request stays the current one until a newer request arrives, then joins the
    earlier ones; its file, command, error and request lists keep their groups. Its next steps
    and todo list are not carried (they are made afresh), nor are empty placeholders. Lines of a
    summary written otherwise (an LLM's) are kept under "Earlier (previous summary)"."""
    if not summary:
        return []
    lines = [ln.rstrip() for ln in summary.splitlines()]
    section, group, out, current = CONTEXT, "", [], []
    for n, line in enumerate(lines):
        age = n - len(lines) - 1
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            section = next((s for s in SECTIONS if s.lower() == title), "")
            if not section:
                section = INFO if title.startswith("key info") else TODO if "todo" in title else CONTEXT
            group = ""
            continue
        text = line.strip().removeprefix("- ").removeprefix("* ").strip()
        if not text or text in _PLACEHOLDERS or section in (NEXT, TODO):
            continue
        if not line.startswith(" ") and text.endswith(":"):
            group = text[:-1]
            continue
        if not line.startswith(" "):
            group = ""
        if group == _CURRENT:
            current.append(line[2:] if line.startswith("  ") else line)
        elif group in _CARRIED_GROUPS:
            out.append(_Line(section, group, text, age))
        elif (section != STATE or not group) and not text.startswith(("Folded ", "Focus requested")):
            out.append(
                _Line(section, _EARLIER, text, age - len(lines))
            )  # older still; superseded: the last reply
    request = "\n".join(current).strip()
    if request and has_request:
        out.append(
            _Line(CONTEXT, "Earlier user requests", clip(" ".join(request.split()), OLD_REQUEST_CHARS), -1)
        )
    elif request:
        out.append(_Line(STATE, _CURRENT, request, PROTECTED, block=True))
    return out


def _lines(request: SummaryRequest, facts: Facts) -> list[_Line]:
    # a summary ctxfold wrote, else the one the recording tool left at the head of the context
    out = _previous(request.previous_summary or recorded_summary(request.messages), bool(facts.requests))
    newest = facts.requests[-1] if facts.requests else None
    if newest:
        out.append(_Line(STATE, _CURRENT, newest[1], PROTECTED, block=True))
    if facts.last_assistant:
        i, text = facts.last_assistant
        out.append(_Line(STATE, "Last assistant message", clip(text, LAST_ASSISTANT_CHARS), i, block=True))
    omitted = f"; {request.dropped} older messages were left out" if request.dropped else ""
    out.append(
        _Line(
            STATE,
            "",
            f"Folded {_n(facts.messages, 'message')} ({_n(len(facts.requests), 'user request')}, "
            f"{_n(facts.tool_calls, 'tool call')}, {_n(len(facts.errors), 'distinct error')}){omitted}.",
            PROTECTED,
        )
    )
    for path, (i, actions) in sorted(facts.files.items(), key=lambda kv: kv[1][0]):
        out.append(_Line(INFO, "Files touched", f"`{path}` ({', '.join(actions)})", i))
    for i, cmd, status in facts.commands:
        out.append(_Line(INFO, "Commands run", f"`{clip(cmd, COMMAND_CHARS)}` → {status}", i))
    for line, i in facts.errors.items():
        out.append(_Line(INFO, "Errors seen", clip(line, ERROR_CHARS), i))
    if request.instructions and request.instructions.strip():
        out.append(_Line(CONTEXT, "", f"Focus requested: {request.instructions.strip()}", PROTECTED))
    for i, text in facts.requests[:-1]:
        out.append(
            _Line(CONTEXT, "Earlier user requests", clip(" ".join(text.split()), OLD_REQUEST_CHARS), i)
        )
    return out


def _next_steps(
    request: SummaryRequest, facts: Facts, todo_lines: list[str], carried: Sequence[_Line]
) -> list[_Line]:
    out: list[_Line] = []
    if facts.requests or any(ln.group == _CURRENT for ln in carried):
        out.append(
            _Line(
                NEXT, "", "Continue the current user request (quoted above) without asking again.", PROTECTED
            )
        )
    open_items = [t for t in todo_lines if "[completed]" not in t and "[done]" not in t]
    for t in open_items:
        out.append(_Line(NEXT, "Open tasks, in order", t.lstrip("- ").strip(), PROTECTED - 1))
    if facts.errors:
        last, i = next(reversed(facts.errors.items()))
        out.append(_Line(NEXT, "", f"Check whether the last error is resolved: {clip(last, ERROR_CHARS)}", i))
    if not out:
        out.append(_Line(NEXT, "", "Resume from the last assistant message.", PROTECTED))
    return out


def _render(lines: Sequence[_Line], todo_lines: list[str]) -> str:
    parts: list[str] = []
    for section in SECTIONS:
        parts.append(f"## {section}")
        if section == TODO:
            parts.append("\n".join(todo_lines) if todo_lines else "- (no todo list recorded)")
            continue
        groups: dict[str, list[_Line]] = {}
        for ln in lines:
            if ln.section == section:
                groups.setdefault(ln.group, []).append(ln)
        body: list[str] = []
        for group, items in groups.items():
            if not group:
                body += [f"- {ln.text}" for ln in items]
            else:
                nested = [_indent(ln.text) if ln.block else f"  - {ln.text}" for ln in items]
                body.append(f"- {group}:\n" + "\n".join(nested))
        parts.append("\n".join(body) if body else "- (nothing recorded)")
        parts.append("")
    return "\n".join(parts).strip() + "\n"


def _trim_protected(lines: list[_Line], todo_lines: list[str], text_tokens: int, budget: int) -> None:
    """Last resort: shorten the newest request, then completed todos, then the other todos."""
    over = text_tokens - budget
    for ln in lines:
        if ln.group.startswith("Current user request") and len(ln.text) > 40:
            ln.text = clip(ln.text, max(40, min(len(ln.text) - over * 2, len(ln.text) * 3 // 4)))
            return
    done = [t for t in todo_lines if "[completed]" in t]
    if done:
        todo_lines.remove(done[0])
    elif todo_lines:
        todo_lines.pop()


def digest(request: SummaryRequest, *, tokenizer: Tokenizer | None = None) -> str:
    """The digest of ``request.messages``, at most ``request.budget_tokens`` o200k tokens."""
    tok = tokenizer or get_tokenizer("o200k")
    facts = gather(request.messages)
    todos = current_todos(request.messages, request.todos)
    todo_lines = (
        [t.line() for t in todos] if todos is not None else todos_from_summary(request.previous_summary)
    )
    lines = _lines(request, facts)
    lines += _next_steps(request, facts, todo_lines, lines)
    budget = max(1, request.budget_tokens)
    for ln in lines:  # the last reply may take a quarter of the budget, the newest request half
        if ln.group == "Last assistant message":
            ln.text = _clip_tokens(ln.text, max(20, budget // 4), tok)
        elif ln.group.startswith("Current user request"):  # in full unless it would crowd out the rest
            ln.text = _clip_tokens(ln.text, max(20, budget // 2), tok)
    costs = tok.count_batch([ln.text for ln in lines]) if lines else []
    order = sorted(range(len(lines)), key=lambda k: (lines[k].age, k))
    fixed = tok.count(_render([], todo_lines)) + 4 * len({(ln.section, ln.group) for ln in lines})
    total = fixed + sum(costs) + 3 * len(lines)
    dropped: set[int] = set()
    for k in order:  # oldest first, cheaply estimated; then checked exactly below
        if total <= budget or lines[k].age >= PROTECTED - 1:
            break
        dropped.add(k)
        total -= costs[k] + 3
    kept = [ln for k, ln in enumerate(lines) if k not in dropped]
    text = _render(kept, todo_lines)
    n = tok.count(text)
    while n > budget:
        droppable = [ln for ln in kept if ln.age < PROTECTED - 1]
        if droppable:
            kept.remove(min(droppable, key=lambda ln: ln.age))
        elif (
            any(ln.group.startswith("Current user request") and len(ln.text) > 40 for ln in kept)
            or todo_lines
        ):
            _trim_protected(kept, todo_lines, n, budget)
        else:
            return _clip_tokens(text, budget, tok)  # a budget too small for the headings themselves
        text = _render(kept, todo_lines)
        n = tok.count(text)
    return text
