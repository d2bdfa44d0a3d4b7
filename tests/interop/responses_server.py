"""The OpenAI Responses API on the lab's :class:`ScriptedServer`, as the Codex CLI consumes it.

``POST …/responses`` answers with server-sent events: ``response.created``, then per output item
``response.output_item.added``, its deltas (``response.output_text.delta`` for text,
``response.function_call_arguments.delta`` for a call's arguments) and
``response.output_item.done``, and last ``response.completed`` carrying the usage. Codex builds
its history from the ``done`` items and its token counts from the completed response's usage.
A request with ``"stream": false`` gets the response object as JSON.

``GET …/models`` answers with an empty model list (Codex asks for it with some providers and
falls back to its bundled model information). Every request is recorded by the base server.

A reply's tool call ``("shell", {"command": [...]})`` becomes a ``function_call`` item; the
arguments are sent as the JSON string the API uses.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from interop.server import Recorded, Reply, Response, ScriptedServer, rough_tokens


class ResponsesApi:
    """``POST /v1/responses`` (streamed or not) and ``GET /v1/models``."""

    def __init__(self) -> None:
        self._n = itertools.count(1)
        self._lock = threading.Lock()

    def _id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_lab{next(self._n):06d}"

    def handle(self, server: ScriptedServer, request: Recorded, out: Response) -> None:
        path = request.path.split("?", 1)[0].rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            out.json(200, {"object": "list", "data": [], "models": []})
            return
        if request.method != "POST" or not path.endswith("/responses"):
            out.json(404, {"error": {"type": "not_found", "message": path}})
            return
        body = request.body if isinstance(request.body, dict) else {}
        reply = server.reply_for(request)
        response = self.response(body, reply)
        if body.get("stream", True) is False:
            out.json(200, response)
        else:
            out.events(self.stream(response))

    def output(self, reply: Reply) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if reply.text:
            items.append(
                {
                    "type": "message",
                    "id": self._id("msg"),
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for name, args in reply.tool_calls:
            items.append(
                {
                    "type": "function_call",
                    "id": self._id("fc"),
                    "status": "completed",
                    "call_id": self._id("call"),
                    "name": name,
                    "arguments": json.dumps(args),
                }
            )
        return items

    def response(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        tokens = reply.input_tokens if reply.input_tokens is not None else rough_tokens(body)
        return {
            "id": self._id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "gpt-lab"),
            "output": self.output(reply),
            "usage": {
                "input_tokens": tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": reply.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": tokens + reply.output_tokens,
            },
        }

    def stream(self, response: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
        seq = itertools.count()

        def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
            return kind, {"type": kind, "sequence_number": next(seq), **fields}

        started = {**response, "status": "in_progress", "output": [], "usage": None}
        yield event("response.created", response=started)
        yield event("response.in_progress", response=started)
        for index, item in enumerate(response["output"]):
            ref = {"item_id": item["id"], "output_index": index}
            if item["type"] == "message":
                text = item["content"][0]["text"]
                yield event("response.output_item.added", output_index=index, item={**item, "content": []})
                part = {"type": "output_text", "text": "", "annotations": []}
                yield event("response.content_part.added", **ref, content_index=0, part=part)
                for i in range(0, len(text), 16):
                    yield event("response.output_text.delta", **ref, content_index=0, delta=text[i : i + 16])
                yield event("response.output_text.done", **ref, content_index=0, text=text)
                yield event("response.content_part.done", **ref, content_index=0, part={**part, "text": text})
            else:
                args = item["arguments"]
                yield event("response.output_item.added", output_index=index, item={**item, "arguments": ""})
                yield event("response.function_call_arguments.delta", **ref, delta=args)
                yield event("response.function_call_arguments.done", **ref, arguments=args)
            yield event("response.output_item.done", output_index=index, item=item)
        yield event("response.completed", response=response)


responses_api = ResponsesApi()


def input_items(request: Recorded) -> list[dict[str, Any]]:
    """The ``input`` items of a recorded Responses request."""
    body = request.body if isinstance(request.body, dict) else {}
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def item_text(item: dict[str, Any]) -> str:
    """The words of one input item (message text, call arguments, tool output)."""
    if item.get("type") == "message":
        content = item.get("content")
        if isinstance(content, str):
            return content
        return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
    if item.get("type") in ("function_call", "custom_tool_call"):
        return str(item.get("arguments", item.get("input", "")))
    if item.get("type") in ("function_call_output", "custom_tool_call_output"):
        out = item.get("output")
        return out if isinstance(out, str) else json.dumps(out)
    return ""
