"""``context_guard_filter`` in a real OpenAI Agents SDK run (``Runner``, its tool execution and
``SQLiteSession``) with the SDK's own Responses model and the real ``openai`` client, against a
scripted Responses API on 127.0.0.1: many turns of tool calls past the window, a refusal as too
long learned and the run started again compacted, the state kept beside the session's items
across a restart, and the README's example as written."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from adapter_support import check_paired, real_tokens, run_example, starts_with_summary, tool_output

agents = pytest.importorskip("agents")

import httpx  # noqa: E402
import openai  # noqa: E402
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool  # noqa: E402
from agents.models.openai_responses import OpenAIResponsesModel  # noqa: E402
from interop.responses_server import ResponsesApi  # noqa: E402
from interop.server import Reply  # noqa: E402
from pytest_httpserver import HTTPServer  # noqa: E402
from werkzeug import Request, Response  # noqa: E402

from ctxfold.adapters.openai_agents import context_guard_filter  # noqa: E402

INSTRUCTIONS = "You are a careful file agent."
# the Responses API's words for it: no numbers, the code says what happened
REFUSAL = {
    "error": {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }
}


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return tool_output(path)


class Scripted:
    """``POST /v1/responses``: calls ``read_file`` ``steps`` times per user turn, then answers;
    reports its own count of each request and refuses one above ``limit``."""

    def __init__(self, limit: int = 10**9, steps: int = 3) -> None:
        self.limit, self.steps = limit, steps
        self.requests: list[dict[str, Any]] = []
        self.calls = 0
        self.api = ResponsesApi()

    def __call__(self, request: Request) -> Response:
        body = json.loads(request.get_data())
        n = real_tokens(body["input"], body.get("instructions"), body.get("tools"))
        self.requests.append({"input": body["input"], "real": n, "refused": n > self.limit})
        if n > self.limit:
            return Response(json.dumps(REFUSAL), status=400, content_type="application/json")
        if self.calls < self.steps:
            self.calls += 1
            reply = Reply(tool_calls=[("read_file", {"path": f"f{len(self.requests)}"})], input_tokens=n)
        else:
            self.calls = 0
            reply = Reply(f"Read the files ({len(self.requests)}).", input_tokens=n)
        return Response(json.dumps(self.api.response(body, reply)), content_type="application/json")


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The SDK exports traces to OpenAI by default: never here."""
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    agents.set_tracing_disabled(True)
    yield


def make_agent(server: HTTPServer, script: Scripted) -> Agent[Any]:
    server.expect_request("/v1/responses", method="POST").respond_with_handler(script)
    client = openai.AsyncOpenAI(base_url=server.url_for("/v1"), api_key="sk-test", max_retries=0)
    model = OpenAIResponsesModel(model="gpt-4o", openai_client=client)
    return Agent(name="coder", instructions=INSTRUCTIONS, model=model, tools=[read_file])


def first_text(items: list[dict[str, Any]]) -> str:
    content = items[0].get("content") if items else None
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return str(content[0].get("text", ""))
    return content if isinstance(content, str) else ""


def check_request(items: list[dict[str, Any]]) -> None:
    calls = [(i, x["call_id"]) for i, x in enumerate(items) if x.get("type") == "function_call"]
    results = [(i, x["call_id"]) for i, x in enumerate(items) if x.get("type") == "function_call_output"]
    check_paired(calls, results)


def run(agent: Agent[Any], text: str, session: SQLiteSession, guard: Any) -> None:
    Runner.run_sync(
        agent, text, session=session, hooks=guard, run_config=RunConfig(call_model_input_filter=guard)
    )


def test_a_long_run_stays_inside_the_window(tmp_path: Path, httpserver: HTTPServer) -> None:
    """Fifteen turns of three tool calls each against an 8,000-token limit, the history in a
    SQLiteSession: compacted more than once, never refused or over the limit, each compacted
    request starts with the summary and keeps every call with its output, and the session's
    items are the whole conversation."""
    script = Scripted(limit=8_000)
    agent = make_agent(httpserver, script)
    session = SQLiteSession("t1", tmp_path / "sessions.db")
    guard = context_guard_filter("gpt-4o", window=8_000, session=session)
    for i in range(15):
        run(agent, f"Task {i}: read the next three files.", session, guard)
    assert len(script.requests) == 15 * 4 and not any(r["refused"] for r in script.requests)
    assert max(r["real"] for r in script.requests) <= 8_000
    summaries = {
        first_text(r["input"]) for r in script.requests if starts_with_summary(first_text(r["input"]))
    }
    assert len(summaries) >= 2
    for r in script.requests:
        check_request(r["input"])
    items = asyncio.run(session.get_items())
    assert len(items) == 15 * 8 and not any(starts_with_summary(first_text([x])) for x in items)


def test_a_refusal_is_learned_and_the_next_run_goes_out_compacted(
    tmp_path: Path, httpserver: HTTPServer
) -> None:
    """The guard believes in gpt-4o's 128k window; the API refuses above 6,000 tokens with its
    own error (no numbers, code ``context_length_exceeded``): ``on_error`` learns it, and the run
    started again sends a compacted request that fits."""
    script = Scripted(limit=6_000)
    agent = make_agent(httpserver, script)
    session = SQLiteSession("t1", tmp_path / "sessions.db")
    guard = context_guard_filter("gpt-4o", session=session)
    refusals = 0
    for i in range(12):
        try:
            run(agent, f"Task {i}: read the next three files.", session, guard)
        except openai.BadRequestError as err:
            refusals += 1
            assert guard.on_error(err)
            run(agent, "Please continue.", session, guard)
    refused = [i for i, r in enumerate(script.requests) if r["refused"]]
    assert refusals == len(refused) >= 1
    for i in refused:
        retry = script.requests[i + 1]
        assert not retry["refused"] and starts_with_summary(first_text(retry["input"]))
        check_request(retry["input"])
    limited = httpx.Response(429, request=httpx.Request("POST", httpserver.url_for("/v1/responses")))
    assert not guard.on_error(openai.RateLimitError("Rate limit reached", response=limited, body=None))


def test_the_state_survives_a_restart_beside_the_session(tmp_path: Path, httpserver: HTTPServer) -> None:
    """A compacted session, the process gone (new session, filter and agent objects over the same
    database file): the next request starts with the same summary, not a new one."""
    db = tmp_path / "sessions.db"
    first = Scripted()
    agent = make_agent(httpserver, first)
    session = SQLiteSession("t1", db)
    guard = context_guard_filter("gpt-4o", window=8_000, session=session)
    i = 0
    while not (first.requests and starts_with_summary(first_text(first.requests[-1]["input"]))):
        run(agent, f"Task {i}.", session, guard)
        i += 1
    session.close()
    httpserver.clear()
    second = Scripted()
    agent = make_agent(httpserver, second)
    session = SQLiteSession("t1", db)
    run(agent, "One more task.", session, context_guard_filter("gpt-4o", window=8_000, session=session))
    assert first_text(second.requests[0]["input"]) == first_text(first.requests[-1]["input"])
    assert len(second.requests[0]["input"]) < 4 * i // 2


def test_the_readme_openai_agents_example_runs(
    tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    script = Scripted(limit=6_000)
    agent = make_agent(httpserver, script)
    namespace: dict[str, Any] = {"agent": agent}
    for i in range(10):
        namespace["task"] = f"Task {i}: read the next three files."
        try:
            run_example("ctxfold.adapters.openai_agents", namespace)
        except openai.BadRequestError as err:
            assert namespace["guard"].on_error(err)
    followed = [i for i, r in enumerate(script.requests[:-1]) if r["refused"]]  # and run again
    assert followed and all(
        starts_with_summary(first_text(script.requests[i + 1]["input"])) for i in followed
    )
    assert (tmp_path / "sessions.db").exists()
