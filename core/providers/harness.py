"""Whose words a message holds: the user's own, or text the harness put in the conversation.

A summary that takes a system reminder, a background task's notification or a harness-made
prompt summary for "the user's current request" sends the next agent the wrong way. Each
format marks its injected text in its own way; the readers keep those marks in ``extra``:

- Claude Code: ``isMeta`` lines (skill bodies, command prompts), ``attachment`` lines (system
  reminders, queued ``<task-notification>``\\s), ``origin`` (a notification delivered as a
  prompt), ``isCompactSummary``; in the text, ``<system-reminder>``, ``<local-command-stdout>``,
  ``<local-command-caveat>``, ``<task-notification>``, ``[Request interrupted…]``. A slash
  command (``<command-name>/x</command-name> … <command-args>…</command-args>``) is the user's:
  its name and arguments are kept, except Claude Code's own commands (``/model``, ``/clear``…).
  Assistant lines of model ``<synthetic>`` ("No response requested.") are the harness's too.
- Codex: ``<environment_context>``, ``# AGENTS.md instructions``, ``<user_instructions>``,
  ``<turn_aborted>`` user items.
- pi: ``bashExecution`` (a ``!command`` the user ran: its output, not a request), ``custom`` and
  ``hookMessage`` messages, ``custom_message`` entries (``customType``: made by an extension),
  branch and compaction summaries.
- OpenHands: observations no tool call asked for.
- Gemini CLI: the prompt its ``/init`` command sends in the user's place (as Claude Code's own
  ``/init``, it is not a request).
- pi: a ``/skill:name`` the user typed arrives as the skill's whole text in a ``<skill name=…
  location=…>`` block, the user's own words after it: the request is ``/skill:name`` and those.

The user's words inside a tool result count too: the reason given when rejecting a tool call
or a plan ("…the user said: …").
"""

from __future__ import annotations

import re

from ctxfold.transcript.model import Message, TextPart, ToolResultPart

HARNESS_ROLES = ("bashExecution", "custom", "hookMessage", "branchSummary", "compactionSummary")
_MARKS = ("ctxfold", "isMeta", "isCompactSummary", "origin", "attachment", "observation", "customType")
# ctxfold's own messages, recognised by their text once a log written back has lost the marks
SUMMARY_OPEN = "[Previous conversation summary]"
SUMMARY_CLOSE = "[End of summary — conversation continues below]"
CONTINUATION_OPEN = "[System: The conversation was compacted"
_HARNESS_PREFIXES = (
    "# AGENTS.md instructions",
    "Caveat: The messages below were generated",
    "[Request interrupted",
    "You are an AI agent that brings the power of Gemini directly into the terminal.",
    # Gemini CLI: a switch out of plan mode by hand, and its IDE companion's cursor and files
    "User has manually exited Plan Mode.",
    "Here is a summary of changes in the user's editor context",
    "Here is the user's editor context",
    SUMMARY_OPEN,
    CONTINUATION_OPEN,
)
_BLOCKS = re.compile(
    r"<(system-reminder|local-command-stdout|local-command-stderr|local-command-caveat|task-notification"
    r"|environment_context|user_instructions|turn_aborted|ide_opened_file|ide_selection|ide_diagnostics)>"
    r".*?</\1>",
    re.S,
)
_COMMAND = re.compile(r"<command-name>\s*(/?[\w:.-]+)\s*</command-name>")
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_SKILL = re.compile(r'<skill name="([^"<>]+)" location="[^"<>]*">\n.*?</skill>', re.S)
_COMMAND_TAGS = re.compile(r"<(command-name|command-message|command-args)>.*?</\1>", re.S)
_TAGGED = re.compile(r"<([A-Za-z_][\w-]*)>.*?</\1>", re.S)
# Claude Code's own commands: they steer the harness, they ask the model for nothing
BUILTIN_COMMANDS = frozenset(
    [
        "add-dir",
        "agents",
        "bug",
        "clear",
        "compact",
        "config",
        "context",
        "cost",
        "doctor",
        "exit",
        "export",
        "help",
        "hooks",
        "ide",
        "init",
        "install-github-app",
        "login",
        "logout",
        "mcp",
        "memory",
        "model",
        "output-style",
        "permissions",
        "plugin",
        "pr-comments",
        "privacy-settings",
        "release-notes",
        "resume",
        "rewind",
        "status",
        "statusline",
        "terminal-setup",
        "theme",
        "todos",
        "upgrade",
        "usage",
        "vim",
        "fast",
        "effort",
    ]
)
TURNED_DOWN = "doesn't want to proceed"  # Claude Code's result for a call the user turned down
_REJECTED = re.compile(r"(?:the user said|user provided the following reason[^:]*):\s*(.+)", re.I | re.S)


def is_synthetic(m: Message) -> bool:
    """An assistant message the harness made up (Claude Code's "No response requested.", an API
    error shown as a reply): no model wrote it."""
    inner = m.extra.get("message")
    model = inner.get("model") if isinstance(inner, dict) else None
    return m.role == "assistant" and (model == "<synthetic>" or bool(m.extra.get("isApiErrorMessage")))


def is_injected(m: Message) -> bool:
    """A user-role message the harness or an extension wrote, by the marks its reader kept."""
    if any(m.extra.get(k) for k in _MARKS):
        return True
    inner = m.extra.get("message")
    return isinstance(inner, dict) and inner.get("role") in HARNESS_ROLES


def _command(text: str) -> str | None:
    """``/name args`` of a slash command the user typed, or None (none, or the harness's own)."""
    found = _COMMAND.search(text)
    if not found:
        return None
    name = found.group(1).lstrip("/")
    if name in BUILTIN_COMMANDS:
        return ""
    args = _ARGS.search(text)
    said = " ".join(args.group(1).split()) if args else ""
    return f"/{name} {said}".strip()


def user_words(m: Message) -> str | None:
    """The text a person typed in ``m`` (harness blocks taken out), or None when there is none."""
    if m.role != "user" or m.branch is not None or m.tool_results or is_injected(m):
        return None
    out: list[str] = []
    for p in m.parts:
        if not isinstance(p, TextPart) or not p.text.strip():
            continue
        text = p.text.strip()
        if text.startswith("<skill name="):  # pi's /skill:name, expanded
            text = _SKILL.sub(lambda m: f"/skill:{m.group(1)}", text)
        if text.startswith(_HARNESS_PREFIXES):
            continue
        command = _command(text)
        if command is not None:
            if command:
                out.append(command)
            continue
        text = _BLOCKS.sub("", _COMMAND_TAGS.sub("", text)).strip()
        if text and _TAGGED.sub("", text).strip():
            out.append(text)
    joined = "\n".join(out).strip()
    return joined or None


def rejection_words(result: ToolResultPart) -> str | None:
    """What the user said when rejecting a tool call or a plan (Claude Code puts it in the
    tool's result: "…To tell you how to proceed, the user said: …")."""
    text = result.text
    if "reject" not in text.lower() and TURNED_DOWN not in text:
        return None
    found = _REJECTED.search(text)
    said = found.group(1).strip() if found else ""
    return said or None


_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)


def user_shell(m: Message) -> tuple[str, str | None] | None:
    """A command the user ran in the harness's shell mode (Claude Code's ``!cmd``: a
    ``<bash-input>`` line; pi's: a ``bashExecution`` record) and its exit status when the log
    has it: not a request, but what the user did."""
    if m.role != "user" or m.branch is not None:
        return None
    record = m.extra.get("message")
    if (
        isinstance(record, dict)
        and record.get("role") == "bashExecution"
        and isinstance(record.get("command"), str)
    ):
        code = record.get("exitCode")
        status = "cancelled" if record.get("cancelled") else f"exit {code}" if isinstance(code, int) else None
        return record["command"], status
    found = _BASH_INPUT.search(m.text) if "<bash-input>" in m.text else None
    return (found.group(1).strip(), None) if found and found.group(1).strip() else None


def harness_command(m: Message) -> str | None:
    """A command of the harness's own the user ran with arguments (``/model claude-opus-4-6``):
    not a request, but the setting it made is worth knowing."""
    if m.role != "user" or m.branch is not None:
        return None
    found = _COMMAND.search(m.text)
    if not found or found.group(1).lstrip("/") not in BUILTIN_COMMANDS:
        return None
    args = _ARGS.search(m.text)
    said = " ".join(args.group(1).split()) if args else ""
    return f"/{found.group(1).lstrip('/')} {said}" if said else None
