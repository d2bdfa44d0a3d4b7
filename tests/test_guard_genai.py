"""ContextGuard with Google genai Contents and in a real Google ADK agent: dicts (snake_case and
camelCase) and ``types.Content`` objects count as the genai reader counts the same Contents read
from a file, come back in the caller's kind, and the README's ADK callbacks keep a real ADK
``Runner`` inside the window with the session's events untouched.

Expected numbers are never taken from the code under test: counts are compared with the same
data read through the file reader, and the stand-in model counts a request its own way (JSON
characters / 3), not with ctxfold's tokenizer."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, ROOT, write_jsonl

from ctxfold.compaction.guard import ContextGuard, prompt_tokens_of
from ctxfold.engine.state import MemoryStore
from ctxfold.formats import loader
from ctxfold.formats.base import parse_overflow
from ctxfold.strategies.summary import SUMMARY_OPEN
from ctxfold.transcript.model import ContextUpdate, Message

types = pytest.importorskip("google.genai.types")
genai_errors = pytest.importorskip("google.genai.errors")

TASK = "Rename every .jpeg in ./photos to .jpg and tell me what failed."
CAMEL = {
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "inline_data": "inlineData",
    "mime_type": "mimeType",
}


def camel(value: Any) -> Any:
    """The REST API's spelling of a Python-SDK-shaped Content (only the genai keys change)."""
    if isinstance(value, dict):
        return {CAMEL.get(k, k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


def file_messages(path: Path) -> list[Message]:
    return [e for e in loader.open_transcript(path, fmt="genai").entries if isinstance(e, Message)]


def turns(n: int, size: int = 300) -> list[dict[str, Any]]:
    """A genai history as the Python SDK spells it: id-less calls, answered by name."""
    events: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": TASK}]}]
    for i in range(n):
        call = {"function_call": {"name": "read", "args": {"path": f"f{i}"}}}
        events.append({"role": "model", "parts": [call]})
        result = {"name": "read", "response": {"output": f"line {i} " * size}}
        events.append({"role": "user", "parts": [{"function_response": result}]})
    return events


# ----------------------------------------------------------------------------- counting


def test_contents_count_as_the_genai_reader_reads_them() -> None:
    """The fixture's Contents (calls, an error result, an inline image) cost the same tokens
    handed over live (snake_case dicts, camelCase dicts, ``types.Content``) as read from the file."""
    path = FIXTURES / "genai" / "contents.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    guard = ContextGuard("gemini-2.5-flash")
    from_file = guard.estimate(file_messages(path))
    objects = [types.Content.model_validate(d) for d in lines]
    assert isinstance(objects[6].parts[1].inline_data.data, bytes)  # the SDK holds raw bytes
    assert guard.estimate(lines) == guard.estimate([camel(d) for d in lines]) == from_file
    assert guard.estimate(objects) == from_file
    messages = guard.messages_of(objects)
    assert [m.role for m in messages] == [m.role for m in file_messages(path)]
    assert sum(len(m.tool_calls) for m in messages) == 4 and sum(len(m.tool_results) for m in messages) == 4


def test_id_less_calls_pair_with_their_responses_by_name_on_every_pass() -> None:
    """ADK strips its own call ids and rebuilds the Contents for every request: each pass pairs
    calls and responses afresh, so a result always names the call it answers."""
    guard = ContextGuard("gemini-2.5-flash")
    events = turns(3)
    for _ in range(2):  # a second pass over new copies, as ADK sends them
        messages = guard.messages_of([types.Content.model_validate(e) for e in events])
        calls = [c.id for m in messages for c in m.tool_calls]
        results = [r.call_id for m in messages for r in m.tool_results]
        assert calls == results and len(set(calls)) == 3


def test_tools_and_system_instruction_count_as_in_a_request_log(tmp_path: Path) -> None:
    """``types.Tool`` objects (two declarations in one tool, a built-in tool) and a
    ``types.Content`` system instruction cost what the genai reader counts for the same request
    written to a log; a bare FunctionDeclaration counts as one wrapped in a Tool."""
    read = types.FunctionDeclaration(
        name="read",
        description="Read a file",
        parameters=types.Schema(type="OBJECT", properties={"path": types.Schema(type="STRING")}),
    )
    tag = types.FunctionDeclaration(name="latest_tag", description="Latest git tag of a repo.")
    tools = [types.Tool(function_declarations=[read, tag]), types.Tool(google_search=types.GoogleSearch())]
    system = types.Content(
        role="user", parts=[types.Part(text="You are terse."), types.Part(text="Be exact.")]
    )
    request = {
        "model": "gemini-2.5-flash",
        "systemInstruction": system.model_dump(mode="json", exclude_none=True),
        "tools": [t.model_dump(mode="json", exclude_none=True) for t in tools],
        "contents": turns(1),
    }
    update = next(e for e in loader.open_transcript(write_jsonl(tmp_path / "r.jsonl", [request])).entries
                  if isinstance(e, ContextUpdate))  # fmt: skip
    guard = ContextGuard("gemini-2.5-flash")
    counter = guard.counter
    logged = (
        counter.count_system(update.system) + counter.count_tools(update.tools) + counter.framing.per_request
    )
    assert len(update.tools) == 3 and len(update.system) == 2
    assert guard.fixed_tokens(system, tools) == guard.fixed_tokens(
        request["systemInstruction"], request["tools"]
    )
    assert guard.fixed_tokens(system, tools) == logged
    one = guard.fixed_tokens((), [types.Tool(function_declarations=[read])])
    assert guard.fixed_tokens((), [read]) == one < guard.fixed_tokens((), tools[:1])
    assert guard.fixed_tokens("You are terse.", []) < guard.fixed_tokens(system, [])
    assert guard.fixed_tokens(None, None) == guard.fixed_tokens((), [])  # ADK leaves both unset at times


# -------------------------------------------------------------------- the caller's kind


@pytest.mark.parametrize("as_objects", [False, True])
def test_contents_in_contents_out_with_a_stable_prefix(as_objects: bool) -> None:
    guard = ContextGuard("gemini-2.5-flash", window=16_000)
    events: list[Any] = turns(30)
    if as_objects:
        events = [types.Content.model_validate(e) for e in events]
    prepared = guard.before_request(events, system="You are terse.")
    assert prepared.compacted and len(prepared.messages) == 2
    summary, continuation = prepared.messages
    if as_objects:
        assert isinstance(summary, types.Content) and isinstance(continuation, types.Content)
        summary, continuation = (c.model_dump(exclude_none=True) for c in prepared.messages)
    assert summary["role"] == continuation["role"] == "user"
    assert summary["parts"][0]["text"].startswith(SUMMARY_OPEN) and TASK in continuation["parts"][0]["text"]
    reply = {"role": "model", "parts": [{"text": "Renamed a.jpeg."}]}
    events.append(types.Content.model_validate(reply) if as_objects else reply)
    again = guard.before_request(events, system="You are terse.")
    assert again.messages[:2] == prepared.messages and again.messages[2] is events[-1]


def test_a_history_rebuilt_for_every_request_is_not_kept_alive() -> None:
    """A caller that rebuilds its history for every call (as ADK rebuilds its Contents): the
    guard keeps the conversions of this request's events and the last one's, not of every
    request ever made."""
    guard = ContextGuard("gpt-4o")
    history = [{"role": "user", "content": TASK}] + [
        {"role": "assistant", "content": f"step {i}"} for i in range(20)
    ]
    for _ in range(10):
        guard.before_request([dict(e) for e in history])  # the caller's fresh copies
    assert len(guard.live._seen) <= 2 * len(history)


# ------------------------------------------------------------------ usage and refusals


def test_gemini_usage_objects_are_read() -> None:
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=900, candidates_token_count=12, cached_content_token_count=600
    )
    assert prompt_tokens_of(usage) == 900  # the cached tokens are already in the prompt count
    assert prompt_tokens_of({"promptTokenCount": 900, "candidatesTokenCount": 12}) == 900
    chunk = types.GenerateContentResponseUsageMetadata(candidates_token_count=3)
    assert prompt_tokens_of(chunk) is None
    guard = ContextGuard("gemini-2.5-flash")
    guard.before_request(turns(2))
    guard.after_response(chunk)  # a streamed chunk without the prompt count teaches nothing
    guard.after_response(None)  # an ADK response without usage_metadata
    assert guard.state.get("real_tokens") is None
    guard.after_response(usage)
    assert guard.state.get("real_tokens") == 900


def test_geminis_refusal_as_too_long_is_learned() -> None:
    """The SDK's own ClientError for the wording Gemini uses (python-genai issue #2466)."""
    err = genai_errors.ClientError(
        400,
        {
            "error": {
                "code": 400,
                "message": "The input token count (81881) exceeds the maximum number of tokens allowed (65536).",
                "status": "INVALID_ARGUMENT",
            }
        },
    )
    assert parse_overflow(str(err)) == (81_881, 65_536)
    guard = ContextGuard("gemini-2.5-flash")  # believes in the 1M window
    n = 10
    while guard.estimate(turns(n)) < 0.95 * 81_881:  # a history the stated count could be of
        n += 10
    events = turns(n)
    assert not guard.before_request(events).decision.due
    assert guard.on_error(str(err))
    assert guard.policy.window == 65_536 and guard.state.get("real_tokens") == 81_881
    assert guard.before_request(events).compacted
    assert not guard.on_error(
        str(genai_errors.ClientError(429, {"error": {"message": "Resource exhausted"}}))
    )


# ------------------------------------------------------------------- a real ADK agent

# Only these need google-adk: without it they are skipped and the tests above still run.
needs_adk = pytest.mark.skipif(
    importlib.util.find_spec("google.adk") is None, reason="google-adk is not installed"
)


def read_file(path: str) -> dict[str, str]:
    """Read a file."""
    return {"output": f"{path}: " + "lorem ipsum dolor sit amet " * 25}


def real_tokens(contents: list[dict[str, Any]], request: Any) -> int:
    """The stand-in provider's own count: characters of the request's JSON / 3."""
    config = request.config
    tools = [t.model_dump(mode="json", exclude_none=True) for t in config.tools or ()]
    return len(json.dumps([contents, config.system_instruction, tools])) // 3


def scripted_model(limit: int, steps: int = 3) -> Any:
    """A BaseLlm that calls ``read_file`` ``steps`` times per user turn and then answers; it
    refuses a request above ``limit`` with Gemini's words, and streams a partial chunk with
    nonsense usage before each response (the guard must not learn from it)."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from pydantic import Field

    class ScriptedGemini(BaseLlm):
        requests: list[dict[str, Any]] = Field(default_factory=list)
        calls: list[int] = Field(default_factory=list)  # since the last answer: requests may be compacted

        async def generate_content_async(
            self, llm_request: Any, stream: bool = False
        ) -> AsyncGenerator[Any, None]:
            contents = [c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents]
            n = real_tokens(contents, llm_request)
            self.requests.append({"contents": contents, "real": n, "refused": n > limit})
            if n > limit:
                self.calls.clear()  # the turn is over
                message = (
                    f"The input token count ({n}) exceeds the maximum number of tokens allowed ({limit})."
                )
                raise genai_errors.ClientError(400, {"error": {"code": 400, "message": message}})
            if len(self.calls) < steps:
                self.calls.append(len(self.requests))
                part = types.Part.from_function_call(
                    name="read_file", args={"path": f"f{len(self.requests)}"}
                )
            else:
                part = types.Part.from_text(text=f"Read {len(self.calls)} files.")
                self.calls.clear()
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part.from_text(text="...")]),
                partial=True,
                usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=10**7),
            )
            yield LlmResponse(
                content=types.Content(role="model", parts=[part]),
                usage_metadata=types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=n, candidates_token_count=9
                ),
            )

    return ScriptedGemini(model="gemini-2.5-flash")


def readme_adk_example(model: Any) -> dict[str, Any]:
    """The documented ADK snippet (docs/agent-loop.md), run as written; its free names are the test's."""
    readme = (ROOT / "docs" / "agent-loop.md").read_text()
    section = readme.split("## Google ADK", 1)[1].split("\n## ", 1)[0]
    code = next(b.split("```", 1)[0] for b in section.split("```python")[1:] if "google.adk" in b)
    namespace = {"model": model, "system_prompt": "You are a careful file agent.", "tools": [read_file]}
    exec(compile(code, "README.md", "exec"), namespace)
    return namespace


class Session:
    """A Runner over an in-memory session, one user message per ``turn``."""

    def __init__(self, agent: Any) -> None:
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService

        self.service = InMemorySessionService()
        self.runner = Runner(agent=agent, app_name="ctxfold", session_service=self.service)
        self.id = asyncio.run(self.service.create_session(app_name="ctxfold", user_id="u")).id

    def turn(self, text: str) -> None:
        async def run() -> None:
            message = types.Content(role="user", parts=[types.Part.from_text(text=text)])
            async for _ in self.runner.run_async(user_id="u", session_id=self.id, new_message=message):
                pass

        asyncio.run(run())

    def events(self) -> list[dict[str, Any]]:
        session = asyncio.run(self.service.get_session(app_name="ctxfold", user_id="u", session_id=self.id))
        return [e.model_dump(mode="json", exclude_none=True) for e in session.events]


@needs_adk
def test_the_readme_adk_example_learns_a_refusal_and_compacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's callbacks as written, with a guard that believes in Gemini's 1M window and a
    provider that refuses above 6,000 tokens: the refusal reaches the caller, the guard learns
    the limit (persisted), and the turn run again goes out compacted and fits."""
    monkeypatch.chdir(tmp_path)
    model = scripted_model(limit=6_000)
    namespace = readme_adk_example(model)
    session = Session(namespace["agent"])
    with pytest.raises(genai_errors.ClientError, match="exceeds the maximum number of tokens"):
        for i in range(20):
            session.turn(f"Task {i}: read the next files.")
    refused = [r for r in model.requests if r["refused"]]
    assert len(refused) == 1 and model.requests[-1] is refused[0]
    session.turn("Please continue.")
    retry = model.requests[model.requests.index(refused[0]) + 1]
    assert len(retry["contents"]) == 2 and retry["contents"][0]["parts"][0]["text"].startswith(SUMMARY_OPEN)
    assert "Please continue." in retry["contents"][1]["parts"][0]["text"]
    assert all(r["real"] <= 6_000 for r in model.requests if not r["refused"])
    state = orjson.loads((tmp_path / "agent-state.json").read_bytes())
    assert state["__context_guard_window_limit_default"] == 6_000
    assert state["__context_guard_real_tokens_default"] == model.requests[-1]["real"]  # not the partials'


@needs_adk
def test_a_real_adk_agent_stays_inside_the_window_and_its_session_is_untouched() -> None:
    """Twenty user turns of three tool calls each through a real ADK Runner, with the README's
    callbacks and a guard for an 8,000-token window: compaction fires more than once, every
    request after one is [summary, continuation] + the Contents ADK built after the watermark,
    no request above the window reaches the model, and the session's events only grow."""
    from google.adk.agents import LlmAgent

    n_turns = 20
    model = scripted_model(limit=8_000)
    namespace = readme_adk_example(model)
    guard = namespace["guard"] = ContextGuard("gemini-2.5-flash", window=8_000, store=MemoryStore())
    built: list[dict[str, Any]] = []  # per request: ADK's own Contents, then what the guard left

    def before(callback_context: Any, llm_request: Any) -> None:
        contents = [c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents]
        built.append({"contents": contents})

    def watermark(callback_context: Any, llm_request: Any) -> None:
        built[-1].update(mark=guard.state.watermark, summary=guard.state.summary)

    agent = LlmAgent(
        name="coder",
        model=model,
        instruction=namespace["system_prompt"],
        tools=[read_file],
        before_model_callback=[before, namespace["before_model"], watermark],
        after_model_callback=namespace["after_model"],
        on_model_error_callback=namespace["on_model_error"],
    )
    session = Session(agent)
    snapshots = []
    for i in range(n_turns):
        session.turn(f"Task {i}: read the next three files.")
        snapshots.append(session.events())
    assert len(built) == len(model.requests) == n_turns * 4
    assert not any(r["refused"] for r in model.requests)
    assert max(r["real"] for r in model.requests) <= 8_000
    # a compaction made a new summary (the watermark may sit before the last Contents: the
    # exchange under way is kept verbatim after it)
    compacting = [
        i for i, b in enumerate(built) if b["summary"] and (i == 0 or built[i - 1]["summary"] != b["summary"])
    ]
    assert guard.compactions == len(compacting) >= 2
    for b, sent in zip(built, model.requests, strict=True):
        if not b["summary"]:
            assert sent["contents"] == b["contents"]
            continue
        head, tail = sent["contents"][:2], sent["contents"][2:]
        summary, continuation = (c["parts"][0]["text"] for c in head)
        assert summary.startswith(SUMMARY_OPEN) and b["summary"] in summary
        assert head[1]["role"] == "user" and continuation.startswith("[")
        assert tail == b["contents"][b["mark"] :]
    final = snapshots[-1]
    for before_turn in snapshots:
        assert final[: len(before_turn)] == before_turn  # append-only, never rewritten
    texts = [p.get("text", "") for e in final for p in (e.get("content") or {}).get("parts", [])]
    assert not any(SUMMARY_OPEN in t for t in texts)
    assert guard.state.get("real_tokens") == model.requests[-1]["real"]
