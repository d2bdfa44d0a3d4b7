"""The measured prompts of the harnesses: the shipped tables, how a log is matched to a version
and a variant, and what the engine and the profile make of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REAL, real, write_jsonl
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.engine.calibration import Prior
from ctxfold.engine.now import prior_for, with_prompt
from ctxfold.engine.profile import Observation, Profiles, observe_session
from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.harness_prompts import TABLES, LogFacts, choose, table, vkey
from ctxfold.tokens.session import Request
from ctxfold.transcript.model import ContextUpdate, Message, TextPart

TOKENIZERS = ("o200k", "cl100k", "heuristic")


@pytest.mark.parametrize("harness", TABLES)
def test_every_shipped_table_has_versions_with_counts_per_tokenizer(harness: str) -> None:
    t = table(harness)
    assert t is not None and t["harness"] == harness and t["how"]
    versions = [r["version"] for r in t["versions"]]
    assert len(versions) >= 3 and len(set(versions)) == len(versions)
    for row in t["versions"]:
        assert row["measured"][:2] == "20" and row["tool_names"]
        for tok in TOKENIZERS:
            c = row["tokens"][tok]
            # the request holds the system prompt and tools, and what the log leaves out of it
            # is what ctxfold's reading of the log did not find
            assert c["request"] >= c["system"] + c["tools"] > 0
            assert c["unlogged"] == c["request"] - c["logged"]


def test_claude_code_has_its_variants_and_sub_agents_measured() -> None:
    rows = table("claude-code")["versions"]  # type: ignore[index]
    assert sum(1 for r in rows if r.get("subagent")) >= len(rows) // 2
    for r in rows:
        assert set(r["variants"]) == {"print", "no-tool-search"}
        if r.get("subagent"):  # a sub-agent has its own, smaller prompt
            assert r["subagent"]["tokens"]["o200k"]["unlogged"] < r["tokens"]["o200k"]["unlogged"]


def facts(**kw: object) -> LogFacts:
    f = LogFacts()
    for k, v in kw.items():
        setattr(f, k, v)
    return f


ANTHROPIC_ID = "req_011CSkYzZmrLKTfC5kKrttht"


def test_a_log_gets_its_own_version_else_the_nearest_measured() -> None:
    rows = sorted(table("claude-code")["versions"], key=lambda r: vkey(r["version"]))  # type: ignore[index]
    own = rows[len(rows) // 2]["version"]
    hp = choose(
        "claude-code",
        facts(version=own, responses=1, first_request_id=ANTHROPIC_ID),
        agent=None,
        tokenizer="o200k",
    )
    assert hp is not None and hp.version == own and hp.variant == "default"
    assert hp.tokens == rows[len(rows) // 2]["tokens"]["o200k"]["unlogged"]
    # a version between two measured ones: the one fewer patch releases away; a tie goes to the
    # older (its prompt is what the next releases inherit)
    a, b = (vkey(r["version"]) for r in rows[-2:])
    if a[:2] == b[:2] and b[2] - a[2] >= 4:
        near_b = f"{b[0]}.{b[1]}.{b[2] - 1}"
        assert (
            choose("claude-code", facts(version=near_b), agent=None, tokenizer="o200k").version
            == rows[-1]["version"]
        )  # type: ignore[union-attr]
        mid = (a[2] + b[2]) // 2 if (b[2] - a[2]) % 2 == 0 else None
        if mid is not None:
            tie = f"{a[0]}.{a[1]}.{mid}"
            assert (
                choose("claude-code", facts(version=tie), agent=None, tokenizer="o200k").version
                == rows[-2]["version"]
            )  # type: ignore[union-attr]
    newer = f"{b[0]}.{b[1]}.{b[2] + 50}"
    assert (
        choose("claude-code", facts(version=newer), agent=None, tokenizer="o200k").version
        == rows[-1]["version"]
    )  # type: ignore[union-attr]


def test_the_variant_follows_what_the_log_shows() -> None:
    v = "2.1.121"
    first_party = facts(version=v, responses=1, first_request_id=ANTHROPIC_ID)
    assert choose("claude-code", first_party, agent=None, tokenizer="o200k").variant == "default"  # type: ignore[union-attr]
    # responses without Anthropic's request id: a proxy or another host, where Claude Code
    # turns its tool search off and sends every tool up front
    proxy = choose(
        "claude-code", facts(version=v, responses=1, first_request_id=None), agent=None, tokenizer="o200k"
    )
    assert proxy is not None and proxy.variant == "no-tool-search"
    assert proxy.tokens > choose("claude-code", first_party, agent=None, tokenizer="o200k").tokens  # type: ignore[union-attr]
    printed = facts(version=v, responses=1, first_request_id=ANTHROPIC_ID, entrypoint="sdk-cli")
    assert choose("claude-code", printed, agent=None, tokenizer="o200k").variant == "print"  # type: ignore[union-attr]
    sub = choose("claude-code", first_party, agent="a1b2", tokenizer="cl100k")
    assert sub is not None and sub.variant == "subagent"
    assert (
        sub.tokens
        == next(r for r in table("claude-code")["versions"] if r["version"] == sub.version)["subagent"][
            "tokens"
        ]["cl100k"]["unlogged"]
    )  # type: ignore[index]


def test_a_log_that_names_no_version_is_matched_by_its_date() -> None:
    rows = [r for r in table("pi")["versions"] if r.get("released")]  # type: ignore[index]
    assert len(rows) >= 3
    rows.sort(key=lambda r: r["released"])
    second = rows[1]
    hp = choose("pi", facts(started=second["released"] + "T12:00:00Z"), agent=None, tokenizer="o200k")
    assert hp is not None and hp.version == second["version"] and "released last before" in hp.basis
    early = choose("pi", facts(started="2020-01-01T00:00:00Z"), agent=None, tokenizer="o200k")
    assert early is not None and "before it" in early.basis


def test_formats_without_a_table_get_nothing() -> None:
    assert choose("openai-chat", facts(version="1.0"), agent=None, tokenizer="o200k") is None
    assert table("native") is None


def test_log_facts_come_from_the_first_lines() -> None:
    f = LogFacts()
    f.see(ContextUpdate(extra={"cli_version": "0.128.0", "timestamp": "2026-05-04T14:42:03Z"}))
    assert (f.version, f.started) == ("0.128.0", "2026-05-04T14:42:03Z")
    g = LogFacts()
    g.see(
        Message(
            "user",
            (TextPart("hi"),),
            timestamp="2026-01-01T00:00:00Z",
            extra={"version": "2.1.121", "entrypoint": "cli"},
        )
    )
    g.see(Message("assistant", (TextPart("yo"),), extra={"requestId": ANTHROPIC_ID}))
    assert (g.version, g.entrypoint, g.first_request_id, g.done) == ("2.1.121", "cli", ANTHROPIC_ID, True)


def _claude_log(tmp_path: Path, version: str, real: int) -> Path:
    base = {
        "sessionId": "s1",
        "version": version,
        "cwd": "/w/p",
        "isSidechain": False,
        "userType": "external",
    }
    return write_jsonl(
        tmp_path / "s.jsonl",
        [
            {
                **base,
                "type": "user",
                "uuid": "u1",
                "parentUuid": None,
                "timestamp": "2026-05-01T00:00:00Z",
                "message": {"role": "user", "content": "Fix the bug."},
            },
            {
                **base,
                "type": "assistant",
                "uuid": "a1",
                "parentUuid": "u1",
                "timestamp": "2026-05-01T00:00:05Z",
                "requestId": ANTHROPIC_ID,
                "message": {
                    "id": "msg_01abc",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [{"type": "text", "text": "Done."}],
                    "usage": {"input_tokens": real, "output_tokens": 5},
                },
            },
        ],
    )


def test_the_prior_adds_the_measured_prompt_and_the_profile_learns_what_is_beyond_it(tmp_path: Path) -> None:
    est = estimate_file(_claude_log(tmp_path, "2.1.121", 20_000))
    hp = est.harness_prompt
    assert hp is not None and hp.version == "2.1.121"
    base = Prior(0, 1.3, "test")
    assert with_prompt(base, hp).overhead == round(1.3 * hp.tokens)
    shipped = prior_for(est, None)  # nothing learned: the prompt alone, in the shipped ratio
    assert shipped.overhead == round(shipped.ratio * hp.tokens) and "2.1.121" in shipped.source
    obs = observe_session(est.requests, "anthropic", hp.tokens, hp.family)
    assert obs is not None
    first = est.requests[0]
    assert obs.overhead == int(20_000 - obs.ratio * (first.estimate + hp.tokens))
    assert obs.family == hp.family


def test_only_sessions_of_the_same_generation_say_what_a_user_adds(tmp_path: Path) -> None:
    prof = Profiles(tmp_path / "p.json")
    key = "claude-code|claude-sonnet-4"
    for i in range(3):
        prof.learn(
            key, f"s{i}", Observation(6_000 + i, 1.3, None, "claude-code/default@2.1"), None, "anthropic"
        )
    assert prof.prior(key, "anthropic", family="claude-code/default@2.1").overhead == 6_001
    # another generation, or another variant (a proxy), learns nothing from them
    assert prof.prior(key, "anthropic", family="claude-code/default@1.0").overhead == 0
    assert prof.prior(key, "anthropic", family="claude-code/no-tool-search@2.1").overhead == 0


def test_estimate_json_names_the_measured_prompt(tmp_path: Path) -> None:
    path = _claude_log(tmp_path, "2.1.126", 20_000)
    out = CliRunner().invoke(app, ["estimate", str(path), "--json", "--no-profile"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)["files"][0]
    hp = doc["harness_prompt"]
    assert hp["harness"] == "claude-code" and hp["version"] == "2.1.126" and hp["tokens"] > 5_000
    assert "2.1.126" in doc["predicted"]["basis"] or doc["predicted"]["tokens"] >= 20_000


@pytest.mark.skipif(not REAL.is_dir(), reason="the real sessions are not here")
@pytest.mark.parametrize(
    ("rel", "version", "variant"),
    [
        ("claude-code/ccviewer-sample-v1.0.98-sidechains.jsonl", "1.0.98", "default"),
        ("claude-code/fundwise.jsonl", "2.1.121", "default"),
        ("claude-code/solsmile-thirdparty-proxy.jsonl", "2.1.79", "no-tool-search"),
        ("codex/raze.jsonl", "0.114.0", "default"),
        ("codex/edgerunner.jsonl", "0.144.1", "default"),
    ],
)
def test_real_logs_get_the_prompt_of_the_version_that_wrote_them(
    rel: str, version: str, variant: str
) -> None:
    hp = estimate_file(real(rel)).harness_prompt
    assert hp is not None and (hp.version, hp.variant) == (version, variant)


@pytest.mark.skipif(not REAL.is_dir(), reason="the real sessions are not here")
def test_pi_logs_are_matched_by_their_date() -> None:
    hp = estimate_file(real("pi/large-session.jsonl")).harness_prompt  # 2025-11-20: pi 0.7.x
    assert hp is not None and vkey(hp.version)[:2] == (0, 7)


def test_a_profile_request_list_without_counts_teaches_nothing() -> None:
    assert observe_session([Request(index=0, estimate=100, messages=1)], "anthropic", 5_000) is None
