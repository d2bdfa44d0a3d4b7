"""Facts the offline digest reads off a transcript: requests, files, commands, errors.

Everything comes from the entries themselves (tool names, arguments, result texts), so the
digest needs no model and gives the same answer every time.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxfold.providers.calls import inner_calls
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

PATH_KEYS = ("file_path", "path", "filename", "notebook_path")
SHELL_TOOLS = {
    "bash", "shell", "execcommand", "exec", "run", "runcommand", "executebash", "terminal",
    "localshell", "shellcommand", "runshellcommand", "runterminalcmd", "command",
}  # fmt: skip
_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$", re.MULTILINE)
_PATCH_VERB = {"Add": "written", "Update": "edited", "Delete": "deleted"}
_EXIT = re.compile(
    r"\bexit(?:ed)?\s*(?:with\s+)?(?:code|status)\s*:?\s*(-?\d+)|\"exit_code\"\s*:\s*(-?\d+)", re.I
)
_ERROR_LINE = re.compile(
    r"^\s*((?:[\w.]+)?(?:Error|Exception)\b.*|error(?:\[\w+\])?:.*|fatal:.*|npm ERR!.*|E: .*)$", re.M
)
_TAGGED = re.compile(r"<([A-Za-z_][\w-]*)>.*?</\1>", re.S)
# ctxfold's own messages, recognised by their text once a log written back has lost the marks
SUMMARY_OPEN = "[Previous conversation summary]"
SUMMARY_CLOSE = "[End of summary — conversation continues below]"
CONTINUATION_OPEN = "[System: The conversation was compacted"
_HARNESS_PREFIXES = (
    "# AGENTS.md instructions",
    "Caveat: The messages below were generated",
    "[Request interrupted",
    SUMMARY_OPEN,
    CONTINUATION_OPEN,
)
_PROBLEM = re.compile(
    r"error|fail|not found|no such file|denied|cannot|can't|invalid|refused|abort|unable", re.I
)


@functools.lru_cache(maxsize=512)
def _key(name: str) -> str:
    """A tool name reduced to its letters: ``str_replace_editor`` → ``strreplaceeditor``."""
    return re.sub(r"[^a-z]", "", name.lower())


def _args(call: ToolCallPart) -> Any:
    if isinstance(call.arguments, str):
        try:
            return json.loads(call.arguments)
        except ValueError:
            return call.arguments
    return call.arguments


HARNESS_ROLES = ("bashExecution", "custom", "hookMessage", "branchSummary", "compactionSummary")


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
    if m.role != "user" or m.branch is not None or m.tool_results:
        return None
    # ctxfold's own, Claude Code's meta lines and attachments, an OpenHands observation no tool
    # call asked for (an error the agent caused, recalled context): none was typed by a person
    if any(
        m.extra.get(k)
        for k in ("ctxfold", "isMeta", "isCompactSummary", "origin", "attachment", "observation")
    ):
        return None
    inner = m.extra.get("message")
    if isinstance(inner, dict) and inner.get("role") in HARNESS_ROLES:
        return None  # pi's "!command" output and extension messages: not something a person asked
    parts = [p.text.strip() for p in m.parts if isinstance(p, TextPart) and p.text.strip()]
    parts = [t for t in parts if _TAGGED.sub("", t).strip() and not t.startswith(_HARNESS_PREFIXES)]
    text = "\n".join(parts).strip()
    return text or None


def file_actions(call: ToolCallPart, args: Any = None) -> list[tuple[str, str]]:
    """``(path, action)`` pairs a tool call touched, action one of read/written/edited/deleted
    (``args``: the call's parsed arguments, when the caller has them already)."""
    args = _args(call) if args is None else args
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
    key = _key(call.name)
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
    if _key(call.name) not in SHELL_TOOLS:
        return None
    args = _args(call) if args is None else args
    cmd: Any = args
    if isinstance(args, dict):
        cmd = next((args[k] for k in ("command", "cmd", "script", "code", "input") if k in args), None)
    if isinstance(cmd, list):
        cmd = cmd[-1] if len(cmd) >= 3 and cmd[1] in ("-lc", "-c") else " ".join(map(str, cmd))
    return " ".join(str(cmd).split()) if cmd else None


def exit_status(result: ToolResultPart | None) -> str:
    """``exit N`` from the result text, else ``error``/``ok`` from the error flag, else ``no result``."""
    if result is None:
        return "no result"
    text = result.text
    for window in (text[:400], text[-400:]):
        match = _EXIT.search(window)
        if match:
            return f"exit {match.group(1) or match.group(2)}"
    return "error" if result.is_error else "ok"


_NOISE = re.compile(
    r"^\s*(?:\[?(?:the )?command (?:completed|finished)|exit code|process exited|command exited|chunk id:"
    r"|wall time|original token count|output:|script (?:running|completed))",
    re.I,
)


def failed(result: ToolResultPart, tool: str, status: str | None = None) -> bool:
    """Flagged as an error, or a shell command that exited non-zero or raised (``status``: its
    :func:`exit_status` when the caller has it already)."""
    if result.is_error:
        return True
    if _key(tool) not in SHELL_TOOLS:
        return False  # a file read that shows an error message is not an error
    status = status or exit_status(result)
    return (
        status.startswith("exit ") and status != "exit 0"
    ) or "Traceback (most recent call last)" in result.text


def error_line(result: ToolResultPart) -> str:
    """The line that says what went wrong: a traceback's exception or an ``error:`` line, else
    the first line naming a problem ("failed", "not found"…), else the last line of output
    (harness notes such as exit codes and timings are skipped)."""
    text = result.text
    if "Traceback (most recent call last)" in text:
        text = text.split("Traceback (most recent call last)", 1)[1]
    match = _ERROR_LINE.search(text)
    if match:
        return match.group(1).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _NOISE.match(ln)]
    return next((ln for ln in lines if _PROBLEM.search(ln)), lines[-1] if lines else "(no message)")


@dataclass
class Facts:
    """What happened, each fact tagged with the index of the message it came from."""

    requests: list[tuple[int, str]] = field(default_factory=list)
    files: dict[str, tuple[int, list[str]]] = field(default_factory=dict)  # path -> (last index, actions)
    commands: list[tuple[int, str, str]] = field(default_factory=list)  # (index, command, status)
    errors: dict[str, int] = field(default_factory=dict)  # "tool: line" -> last index
    last_assistant: tuple[int, str] | None = None
    tool_calls: int = 0
    messages: int = 0


def gather(messages: Sequence[Message]) -> Facts:
    facts = Facts()
    names: dict[str, str] = {}
    pending: dict[str, list[int]] = {}  # call id → its commands in facts.commands, until its result
    early: dict[str, ToolResultPart] = {}  # results written before their call (Claude Code can)
    for i, m in enumerate(messages):
        if m.branch is not None:
            continue
        facts.messages += 1
        req = request_text(m)
        if req:
            facts.requests.append((i, req))
        if m.role == "assistant" and m.text.strip():
            facts.last_assistant = (i, m.text.strip())
        for outer in m.tool_calls:
            facts.tool_calls += 1
            names[outer.id] = outer.name
            pending.pop(outer.id, None)  # a reused id: an unanswered older call keeps "no result"
            before = early.pop(outer.id, None)
            for call in inner_calls(outer):  # a code tool's script: the tools it calls
                args = _args(call)  # parsed once for both readings
                for path, action in file_actions(call, args):
                    _, actions = facts.files.pop(path, (i, []))
                    facts.files[path] = (i, actions if action in actions else [*actions, action])
                cmd = shell_command(call, args)
                if cmd:
                    facts.commands.append((i, cmd, exit_status(before)))
                    pending.setdefault(outer.id, []).append(len(facts.commands) - 1)
        for res in m.tool_results:
            tool = res.name or names.get(res.call_id, "tool")
            # a result answers the latest call with its id (some servers number ids from 0 each turn)
            ks = pending.pop(res.call_id, None)
            status = None
            if ks is not None:
                status = exit_status(res)
                for k in ks:
                    j, cmd, _ = facts.commands[k]
                    facts.commands[k] = (j, cmd, status)
            elif res.call_id not in names:
                early[res.call_id] = res
            if failed(res, tool, status):
                key = f"{tool}: {error_line(res)}"
                facts.errors.pop(key, None)
                facts.errors[key] = i
    return facts
