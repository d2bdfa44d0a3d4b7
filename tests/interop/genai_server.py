"""The Google GenAI API (Gemini) for the scripted server: what Gemini CLI calls.

- ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``: the main model calls, answered
  from the script as server-sent events (one chunk: the parts, ``finishReason`` and
  ``usageMetadata``);
- ``POST …:generateContent``: Gemini CLI's own helper calls, side calls unless a test's ``side``
  says otherwise: the model router and other JSON-mode calls get a JSON answer fitting their
  schema (``{"reasoning", "model_choice": "flash"}`` for the router), the compression prompt
  (its system instruction asks for a ``<state_snapshot>``) gets ``SNAPSHOT``, the rest the side
  reply's text;
- ``POST …:countTokens``: a rough count (4 characters a token).

    with ScriptedServer(genai_api, [Reply(tool_calls=[("read_file", {"file_path": "a.txt"})])],
                        side=side_call) as srv: ...
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from interop.server import Recorded, Reply, Response, ScriptedServer, rough_tokens

SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Answer the user's questions about notes.txt.</overall_goal>\n"
    "<key_knowledge>The lab's state snapshot.</key_knowledge>\n</state_snapshot>"
)


def side_call(request: Recorded) -> bool:
    """Gemini CLI's helper calls (router, titles, compression) are not the conversation's."""
    return ":generateContent" in request.path


def _model(path: str) -> str:
    name = path.split("?", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[0] or "gemini-lab"


def _json_answer(body: dict[str, Any]) -> str | None:
    """A JSON-mode call's answer, shaped by the schema it asks for (None: not JSON mode)."""
    gen = body.get("generationConfig") or {}
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
    if gen.get("responseMimeType") != "application/json" and schema is None:
        return None
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    if "model_choice" in props:
        return '{"reasoning": "a scripted lab answer", "model_choice": "flash"}'
    return "{}"


def _wants_snapshot(body: dict[str, Any]) -> bool:
    system = body.get("systemInstruction") or {}
    parts = system.get("parts", []) if isinstance(system, dict) else []
    return any("state_snapshot" in str(p.get("text", "")) for p in parts if isinstance(p, dict))


class GenaiApi:
    def handle(self, server: ScriptedServer, request: Recorded, out: Response) -> None:
        path = request.path.split("?", 1)[0]
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "POST" or ":" not in path:
            out.json(404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}})
            return
        action = path.rsplit(":", 1)[1]
        if action == "countTokens":
            out.json(200, {"totalTokens": rough_tokens(body)})
            return
        if action not in ("generateContent", "streamGenerateContent"):
            out.json(404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}})
            return
        reply = server.reply_for(request)
        if request.side:
            text = _json_answer(body)
            if text is None:
                text = SNAPSHOT if _wants_snapshot(body) else reply.text
            reply = Reply(text, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)
        chunk = self.response(body, reply, _model(path))
        if action == "streamGenerateContent":
            out.events(iter([(None, chunk)]))
        else:
            out.json(200, chunk)

    def response(self, body: dict[str, Any], reply: Reply, model: str) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if reply.text:
            parts.append({"text": reply.text})
        for name, args in reply.tool_calls:
            parts.append({"functionCall": {"name": name, "args": args}})
        tokens = reply.input_tokens if reply.input_tokens is not None else rough_tokens(body)
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": tokens,
                "candidatesTokenCount": reply.output_tokens,
                "totalTokenCount": tokens + reply.output_tokens,
            },
            "modelVersion": model,
        }


def contents(request: Recorded) -> list[dict[str, Any]]:
    """The conversation a model call sent."""
    body = request.body if isinstance(request.body, dict) else {}
    found = body.get("contents")
    return found if isinstance(found, list) else []


def parts_of(request: Recorded) -> Iterator[dict[str, Any]]:
    for c in contents(request):
        yield from (p for p in c.get("parts", []) if isinstance(p, dict))


genai_api = GenaiApi()
