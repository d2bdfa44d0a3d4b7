"""`estimate` on real sessions and on hand-built transcripts, through the API and the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, claude_usage_lines, real, real_files
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.tokens.encodings import get_encoding
from ctxfold.tokens.estimate import estimate_file

runner = CliRunner()
SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"

# Main-branch model responses that carry a provider usage record, counted with jq/python over
# the raw files by the reader tests (distinct message.id per Claude Code response whose model is
# not <synthetic>; distinct consecutive token_count totals in Codex rollouts).
REQUESTS_WITH_REAL = {
    "claude-code/ccviewer-sample-v1.0.98-sidechains.jsonl": 9,
    "claude-code/fundwise.jsonl": 71,
    "claude-code/posthog-impact-dashboard.jsonl": 184,
    "claude-code/privacy-x402.jsonl": 34,
    "claude-code/raze-short.jsonl": 3,
    "claude-code/scout-images.jsonl": 33,
    "claude-code/solsmile-thirdparty-proxy.jsonl": 86,
    "codex/edgerunner.jsonl": 173,
    "codex/fundwise.jsonl": 4,
    "codex/raze.jsonl": 18,
    "codex/rivo-multiturn.jsonl": 13,
}


@pytest.mark.parametrize("rel", sorted(REQUESTS_WITH_REAL))
def test_real_sessions_requests_and_counts(rel: str) -> None:
    r = estimate_file(real(rel))
    assert sum(q.real is not None for q in r.requests) == REQUESTS_WITH_REAL[rel]
    # Within one segment (no compaction or reset) the context only grows.
    for a, b in zip(r.requests, r.requests[1:], strict=False):
        if a.segment == b.segment:
            assert b.estimate >= a.estimate, (a, b)
    assert r.context_tokens >= r.requests[-1].estimate
    assert r.model.window > 0 and r.model.tokenizer == "o200k"


@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_file_estimates(path: Path) -> None:
    r = estimate_file(path)
    assert r.requests, "every real session has at least one model request"
    assert r.context_tokens > 0
    assert sum(r.replay.by_category.values()) + r.replay.per_request == r.context_tokens
    assert len(r.largest) == min(10, len(r.replay.context))
    assert [m.tokens for m in r.largest] == sorted((m.tokens for m in r.largest), reverse=True)


def test_codex_window_is_the_recorded_one() -> None:
    r = estimate_file(real("codex/raze.jsonl"))
    assert r.model.window == 258_400 and r.model.window_source == "recorded in the log"
    assert estimate_file(real("codex/raze.jsonl"), window=100_000).model.window == 100_000


def test_sample_estimate_matches_an_independent_count() -> None:
    """Recount the bundled sample straight from its JSON with tiktoken and the Anthropic framing."""
    enc = get_encoding("o200k_base")
    lines = [orjson.loads(x) for x in SAMPLE.read_bytes().splitlines()]
    header, entries = lines[0], lines[1:]
    system = sum(len(enc.encode_ordinary(s)) for s in header["system"]) + 3
    tools = 346 + sum(
        3
        + len(
            enc.encode_ordinary(
                orjson.dumps(
                    {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                ).decode()
            )
        )
        for t in header["tools"]
    )
    body = 0
    for e in entries:
        body += 3
        for p in e["parts"]:
            if p["type"] == "text" or p["type"] == "thinking":
                body += len(enc.encode_ordinary(p["text"]))
            elif p["type"] == "tool_call":
                body += 3 + len(enc.encode_ordinary(p["name"] + " " + orjson.dumps(p["arguments"]).decode()))
            elif p["type"] == "tool_result":
                body += 3 + sum(len(enc.encode_ordinary(c["text"])) for c in p["content"])
    r = estimate_file(SAMPLE)
    assert r.replay.by_category["system"] == system
    assert r.replay.by_category["tools"] == tools
    assert r.context_tokens == system + tools + body + 3
    assert len(r.requests) == sum(1 for e in entries if e.get("usage"))


def test_cli_json_is_one_document(tmp_path: Path) -> None:
    result = runner.invoke(app, ["estimate", "--json", str(SAMPLE)])
    assert result.exit_code == 0, result.stderr
    doc = orjson.loads(result.stdout)
    assert doc["command"] == "estimate" and doc["version"] == 1
    f = doc["files"][0]
    for key in (
        "format",
        "model",
        "window",
        "requests",
        "context_tokens",
        "breakdown",
        "largest",
        "last_real",
    ):
        assert key in f
    assert f["format"] == "ctxfold" and f["requests"] == 8
    assert f["last_real"]["real"] == 2560


def test_cli_stdin_directory_and_heuristic(tmp_path: Path) -> None:
    direct = orjson.loads(runner.invoke(app, ["estimate", "--json", str(SAMPLE)]).stdout)["files"][0]
    piped = runner.invoke(app, ["estimate", "--json", "-"], input=SAMPLE.read_bytes())
    assert piped.exit_code == 0, piped.stderr
    assert orjson.loads(piped.stdout)["files"][0]["context_tokens"] == direct["context_tokens"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (tmp_path / "b.jsonl").write_bytes(SAMPLE.read_bytes())
    doc = orjson.loads(runner.invoke(app, ["estimate", "--json", str(tmp_path)]).stdout)
    assert len(doc["files"]) == 2
    heur = orjson.loads(runner.invoke(app, ["estimate", "--json", "-t", "heuristic", str(SAMPLE)]).stdout)
    assert heur["files"][0]["tokenizer"] == "heuristic"
    assert heur["files"][0]["context_tokens"] != direct["context_tokens"]


def test_cli_text_output(tmp_path: Path) -> None:
    result = runner.invoke(app, ["estimate", str(SAMPLE)])
    assert result.exit_code == 0
    for words in (
        "ctxfold",
        "claude-sonnet-4-5",
        "200,000 tokens",
        "tool results",
        "largest messages",
        "last real",
    ):
        assert words in result.stdout


def test_unknown_model_warns_on_stderr(tmp_path: Path) -> None:
    result = runner.invoke(app, ["estimate", "--model", "my-local-llm", str(SAMPLE)])
    assert result.exit_code == 0
    assert "unknown model 'my-local-llm'" in result.stderr
    assert "128,000" not in result.stderr  # the sample records its window
    lines = SAMPLE.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    del header["context_window"]
    bare = tmp_path / "bare.jsonl"
    bare.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
    result = runner.invoke(app, ["estimate", "--model", "my-local-llm", str(bare)])
    assert "128,000-token window" in result.stderr
    doc = orjson.loads(
        runner.invoke(app, ["estimate", "--json", "--model", "my-local-llm", str(bare)]).stdout
    )
    assert doc["files"][0]["window"] == 128_000 and doc["files"][0]["window_source"] == "default"


def test_installed_entry_point_runs() -> None:
    """One real subprocess of the installed console script (or the module when not on PATH)."""
    exe = Path(sys.executable).with_name("ctxfold")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ctxfold"]
    done = subprocess.run(
        [*cmd, "estimate", "--json", str(SAMPLE)], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["files"][0]["requests"] == 8
    module = subprocess.run(
        [sys.executable, "-m", "ctxfold", "--help"], capture_output=True, timeout=60, check=False
    )
    assert module.returncode == 0 and b"estimate" in module.stdout


@pytest.mark.parametrize("rel", ["pi/before-compaction.jsonl", "codex/edgerunner.jsonl"])
def test_worker_processes_count_the_same(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large inputs are tokenized in forked workers; the replay must not change by a token."""
    path = real(rel)
    monkeypatch.setenv("CTXFOLD_WORKERS", "0")
    alone = estimate_file(path)
    monkeypatch.setenv("CTXFOLD_WORKERS", "2")
    forked = estimate_file(path)
    assert [(q.estimate, q.real) for q in forked.requests] == [(q.estimate, q.real) for q in alone.requests]
    assert forked.replay.by_category == alone.replay.by_category
    assert len(alone.requests) > 256 // 4  # several batches were in flight


def _as_of_last_request(log: Path, tmp: Path) -> tuple[Path, int]:
    """A Claude Code log cut where its last main-chain response begins (the session as it stood
    when that request was sent), and the prompt tokens the provider counted for it, read from
    the raw usage record: input + cache creation + cache read."""
    usage = claude_usage_lines(log)
    _, last_id, real_tokens, _ = usage[-1]
    first = min(i for i, mid, _, _ in usage if mid == last_id)
    cut = tmp / log.name
    cut.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:first]))
    return cut, real_tokens


@pytest.mark.parametrize("path", real_files("claude-code"), ids=lambda p: p.name)
def test_predicted_next_request_is_what_the_provider_then_counted(path: Path, tmp_path: Path) -> None:
    """`estimate` on a log cut just before its last response predicts that request: the same
    number the report's replay of the whole log predicted for it, and close to the real count."""
    from ctxfold.engine.replay import report_file

    cut, real_tokens = _as_of_last_request(path, tmp_path)
    result = runner.invoke(app, ["estimate", "--json", "--no-profile", str(cut)])
    assert result.exit_code == 0, result.output
    predicted = orjson.loads(result.stdout)["files"][0]["predicted"]
    last = report_file(str(path)).rows[-1]
    assert last.real == real_tokens
    assert predicted["tokens"] == last.calibrated
    assert abs(predicted["tokens"] - real_tokens) / real_tokens < 0.05
    assert predicted["calibration"] == "growth" and predicted["basis"]


def test_only_the_logged_model_teaches_the_profile(tmp_path: Path) -> None:
    """`--model` over the log's model is a what-if: the counts were made by the log's model, so
    the session is not filed under the other one (nor under the log's, with its counts reread)."""
    path = real("claude-code/scout-images.jsonl")

    def learned() -> list[str]:
        return sorted(orjson.loads(runner.invoke(app, ["profile", "show", "--json"]).stdout)["profiles"])

    assert runner.invoke(app, ["estimate", str(path), "--model", "gpt-4o"]).exit_code == 0
    assert learned() == []
    assert runner.invoke(app, ["estimate", str(path)]).exit_code == 0
    assert learned() == ["claude-code|claude-sonnet-4"]


def test_a_zero_count_is_no_count(tmp_path: Path) -> None:
    """An aborted response, or a message kept across a compaction, carries usage of all zeros:
    no request of 0 tokens was ever sent, so it is not a real count."""
    lines = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "model": "gpt-4o",
         "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "yes", "model": "gpt-4o",
         "usage": {"prompt_tokens": 31, "completion_tokens": 2, "total_tokens": 33}},
    ]  # fmt: skip
    f = tmp_path / "chat.jsonl"
    f.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    est = estimate_file(f)
    assert [r.real for r in est.requests] == [None, 31]


def test_the_model_is_the_one_the_session_uses_now() -> None:
    """The Codex edgerunner rollout starts on gpt-5.6-sol and its last turns run gpt-5.6-luna
    (jq: the last turn_context's .payload.model); the next request goes to luna."""
    path = real("codex/edgerunner.jsonl")
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
    models = [x["payload"]["model"] for x in lines if x.get("type") == "turn_context"]
    assert models[0] != models[-1]
    est = estimate_file(path)
    assert est.model.name == models[-1] and est.model_source == "log"
