"""Claude Code ``attachment`` lines: context the harness adds to the next request.

Newer Claude Code versions (2.1+) no longer put the skill list, deferred tool names, MCP server
instructions, todo and task reminders, re-read files or queued notifications into the system
prompt or a user line: each is logged as an ``attachment`` line and sent as a system-reminder
user message. A session's first request carries 2–4k o200k tokens of them, and task reminders
repeat ~800 tokens every few turns, so a reader that drops them undercounts every request.

The exact wording Claude Code wraps around each one is not in the log; the renderings below
carry the logged content with a short header, which is what dominates the count. Context a
hook injects (``hook_additional_context``) is sent too. 2.1.332 also logs the reminders a
session starts with (where it runs, the model, the agent types, the token budget, the date,
the commit and pull request attribution), sent in the first user message. Attachment types not
listed here (hook run results, IDE notices, the system prompt's snapshot and the like) stay
bookkeeping: whether they reach the model varies, and they are small, or they are not sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

_FENCE = "<system-reminder>\n{}\n</system-reminder>"


def _strings(v: Any) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _skills(a: dict[str, Any]) -> str | None:
    content = a.get("content")
    if not isinstance(content, str):
        return None
    return "The following skills are available for use with the Skill tool:\n\n" + content


def _deferred_tools(a: dict[str, Any]) -> str | None:
    added = _strings(a.get("addedLines")) or _strings(a.get("addedNames"))
    removed = _strings(a.get("removedNames"))
    if not added and not removed:
        return None
    text = "The following deferred tools are now available via ToolSearch:\n" + "\n".join(added)
    if removed:
        text += "\n\nThese deferred tools are no longer available: " + ", ".join(removed)
    return text


def _mcp_instructions(a: dict[str, Any]) -> str | None:
    blocks = _strings(a.get("addedBlocks"))
    if not blocks:
        return None
    return (
        "# MCP Server Instructions\n\nThe following MCP servers have provided instructions:\n\n"
        + "\n\n".join(blocks)
    )


_REMINDER = (
    "The task tools haven't been used recently. If you're working on tasks that would benefit from "
    "tracking progress, consider using them. Only use them if relevant to the current work; "
    "ignore this reminder if not applicable. Make sure that you NEVER mention this reminder to the user."
)


def _reminder(a: dict[str, Any]) -> str | None:
    items = a.get("content")
    if not isinstance(items, list):
        return None
    if not items:
        return _REMINDER
    lines: list[str] = []
    for it in items:
        if isinstance(it, dict):
            head = it.get("subject") or it.get("content") or ""
            status = it.get("status")
            desc = it.get("description")
            line = f"#{it.get('id', len(lines) + 1)}. [{status}] {head}" if status else f"- {head}"
            lines.append(f"{line}: {desc}" if isinstance(desc, str) and desc else line)
    return _REMINDER + "\n\nHere are the existing tasks:\n\n" + "\n".join(lines)


def _file(a: dict[str, Any]) -> str | None:
    content = a.get("content")
    inner = content.get("file") if isinstance(content, dict) else None
    text = inner.get("content") if isinstance(inner, dict) else None
    path = a.get("filename")
    if not isinstance(text, str) or not isinstance(path, str):
        return None
    start = inner.get("startLine") if isinstance(inner, dict) else None
    first = start if isinstance(start, int) and start > 0 else 1
    numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.split("\n"), first))
    call = orjson.dumps({"file_path": path}).decode()
    return (
        f"Called the Read tool with the following input: {call}\nResult of calling the Read tool:\n{numbered}"
    )


def _file_reference(a: dict[str, Any]) -> str | None:
    path = a.get("filename")
    if not isinstance(path, str):
        return None
    return (
        f"Note: {path} was read before the last conversation was summarized, but the contents are "
        "too large to include. Use Read tool if you need to access it."
    )


def _queued(a: dict[str, Any]) -> str | None:
    prompt = a.get("prompt")
    return prompt if isinstance(prompt, str) and prompt else None


def _hook_context(a: dict[str, Any]) -> str | None:
    """What a hook (SessionStart, UserPromptSubmit, PostToolUse...) added for the model to read."""
    content = a.get("content")
    texts = [content] if isinstance(content, str) else _strings(content)
    return "\n".join(texts) if texts else None


def _selection(a: dict[str, Any]) -> str | None:
    content, path = a.get("content"), a.get("filename")
    if not isinstance(content, str) or not isinstance(path, str):
        return None
    return (
        f"The user selected the lines {a.get('lineStart')} to {a.get('lineEnd')} from {path}:\n{content}\n\n"
        "This may or may not be related to the current task."
    )


def _environment(a: dict[str, Any]) -> str | None:
    """2.1.332's snapshot of where the session runs (the wording around it is Claude Code's own)."""
    snap = a.get("snapshot")
    if not isinstance(snap, dict):
        return None
    more = ", ".join(_strings(snap.get("additionalWorkingDirectories")))
    rows = [
        ("Working directory", snap.get("workingDirectory")),
        ("Additional working directories", more or None),
        ("Git repository", _yes_no(snap.get("isGitRepo"))),
        ("Git worktree", "yes" if snap.get("isWorktree") is True else None),
        ("Platform", snap.get("platform")),
        ("Shell", snap.get("shell")),
        ("OS version", snap.get("osVersion")),
    ]
    lines = [f" - {name}: {value}" for name, value in rows if isinstance(value, str) and value]
    return "# Environment\n" + "\n".join(lines) if lines else None


def _yes_no(value: Any) -> str | None:
    return "yes" if value is True else "no" if value is False else None


def _model(a: dict[str, Any]) -> str | None:
    text = a.get("text")
    if isinstance(text, str) and text:
        return text
    who = a.get("identity")
    if not isinstance(who, dict) or not isinstance(who.get("modelId"), str):
        return None
    return f"The model is {who.get('marketingName') or who['modelId']} ({who['modelId']}); knowledge cutoff {who.get('knowledgeCutoff')}."


def _agents(a: dict[str, Any]) -> str | None:
    added, removed = _strings(a.get("addedLines")), _strings(a.get("removedTypes"))
    if not added and not removed:
        return None
    text = "Agent types the Agent tool can start:\n" + "\n".join(added) if added else ""
    if removed:
        text += ("\n\n" if text else "") + "Agent types no longer available: " + ", ".join(removed)
    return text


def _text(a: dict[str, Any]) -> str | None:
    text = a.get("text")
    return text if isinstance(text, str) and text else None


def _date(a: dict[str, Any]) -> str | None:
    day = a.get("date")
    return f"The date today is {day}." if isinstance(day, str) and day else None


def _attribution(a: dict[str, Any]) -> str | None:
    """The lines Claude Code asks to end its commits and pull requests with."""
    commit, pr = a.get("commit"), a.get("pr")
    parts = []
    if isinstance(commit, str) and commit:
        parts.append(f"End each git commit message you write with:\n{commit}")
    if isinstance(pr, str) and pr:
        parts.append(f"End each pull request description you write with:\n{pr}")
    return "\n\n".join(parts) if parts else None


RENDER: dict[str, tuple[Callable[[dict[str, Any]], str | None], bool]] = {
    # type: (renderer, wrapped in a system reminder)
    "skill_listing": (_skills, True),
    "deferred_tools_delta": (_deferred_tools, True),
    "mcp_instructions_delta": (_mcp_instructions, True),
    "todo_reminder": (_reminder, True),
    "task_reminder": (_reminder, True),
    "file": (_file, True),
    "compact_file_reference": (_file_reference, True),
    "queued_command": (_queued, False),
    "hook_additional_context": (_hook_context, True),
    "selected_lines_in_ide": (_selection, True),
    # 2.1.332's reminders of a session's start
    "environment": (_environment, True),
    "model": (_model, True),
    "agent_listing_delta": (_agents, True),
    "total_tokens_reminder": (_text, True),
    "date": (_date, True),
    "remote_session_change": (_attribution, True),
}


def render(attachment: Any) -> str | None:
    """The text the model reads for one attachment, or None when it sends nothing we know of."""
    if not isinstance(attachment, dict):
        return None
    entry = RENDER.get(str(attachment.get("type")))
    if entry is None:
        return None
    fn, fenced = entry
    text = fn(attachment)
    if text is None:
        return None
    return _FENCE.format(text) if fenced else text
