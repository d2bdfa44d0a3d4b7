"""``ContextGuardPlugin`` on a real Google ADK ``Runner`` (its flow rebuilding the Contents from
the session's events, its tool calls, its callbacks and session services) with a scripted
``BaseLlm``: many turns past the window with the state in the session, a refusal as too long
retried compacted in the same turn, the state surviving a restart with ``DatabaseSessionService``
on SQLite, and the README's example as written."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from adapter_support import check_paired, real_tokens, run_example, starts_with_summary, tool_output

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import Field

from ctxfold.adapters.adk import ContextGuardPlugin

INSTRUCTION = "You are a careful file agent."


def read_file(path: str) -> dict[str, str]:
    """Read a file."""
    return {"output": tool_output(path)}


class ScriptedGemini(BaseLlm):
    """Calls ``read_file`` ``steps`` times per user turn, then answers; reports its own count of
    each request and refuses one above ``limit`` with Gemini's words."""

    model: str = "gemini-2.5-flash"
    limit: int = 10**9
    steps: int = 3
    requests: list[dict[str, Any]] = Field(default_factory=list)
    calls: int = 0

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = [c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents]
        tools = [t.model_dump(mode="json", exclude_none=True) for t in llm_request.config.tools or ()]
        n = real_tokens(contents, str(llm_request.config.system_instruction), tools)
        self.requests.append({"contents": contents, "real": n, "refused": n > self.limit})
        if n > self.limit:
            message = (
                f"The input token count ({n}) exceeds the maximum number of tokens allowed ({self.limit})."
            )
            raise genai_errors.ClientError(400, {"error": {"code": 400, "message": message}})
        if self.calls < self.steps:
            self.calls += 1
            part = types.Part.from_function_call(name="read_file", args={"path": f"f{len(self.requests)}"})
        else:
            self.calls = 0
            part = types.Part.from_text(text=f"Read the files ({len(self.requests)}).")
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=n, candidates_token_count=9)
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def agent_with(model: ScriptedGemini) -> LlmAgent:
    return LlmAgent(name="coder", model=model, instruction=INSTRUCTION, tools=[read_file])


class Chat:
    """A Runner over a session service, one user message per ``turn``."""

    def __init__(
        self, agent: LlmAgent, plugin: ContextGuardPlugin, service: Any = None, session: str | None = None
    ) -> None:
        self.service = service or InMemorySessionService()
        app = App(name="ctxfold", root_agent=agent, plugins=[plugin])
        self.runner = Runner(app=app, session_service=self.service)
        self.id = session or asyncio.run(self.service.create_session(app_name="ctxfold", user_id="u")).id

    def turn(self, text: str) -> None:
        async def run() -> None:
            message = types.Content(role="user", parts=[types.Part.from_text(text=text)])
            async for _ in self.runner.run_async(user_id="u", session_id=self.id, new_message=message):
                pass

        asyncio.run(run())

    def session(self) -> Any:
        return asyncio.run(self.service.get_session(app_name="ctxfold", user_id="u", session_id=self.id))


def first_text(contents: list[dict[str, Any]]) -> str:
    return str(contents[0]["parts"][0].get("text", "")) if contents and contents[0].get("parts") else ""


def check_request(contents: list[dict[str, Any]]) -> None:
    """ADK strips its call ids from a request: calls pair with responses by name, in order."""
    calls, results = [], []
    for i, c in enumerate(contents):
        for p in c.get("parts", []):
            if "function_call" in p:
                calls.append((i, f"{p['function_call']['name']}#{len(calls)}"))
            if "function_response" in p:
                results.append((i, f"{p['function_response']['name']}#{len(results)}"))
    check_paired(calls, results)


def test_a_long_run_stays_inside_the_window_with_the_state_in_the_session() -> None:
    """Fifteen turns of three tool calls each against an 8,000-token limit: compacted more than
    once, never refused or over the limit, each compacted request starts with the summary and
    pairs every call with its response, the session's events are the whole conversation, and
    the guard's state is in the session under the reference design's keys."""
    model = ScriptedGemini(limit=8_000)
    chat = Chat(agent_with(model), ContextGuardPlugin(window=8_000))
    for i in range(15):
        chat.turn(f"Task {i}: read the next three files.")
    assert len(model.requests) == 15 * 4 and not any(r["refused"] for r in model.requests)
    assert max(r["real"] for r in model.requests) <= 8_000
    summaries = {
        first_text(r["contents"]) for r in model.requests if starts_with_summary(first_text(r["contents"]))
    }
    assert len(summaries) >= 2
    for r in model.requests:
        check_request(r["contents"])
    session = chat.session()
    texts = [p.text or "" for e in session.events if e.content for p in e.content.parts or ()]
    assert len(session.events) == 15 * 8 and not any(starts_with_summary(t) for t in texts)
    assert session.state["__context_guard_summary_coder"] in first_text(model.requests[-1]["contents"])
    assert session.state["__context_guard_real_tokens_coder"] == model.requests[-1]["real"]


def test_a_refusal_is_retried_compacted_in_the_same_turn() -> None:
    """The plugin takes each request's own model name (gemini-2.5-flash: a 1M window); the model
    refuses above 6,000 tokens: the refusal is followed at once by a compacted request that fits,
    the turn goes on without an error, and the stated limit is kept in the session's state."""
    model = ScriptedGemini(limit=6_000)
    chat = Chat(agent_with(model), ContextGuardPlugin())
    for i in range(12):
        chat.turn(f"Task {i}: read the next three files.")
    refused = [i for i, r in enumerate(model.requests) if r["refused"]]
    assert len(refused) == 1
    retry = model.requests[refused[0] + 1]
    assert not retry["refused"] and starts_with_summary(first_text(retry["contents"]))
    check_request(retry["contents"])
    assert chat.session().state["__context_guard_window_limit_coder"] == 6_000


def test_the_state_survives_a_restart_with_the_database_session_service(tmp_path: Path) -> None:
    """A compacted session in SQLite, the process gone (new service, runner, plugin and model
    objects): the next request starts with the same summary, not a new one."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"
    first = ScriptedGemini()
    chat = Chat(agent_with(first), ContextGuardPlugin(window=8_000), DatabaseSessionService(url))
    i = 0
    while not (first.requests and starts_with_summary(first_text(first.requests[-1]["contents"]))):
        chat.turn(f"Task {i}.")
        i += 1
    second = ScriptedGemini()
    again = Chat(agent_with(second), ContextGuardPlugin(window=8_000), DatabaseSessionService(url), chat.id)
    again.turn("One more task.")
    assert first_text(second.requests[0]["contents"]) == first_text(first.requests[-1]["contents"])
    assert len(second.requests[0]["contents"]) < 4 * i // 2


def test_the_readme_adk_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's runner as written (a SQLite session database in the working folder), with a
    model that refuses above 6,000 tokens: the refusal is retried compacted in the same turn."""
    monkeypatch.chdir(tmp_path)
    model = ScriptedGemini(limit=6_000)
    namespace = run_example("ctxfold.adapters.adk", {"agent": agent_with(model)})
    runner = namespace["runner"]
    session = asyncio.run(runner.session_service.create_session(app_name=runner.app_name, user_id="u"))

    async def turn(text: str) -> None:
        message = types.Content(role="user", parts=[types.Part.from_text(text=text)])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass

    for i in range(10):
        asyncio.run(turn(f"Task {i}: read the next three files."))
    refused = [i for i, r in enumerate(model.requests) if r["refused"]]
    assert refused and all(
        starts_with_summary(first_text(model.requests[i + 1]["contents"])) for i in refused
    )
    assert (tmp_path / "sessions.db").exists()
