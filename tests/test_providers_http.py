"""The model-backed summarizers against a local HTTP server, through the real SDK clients.

Every provider path (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
OpenAI-compatible without a key) is driven over HTTP by pytest-httpserver on 127.0.0.1:
request bodies, retries, fallbacks, timeouts, garbage replies, and that the API key never
shows up in anything ctxfold returns or logs.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from ctxfold.errors import MissingKeyError, ProviderError, UsageError
from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.registry import make_summarizer
from ctxfold.providers.render import SECTIONS
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

KEY = "sk-test-KEY0123456789abcdefSECRET"
SUMMARY = (
    "## Current State\nAll good.\n## User Requests (verbatim)\n- Add a users table and migrate the data\n"
    "## Todo List\n- [in_progress] Write the migration"
)
PAYLOAD = "PAYLOAD-ROW " * 400  # a big tool result that must not reach the summarizer
FOCUS = "focus on the database migration"


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    return ("127.0.0.1", 0)


def _anthropic_ok(text: str = SUMMARY) -> dict[str, Any]:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 1234, "output_tokens": 56},
    }  # fmt: skip


def _chat_ok(text: str = SUMMARY) -> dict[str, Any]:
    return {
        "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290},
    }  # fmt: skip


def _responses_ok(text: str = SUMMARY) -> dict[str, Any]:
    return {
        "id": "resp_1", "object": "response", "created_at": 0, "model": "m", "status": "completed",
        "output": [{"type": "message", "id": "m1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": 1234, "output_tokens": 56, "total_tokens": 1290},
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }  # fmt: skip


# name: (spec, endpoint, base path, good reply, key)
PATHS: dict[str, tuple[str, str, str, Any, str | None]] = {
    "anthropic": ("anthropic:claude-haiku-4-5", "/v1/messages", "/", _anthropic_ok, KEY),
    "openai": ("openai:gpt-4.1-mini", "/v1/chat/completions", "/v1", _chat_ok, KEY),
    "openai-responses": ("openai-responses:gpt-4.1-mini", "/v1/responses", "/v1", _responses_ok, KEY),
    "openai-compatible": ("openai-compatible:llama3.2", "/v1/chat/completions", "/v1", _chat_ok, None),
}
ALL = pytest.mark.parametrize("path", list(PATHS))


def _make(httpserver: HTTPServer, path: str, spec: str | None = None, **options: Any) -> Any:
    name_spec, _, base, _, key = PATHS[path]
    options.setdefault("api_key", key)
    options.setdefault("max_retries", 0)
    options.setdefault("strict", True)
    return make_summarizer(spec or name_spec, base_url=httpserver.url_for(base), **options)


def _conversation(n_filler: int = 0) -> list[Message]:
    todos = {"todos": [
        {"content": "Write the migration", "status": "in_progress", "activeForm": "Writing the migration"},
        {"content": "Run the test suite", "status": "pending", "activeForm": "Running the tests"},
    ]}  # fmt: skip
    filler = [Message("user", (TextPart(f"old note {i}: " + "lorem ipsum " * 40),)) for i in range(n_filler)]
    return [
        *filler,
        Message("user", (TextPart("Add a users table and migrate the data"),)),
        Message("assistant", (ToolCallPart("t1", "TodoWrite", todos),)),
        Message("user", (ToolResultPart("t1", (TextPart("Todos updated"),)),)),
        Message("assistant", (ToolCallPart("b1", "Bash", {"command": "psql -c 'select * from users'"}),)),
        Message("user", (ToolResultPart("b1", (TextPart(PAYLOAD),)),)),
        Message("assistant", (TextPart("The table has 3 rows; writing the migration next."),)),
    ]


def _request(messages: list[Message] | None = None, budget: int = 700) -> SummaryRequest:
    return SummaryRequest(messages or _conversation(), budget, instructions=FOCUS)


def _prompt_of(path: str, body: dict[str, Any]) -> tuple[str, str]:
    """(system, user) text of a request body."""
    if path == "anthropic":
        return body["system"], body["messages"][0]["content"]
    if path == "openai-responses":
        return body["instructions"], body["input"]
    return body["messages"][0]["content"], body["messages"][1]["content"]


@ALL
def test_request_body_and_result(httpserver: HTTPServer, path: str) -> None:
    _, endpoint, _, ok, key = PATHS[path]
    httpserver.expect_oneshot_request(endpoint, method="POST").respond_with_json(ok())
    result = _make(httpserver, path)(_request(budget=700))
    (req, _), *_ = httpserver.log
    body = json.loads(req.data)
    system, user = _prompt_of(path, body)
    assert body["model"] == PATHS[path][0].split(":", 1)[1]
    limit = {
        "anthropic": "max_tokens",
        "openai": "max_completion_tokens",
        "openai-responses": "max_output_tokens",
    }
    assert body[limit.get(path, "max_tokens")] == 700
    assert all(f"## {s}" in system for s in SECTIONS)
    assert "525 words" in system  # 700 tokens × 0.75
    assert "[tool Bash returned a result]" in user and "PAYLOAD-ROW" not in user
    assert "- [in_progress] Write the migration\n- [pending] Run the test suite" in user
    assert FOCUS in user and "Add a users table" in user
    assert req.headers.get("Authorization") == (f"Bearer {KEY}" if key else None)
    assert result.text == SUMMARY and result.provider == path
    assert result.warnings == (
        []
        if key
        else [
            f"{PATHS[path][0]}: unknown model, assuming a 128,000-token window "
            "for the summarizer's input (set the summarizer window to change it)"
        ]
    )
    assert result.usage == {"input_tokens": 1234, "output_tokens": 56}


@ALL
def test_prompt_fits_80_percent_of_window(httpserver: HTTPServer, path: str) -> None:
    _, endpoint, _, ok, _ = PATHS[path]
    httpserver.expect_oneshot_request(endpoint).respond_with_json(ok())
    result = _make(httpserver, path, window=6000)(_request(_conversation(n_filler=60), budget=500))
    (req, _), *_ = httpserver.log
    system, user = _prompt_of(path, json.loads(req.data))
    tok = get_tokenizer("o200k")
    assert tok.count(system) + tok.count(user) <= 0.8 * 6000
    assert result.dropped > 0 and f"[{result.dropped} earlier messages were left out to fit]" in user
    conversation = user.split("[Conversation]")[1].split("[End conversation]")[0]
    assert "old note 0:" not in conversation and "old note 59:" in conversation  # the oldest go first
    assert "writing the migration next" in user and "Write the migration" in user


@ALL
def test_429_is_retried(httpserver: HTTPServer, path: str) -> None:
    _, endpoint, _, ok, _ = PATHS[path]
    headers = {"retry-after-ms": "1", "retry-after": "0"}
    error = {"error": {"type": "rate_limit_error", "message": "slow down"}}
    httpserver.expect_oneshot_request(endpoint).respond_with_json(error, status=429, headers=headers)
    httpserver.expect_oneshot_request(endpoint).respond_with_json(ok())
    result = _make(httpserver, path, max_retries=2)(_request())
    assert result.text == SUMMARY and len(httpserver.log) == 2


@ALL
def test_500_falls_back_with_a_warning(httpserver: HTTPServer, path: str) -> None:
    _, endpoint, _, _, _ = PATHS[path]
    error = {"error": {"type": "api_error", "message": "internal"}}
    httpserver.expect_request(endpoint).respond_with_json(error, status=500, headers={"retry-after-ms": "1"})
    chain = f"{PATHS[path][0]},offline"
    result = _make(httpserver, path, chain, max_retries=1, strict=False)(_request())
    assert len(httpserver.log) == 2  # one retry, then give up
    assert result.provider == "offline" and "## Todo List" in result.text
    assert len(result.warnings) == 1 and "HTTP 500" in result.warnings[0]
    assert "falling back to offline" in result.warnings[0]


@ALL
def test_500_strict_raises(httpserver: HTTPServer, path: str) -> None:
    httpserver.expect_request(PATHS[path][1]).respond_with_json({"error": {"message": "x"}}, status=500)
    with pytest.raises(ProviderError, match="HTTP 500"):
        _make(httpserver, path)(_request())


@ALL
def test_a_server_that_is_not_there_is_named(path: str) -> None:
    """Nothing listens on port 9 of 127.0.0.1: the error says where it tried to connect."""
    name_spec, _, base, _, key = PATHS[path]
    chain = make_summarizer(
        name_spec, base_url=f"http://127.0.0.1:9{base}", api_key=key, max_retries=0, strict=True
    )
    with pytest.raises(ProviderError, match=r"cannot connect to http://127\.0\.0\.1:9/") as info:
        chain(_request())
    assert KEY not in str(info.value)


@ALL
def test_timeout_falls_back(httpserver: HTTPServer, path: str) -> None:
    released = threading.Event()  # the server answers once the test is over (its one thread is free again)

    def slow(_: Request) -> Response:
        released.wait(5)
        return Response("{}", content_type="application/json")

    spec = f"{PATHS[path][0]},offline"  # a chain that names the digest falls back to it
    chain = _make(httpserver, path, spec, timeout=0.2, strict=False)
    # a first call loads the SDK, its client and its types (1-3 s in a fresh process here): the
    # clock measures the fallback, not that
    httpserver.expect_oneshot_request(PATHS[path][1]).respond_with_json(PATHS[path][3]())
    assert chain(_request()).provider != "offline"
    httpserver.expect_request(PATHS[path][1]).respond_with_handler(slow)
    start = time.monotonic()
    try:
        result = chain(_request())
        elapsed = time.monotonic() - start
    finally:
        released.set()
    assert elapsed < 2.5  # the timeout's answer, long before the server's (5 s)
    assert result.provider == "offline" and "timed out after 0.2 s" in result.warnings[0]


@ALL
@pytest.mark.parametrize("content_type", ["text/html", "application/json"])
def test_garbage_body_is_a_failure(httpserver: HTTPServer, path: str, content_type: str) -> None:
    httpserver.expect_request(PATHS[path][1]).respond_with_data(
        "<html>oops</html>", content_type=content_type
    )
    with pytest.raises(ProviderError, match=PATHS[path][0]):
        _make(httpserver, path)(_request())


@ALL
def test_empty_summary_is_a_failure(httpserver: HTTPServer, path: str) -> None:
    httpserver.expect_request(PATHS[path][1]).respond_with_json(PATHS[path][3]("  "))
    with pytest.raises(ProviderError, match="empty summary"):
        _make(httpserver, path)(_request())


def test_401_moves_to_the_next_provider(httpserver: HTTPServer) -> None:
    body = {"error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"}}
    httpserver.expect_request("/v1/messages").respond_with_json(body, status=401)
    httpserver.expect_request("/v1/chat/completions").respond_with_json(_chat_ok())
    bases = {"anthropic": httpserver.url_for("/"), "openai": httpserver.url_for("/v1")}
    keys = {"anthropic": KEY, "openai": KEY}
    chain = make_summarizer("anthropic:claude-haiku-4-5,openai:gpt-4.1-mini", api_key=keys, base_url=bases)
    result = chain(_request())
    assert result.provider == "openai" and result.text == SUMMARY
    assert len(result.warnings) == 1 and "HTTP 401" in result.warnings[0]
    assert "falling back to openai:gpt-4.1-mini" in result.warnings[0] and KEY not in result.warnings[0]


@pytest.mark.parametrize(
    ("spec", "var"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai:gpt-5", "OPENAI_API_KEY")]
)
def test_missing_key(spec: str, var: str) -> None:
    with pytest.raises(MissingKeyError) as err:
        make_summarizer(spec, strict=True)(_request())
    assert var in str(err.value) and "--provider offline" in str(err.value)
    with pytest.raises(MissingKeyError):  # named alone: never another provider in its place
        make_summarizer(spec)(_request())
    with pytest.raises(MissingKeyError):
        make_summarizer(spec).check_keys()  # found before anything is read
    chain = make_summarizer(f"{spec},offline")
    chain.check_keys()  # the chain can fall back: nothing to raise
    result = chain(_request())  # the offline digest, with the reason
    assert result.provider == "offline" and var in result.warnings[0]


def test_key_from_the_sdk_environment_variable(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    httpserver.expect_request("/v1/messages").respond_with_json(_anthropic_ok())
    make_summarizer("anthropic", base_url=httpserver.url_for("/"), strict=True)(_request())
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {KEY}"
    assert json.loads(httpserver.log[0][0].data)["model"] == "claude-haiku-4-5"  # the default model


def test_compatible_never_sends_the_openai_key(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    httpserver.expect_request("/v1/chat/completions").respond_with_json(_chat_ok())
    _make(httpserver, "openai-compatible", api_key=None)(_request())
    _make(httpserver, "openai-compatible", api_key="sk-or-explicit-000000")(_request())
    assert "Authorization" not in httpserver.log[0][0].headers
    assert httpserver.log[1][0].headers["Authorization"] == "Bearer sk-or-explicit-000000"


def test_bad_options_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="base URL"):
        make_summarizer("openai-compatible:llama3.2")
    with pytest.raises(UsageError, match="needs a model"):
        make_summarizer("openai-compatible", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(UsageError, match="did you mean 'anthropic'"):
        make_summarizer("antropic:claude-haiku-4-5")
    with pytest.raises(
        UsageError, match=r"one API key for several providers \(anthropic, openai-compatible\)"
    ):
        make_summarizer(
            "anthropic,openai-compatible:x", api_key=KEY, base_url={"openai-compatible": "http://h/v1"}
        )
    make_summarizer("openai,openai-responses", api_key=KEY)  # one vendor: one key is fine
    with pytest.raises(UsageError, match="tool-results"):
        make_summarizer("openai", tool_results="tail:5")


def test_the_key_never_leaks(
    httpserver: HTTPServer, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"bad key {KEY} (Bearer {KEY})", "key": KEY}}
    httpserver.expect_request("/v1/messages").respond_with_json(echo, status=401)
    httpserver.expect_request("/v1/chat/completions").respond_with_json(echo, status=500)
    httpserver.expect_request("/v1/responses").respond_with_data(
        f"garbage {KEY}", content_type="application/json"
    )
    seen: list[str] = []
    for path in ("anthropic", "openai", "openai-responses"):
        strict = _make(httpserver, path)
        seen.append(repr(strict))
        with pytest.raises(ProviderError) as err:
            strict(_request())
        seen += [str(err.value), repr(err.value), repr(err.value.__cause__), repr(err.value.__context__)]
        result = _make(httpserver, path, f"{PATHS[path][0]},offline", strict=False)(_request())
        seen += [result.text, repr(result), *result.warnings]
    out = capsys.readouterr()
    seen += [caplog.text, out.out, out.err]
    assert not [s for s in seen if KEY in s]
    assert any("[REDACTED]" in s for s in seen)


@ALL
def test_the_prompt_carries_the_facts_and_the_answer_is_checked(httpserver: HTTPServer, path: str) -> None:
    """The model gets where things stand, the user's rules and requests verbatim, in its prompt;
    a summary that leaves a rule or a request out gets it appended verbatim, with no second call."""
    _, endpoint, _, ok, _ = PATHS[path]
    rule = "Never commit the .env file, use .env.example instead."
    said = [
        Message("user", (TextPart(f"Set up the deploy script. {rule}"),)),
        Message("assistant", (TextPart("Done: deploy.sh is written. Should I also add a CI job for it?"),)),
    ]
    httpserver.expect_oneshot_request(endpoint, method="POST").respond_with_json(
        ok("## Current State\nAll good.")
    )
    result = _make(httpserver, path)(
        SummaryRequest(said, 700, source="/logs/s.jsonl", source_range="entries 1–2")
    )
    assert len(httpserver.log) == 1  # the check costs no second call
    _, user = _prompt_of(path, json.loads(httpserver.log[0][0].data))
    facts = user.split("[Facts extracted from the conversation: keep them]")[1].split("[End facts]")[0]
    assert (
        "Where things stand: waiting for the user" in facts and "Should I also add a CI job for it?" in facts
    )
    assert f"- {rule}" in facts and f"- Set up the deploy script. {rule}" in facts
    assert "`/logs/s.jsonl` (entries 1–2)" in user
    kept = result.text.split("## Kept verbatim by ctxfold (missing from the summary above)")[1]
    assert f"“{rule}”" in kept and f"Set up the deploy script. {rule}" in kept
    assert result.text.startswith("## Current State\nAll good.")
    assert any("left out 2 of the user's rules or requests" in w for w in result.warnings)
    # a summary that kept them is left as it was
    full = f"## Current State\nAll good.\n## User Rules (verbatim)\n- {rule}\n## User Requests (verbatim)\n- Set up the deploy script. {rule}"
    httpserver.expect_oneshot_request(endpoint, method="POST").respond_with_json(ok(full))
    assert _make(httpserver, path)(SummaryRequest(said, 700)).text == full
