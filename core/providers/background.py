"""Background tasks the agent started and that no notice has ended.

Claude Code runs a shell command in the background (``Bash`` with ``run_in_background``) or
watches one (``Monitor``), and tells the model about it later: a ``<task-notification>`` with a
``<status>``, or a ``BashOutput``/``TaskOutput`` result. A session resumed from a compacted log
runs in a new process, which gets no notice of the old one's tasks, so an agent that was
waiting on one would wait for ever: the summary names each task still running when the log
ends, with its command and output file, for the next agent to read or run again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxfold.providers.calls import call_args
from ctxfold.transcript.model import Message

_STARTED = re.compile(r"^(?:Command running in background with ID: ([\w-]+)|Monitor started \(task ([\w-]+))")
_OUTPUT = re.compile(r"Output is being written to: (\S+)")
_NOTICE = re.compile(r"<task-id>([\w-]+)</task-id>(.*?)</task-notification>", re.S)
_STATUS = re.compile(r"<status>(\w+)</status>")
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
_POLL_TOOLS = frozenset({"BashOutput", "TaskOutput"})  # a task's status, first in the result
_STOP_TOOLS = frozenset({"KillBash", "KillShell", "TaskStop"})
_ID_ARGS = ("bash_id", "shell_id", "task_id")
_STILL = frozenset({"running", "pending", "started"})  # any other status ends the task


@dataclass(frozen=True)
class Task:
    id: str
    command: str
    output: str | None  # the file its output goes to, when the harness said
    named: bool = True  # ``command`` is the command; else what a notice called the task

    def describe(self, limit: int = 200) -> str:
        what = f"`{self.command[:limit]}`" if self.named else self.command[:limit]
        line = f"{what} (task {self.id}"
        return line + (f"; output in `{self.output}`)" if self.output else ")")


class Background:
    """The tasks still running, read one message at a time (a call, then its result, then the
    notices that end it)."""

    def __init__(self) -> None:
        self.commands: dict[str, str] = {}  # a starting call's id -> its command
        self.targets: dict[str, tuple[str, str]] = {}  # a poll's or stop's call id -> (tool, task id)
        self.running: dict[str, Task] = {}

    def add(self, m: Message) -> None:
        for call in m.tool_calls:
            parsed = call_args(call)
            args = parsed if isinstance(parsed, dict) else {}
            if (args.get("run_in_background") or call.name == "Monitor") and isinstance(
                args.get("command"), str
            ):
                self.commands[call.id] = args["command"]
            elif call.name in _POLL_TOOLS or call.name in _STOP_TOOLS:
                target = next((args[k] for k in _ID_ARGS if isinstance(args.get(k), str)), None)
                if target:
                    self.targets[call.id] = (call.name, target)
        for result in m.tool_results:
            self._result(result.call_id, result.text, result.is_error)
        if m.role == "user" and "<task-notification>" in m.text:
            for task_id, body in _NOTICE.findall(m.text):
                self._notice(task_id, body)

    def _notice(self, task_id: str, body: str) -> None:
        """A notice ends its task, or shows one running that started before the log's part read
        here (before a compaction): then it is named by the notice's summary."""
        status = _STATUS.search(body)
        if status and status.group(1) not in _STILL:
            self.running.pop(task_id, None)
        elif task_id not in self.running:
            about = _SUMMARY.search(body)
            what = about.group(1).removeprefix("Monitor event: ").strip() if about else "a background task"
            self.running[task_id] = Task(task_id, what, None, named=False)

    def _result(self, call_id: str, text: str, error: bool) -> None:
        if call_id in self.commands:
            command = self.commands.pop(call_id)
            started = _STARTED.match(text)
            if started and not error:
                output = _OUTPUT.search(text)
                task_id = started.group(1) or started.group(2)
                self.running[task_id] = Task(task_id, command, output.group(1) if output else None)
        elif call_id in self.targets:
            tool, task_id = self.targets.pop(call_id)
            status = _STATUS.match(text)
            if (tool in _STOP_TOOLS and not error) or (status and status.group(1) not in _STILL):
                self.running.pop(task_id, None)

    def result(self) -> list[Task]:
        return list(self.running.values())
