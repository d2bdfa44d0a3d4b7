"""Tool calls made inside other tool calls.

Codex's code mode gives the model one ``exec`` tool that runs JavaScript, and the script calls
the other tools as ``tools.NAME({...})`` (``tools.update_plan``, ``tools.exec_command``). What a
summary needs (the plan, the commands, the files) is in those inner calls.
"""

from __future__ import annotations

import json
import re

from ctxfold.transcript.model import ToolCallPart

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
