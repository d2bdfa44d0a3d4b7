"""OpenHands evaluation output (``output.jsonl``): one line per benchmark instance, each a
whole conversation ``{instance_id, instruction, history: [events], metrics, metadata, ...}``.

Events are actions and observations. The model's own turn is in each agent action's
``tool_call_metadata.model_response`` (an OpenAI-style completion with usage); actions that
came from one response share it, so it becomes one assistant message (with all its tool
calls) at the first of them, the way OpenHands rebuilds its prompt. Observations answering
a tool call become ``tool`` messages. Each line starts a new conversation: a
``ContextReset`` separates instances.

Recalled workspace context (the ``recall`` observation: microagent knowledge, runtime hosts)
reaches the prompt only with OpenHands' prompt extensions on, and the benchmark harnesses
that write these files turn them off (``enable_prompt_extensions=False`` in their
``run_infer``). So it is dropped unless ``metadata.agent_config`` says they were on. The
real counts agree: of two instances whose first requests differ by a 4,157-character
microagent note, the provider counted 371 more tokens, about what the longer issue text alone
accounts for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, ListReader, as_int, get_dict, get_str, need, obj, rest
from ctxfold.formats.openai_common import (
    media_from_url,
    message_from_openai,
    tooldef_from_openai,
    usage_from_openai,
)
from ctxfold.transcript.model import (
    HARNESS_TOKENS,
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    Part,
    TextPart,
    ToolResultPart,
)

# Without native function calling (``native_tool_calling`` false, or a model OpenHands does not
# call natively), OpenHands describes the tools in the system prompt and wraps the first user
# message in a worked example; none of that text is in the evaluation output. Its size in o200k
# tokens, measured on the text of OpenHands 0.35's ``llm/fn_call_converter.py``: the calling
# instructions appended to the system prompt, the example's frame, and each tool's example turns
# (a tool set with none of these tools gets no example). The tool descriptions themselves are
# counted as the JSON tool definitions (about 10 % more than their text form).
MOCK_FNCALL_TOKENS = {
    "system": 171,
    "example": 107,
    "execute_bash": 1035,
    "str_replace_editor": 381,
    "browser": 79,
    "finish": 114,
}
_EXAMPLE_TOOLS = ("execute_bash", "str_replace_editor", "browser", "finish")
_MOCK_CALL_ID = re.compile(r"toolu_\d+")  # the converter numbers its calls; providers' ids are random

NAME = "openhands"
DESCRIPTION = "OpenHands evaluation output (one instance per line with its event history)"

# Observations that never reach the model.
_SILENT_OBSERVATIONS = ("null", "agent_state_changed", "user_rejected_placeholder")
_EVENT_USED = ("id", "timestamp", "source", "action", "observation", "args", "content", "tool_call_metadata")


def sniff(objs: Sequence[Any]) -> int:
    first = objs[0] if objs else None
    if not isinstance(first, dict) or not isinstance(first.get("history"), list):
        return 0
    if "instance_id" in first:
        return 95
    return 70 if "metrics" in first or "instruction" in first else 0


def _mock_example_tokens(history: Sequence[Any], native: Any) -> int:
    """Tokens of the worked example OpenHands adds without native function calling: off when
    the log says so, or when every tool call carries the converter's numbered ids."""
    events = [e for e in history if isinstance(e, dict)]
    ids = [
        str(e["tool_call_metadata"].get("tool_call_id") or "")
        for e in events
        if isinstance(e.get("tool_call_metadata"), dict)
    ]
    mock = native is False or (native is None and bool(ids) and all(_MOCK_CALL_ID.fullmatch(i) for i in ids))
    if not mock:
        return 0
    tools = next(
        (
            e["args"].get("tools")
            for e in events
            if e.get("action") == "system" and isinstance(e.get("args"), dict)
        ),
        None,
    )
    names = (
        {get_str(get_dict(t, "function"), "name") for t in tools if isinstance(t, dict)}
        if isinstance(tools, list)
        else set()
    )
    if not names:
        return 0
    t = MOCK_FNCALL_TOKENS
    shown = [n for n in _EXAMPLE_TOOLS if n in names]
    return t["system"] + (t["example"] + sum(t[n] for n in shown) if shown else 0)


def _event_id(e: Mapping[str, Any]) -> str | None:
    value = e.get("id")
    return str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None


class Reader(ListReader):
    def __init__(self) -> None:
        self._instances = 0
        self._extensions = False  # OpenHands prompt extensions (recalled context) of this instance

    def feed(self, line: Line) -> Iterable[Entry]:
        return list(self._entries(line))

    def _entries(self, line: Line) -> Iterator[Entry]:
        d = obj(line)
        history = need(d, "history", line, list)
        if self._instances:
            yield ContextReset("next evaluation instance")
        self._instances += 1
        llm = get_dict(get_dict(d, "metadata"), "llm_config")
        window = as_int(llm.get("max_input_tokens")) or None
        example = _mock_example_tokens(history, llm.get("native_tool_calling"))
        yield ContextUpdate(
            model=get_str(llm, "model"),
            context_window=window,
            session_id=str(d["instance_id"]) if d.get("instance_id") is not None else None,
            # sent with every request of this instance, logged nowhere (0: none, whatever came before)
            extra={**rest(d, ("history", "instance_id")), HARNESS_TOKENS: example},
        )
        agent = get_dict(get_dict(d, "metadata"), "agent_config")
        self._extensions = agent.get("enable_prompt_extensions") is True
        responses: set[str] = set()
        for e in history:
            if not isinstance(e, dict):
                raise LineError(f"a history event should be an object, got {type(e).__name__}", line.no)
            yield from self._event(e, responses, window, line)

    def _event(
        self, e: dict[str, Any], responses: set[str], window: int | None, line: Line
    ) -> Iterator[Entry]:
        action, observation = e.get("action"), e.get("observation")
        meta = e.get("tool_call_metadata")
        if action is None and observation is None:
            raise LineError("a history event has neither 'action' nor 'observation'", line.no)
        args = get_dict(e, "args")
        if action == "system":
            tools = args.get("tools")
            extra = rest(args, ("content", "tools"))
            yield ContextUpdate(
                system=(str(args.get("content") or e.get("message") or ""),),
                tools=tuple(tooldef_from_openai(t) for t in tools if isinstance(t, dict))
                if isinstance(tools, list)
                else None,
                extra=extra,
            )
        elif isinstance(meta, dict) and action is not None:
            msg = self._response_message(e, meta, responses, window, line)
            if msg is not None:
                yield msg
        elif isinstance(meta, dict):
            yield self._tool_result(e, meta)
        elif action == "message":
            role = "user" if e.get("source") == "user" else "assistant"
            parts: list[Part] = [TextPart(str(args.get("content") or ""))]
            urls = args.get("image_urls")
            if isinstance(urls, list):
                parts.extend(media_from_url(u) for u in urls if isinstance(u, str))
            yield self._msg(
                role, parts, e, {**rest(e, _EVENT_USED), "args": rest(args, ("content", "image_urls"))}
            )
        elif action == "finish":
            text = str(args.get("thought") or args.get("final_thought") or "")
            yield self._msg(
                "assistant", [TextPart(text)], e, {**rest(e, _EVENT_USED), "args": rest(args, ("thought",))}
            )
        elif action == "condensation":
            yield CompactionMarker(
                source="openhands",
                summary=get_str(args, "summary"),
                id=_event_id(e),
                timestamp=get_str(e, "timestamp"),
                extra=rest(args, ("summary",)),
            )
        elif observation == "recall" and not self._extensions:
            pass  # recalled context: not in the prompt with prompt extensions off (module docstring)
        elif observation is not None and observation not in _SILENT_OBSERVATIONS:
            parts = self._observation_parts(e)
            if parts:
                yield self._msg("user", parts, e, {"observation": observation, **rest(e, _EVENT_USED)})
        # other actions (recall requests, agent state changes...) are not sent to the model

    def _response_message(
        self, e: dict[str, Any], meta: dict[str, Any], responses: set[str], window: int | None, line: Line
    ) -> Message | None:
        """The model turn behind an agent action, once per response however many actions it made."""
        resp = meta.get("model_response")
        if not isinstance(resp, dict):
            return None
        rid = get_str(resp, "id") or ""
        if rid in responses:
            return None
        responses.add(rid)
        choices = resp.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return None
        raw = need(choices[0], "message", line, dict)
        msg = message_from_openai(raw, line)
        model = get_str(resp, "model")
        usage = resp.get("usage")
        return Message(
            "assistant",
            msg.parts,
            id=_event_id(e),
            timestamp=get_str(e, "timestamp"),
            usage=usage_from_openai(
                usage, model, path="tool_call_metadata.model_response.usage", context_window=window
            )
            if isinstance(usage, dict)
            else None,
            model=model,
            extra={**msg.extra, "response_id": rid, "action": e.get("action")},
        )

    def _tool_result(self, e: dict[str, Any], meta: dict[str, Any]) -> Message:
        call_id = str(meta.get("tool_call_id") or "")
        text = str(e.get("content") or "")
        extras = e.get("extras")
        md = extras.get("metadata") if isinstance(extras, dict) else None
        if isinstance(md, dict):  # command output: the model sees the prefix/suffix lines too
            text = str(md.get("prefix") or "") + text + str(md.get("suffix") or "")
        part = ToolResultPart(
            call_id,
            (TextPart(text),),
            name=get_str(meta, "function_name"),
            is_error=e.get("observation") == "error" or e.get("success") is False,
        )
        extra = {"observation": e.get("observation"), **rest(e, _EVENT_USED)}
        return self._msg("tool", [part], e, extra)

    def _observation_parts(self, e: dict[str, Any]) -> list[Part]:
        """An observation no tool call asked for (recalled context, errors) reaches the model as
        a user message; recalled microagent knowledge is part of it."""
        parts: list[Part] = []
        content = e.get("content")
        if isinstance(content, str) and content:
            parts.append(TextPart(content))
        extras = e.get("extras")
        knowledge = extras.get("microagent_knowledge") if isinstance(extras, dict) else None
        if isinstance(knowledge, list):
            for k in knowledge:
                if isinstance(k, dict) and isinstance(k.get("content"), str):
                    parts.append(TextPart(k["content"]))
        return parts

    def _msg(self, role: Any, parts: list[Part], e: Mapping[str, Any], extra: dict[str, Any]) -> Message:
        return Message(role, tuple(parts), id=_event_id(e), timestamp=get_str(e, "timestamp"), extra=extra)
