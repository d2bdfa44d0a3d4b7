"""Single API-shaped messages, tool schemas, system prompts and usage → model values, for code
that holds them in memory.

An agent loop keeps its history as what it sends: OpenAI chat messages, Anthropic Messages,
Google genai Contents (``types.Content`` in ADK) or OpenAI Responses input items, as dicts or as
the SDKs' pydantic objects. ``ContextGuard`` takes those as they are and counts them through the
same conversions the file readers use, so a message costs the same tokens whether it was read
from a log or handed over live. The shape is told by the content, never guessed from the order:
genai has ``parts`` (or role "model"); Anthropic its ``tool_use`` / ``tool_result`` /
``thinking`` / sourced ``image`` blocks; a Responses item a ``type`` (or Responses content
parts); anything else is OpenAI chat (a plain text message reads the same in every API).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxfold.errors import LineError, UsageError
from ctxfold.formats.anthropic.blocks import block_part, tooldef
from ctxfold.formats.base import Line
from ctxfold.formats.genai.parts import ROLES as GENAI_ROLES
from ctxfold.formats.genai.parts import Calls, content_message, system_texts, tooldefs
from ctxfold.formats.openai_common import message_from_openai, tooldef_from_openai
from ctxfold.formats.openai_responses.items import item_message
from ctxfold.transcript.model import Message, Part, TextPart, ToolDef

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
_OPENAI_TOOL_KEYS = ("type", "function", "input_schema")


def is_anthropic(d: Mapping[str, Any]) -> bool:
    content = d.get("content")
    if not isinstance(content, list):
        return False
    for b in map(to_plain, content):
        if isinstance(b, dict):
            t = b.get("type")
            if t in _ANTHROPIC_BLOCKS or (t == "image" and "source" in b):
                return True
    return False


def shape_of(d: Mapping[str, Any]) -> str:
    """Which API's shape a message dict has: genai, anthropic, responses or chat (see the
    module docstring)."""
    if "parts" in d or d.get("role") == "model":
        return "genai"
    if is_anthropic(d):
        return "anthropic"
    if isinstance(d.get("type"), str):  # chat messages have no type; every Responses item has
        return "responses"
    content = d.get("content")
    if isinstance(content, list) and any(p.get("type") in _RESPONSES_PARTS for p in _dicts(content)):
        return "responses"
    return "chat"


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
        parts = tuple(block_part(to_plain(b), line, names) for b in content)
    else:
        raise LineError("content should be a string or a list of blocks", no)
    return Message(role, parts)


def from_genai(d: Mapping[str, Any], calls: Calls | None = None, no: int = 1) -> Message:
    """One genai Content. ``calls`` pairs id-less function calls with their responses by name,
    as the genai reader does; a Content without parts is an empty message, so that every event
    stays one message."""
    parts = [to_plain(p) for p in d.get("parts") or ()]
    content = {**d, "parts": parts}
    msg = content_message(content, Line(no, content, 0), calls or Calls(), {})
    if msg is None:
        role = d.get("role") or "user"
        return Message(GENAI_ROLES.get(role, "user") if isinstance(role, str) else "user", ())
    return msg


def from_responses(d: Mapping[str, Any], names: dict[str, str] | None = None, no: int = 1) -> Message:
    """One Responses input or output item (an ``item_reference`` is an empty message)."""
    if isinstance(d.get("content"), list):
        d = {**d, "content": [to_plain(p) for p in d["content"]]}
    return item_message(d, Line(no, d, 0), names) or Message("user", ())


def to_plain(value: Any) -> Any:
    """An SDK's pydantic object (a response's content block, an OpenAI message, a genai Content)
    as its dict, in JSON form: bytes (genai inline data) become base64, as a log holds them."""
    dump = getattr(value, "model_dump", None)
    return (
        dump(mode="json", exclude_none=True) if callable(dump) and not isinstance(value, Mapping) else value
    )


def _dicts(items: Sequence[Any]) -> list[Mapping[str, Any]]:
    return [p for p in map(to_plain, items) if isinstance(p, Mapping)]


def from_dict(
    d: Any, names: dict[str, str] | None = None, no: int = 1, calls: Calls | None = None
) -> Message:
    """A message in any of the four APIs' shapes (see the module docstring), as a dict or an SDK
    object. ``names`` (call id → tool name) and ``calls`` carry pairing across a history."""
    if isinstance(d, Message):
        return d
    d = to_plain(d)
    if not isinstance(d, Mapping):
        raise UsageError(
            f"message {no}: expected a ctxfold Message or an OpenAI / Anthropic message dict, a genai "
            f"Content or a Responses item, got {type(d).__name__}"
        )
    try:
        shape = shape_of(d)
        if shape == "genai":
            return from_genai(d, calls, no)
        if shape == "anthropic":
            return from_anthropic(d, names, no)
        if shape == "responses":
            return from_responses(d, names, no)
        return message_from_openai(d, Line(no, d, 0))
    except LineError as err:
        raise UsageError(f"message {no}: {err.args[0].removeprefix(f'line {no}: ')}") from None


def tool_from_dict(t: Any) -> ToolDef:
    """A tool schema: OpenAI's ``{"type": "function", "function": {...}}`` (or flat, as the
    Responses API takes it), or Anthropic's ``{"name", "description", "input_schema"}``."""
    if isinstance(t, ToolDef):
        return t
    if not isinstance(t, Mapping):
        raise UsageError(f"expected a ToolDef or a tool schema dict, got {type(t).__name__}")
    if "input_schema" in t:
        return tooldef(dict(t))
    return tooldef_from_openai(t)


def tools_from(tools: Sequence[Any] | None) -> list[ToolDef]:
    """Every tool schema of ``tools``: those :func:`tool_from_dict` reads, and genai ``Tool``s
    (dicts or objects), each holding any number of function declarations or one built-in tool;
    a bare genai ``FunctionDeclaration`` reads as the flat OpenAI form does. None (ADK's unset
    ``config.tools``) is no tools."""
    out: list[ToolDef] = []
    for t in tools or ():
        t = t if isinstance(t, ToolDef) else to_plain(t)
        if isinstance(t, Mapping) and not any(k in t for k in (*_OPENAI_TOOL_KEYS, "name")):
            out.extend(tooldefs([dict(t)]))  # a genai Tool: function declarations, googleSearch...
        elif isinstance(t, Mapping) and any(
            k in t for k in ("parametersJsonSchema", "parameters_json_schema")
        ):
            out.extend(tooldefs([{"functionDeclarations": [dict(t)]}]))
        else:
            out.append(tool_from_dict(t))
    return out


def system_prompt_texts(system: Any) -> tuple[str, ...]:
    """A system prompt: a string, a list of strings or text blocks (Anthropic), a genai Content
    or list of parts (dicts or objects, as ADK's ``config.system_instruction``), or None."""
    if system is None:
        return ()
    if isinstance(system, str):
        return (system,)
    system = to_plain(system)
    if isinstance(system, Mapping):  # a Content, or one part
        system = system.get("parts", [system])
    if isinstance(system, Sequence):
        return system_texts([p if isinstance(p, str) else to_plain(p) for p in system])
    raise UsageError(
        f"system should be a string, a list of strings or a genai Content, not {type(system).__name__}"
    )


def prompt_tokens_of(usage: Any) -> int | None:
    """The prompt size a provider reported, from an int or any SDK's usage (object or dict):
    OpenAI chat ``prompt_tokens``; Anthropic ``input_tokens`` plus its cache reads and writes
    (which it counts apart); OpenAI Responses ``input_tokens``; Gemini ``prompt_token_count``
    (also ADK's ``LlmResponse.usage_metadata``). A usage whose count field is there but empty
    (a streamed chunk) gives None."""
    if usage is None or isinstance(usage, int):
        return usage
    names = ("prompt_tokens", "prompt_token_count", "promptTokenCount", "input_tokens")

    def get(name: str) -> Any:
        return usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)

    cache = [get("cache_read_input_tokens"), get("cache_creation_input_tokens")]
    for name in names:
        value = get(name)
        if isinstance(value, int):
            if name == "input_tokens":
                value += sum(c for c in cache if isinstance(c, int))
            return value
    present = (lambda n: n in usage) if isinstance(usage, Mapping) else (lambda n: hasattr(usage, n))
    if any(present(n) for n in names):
        return None
    raise UsageError(
        f"after_response: cannot find a prompt-token count in {type(usage).__name__} "
        "(pass the count, or the response's usage from the OpenAI, Anthropic or Gemini SDK)"
    )
