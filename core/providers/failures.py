"""What a tool result says of how its call went: the exit status, whether it failed, the line
that says what went wrong, and the failures that leave nothing to resolve.
"""

from __future__ import annotations

import re

from ctxfold.providers import harness
from ctxfold.providers.calls import SHELL_TOOLS, tool_key
from ctxfold.transcript.model import ToolResultPart

_EXIT = re.compile(
    r"\bexit(?:ed)?\s*(?:with\s+)?(?:code|status)\s*:?\s*(-?\d+)|\"exit_code\"\s*:\s*(-?\d+)", re.I
)
_ERROR_LINE = re.compile(
    r"^\s*((?:[\w.]+)?(?:Error|Exception)\b.*|error(?:\[\w+\])?:.*|fatal:.*|npm ERR!.*|E: .*)$", re.M
)
_PROBLEM = re.compile(
    r"error|fail|not found|no such file|denied|cannot|can't|invalid|refused|abort|unable", re.I
)
_SEARCH = {"rg", "grep", "ag", "ack", "egrep", "fgrep"}


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
# Gemini CLI labels the parts of a shell run: "Output: " on the output's first line, then
# "Exit Code: 1" and "Process Group PGID: 12"; older versions also Command, Directory, Stdout,
# Stderr, Error, Signal and Background PIDs, with "(none)" for an empty one
_RUN_LABEL = "Process Group PGID: "
_RUN_FIELD = re.compile(r"^(?:Directory|Exit Code|Signal|Background PIDs|Process Group PGID): .*\n?", re.M)
_OUTPUT_LABEL = re.compile(r"^(?:Output|Stdout|Stderr|Error): (?:\(none\)$)?", re.M)


def shell_output(text: str) -> str:
    """What a shell command printed, without the labels Gemini CLI puts around it."""
    if _RUN_LABEL not in text:
        return text
    if text.startswith("Command: ") and "\nDirectory: " in text:  # the command may span lines
        text = text.split("\nDirectory: ", 1)[1].partition("\n")[2]
    return _OUTPUT_LABEL.sub("", _RUN_FIELD.sub("", text))


# An edit that had nothing to change, a run the user stopped, a call of a tool the harness does
# not have or with arguments it does not take, a call its policy refused (Gemini CLI's plan
# mode), a file too large for a whole read: nothing is left to resolve in the project (nor for a
# call the user turned down: harness.TURNED_DOWN)
_NOTHING_TO_DO = re.compile(
    r"\bno changes (?:to (?:make|apply)|made|(?:were |are )?(?:necessary|needed|required))"
    r"|^\W*(?:command aborted|(?:request )?interrupted by user|aborted by user|operation cancelled\])"
    r"|^\s*(?:<tool_use_error>)?\W*(?:tool \S+ not found|(?:error: )?no such tool available"
    r"|inputvalidationerror\b|validation failed for tool\b|tool execution denied by policy\b"
    r"|file content \([\d.]+\s*[KMG]?B\) exceeds maximum allowed)",
    re.I,
)


def nothing_to_do(result: ToolResultPart) -> bool:
    head = result.text[:500]
    return harness.TURNED_DOWN in head or bool(_NOTHING_TO_DO.search(head))


def failed(result: ToolResultPart, tool: str, status: str | None = None) -> bool:
    """Flagged as an error, or a shell command that exited non-zero or raised (``status``: its
    :func:`exit_status` when the caller has it already)."""
    if result.is_error:
        return True
    if tool_key(tool) not in SHELL_TOOLS:
        return False  # a file read that shows an error message is not an error
    status = status or exit_status(result)
    if status.startswith("exit ") and status != "exit 0":
        return True
    if "Traceback (most recent call last)" in result.text:
        return True
    # a build or test piped through `| head` exits 0 whatever it printed: its own error lines tell
    if status == "exit 0":
        return False
    tail = shell_output(result.text[-20_000:])
    return any(word in tail for word in _BUILD_WORDS) and bool(_BUILD_ERROR.search(tail))


_BUILD_ERROR = re.compile(
    r"^.*\berror (?:TS\d+|\[E\d+\])?:.*$|^error\[E\d+\]:.*$|^npm ERR!.*$|^FAIL(?:ED)?\b.*$|^=+ .*\b\d+ failed\b.*$",
    re.M,
)
_BUILD_WORDS = ("error", "ERR!", "FAIL", "failed")  # one is in each line _BUILD_ERROR matches
_SUMMARY_LINE = re.compile(r"^\W*(?:=+ )?.*\b\d+ (?:failed|errors?)\b.*$", re.M)


def error_text(result: ToolResultPart) -> str:
    """:func:`error_line`, and the run's closing tally ("1 failed, 8 passed") when it has one."""
    line = error_line(result)
    tally = _SUMMARY_LINE.findall(result.text[-2_000:])
    last = tally[-1].strip() if tally else ""
    return f"{line} ({last})" if last and last not in line and len(last) < 160 else line


def error_line(result: ToolResultPart) -> str:
    """The line that says what went wrong: a traceback's exception or an ``error:`` line, else
    the first line naming a problem ("failed", "not found"…), else the last line of output
    (harness notes such as exit codes and timings are skipped)."""
    text = shell_output(result.text)
    if "Traceback (most recent call last)" in text:
        text = text.split("Traceback (most recent call last)", 1)[1]
    match = _ERROR_LINE.search(text)
    if match:
        return match.group(1).strip()
    built = _BUILD_ERROR.search(text)
    if built:
        return built.group(0).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _NOISE.match(ln)]
    return next((ln for ln in lines if _PROBLEM.search(ln)), lines[-1] if lines else "(no message)")


def no_match(cmd: str | None, status: str, result: ToolResultPart) -> bool:
    """A search that found nothing: ``rg``/``grep`` exit 1 with no output."""
    if not cmd or status != "exit 1":
        return False
    head = cmd.split("|")[-1].split()[:1] or [""]
    first = cmd.split()[0].rsplit("/", 1)[-1] if cmd.split() else ""
    body = [ln for ln in shell_output(result.text).splitlines() if ln.strip() and not _NOISE.match(ln)]
    return (first in _SEARCH or head[0] in _SEARCH) and len(body) <= 1
