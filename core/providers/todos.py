"""The agent's current todo list, recovered from the conversation.

Agents keep their plan in tool calls, and a summary that loses it leaves the resumed agent
without its checklist (the seeds' "todo preservation"). Recognised, newest wins:

- Claude Code ``TodoWrite`` ``{todos: [{content, status, activeForm}]}`` (the whole list);
- Claude Code ``TaskCreate`` / ``TaskUpdate`` (one task at a time, ids from "Task #N created");
- Codex ``update_plan`` ``{plan: [{step, status}]}``, also called from a code-mode script;
- a generic ``todo_write`` / ``todos`` tool taking ``{todos: [...]}`` or a bare list;
- Claude Code's ``todo_reminder`` / ``task_reminder`` attachments: the harness's own copy of
  the list, which survives a compaction that summarized the tool calls away (an empty one is
  ignored: Claude Code clears a finished list, and the finished items are worth keeping).

A caller holding the list in its own state passes it as ``SummaryRequest.todos`` instead.
Side chains (sub-agents) keep their own lists and are ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxfold.providers.calls import inner_calls, tool_key
from ctxfold.transcript.model import Message, ToolCallPart, ToolResultPart

_CONTENT_KEYS = ("content", "step", "text", "title", "subject", "task", "description", "name")
_GENERIC = {"todowrite", "todos", "todo", "writetodos", "updatetodos", "todoupdate", "updatetodo"}
_TASK_ID = re.compile(r"Task #(\w+) created")


@dataclass(frozen=True, slots=True)
class Todo:
    content: str
    status: str = "pending"

    def line(self) -> str:
        return f"- [{self.status}] {self.content}"


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def normalize(items: Iterable[Any]) -> list[Todo]:
    """Todos from dicts (any of the usual field names) or plain strings; others skipped."""
    out: list[Todo] = []
    for item in items:
        if isinstance(item, Todo):
            out.append(item)
        elif isinstance(item, str) and item.strip():
            out.append(Todo(item.strip()))
        elif isinstance(item, dict):
            content = next((str(item[k]) for k in _CONTENT_KEYS if isinstance(item.get(k), str)), None)
            if not content:
                continue
            status = item.get("status", item.get("state"))
            if not isinstance(status, str):
                done = item.get("completed", item.get("done"))
                status = "completed" if done is True else "pending"
            out.append(Todo(content.strip(), status))
    return out


def format_todos(todos: Sequence[Todo]) -> str:
    return "\n".join(t.line() for t in todos)


def _list_arg(args: Any, *keys: str) -> list[Any] | None:
    args = _json(args)
    if isinstance(args, list):
        return args
    if isinstance(args, dict):
        for k in keys:
            if isinstance(args.get(k), list):
                return list(args[k])
    return None


class _Tasks:
    """Claude Code's one-at-a-time task tools, replayed into a list."""

    def __init__(self) -> None:
        self.items: dict[str, Todo] = {}

    def create(self, args: Any, result: ToolResultPart | None) -> None:
        args = _json(args)
        todo = normalize([args]) if isinstance(args, dict) else []
        if not todo:
            return
        match = _TASK_ID.search(result.text) if result is not None else None
        task_id = match.group(1) if match else str(len(self.items) + 1)
        self.items[task_id] = todo[0]

    def update(self, args: Any) -> None:
        args = _json(args)
        if not isinstance(args, dict):
            return
        task_id = str(args.get("taskId", args.get("task_id", "")))
        old = self.items.get(task_id)
        if old is None:
            return
        status = args.get("status")
        if status == "deleted":
            del self.items[task_id]
            return
        subject = args.get("subject")
        content = subject if isinstance(subject, str) and subject else old.content
        self.items[task_id] = Todo(content, status if isinstance(status, str) else old.status)


def extract_todos(messages: Sequence[Message]) -> list[Todo] | None:
    """The newest todo list in the main conversation, or None when no todo tool was used."""
    results: dict[str, ToolResultPart] = {}
    for m in messages:
        if m.branch is None:
            for r in m.tool_results:
                results[r.call_id] = r
    latest: list[Todo] | None = None
    tasks = _Tasks()
    for m in messages:
        if m.branch is not None or m.dropped:
            continue
        reminded = _reminder(m)
        if reminded:  # an empty reminder only says nothing is open: finished items stay in view
            tasks.items = reminded
            latest = list(reminded.values())
        for call in (inner for outer in m.tool_calls for inner in inner_calls(outer)):
            latest = apply_call(call, results.get(call.id), tasks, latest)
    return latest


TODO_TOOLS = frozenset({"updateplan", "taskcreate", "taskupdate", *_GENERIC})


def apply_call(
    call: ToolCallPart, result: ToolResultPart | None, tasks: _Tasks, latest: list[Todo] | None
) -> list[Todo] | None:
    """The todo list after one call (``latest`` when the call is no todo call or changes
    nothing); shared by the reading of a whole list and the streamed one."""
    if result is not None and result.is_error:
        return latest  # the tool refused it: the list did not change
    key = tool_key(call.name)
    if key in ("taskcreate", "taskupdate"):
        if key == "taskcreate":
            tasks.create(call.arguments, result)
        else:
            tasks.update(call.arguments)
        return list(tasks.items.values())
    if key == "updateplan":
        items = _list_arg(call.arguments, "plan")
    elif key in _GENERIC:
        items = _list_arg(call.arguments, "todos", "items", "tasks")
    else:
        return latest
    return normalize(items) if items is not None else latest


def _reminder(m: Message) -> dict[str, Todo] | None:
    """The list a Claude Code reminder attachment carries, by task id."""
    att = m.extra.get("attachment")
    if not isinstance(att, dict) or att.get("type") not in ("todo_reminder", "task_reminder"):
        return None
    items = att.get("content")
    if not isinstance(items, list):
        return None
    out: dict[str, Todo] = {}
    for i, item in enumerate(items, 1):
        todo = normalize([item])
        if todo:
            task_id = item.get("id") if isinstance(item, dict) else None
            out[str(task_id if task_id is not None else i)] = todo[0]
    if all(k.isdigit() for k in out):  # Claude Code lists tasks in no set order; ids are creation order
        out = dict(sorted(out.items(), key=lambda kv: int(kv[0])))
    return out


def todos_from_summary(summary: str | None) -> list[str]:
    """The lines of a previous summary's "Todo List" section (for rolling summaries)."""
    if not summary:
        return []
    lines: list[str] = []
    inside = False
    for line in summary.splitlines():
        if line.startswith("#"):
            inside = "todo" in line.lower()
            continue
        if inside and line.strip() and line.strip().removeprefix("- ") not in ("(no todo list recorded)",):
            lines.append(line.rstrip())
    return lines


def current_todos(messages: Sequence[Message], given: Sequence[Any] | None) -> list[Todo] | None:
    """The caller's list (its own state) when given, else the newest one in the transcript."""
    if given is not None:
        return normalize(given)
    return extract_todos(messages)
