"""The summarizer's prompt: the conversation as text, fitted to the summarizer's window.

As in the seeds, tool results are elided (``[tool X returned a result]``) so a conversation
with megabytes of tool output still makes a small prompt; ``head:N`` keeps the first and last
N characters instead; reasoning (thinking) is left out, and so are side chains (sub-agents:
the main conversation holds their answers). The oldest messages are dropped until the whole prompt (instructions,
previous summary, todo list, conversation) fits in 80 % of the summarizer's window and still
leaves room for the summary itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxfold.errors import UsageError
from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.carry import Carry, extract, facts_block
from ctxfold.providers.deliverable import first_and_last
from ctxfold.providers.standing import failed
from ctxfold.providers.todos import Todo, current_todos, format_todos
from ctxfold.tokens.tokenizers import Tokenizer, get_tokenizer
from ctxfold.transcript.model import (
    MediaPart,
    Message,
    OpaquePart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

SECTIONS = (
    "Current State",
    "User Rules (verbatim)",
    "User Requests (verbatim)",
    "Last Deliverable (verbatim)",
    "Key Information",
    "Context & Decisions",
    "Exact Next Steps",
    "Todo List",
)
INPUT_RATIO = 0.80  # the seeds' cap on the summarizing call's input
WORDS_PER_TOKEN = 0.75
ARG_CHARS = 120  # per argument value of a rendered tool call
CALL_CHARS = 300  # per rendered tool call


@dataclass(frozen=True, slots=True)
class ToolResults:
    """How tool results appear: elided (``head`` None) or as head/tail excerpts of ``head`` chars."""

    head: int | None = None

    @classmethod
    def parse(cls, spec: str | ToolResults | None) -> ToolResults:
        if spec is None or isinstance(spec, ToolResults):
            return spec or cls()
        if spec == "elide":
            return cls()
        name, _, n = spec.partition(":")
        if name == "head" and n.isdigit() and int(n) > 0:
            return cls(int(n))
        raise UsageError(f"invalid --tool-results {spec!r}: use 'elide' or 'head:N' (N characters, N > 0)")


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def short_args(args: Any) -> str:
    """``name="value", n=3``: each value clipped, the whole clipped, so a call stays one line."""
    if isinstance(args, dict):
        items = []
        for k, v in args.items():
            if isinstance(v, str):
                items.append(f"{k}={json.dumps(clip(v, ARG_CHARS), ensure_ascii=False)}")
            else:
                items.append(f"{k}={clip(json.dumps(v, ensure_ascii=False, default=str), ARG_CHARS)}")
        text = ", ".join(items)
    elif args is None:
        text = ""
    else:
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    return clip(" ".join(text.split()), CALL_CHARS)


def _result(part: ToolResultPart, name: str, mode: ToolResults) -> str:
    verb = "returned an error" if part.is_error else "returned a result"
    if mode.head is None:
        return f"[tool {name} {verb}]"
    text = part.text.strip()
    n = mode.head
    if len(text) > 2 * n:
        text = f"{text[:n]}\n[… {len(text) - 2 * n} characters elided …]\n{text[-n:]}"
    return f"[tool {name} {verb}]\n{text}" if text else f"[tool {name} {verb}: (empty)]"


def render_message(m: Message, names: dict[str, str], mode: ToolResults) -> str:
    """One message as ``role: text`` lines; empty when nothing in it is worth showing."""
    out: list[str] = []
    for p in m.parts:
        if isinstance(p, TextPart) and p.text.strip():
            out.append(f"{m.role}: {p.text.strip()}")
        elif isinstance(p, ToolCallPart) and not m.dropped:  # (a stopped response's never ran)
            names[p.id] = p.name
            out.append(f"{m.role}: [called tool: {p.name}({short_args(p.arguments)})]")
        elif isinstance(p, ToolResultPart):
            out.append(f"tool: {_result(p, p.name or names.get(p.call_id, 'tool'), mode)}")
        elif isinstance(p, MediaPart):
            out.append(f"{m.role}: [{p.mime_type} attachment]")
        elif isinstance(p, OpaquePart):
            out.append(f"{m.role}: [{p.type}]")
    return "\n".join(out)


def render_messages(messages: Sequence[Message], mode: ToolResults | None = None) -> list[str]:
    """The main conversation (side chains are the sub-agents' own; a failed response the harness
    sends no more is left out), one string per message."""
    mode = mode or ToolResults()
    names: dict[str, str] = {}
    rendered = (render_message(m, names, mode) for m in messages if m.branch is None and not failed(m))
    return [r for r in rendered if r]


def word_limit(budget_tokens: int) -> int:
    return max(50, int(budget_tokens * WORDS_PER_TOKEN))


def system_prompt(budget_tokens: int) -> str:
    sections = "\n".join(f"## {s}" for s in SECTIONS)
    return (
        "You summarize a conversation between a user and an AI assistant (often a coding agent) so "
        "that the assistant can continue the work after its context is cleared. The summary replaces "
        "the whole conversation: the assistant will see nothing else, except that the original session "
        "file stays readable.\n\n"
        "Write it in the conversation's own language (the language the user writes in). Use exactly "
        f"these Markdown sections, in this order:\n{sections}\n\n"
        "- Current State: first a line 'Where things stand: waiting for the user' (the last message asked "
        "the user something: quote the question), 'in progress' (say the step under way and the next "
        "step) or 'done' (say what was delivered; nothing is pending), as the facts given below state it.\n"
        "- User Rules (verbatim): every instruction of the user's that holds for the rest of the session, "
        "quoted word for word.\n"
        "- User Requests (verbatim): every user request, oldest first, quoted word for word (long older "
        "ones by their first and last sentences); the newest in full.\n"
        "- Last Deliverable (verbatim): the last substantial assistant message (review, plan, report, "
        "answer), whole; if it cannot fit, leave out whole sections and name them, never cut a sentence.\n"
        "- Key Information: exact file paths, commands, identifiers, values, errors still open.\n"
        "- Context & Decisions: what was decided and why, constraints, approaches tried and rejected.\n"
        "- Exact Next Steps: the concrete next actions, in order; when waiting, ask the question again "
        "and wait; when done, wait for a new request; never continue finished work.\n"
        "- Todo List: every task with its status; when a todo list is given, reproduce it verbatim.\n\n"
        f"Be specific and dense. Stay within {word_limit(budget_tokens)} words. "
        "Do not address the user; do not add anything the conversation does not support."
    )


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    dropped: int  # rendered messages left out to fit (on top of ``SummaryRequest.dropped``)
    input_tokens: int  # estimated with the summarizer model's tokenizer
    todos: list[Todo] | None
    carry: Carry | None = None  # the facts given to the model, to check its answer against


def _blocks(
    request: SummaryRequest, todos: list[Todo] | None, previous: str | None, facts: str = ""
) -> tuple[str, str]:
    """The text before and after the conversation."""
    head = ""
    if previous:
        head = f"[Previous summary]\n{previous}\n[End previous summary]\n\n"
    tail = ""
    if todos:
        tail += (
            f"\n\n[Current todo list]\n{format_todos(todos)}\n[End todo list]\n\n"
            'Include these tasks and their statuses verbatim in the "## Todo List" section. Instruct '
            "the resuming assistant to restore them with its todo tool to keep tracking progress."
        )
    else:
        tail += '\n\nNo todo list was recorded: in "## Todo List" list the open tasks the conversation implies, or "none".'
    if facts:
        tail += f"\n\n[Facts extracted from the conversation: keep them]\n{facts}\n[End facts]"
    if request.source:
        where = f" ({request.source_range})" if request.source_range else ""
        tail += f"\n\nName the original session file in Current State: `{request.source}`{where}."
    if request.cwd:
        tail += f"\n\nName the working directory in Current State: `{request.cwd}`."
    if request.instructions and request.instructions.strip():
        tail += (
            f"\n\n[Focus]\nThe user asked the summary to focus on: {request.instructions.strip()}. Keep what "
            "matches it first and verbatim; if nothing does, say so in Context & Decisions."
        )
    tail += "\n\nWrite the summary now."
    return head, tail


def _facts(carry: Carry, budget_tokens: int, tok: Tokenizer, limit: int) -> str:
    """The facts block within ``limit`` tokens: long requests and the deliverable shortened first,
    then the block cut to its head and tail (the answer is still checked against every fact)."""
    chars = max(400, int(budget_tokens * 4 * 0.4))  # the deliverable may take 40 % of the output
    text = facts_block(carry, chars)
    for request_chars in (200, 80):
        if tok.count(text) <= limit:
            return text
        short = replace(carry, requests=[first_and_last(r, request_chars) for r in carry.requests])
        text = facts_block(short, min(chars, 1000))
    return _fit_text(text, tok.count(text), limit)


def _fit_text(text: str, tokens: int, budget: int) -> str:
    """Cut a too-long text to its head and tail (by characters, scaled from its token count)."""
    if tokens <= budget or not text:
        return text
    keep = max(0, int(len(text) * budget / tokens * 0.9)) // 2
    return f"{text[:keep]}\n[… cut to fit the summarizer's window …]\n{text[-keep:] if keep else ''}"


def build_prompt(
    request: SummaryRequest,
    *,
    window: int,
    tokenizer: Tokenizer | str = "o200k",
    tool_results: ToolResults | str | None = None,
    max_output: int | None = None,
    carry: Carry | None = None,
) -> Prompt:
    """The system and user prompt for ``request``, fitted to ``window``.

    The input cap is 80 % of the window, and never more than the window minus the output
    budget. The oldest rendered messages go first; a single message still too large keeps its
    head and tail.
    """
    tok = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    mode = ToolResults.parse(tool_results)
    todos = current_todos(request.messages, request.todos)
    carry = extract(request) if carry is None else carry
    system = system_prompt(request.budget_tokens)
    cap = int(window * INPUT_RATIO)
    if max_output:  # leave room for the summary; an output budget near the window is the caller's error
        cap = max(min(cap, window - max_output), window // 4)
    fixed = tok.count(system) + 16  # + the omission note
    previous = (request.previous_summary or "").strip() or None
    if previous:
        previous = _fit_text(previous, tok.count(previous), max(0, cap // 3))
    head, tail = _blocks(request, todos, previous, _facts(carry, request.budget_tokens, tok, cap // 3))
    available = cap - fixed - tok.count(head) - tok.count(tail) - 16
    lines = render_messages(request.messages, mode)
    counts = tok.count_batch(lines) if lines else []
    total = sum(counts) + len(counts)
    start = 0
    while start < len(lines) - 1 and total > available:
        total -= counts[start] + 1
        start += 1
    kept = lines[start:]
    if kept and total > available:
        kept[-1] = _fit_text(kept[-1], counts[-1], max(0, available))
    omitted = request.dropped + start
    note = f"[{omitted} earlier messages were left out to fit]\n" if omitted else ""
    body = "\n".join(kept)
    user = f"{head}{note}[Conversation]\n{body}\n[End conversation]{tail}"
    return Prompt(system, user, start, tok.count(system) + tok.count(user), todos, carry)
