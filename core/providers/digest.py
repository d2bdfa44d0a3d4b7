"""The offline summary: what the next agent needs to carry on, within the token budget.

It states first where things stand (waiting for the user, in progress, done: :mod:`standing`),
then keeps the user's own words: their standing rules and every request, verbatim (the newest in
full, older long ones by their first and last sentences); then the last deliverable whole (or
by whole sections, naming those left out); then exact values: files touched (repeated reads as
one line), values such as URLs, ports, branches and commits, commands grouped by purpose, and
the errors that still stand. It names the original session file, which stays unchanged, so an
agent with file tools can look any detail up.

When it does not fit, the least needed goes first: earlier summaries' detail and commands, then
values and files, then the deliverable's last sections, then the oldest requests; the state, the
rules and the newest request go last, and only by trimming the request.
"""

from __future__ import annotations

import re

from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.deliverable import first_and_last
from ctxfold.providers.facts import Facts, gather, recorded_summary
from ctxfold.providers.keyinfo import COMMAND_CHARS, ERROR_CHARS, info_lines
from ctxfold.providers.lines import (
    CURRENT,
    DELIVERABLE,
    EARLIER_DELIVERABLE,
    EARLIER_REQUESTS,
    PROTECTED,
    SECTIONS,
    T_DELIVERABLE,
    T_ERRORS,
    T_REQUESTS,
    Line,
    carried,
    clip_tokens,
    deliverable_lines,
    fit,
    plural,
)
from ctxfold.providers.render import clip
from ctxfold.providers.rules import standing_rules
from ctxfold.providers.standing import DONE, IN_PROGRESS, STOPPED, WAITING, Standing, assess
from ctxfold.providers.streamed import Digested
from ctxfold.providers.todos import current_todos, todos_from_summary
from ctxfold.tokens.tokenizers import Tokenizer, get_tokenizer

RUNNING = (
    "Still running in the background when the log ends (a resumed session gets none of their notices: "
    "read their output, or run them again)"
)
LAST_WORDS = "The assistant's last words before the messages kept verbatim"
CONTINUES = "the conversation goes on verbatim after this summary; its last messages show where things stand."
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "focus",
        "about",
        "keep",
        "only",
        "that",
        "this",
        "with",
        "from",
        "what",
        "which",
        "their",
        "there",
        "more",
        "less",
    ]
)
OLD_REQUEST_CHARS = 600  # an older request up to this long is quoted whole
STATE, RULES, REQUESTS, LAST, INFO, CONTEXT, NEXT, TODO = SECTIONS


def _source(request: SummaryRequest) -> str | None:
    if not request.source:
        return None
    where = f" ({request.source_range})" if request.source_range else ""
    return f"Original session (unchanged; look any detail up there): `{request.source}`{where}."


def _state_lines(request: SummaryRequest, facts: Facts, st: Standing) -> list[Line]:
    if request.continues:  # a sliding window: the recent turns follow verbatim and show the state
        out = [Line(STATE, "", f"**Where things stand: {CONTINUES}**", PROTECTED)]
    else:
        out = [Line(STATE, "", f"**Where things stand: {st.label}.** ({st.reason})", PROTECTED)]
    if request.continues:  # what the assistant said last before the kept messages take over
        if st.reply and (st.deliverable is None or st.deliverable[0] != st.reply[0]):
            out.append(Line(STATE, LAST_WORDS, clip(st.reply[1], 600), PROTECTED - 1, block=True))
    elif st.state == WAITING and st.question:
        out.append(
            Line(
                STATE,
                "The assistant's last message asked the user (not answered yet)",
                st.question,
                PROTECTED,
                block=True,
            )
        )
    elif st.state == DONE and st.reply and (st.deliverable is None or st.deliverable[0] != st.reply[0]):
        out.append(
            Line(STATE, "The assistant's last message", clip(st.reply[1], 600), PROTECTED - 1, block=True)
        )
    elif st.state == STOPPED:
        if st.reply and (st.request is None or st.reply[0] > st.request[0]):
            said = "The assistant's last words before the user stopped it"
            out.append(Line(STATE, said, clip(st.reply[1], 600), PROTECTED - 1, block=True))
        if st.pending:
            out.append(
                Line(STATE, "", f"Tool calls it did not make: {', '.join(st.pending[-5:])}.", PROTECTED)
            )
    elif st.state == IN_PROGRESS:
        if st.answers:
            out.append(
                Line(
                    STATE,
                    "The user's newest request answers the assistant's question",
                    st.answers,
                    PROTECTED - 1,
                    block=True,
                )
            )
        if st.reply and (st.request is None or st.reply[0] > st.request[0]):
            out.append(
                Line(
                    STATE,
                    "Step under way (the assistant's last words)",
                    clip(st.reply[1], 600),
                    PROTECTED - 1,
                    block=True,
                )
            )
        if st.pending:
            out.append(
                Line(STATE, "", f"Tool calls with no result yet: {', '.join(st.pending[-5:])}.", PROTECTED)
            )
    out += [Line(STATE, RUNNING, task, PROTECTED) for task in st.running[-5:]]
    source = _source(request)
    if source:
        out.append(Line(STATE, "", source, PROTECTED))
    if request.cwd:
        where = f"Working directory: `{request.cwd}` (relative paths below start there)."
        out.append(Line(STATE, "", where, PROTECTED))
    omitted = f"; {request.dropped} older messages were left out" if request.dropped else ""
    out.append(
        Line(
            STATE,
            "",
            f"Folded {plural(facts.messages, 'message')} ({plural(len(facts.requests), 'user request')}, "
            f"{plural(facts.tool_calls, 'tool call')}, {plural(len(facts.open_errors), 'open error')}){omitted}.",
            10**8,
            tier=T_REQUESTS + 1,
        )
    )
    return out


def _request_lines(facts: Facts, previous: list[Line]) -> list[Line]:
    out: list[Line] = []
    newest = facts.requests[-1] if facts.requests else None
    if newest is not None:
        out.append(Line(REQUESTS, CURRENT, newest[1], PROTECTED, block=True))
        for i, text in facts.requests[:-1]:
            out.append(
                Line(REQUESTS, EARLIER_REQUESTS, first_and_last(text, OLD_REQUEST_CHARS), i, tier=T_REQUESTS)
            )
    for ln in previous:  # a previous summary's current request becomes an earlier one once a new one came
        if ln.group == CURRENT and newest is not None:
            out.append(
                Line(
                    REQUESTS,
                    EARLIER_REQUESTS,
                    first_and_last(ln.text, OLD_REQUEST_CHARS),
                    -1,
                    tier=T_REQUESTS,
                )
            )
        elif ln.group == CURRENT:
            out.append(ln)
    return out


def _next_steps(
    request: SummaryRequest, facts: Facts, st: Standing, todo_lines: list[str], has_request: bool
) -> list[Line]:
    out: list[Line] = []
    if request.continues:
        out.append(Line(NEXT, "", "Carry on from the messages kept verbatim after this summary.", PROTECTED))
    elif st.state == WAITING:
        out.append(
            Line(
                NEXT,
                "",
                "Put the question above to the user again and wait for the answer; do not act on any option before they reply.",
                PROTECTED,
            )
        )
    elif st.state == DONE:
        out.append(
            Line(
                NEXT,
                "",
                "Nothing is pending: wait for the user's next request. Do not redo or extend the delivered work.",
                PROTECTED,
            )
        )
    elif st.state == STOPPED:
        out.append(
            Line(
                NEXT,
                "",
                "The user stopped the assistant before it finished: wait for their next message, which says how to "
                "go on. Do not resume the stopped work on your own.",
                PROTECTED,
            )
        )
    else:
        target = "the current user request (quoted above)" if has_request else "the work"
        out.append(
            Line(
                NEXT,
                "",
                f"Continue {target} from the step under way, without asking the user to repeat anything.",
                PROTECTED,
            )
        )
        since = facts.requests[-1][0] if facts.requests else -1
        for i, what, line in [e for e in facts.open_errors if e[0] > since][-1:]:
            out.append(
                Line(
                    NEXT,
                    "",
                    f"Resolve the open error first: `{clip(what, COMMAND_CHARS)}` → {clip(line, ERROR_CHARS)}",
                    i,
                    tier=T_ERRORS,
                )
            )
        for t in (t for t in todo_lines if "[completed]" not in t and "[done]" not in t):
            out.append(Line(NEXT, "Open tasks, in order", t.lstrip("- ").strip(), PROTECTED - 1))
    if request.instructions and request.instructions.strip():
        out.append(Line(CONTEXT, "", f"Focus requested: {request.instructions.strip()}", PROTECTED))
    return out


def digest(request: SummaryRequest, *, tokenizer: Tokenizer | None = None) -> str:
    """The digest of ``request.messages``, at most ``request.budget_tokens`` o200k tokens."""
    messages = request.messages
    todos = current_todos(messages, request.todos)
    return digest_of(
        request,
        Digested(gather(messages), assess(messages), todos, recorded_summary(messages)),
        tokenizer=tokenizer,
    )


def digest_of(request: SummaryRequest, read: Digested, *, tokenizer: Tokenizer | None = None) -> str:
    """The digest from what was read off the conversation (as it streamed by, for a session too
    long to hold: ``request.messages`` is not read; ``read.todos`` is the caller's list when the
    request gives one)."""
    tok = tokenizer or get_tokenizer("o200k")
    facts, st, todos = read.facts, read.standing, read.todos
    todo_lines = (
        [t.line() for t in todos] if todos is not None else todos_from_summary(request.previous_summary)
    )
    previous = carried(request.previous_summary or read.recorded)
    rules = standing_rules(text for _, text in facts.said)
    lines = _state_lines(request, facts, st)
    known = {ln.text for ln in previous if ln.section == RULES}
    lines += [ln for ln in previous if ln.section == RULES]
    lines += [Line(RULES, "", f"“{r}”", PROTECTED) for r in rules if f"“{r}”" not in known]
    lines += _request_lines(facts, previous)
    budget = max(1, request.budget_tokens)
    deliverable = (
        st.deliverable[1]
        if st.deliverable
        else next((ln.text for ln in previous if ln.group == DELIVERABLE), None)
    )
    # a request came after the deliverable: one read now, or any read now after a carried one
    newer_request = st.earlier_deliverable if st.deliverable else st.request is not None
    if deliverable:
        if newer_request:
            lines.append(Line(LAST, "", EARLIER_DELIVERABLE, PROTECTED))
        lines += deliverable_lines(deliverable, T_DELIVERABLE)
    lines += info_lines(facts)
    lines += [ln for ln in previous if ln.section not in (RULES,) and ln.group not in (CURRENT, DELIVERABLE)]
    lines += _next_steps(request, facts, st, todo_lines, any(ln.group == CURRENT for ln in lines))
    words = [
        w
        for w in re.findall(r"[\w./-]+", (request.instructions or "").lower())
        if len(w) > 2 and w not in _STOP
    ]
    matched = 0
    for ln in lines:  # what matches the focus asked for goes last (kept first), verbatim
        if words and not ln.text.startswith("Focus requested") and any(w in ln.text.lower() for w in words):
            matched += 1
            ln.tier = ln.tier if ln.protected else T_REQUESTS + 1
        if ln.group == CURRENT:  # in full unless it would crowd out the rest
            ln.text = clip_tokens(ln.text, max(20, budget // 2), tok)
    for ln in lines:
        if ln.text.startswith("Focus requested:"):
            ln.text += (
                f" ({plural(matched, 'detail')} matching it kept first, verbatim.)"
                if matched
                else " (Nothing in the folded conversation matches it: the offline summary cannot narrow "
                "itself to it, and is the usual one.)"
            )
    return fit(lines, todo_lines, budget, tok)
