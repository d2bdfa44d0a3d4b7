"""OpenAI Responses API transcripts: one input/output item per line, request lines and
response objects.

Each item is one Message, as the API frames it (a ``function_call`` is its own input item,
not part of an assistant message): ``message`` items keep their role (developer → "system",
with ``extra["role"]``), every model-side item (reasoning, function/custom/shell calls, web
search...) is role "assistant", ``*_call_output`` items are role "tool". Usage goes on the last
output item of its response. Also accepted: ``{model, input, instructions, tools}`` request
lines (``instructions`` → system prompt; input items new since the previous request only,
unless ``previous_response_id`` says the input is already just the new part), response
objects ``{object: "response", output, usage}`` (bare, under ``response``, or as
``response.completed`` stream events), ``response.output_item.done`` events and bare
``{usage}`` lines for the item just before. The Responses API has no tool-error flag, so a
tool result is an error only when its item says ``is_error: true``. The item conversion lives
in ``openai_responses_items`` so other readers of Responses items can reuse it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, get_str, need, obj, score_lines
from ctxfold.formats.openai_common import api_error, tooldef_from_openai
from ctxfold.formats.openai_responses.items import item_message, usage_from_responses
from ctxfold.formats.requestlog import PrefixTracker
from ctxfold.transcript.model import ContextReset, ContextUpdate, Entry, Message, Usage

NAME = "openai-responses"
DESCRIPTION = "OpenAI Responses API: input/output items, request lines {input, instructions} and responses"

# Item types that only the Responses API has.
_ITEM_NAMES = (
    "function_call function_call_output custom_tool_call custom_tool_call_output reasoning "
    "web_search_call file_search_call computer_call computer_call_output local_shell_call "
    "local_shell_call_output shell_call shell_call_output apply_patch_call apply_patch_call_output "
    "image_generation_call code_interpreter_call mcp_call mcp_list_tools mcp_approval_request "
    "mcp_approval_response item_reference"
)
ITEM_TYPES = frozenset(_ITEM_NAMES.split())
_PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file", "summary_text"})
_CHAT_KEYS = ("tool_calls", "tool_call_id", "function_call", "parts")


# --------------------------------------------------------------------------------- sniff


def _line_score(d: Any) -> int:
    if not isinstance(d, dict):
        return -1
    t = d.get("type")
    if d.get("object") == "response" or (isinstance(t, str) and t.startswith("response.")):
        return 95
    if isinstance(d.get("response"), dict) and d["response"].get("object") == "response":
        return 95
    if "input" in d and ("instructions" in d or "model" in d):
        return 85
    if isinstance(t, str) and t in ITEM_TYPES:
        return 90
    if "role" in d:
        if any(k in d for k in _CHAT_KEYS):
            return -1
        content = d.get("content")
        if isinstance(content, list):
            types = {x for p in content if isinstance(p, dict) and isinstance(x := p.get("type"), str)}
            if types & _PART_TYPES:
                return 90
            if types - {"text"}:
                return -1  # another API's parts (image_url, tool_use...)
        return 60 if t == "message" else 30  # a bare {role, content: str} is openai-chat's first
    if isinstance(d.get("usage"), dict) or isinstance(d.get("error"), dict):
        return 0  # fine here, proves nothing
    return 0 if isinstance(t, str) else -1


def sniff(objs: Sequence[Any]) -> int:
    """Sure on Responses item types and content part types; 0 when any line is foreign."""
    return score_lines(objs, _line_score)


# -------------------------------------------------------------------------------- reader


class Reader:
    """Holds back the last model-side item for one line, in case a ``{usage}`` or a response
    object summarising items already read follows."""

    def __init__(self) -> None:
        self._pending: Message | None = None
        self._names: dict[str, str] = {}
        self._tracker = PrefixTracker()
        self._last_output: list[tuple[Any, Any]] = []  # the previous response's items, to skip
        self._instructions: Any = None
        self._tools: Any = None
        self._model: str | None = None

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        out: list[Entry] = []
        pending, self._pending = self._pending, None
        t = d.get("type")
        response = d.get("response") if isinstance(d.get("response"), dict) else None
        if d.get("object") == "response":
            response = d
        if "input" in d and t is None and d.get("object") is None:
            self._flush(pending, out)
            self._request(d, line, out)
            if response is not None:
                self._response(response, line, None, out)
        elif response is not None and (
            t is None or t in ("response", "response.completed", "response.incomplete", "response.failed")
        ):
            self._response(response, line, pending, out)
        elif t == "response.output_item.done" and isinstance(d.get("item"), dict):
            self._flush(pending, out)
            self._items([d["item"]], line, out, hold=True)
        elif isinstance(t, str) and t.startswith("response."):
            self._pending = pending  # other stream events (deltas, created...) carry nothing new
        elif "usage" in d and t is None and "role" not in d:
            usage = need(d, "usage", line, dict)
            if pending is not None:
                model = d.get("model") if isinstance(d.get("model"), str) else pending.model
                pending = _with_usage(pending, usage_from_responses(usage, model))
            self._flush(pending, out)
        elif isinstance(d.get("error"), dict) and t is None and "role" not in d:
            self._flush(pending, out)
            out.append(api_error(d["error"], d))
        else:
            self._flush(pending, out)
            if t is None and "role" not in d:
                raise LineError("missing required field 'type'", line.no)
            if t is not None and not isinstance(t, str):
                raise LineError(f"field 'type' should be str, got {type(t).__name__}", line.no)
            if t and t != "message" and t not in ITEM_TYPES and not t.endswith(("_call", "_output")):
                return out  # an item type this reader does not know yet
            self._items([d], line, out, hold=True)
        return out

    def finish(self) -> Iterable[Entry]:
        pending, self._pending = self._pending, None
        return [pending] if pending is not None else []

    def _flush(self, pending: Message | None, out: list[Entry]) -> None:
        if pending is not None:
            out.append(pending)

    def _items(self, items: Iterable[Any], line: Line, out: list[Entry], hold: bool) -> None:
        for item in items:
            if not isinstance(item, dict):
                raise LineError("each input/output item should be an object", line.no)
            msg = item_message(item, line, self._names)
            if msg is None:
                continue
            if self._pending is not None:
                out.append(self._pending)
                self._pending = None
            if hold and msg.role == "assistant":
                self._pending = msg
            else:
                out.append(msg)

    def _request(self, d: dict[str, Any], line: Line, out: list[Entry]) -> None:
        self._context(d, line, out, with_model=True)
        items = d["input"]
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list):
            raise LineError(f"field 'input' should be str or list, got {type(items).__name__}", line.no)
        if d.get("previous_response_id"):
            start = 0  # stored conversation: the input holds only the new items
        else:
            start, reset = self._tracker.new_start(items)
            if reset:
                out.append(ContextReset("request input does not extend the previous request's input"))
            elif start:
                start = self._skip_repeat(items, start)
        self._last_output = []
        self._items(items[start:], line, out, hold=False)

    def _skip_repeat(self, items: list[Any], start: int) -> int:
        """Skip the previous response's output items, which the next input repeats."""
        for kind, key in self._last_output:
            if start >= len(items) or not isinstance(items[start], dict):
                break
            got_kind, got_key = _item_key(items[start])
            if got_kind != kind or got_key not in (key, None):
                break
            start += 1
        return start

    def _response(self, r: dict[str, Any], line: Line, pending: Message | None, out: list[Entry]) -> None:
        self._context(r, line, out, with_model=False)
        output = r.get("output")
        output = output if isinstance(output, list) else []
        model = get_str(r, "model")
        usage = r.get("usage")
        where = "response.usage" if r is not line.data else "usage"
        u = usage_from_responses(usage, model, where) if isinstance(usage, dict) else None
        last = output[-1] if output and isinstance(output[-1], dict) else None
        if pending is not None and last is not None and last.get("id") and last.get("id") == pending.id:
            out.append(_with_usage(pending, u) if u else pending)  # a summary of items already read
        else:
            self._flush(pending, out)
            self._items(output, line, out, hold=True)
            if self._pending is not None:
                msg = self._pending
                self._pending = None
                out.append(_with_usage(msg, u, model) if u else msg)
        self._last_output = [_item_key(i) for i in output]
        if isinstance(r.get("error"), dict):
            out.append(api_error(r["error"], r))

    def _context(self, d: Mapping[str, Any], line: Line, out: list[Entry], with_model: bool) -> None:
        changed: dict[str, Any] = {}
        instructions, tools, model = d.get("instructions"), d.get("tools"), d.get("model")
        if instructions is not None and instructions != self._instructions:
            self._instructions = instructions
            if isinstance(instructions, str):
                changed["system"] = (instructions,) if instructions else ()
            elif isinstance(instructions, list):  # instructions given as input items
                msgs = (item_message(i, line) for i in instructions if isinstance(i, dict))
                changed["system"] = tuple(m.text for m in msgs if m is not None)
        if isinstance(tools, list) and tools != self._tools:
            self._tools = tools
            changed["tools"] = tuple(tooldef_from_openai(t) for t in tools if isinstance(t, dict))
        if with_model and isinstance(model, str) and model != self._model:
            self._model = model
            changed["model"] = model
        if changed:
            out.append(ContextUpdate(**changed))


def _item_key(item: Any) -> tuple[Any, Any]:
    if not isinstance(item, dict):
        return (None, None)
    return (item.get("type") or "message", item.get("id") or item.get("call_id"))


def _with_usage(msg: Message, usage: Usage | None, model: str | None = None) -> Message:
    return Message(
        msg.role, msg.parts, msg.id, msg.timestamp, usage, msg.model or model, msg.branch, msg.extra
    )
