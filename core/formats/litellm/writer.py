"""Write a LiteLLM completion log: ONE line per conversation holding the whole request
``{messages, tools, kwargs: {model, ...}, context_window, response: null}``, in the shape of the
input lines but without a response (``response`` is present and null: that key is what tells a
LiteLLM log from a bare OpenAI request log). A compacted transcript is one line: the request the
agent sends next.

What a request cannot hold is lost: the usage, ids, timestamps and response metadata of the
assistant messages (they live in each input line's ``response``) and the log's timing and cost.
An API error at the end of a conversation is kept as the line's ``error``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxfold.formats.api_writing import current, dumps, read_items, segments
from ctxfold.formats.openai_chat import writer as openai_chat_writer
from ctxfold.formats.openai_chat.writer import message_dicts, tool_dict
from ctxfold.transcript.model import ApiError, Entry, Message, Transcript

# Message extras the reader takes from the line or its response, not from the message.
_LINE_KEYS = ("choice", "response", "other_choices", "log")


def write(t: Transcript) -> Iterator[bytes]:
    state, entries = current(t)
    for seg in segments(state, entries):
        ctx = seg.end
        messages: list[dict[str, Any]] = [{"role": "system", "content": s} for s in ctx.system or ()]
        messages += [d for m in seg.messages for d in message_dicts(m, *_LINE_KEYS, names=True)]
        line: dict[str, Any] = {"messages": messages}
        if ctx.tools:
            line["tools"] = [tool_dict(x) for x in ctx.tools]
        kwargs = dict(ctx.extra.get("kwargs") or {})
        if ctx.model:
            kwargs = {"model": ctx.model, **kwargs}
        line["kwargs"] = kwargs
        if ctx.context_window:
            line["context_window"] = ctx.context_window
        line["response"] = None
        last = seg.entries[-1] if seg.entries else None
        if isinstance(last, ApiError):
            line["error"] = last.message
            if last.timestamp:
                line["timestamp"] = last.timestamp
        if messages or "error" in line:
            yield dumps(line)


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    """The request's messages obey the Chat Completions rules (LiteLLM sends them as such)."""
    return openai_chat_writer.check(
        [(no, e) for no, e in items if not isinstance(e, Message) or e.branch is None]
    )


def check_file(path: str | Path) -> list[tuple[int, str]]:
    """``check`` over the file as the litellm reader reads it, each entry with its own line."""
    return check(read_items(path, "litellm"))
