"""Reading tool calls: a tool's name reduced to its letters, its arguments parsed, whether it
is a shell, and the calls made inside other tool calls.

Codex's code mode gives the model one ``exec`` tool that runs JavaScript, and the script calls
the other tools as ``tools.NAME({...})`` (``tools.update_plan``, ``tools.exec_command``). What a
summary needs (the plan, the commands, the files) is in those inner calls.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ctxfold.transcript.model import ToolCallPart

SHELL_TOOLS = {
    "bash", "shell", "execcommand", "exec", "run", "runcommand", "executebash", "terminal",
    "localshell", "shellcommand", "runshellcommand", "runterminalcmd", "command",
}  # fmt: skip  # tool names (tool_key) that run a shell command
CODE_TOOLS = frozenset({"exec"})
_INNER = re.compile(r"\btools\.(\w+)\(\s*")
_SCRIPT = re.compile(r"\b(?:await|const|let|tools\.\w+\()")  # JavaScript, not a shell command line
_DECODER = json.JSONDecoder()


def inner_calls(call: ToolCallPart) -> list[ToolCallPart]:
    """The calls a code tool's script makes, with their JSON arguments (each under the outer
    call's id, which its result answers), and the script itself as a ``script`` call (a patch
    held in a variable still names its files; a script is no shell command); any other call
    as it is."""
    code = call.arguments
    if call.name not in CODE_TOOLS or not isinstance(code, str) or not _SCRIPT.search(code):
        return [call]
    out: list[ToolCallPart] = []
    for m in _INNER.finditer(code):
        try:
            args, _ = _DECODER.raw_decode(code, m.end())
        except ValueError:  # arguments built in code, not a literal: nothing to read
            continue
        out.append(ToolCallPart(call.id, m[1], args))
    # string literals' escaped newlines made real, so a patch's "*** Update File:" lines are lines
    return [*out, ToolCallPart(call.id, "script", code.replace("\\n", "\n"))]


@functools.lru_cache(maxsize=512)
def tool_key(name: str) -> str:
    """A tool name reduced to its letters: ``str_replace_editor`` → ``strreplaceeditor``."""
    return re.sub(r"[^a-z]", "", name.lower())


def call_args(call: ToolCallPart) -> Any:
    """A call's arguments, parsed when they came as a JSON string."""
    if isinstance(call.arguments, str):
        try:
            return json.loads(call.arguments)
        except ValueError:
            return call.arguments
    return call.arguments
