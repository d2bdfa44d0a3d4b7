"""A scripted model server on 127.0.0.1 for the harness lab: it answers each model call from a
script and records every request, so a test can see exactly what a real harness sent.

The base (:class:`ScriptedServer`) knows nothing of any API: it records each request (method,
path, headers, JSON body) and hands it to an API module's handler, which turns the next
:class:`Reply` of the script into that API's response (a JSON body or server-sent events).
``anthropic_api`` below speaks the Anthropic Messages API (Claude Code, pi) and ``chat_api`` the
OpenAI Chat Completions API; the others live beside them (``responses_server.py`` for Codex,
``genai_server.py`` for Gemini CLI) on the same base.

    with ScriptedServer(anthropic_api, [Reply(tool_calls=[("Bash", {"command": "ls"})]), Reply("Done.")]) as srv:
        run_harness(env={"ANTHROPIC_BASE_URL": srv.url})
    assert srv.model_calls()[0].body["messages"][-1]["content"]...

A harness makes calls the test did not script (titles, routing, token counts): a reply is taken
from the script only for a *model call* of the handler's own definition, and ``side`` decides
which of those are side calls (answered with ``side_reply``, not taken from the script).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol


@dataclass(frozen=True)
class Reply:
    """One model response: text and/or tool calls ``(name, arguments)``; ``input_tokens`` is the
    usage to report (None: a rough count of the request, 4 characters a token)."""

    text: str = ""
    tool_calls: Sequence[tuple[str, dict[str, Any]]] = ()
    input_tokens: int | None = None
    output_tokens: int = 12


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON
    model_call: bool = False  # a call the handler answered as the model
    side: bool = False  # a model call answered with the side reply, not from the script
    reply: Reply | None = None

    @property
    def text(self) -> str:
        """The request body as JSON text, to search what it carried."""
        return self.body if isinstance(self.body, str) else json.dumps(self.body, ensure_ascii=False)


class Api(Protocol):
    """An API module: ``handle`` answers one request, calling ``server.reply_for`` for model calls."""

    def handle(self, server: ScriptedServer, request: Recorded, out: Response) -> None: ...


class Response:
    """What a handler writes: a JSON body or a stream of server-sent events."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._h = handler

    def json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self._h.send_response(status)
        self._h.send_header("content-type", "application/json")
        self._h.send_header("content-length", str(len(data)))
        self._h.end_headers()
        self._h.wfile.write(data)

    def events(self, events: Iterator[tuple[str | None, Any]]) -> None:
        """``(event name or None, data)`` pairs as ``text/event-stream``."""
        self._h.send_response(200)
        self._h.send_header("content-type", "text/event-stream")
        self._h.send_header("cache-control", "no-cache")
        self._h.send_header("connection", "close")
        self._h.end_headers()
        for name, data in events:
            payload = data if data == DONE else json.dumps(data)  # the chat API's end of stream is not JSON
            chunk = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            self._h.wfile.write(chunk.encode())
            self._h.wfile.flush()
        self._h.close_connection = True


DONE = "[DONE]"


def rough_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4)


class ScriptedServer:
    """Serve ``api`` on 127.0.0.1 (a free port) from ``script``: a list of replies, taken in
    order by the model calls that are not side calls; when it runs out, ``fallback`` answers."""

    def __init__(
        self,
        api: Api,
        script: Sequence[Reply] = (),
        *,
        side: Callable[[Recorded], bool] = lambda r: False,
        side_reply: Reply = Reply("ok"),
        fallback: Reply | None = Reply("Done."),
    ) -> None:
        self.api = api
        self.script = list(script)
        self.side, self.side_reply, self.fallback = side, side_reply, fallback
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def add(self, *replies: Reply) -> None:
        """Script more replies (for the next turn of a test)."""
        with self._lock:
            self.script.extend(replies)

    def reply_for(self, request: Recorded) -> Reply:
        """The reply to a model call: the side reply, the next scripted one, or the fallback."""
        request.model_call = True
        with self._lock:
            if self.side(request):
                request.side, request.reply = True, self.side_reply
            elif self.script:
                request.reply = self.script.pop(0)
            elif self.fallback is not None:
                request.reply = self.fallback
            else:
                raise LookupError(f"the script ran out at {request.path}")
        return request.reply

    def model_calls(self, *, side: bool = False) -> list[Recorded]:
        """The requests answered as the model, main ones (or, with ``side``, the side ones)."""
        return [r for r in self.requests if r.model_call and r.side == side]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _record(self) -> Recorded:
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size).decode("utf-8", "replace") if size else ""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(rec)
                return rec

            def _serve(self) -> None:
                rec = self._record()
                try:
                    server.api.handle(server, rec, Response(self))
                except LookupError as err:
                    Response(self).json(500, {"error": {"type": "script_exhausted", "message": str(err)}})

            do_POST = do_GET = do_PUT = _serve

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads requests
                pass

        return Handler


# ------------------------------------------------------------------ Anthropic Messages API


@dataclass
class _Ids:
    n: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, prefix: str) -> str:
        with self.lock:
            self.n += 1
            return f"{prefix}{self.n:06d}"


class AnthropicApi:
    """``POST /v1/messages`` (streaming or not) and ``/v1/messages/count_tokens``."""

    ids = _Ids()

    def handle(self, server: ScriptedServer, request: Recorded, out: Response) -> None:
        path = request.path.split("?", 1)[0]
        body = request.body if isinstance(request.body, dict) else {}
        if path.endswith("/count_tokens"):
            out.json(200, {"input_tokens": rough_tokens(body)})
            return
        if request.method != "POST" or not path.endswith("/messages"):
            out.json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        reply = server.reply_for(request)
        message = self.message(body, reply)
        if body.get("stream"):
            out.events(self.stream(message))
        else:
            out.json(200, message)

    def message(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for name, args in reply.tool_calls:
            content.append(
                {"type": "tool_use", "id": self.ids.next("toolu_lab"), "name": name, "input": args}
            )
        tokens = reply.input_tokens if reply.input_tokens is not None else rough_tokens(body)
        return {
            "id": self.ids.next("msg_lab"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-lab"),
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": tokens,
                "output_tokens": reply.output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def stream(self, message: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**message["usage"], "output_tokens": 1},
        }
        yield "message_start", {"type": "message_start", "message": start}
        for i, block in enumerate(message["content"]):
            if block["type"] == "text":
                yield (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                empty = {**block, "input": {}}
                yield (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": empty},
                )
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": i}
        yield (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
        yield "message_stop", {"type": "message_stop"}


anthropic_api = AnthropicApi()


# ---------------------------------------------------------------- OpenAI Chat Completions API


class ChatApi:
    """``POST /v1/chat/completions`` (streaming chunks or one completion), for harnesses and
    providers that speak the OpenAI chat API (pi's ``openai-completions``, proxies)."""

    ids = _Ids()

    def handle(self, server: ScriptedServer, request: Recorded, out: Response) -> None:
        path = request.path.split("?", 1)[0]
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "POST" or not path.endswith("/chat/completions"):
            out.json(404, {"error": {"message": f"no such route {path}", "type": "invalid_request_error"}})
            return
        reply = server.reply_for(request)
        calls = [
            {
                "id": self.ids.next("call_lab"),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args in reply.tool_calls
        ]
        tokens = reply.input_tokens if reply.input_tokens is not None else rough_tokens(body)
        usage = {
            "prompt_tokens": tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": tokens + reply.output_tokens,
        }
        finish = "tool_calls" if calls else "stop"
        base = {
            "id": self.ids.next("chatcmpl_lab"),
            "created": 1764000000,
            "model": body.get("model", "gpt-lab"),
        }
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if calls:
                message["tool_calls"] = calls
            choice = {"index": 0, "message": message, "finish_reason": finish}
            out.json(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        out.events(self._chunks(base, reply.text, calls, finish, usage))

    def _chunks(
        self, base: dict[str, Any], text: str, calls: list[dict[str, Any]], finish: str, usage: dict[str, int]
    ) -> Iterator[tuple[str | None, Any]]:
        def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": reason}
            return {**base, "object": "chat.completion.chunk", "choices": [choice]}

        yield None, chunk({"role": "assistant", "content": ""})
        if text:
            yield None, chunk({"content": text})
        for i, call in enumerate(calls):
            yield None, chunk({"tool_calls": [{"index": i, **call}]})
        yield None, chunk({}, finish)
        yield None, {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
        yield None, DONE


chat_api = ChatApi()
