"""Facts the offline digest reads off a transcript: requests, files, commands, errors.

Everything comes from the entries themselves (tool names, arguments, result texts), so the
digest needs no model and gives the same answer every time.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxfold.providers import harness
from ctxfold.providers.calls import SHELL_TOOLS, call_args, inner_calls, tool_key
from ctxfold.providers.failures import (
    error_text,
    exit_status,
    failed,
    no_match,
    nothing_to_do,
)
from ctxfold.providers.shellfiles import shell_files
from ctxfold.providers.values import Values
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

PATH_KEYS = ("file_path", "path", "filename", "notebook_path")
_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$", re.MULTILINE)
_PATCH_VERB = {"Add": "written", "Update": "edited", "Delete": "deleted"}
# ctxfold's own messages and the harness's text: see harness.py
SUMMARY_OPEN, SUMMARY_CLOSE, CONTINUATION_OPEN = (
    harness.SUMMARY_OPEN,
    harness.SUMMARY_CLOSE,
    harness.CONTINUATION_OPEN,
)
HARNESS_ROLES = harness.HARNESS_ROLES


def recorded_summary(messages: Sequence[Message]) -> str | None:
    """The summary a recording tool left at the head of the context (Claude Code's
    isCompactSummary line, pi's or Codex's compaction summary), if any."""
    for m in messages[:2]:
        inner = m.extra.get("message")
        pi_summary = isinstance(inner, dict) and inner.get("role") == "compactionSummary"
        if m.extra.get("isCompactSummary") or m.extra.get("ctxfold") == "recorded-summary" or pi_summary:
            text = "\n".join(p.text for p in m.parts if isinstance(p, TextPart)).strip()
            return text or None
    return None


def request_text(m: Message) -> str | None:
    """The text a person typed, or None for tool results, harness notes and ctxfold's own messages."""
    return harness.user_words(m)


def file_actions(call: ToolCallPart, args: Any = None) -> list[tuple[str, str]]:
    """``(path, action)`` pairs a tool call touched, action one of read/written/edited/deleted
    (``args``: the call's parsed arguments, when the caller has them already)."""
    args = call_args(call) if args is None else args
    out: list[tuple[str, str]] = []
    texts = (
        [args]
        if isinstance(args, str)
        else [v for v in args.values() if isinstance(v, str)]
        if isinstance(args, dict)
        else []
    )
    for text in texts:
        if "*** " in text:
            out += [(m.group(2), _PATCH_VERB[m.group(1)]) for m in _PATCH_HEADER.finditer(text)]
    if not isinstance(args, dict):
        return out
    path = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str) and args[k]), None)
    if path is None:
        return out
    key = tool_key(call.name)
    if key in ("strreplaceeditor", "strreplacebasededittool", "texteditor"):
        cmd = args.get("command")
        action = "read" if cmd == "view" else "written" if cmd == "create" else "edited"
    elif "read" in key or key in ("view", "cat", "open"):
        action = "read"
    elif "write" in key or key in ("create", "createfile"):
        action = "written"
    elif any(w in key for w in ("edit", "replace", "patch", "insert")):
        action = "edited"
    else:
        return out  # search tools (Grep, Glob, LS) name directories, not files touched
    out.append((path, action))
    return out


def shell_command(call: ToolCallPart, args: Any = None) -> str | None:
    """The command line of a shell-like tool call, else None."""
    if tool_key(call.name) not in SHELL_TOOLS:
        return None
    args = call_args(call) if args is None else args
    cmd: Any = args
    if isinstance(args, dict):
        cmd = next((args[k] for k in ("command", "cmd", "script", "code", "input") if k in args), None)
    if isinstance(cmd, list):
        cmd = cmd[-1] if len(cmd) >= 3 and cmd[1] in ("-lc", "-c") else " ".join(map(str, cmd))
    return " ".join(str(cmd).split()) if cmd else None


@dataclass
class FileUse:
    """What the conversation did to one file: its actions, how often it was read, which lines."""

    first: int
    last: int
    actions: list[str] = field(default_factory=list)
    reads: int = 0
    lines: tuple[int, int] | None = None  # the span of the line ranges read, when every read named one
    whole: bool = False  # read at least once without a range

    def note(self, i: int, action: str, lines: tuple[int, int] | None) -> None:
        self.last = i
        if action not in self.actions:
            self.actions.append(action)
        if action == "read":
            self.reads += 1
            if lines is None:
                self.whole = True
            else:
                lo, hi = self.lines or lines
                self.lines = (min(lo, lines[0]), max(hi, lines[1]))


@dataclass
class Facts:
    """What happened, each fact tagged with the index of the message it came from."""

    requests: list[tuple[int, str]] = field(default_factory=list)
    said: list[tuple[int, str]] = field(default_factory=list)  # the user's words, rejections included
    files: dict[str, FileUse] = field(default_factory=dict)
    commands: list[tuple[int, str, str]] = field(default_factory=list)  # (index, command, status)
    typed: list[tuple[int, str, str]] = field(default_factory=list)  # the user's own, in the shell mode
    errors: dict[str, int] = field(default_factory=dict)  # "tool: line" -> last index, every failure
    open_errors: list[tuple[int, str, str]] = field(default_factory=list)  # (index, what ran, error text)
    settled: int = 0  # failures a later step fixed, searches that found nothing, expected failures
    values: Values = field(default_factory=Values)
    last_assistant: tuple[int, str] | None = None
    tool_calls: int = 0
    messages: int = 0


_EXPECTED = re.compile(
    r"\b(?:should|expect(?:ed)?(?: it)? to|will|must|to) (?:fail|error|break)|reproduc|confirm (?:the )?(?:bug|failure)|"
    r"red (?:test|phase)|failing test first",
    re.I,
)
_CONFIRMED = re.compile(
    r"\breproduced\b|\bas expected\b|confirm(?:s|ed)? (?:the )?(?:bug|issue|failure|error)|expected failure",
    re.I,
)
_RUNNERS = {
    "npm",
    "pnpm",
    "yarn",
    "npx",
    "cargo",
    "go",
    "git",
    "make",
    "uv",
    "poetry",
    "python",
    "python3",
    "node",
    "bun",
}


_ALIAS = re.compile(r"^(python|pip)[\d.]*$")  # python3.12, python3 and python: one program


def _what(tool: str, cmd: str | None, paths: Sequence[str]) -> set[str]:
    """What a later success must share to settle a failure: each program of a command (with its
    subcommand, for runners such as npm or git), else the tool and the file it worked on."""
    if not cmd:
        return {f"{tool}: {paths[0] if paths else ''}"}
    keys: set[str] = set()
    for part in re.split(r"&&|\|\||;|\|", cmd):
        words = [w for w in part.split() if "=" not in w or w.startswith("-")]
        if not words or words[0] == "cd":
            continue
        head = _ALIAS.sub(r"\1", words[0].rsplit("/", 1)[-1])
        sub = words[1] if len(words) > 1 and not words[1].startswith("-") else ""
        if sub == "run" and len(words) > 2:  # npm run build: the script is the subcommand
            sub = f"run {words[2]}"
        keys.add(f"$ {head} {sub}".strip() if head in _RUNNERS else f"$ {head}")
    return keys or {f"{tool}:"}


def _settles(failure: set[str], success: set[str]) -> bool:
    return any(s == f or s.startswith(f + " ") for f in failure for s in success)


def gather(messages: Sequence[Message]) -> Facts:
    g = Gathering()
    for i, m in enumerate(messages):
        g.add(i, m)
    return g.result()


class Gathering:
    """:func:`gather` one message at a time, so a long conversation can stream through it (what
    it keeps grows with the calls and requests, not with the text)."""

    def __init__(self) -> None:
        self.facts = Facts()
        self.pending: dict[str, list[int]] = {}  # call id → its commands in facts.commands, until its result
        self.early: dict[str, ToolResultPart] = {}  # results written before their call (Claude Code can)
        # call id → (tool name, command, paths, failure expected), of the latest call with that id
        self.calls: dict[str, tuple[str, str | None, tuple[str, ...], bool]] = {}
        self.failing: list[tuple[set[str], tuple[int, str, str]]] = []  # failures that still stand
        self.intent = ""
        self._intent_read: tuple[str | None, bool] = (None, False)  # the intent last searched

    def add(self, i: int, m: Message) -> None:
        if m.branch is None and not m.dropped:  # (a response pi sends no more: none of its calls ran)
            self.read(i, m, request_text(m), [inner_calls(outer) for outer in m.tool_calls])

    def read(self, i: int, m: Message, req: str | None, inner: list[list[ToolCallPart]]) -> None:
        """:meth:`add` of a main-branch message whose request text and inner calls (per tool
        call) the caller has read already."""
        self.facts.messages += 1
        if req:
            self.facts.requests.append((i, req))
            self.facts.said.append((i, req))
            self.facts.values.words(req, i)
            self.intent = ""
        setting = harness.harness_command(m)
        if setting:
            self.facts.values.setting(setting, i)
        typed = harness.user_shell(m) if m.role == "user" else None
        if typed:
            self.facts.values.command(typed[0], i)
            self.facts.typed.append((i, typed[0], typed[1] or "ok"))
        branch = m.extra.get("gitBranch")
        if isinstance(branch, str):
            self.facts.values.branch(branch, i)
        if m.role == "assistant" and m.text.strip() and not harness.is_synthetic(m):
            if self.failing and self.failing[-1][1][0] == i - 1 and _CONFIRMED.search(m.text):
                self.failing.pop()  # the agent says the failure was the one it meant to see
                self.facts.settled += 1
            self.facts.last_assistant = (i, m.text.strip())
            self.facts.values.words(m.text, i)
            self.intent = m.text
        for outer, calls in zip(m.tool_calls, inner, strict=True):
            self.facts.tool_calls += 1
            self.pending.pop(outer.id, None)  # a reused id: an unanswered older call keeps "no result"
            before = self.early.pop(outer.id, None)
            touched: list[str] = []
            command: str | None = None
            for call in calls:  # a code tool's script: the tools it calls
                args = call_args(call)  # parsed once for both readings
                cmd = shell_command(call, args)
                for path, action, lines in _touched(call, args, cmd):
                    use = self.facts.files.pop(path, None) or FileUse(i, i)
                    use.note(i, action, lines)
                    self.facts.files[path] = use
                    touched.append(path)
                if cmd:
                    command = command or cmd
                    self.facts.values.command(cmd, i)
                    self.facts.commands.append((i, cmd, exit_status(before)))
                    self.pending.setdefault(outer.id, []).append(len(self.facts.commands) - 1)
            expected = self._expected()
            self.calls[outer.id] = (sys.intern(outer.name), command, tuple(touched), expected)
        for res in m.tool_results:
            known = self.calls.get(res.call_id)
            tool = res.name or (known[0] if known is not None else "tool")
            said = harness.rejection_words(res)
            if said:
                self.facts.said.append((i, said))
                self.facts.requests.append((i, f"(said when rejecting a {tool} call) {said}"))
            # a result answers the latest call with its id (some servers number ids from 0 each turn)
            ks = self.pending.pop(res.call_id, None)
            status = None
            if ks is not None:
                status = exit_status(res)
                for k in ks:
                    j, cmd, _ = self.facts.commands[k]
                    self.facts.commands[k] = (j, cmd, status)
            elif known is None:
                self.early[res.call_id] = res
            self.facts.values.output(res.text, i)
            _, command, paths, expected = known or ("", None, (), False)
            keys = _what(tool, command, paths)
            if failed(res, tool, status):
                line = error_text(res)
                self.facts.errors.pop(f"{tool}: {line}", None)
                self.facts.errors[f"{tool}: {line}"] = i
                if expected or said or no_match(command, status or "", res) or nothing_to_do(res):
                    self.facts.settled += 1
                else:  # the newest of the same commands, or of the same error (tried three ways)
                    self.failing = [f for f in self.failing if f[0] != keys and f[1][2] != line]
                    self.failing.append((keys, (i, command or f"{tool} {' '.join(paths)}".strip(), line)))
            else:
                still = [f for f in self.failing if not _settles(f[0], keys)]
                self.facts.settled += len(self.failing) - len(still)
                self.failing = still

    def _expected(self) -> bool:
        """Whether the agent's latest words expect a failure (read once per text, not per call)."""
        if self._intent_read[0] is not self.intent:
            self._intent_read = (self.intent, bool(_EXPECTED.search(self.intent)))
        return self._intent_read[1]

    def result(self) -> Facts:
        self.facts.open_errors = [f for _, f in self.failing]
        return self.facts


def _touched(call: ToolCallPart, args: Any, cmd: str | None) -> list[tuple[str, str, tuple[int, int] | None]]:
    """Files a call touched, through a file tool or its shell command ``cmd``, with the lines it read."""
    out: list[tuple[str, str, tuple[int, int] | None]] = []
    for path, action in file_actions(call, args):
        lines = None
        if action == "read" and isinstance(args, dict):
            start, limit = args.get("offset"), args.get("limit")
            if isinstance(start, int) and isinstance(limit, int):
                lines = (max(1, start), max(1, start) + limit - 1)
            view = args.get("view_range")
            if isinstance(view, list) and len(view) == 2 and all(isinstance(v, int) for v in view):
                lines = (view[0], view[1] if view[1] > 0 else view[0])
        out.append((path, action, lines))
    if cmd:
        out += shell_files(cmd, windows=_on_windows(args, cmd))
    return out


_WINDOWS_DIR = re.compile(r"^[A-Za-z]:[\\/]")
_CMDLET = re.compile(r"^\s*(?:Get|Set|Select|Add|Out|New|Remove|Copy|Move|Test)-[A-Z][a-z]+\b")


def _on_windows(args: Any, cmd: str) -> bool:
    """Whether a shell call ran in PowerShell or cmd (Codex on Windows gives a ``workdir`` such
    as ``C:\\Users\\…``; a command can open with a cmdlet): Git Bash, Claude Code's shell on
    Windows, reads backslashes as a POSIX shell does."""
    where = args.get("workdir") or args.get("cwd") or args.get("dir_path") if isinstance(args, dict) else None
    return bool(isinstance(where, str) and _WINDOWS_DIR.match(where)) or bool(_CMDLET.match(cmd))
