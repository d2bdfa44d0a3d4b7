"""Single API-shaped messages and tool schemas → model values, for code that holds them in memory.

An agent loop keeps its history as the dicts it sends: OpenAI chat messages or Anthropic
Messages. ``ContextGuard`` takes those as they are and counts them through the same
conversions the file readers use, so a message costs the same tokens whether it was read from a
log or handed over live. The shape is told by the content: Anthropic's ``tool_use`` /
``tool_result`` / ``thinking`` / sourced ``image`` blocks; anything else is read as OpenAI
chat (a plain text message reads the same either way).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxfold.core.errors import LineError, UsageError
from ctxfold.core.formats.anthropic_blocks import block_part, tooldef
from ctxfold.core.formats.base import Line
from ctxfold.core.formats.openai_common import message_from_openai, tooldef_from_openai
from ctxfold.core.transcript.model import Message, Part, TextPart, ToolDef

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})


def is_anthropic(d: Mapping[str, Any]) -> bool:
    content = d.get("content")
    if not isinstance(content, list):
        return False
    for b in map(_plain, content):
        if isinstance(b, dict):
            t = b.get("type")
            if t in _ANTHROPIC_BLOCKS or (t == "image" and "source" in b):
                return True
    return False


def from_anthropic(d: Mapping[str, Any], names: dict[str, str] | None = None, no: int = 1) -> Message:
    """One Anthropic message; ``names`` (tool_use id → name) lets a result name its tool."""
    line = Line(no, d, 0)
    role = d.get("role")
    if role not in ("user", "assistant"):
        raise LineError(f"unknown role {role!r} (Anthropic messages are user or assistant)", no)
    content = d.get("content")
    if isinstance(content, str):
        parts: tuple[Part, ...] = (TextPart(content),) if content else ()
    elif isinstance(content, list):
        parts = tuple(block_part(_plain(b), line, names) for b in content)
    else:
        raise LineError("content should be a string or a list of blocks", no)
    return Message(role, parts)


def _plain(value: Any) -> Any:
    """An SDK's pydantic object (a response's content block, an OpenAI message) as its dict."""
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) and not isinstance(value, Mapping) else value


def from_dict(d: Any, names: dict[str, str] | None = None, no: int = 1) -> Message:
    """A message in either API's shape (see the module docstring), as a dict or an SDK object."""
    if isinstance(d, Message):
        return d
    d = _plain(d)
    if not isinstance(d, Mapping):
        raise UsageError(
            f"message {no}: expected a ctxfold Message or an OpenAI / Anthropic message dict, "
            f"got {type(d).__name__}"
        )
    try:
        return from_anthropic(d, names, no) if is_anthropic(d) else message_from_openai(d, Line(no, d, 0))
    except LineError as err:
        raise UsageError(f"message {no}: {err.args[0].removeprefix(f'line {no}: ')}") from None


def tool_from_dict(t: Any) -> ToolDef:
    """A tool schema: OpenAI's ``{"type": "function", "function": {...}}`` (or flat), or
    Anthropic's ``{"name", "description", "input_schema"}``."""
    if isinstance(t, ToolDef):
        return t
    if not isinstance(t, Mapping):
        raise UsageError(f"expected a ToolDef or a tool schema dict, got {type(t).__name__}")
    if "input_schema" in t:
        return tooldef(dict(t))
    return tooldef_from_openai(t)
