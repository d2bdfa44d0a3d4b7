"""Each harness's own compaction rule (``report --trigger``) and the server-side tool calls whose
results the logs leave out (web searches)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REAL, real
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.engine.calibration import GrowthCalibrator, Prior, slope
from ctxfold.engine.replay import report_file
from ctxfold.engine.triggers import TRIGGERS, Trigger, parse_trigger, replay_trigger
from ctxfold.errors import UsageError
from ctxfold.tokens.harness_prompts import table
from ctxfold.tokens.session import Request
from ctxfold.transcript.model import Usage


@pytest.mark.parametrize(
    ("spec", "window", "fires_at"),
    [
        ("claude-code", 200_000, 167_000),
        ("claude-code:pct=50", 200_000, 90_000),
        ("codex", 272_000, 244_800),
        ("codex:limit=100000", 272_000, 100_000),
        ("codex:limit=900000", 272_000, 244_800),  # a setting can only lower it
        ("pi", 200_000, 183_617),
        ("pi:reserve=50000", 200_000, 150_001),
        ("gemini-cli", 1_048_576, 524_288),
        ("gemini-cli:threshold=0.7", 1_048_576, 734_004),
    ],
)
def test_the_rules(spec: str, window: int, fires_at: int) -> None:
    assert parse_trigger(spec).fires_at(window) == fires_at


@pytest.mark.parametrize(
    "spec",
    [
        "clade-code",
        "codex:limt=5",
        "codex:limit=",
        "pi:reserve=lots",
        "claude-code:pct=0",
        "gemini-cli:threshold=2",
    ],
)
def test_bad_trigger_specs_are_usage_errors(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_trigger(spec)


@pytest.mark.parametrize("harness", list(TRIGGERS))
def test_the_rules_fire_where_the_real_binaries_did(harness: str) -> None:
    """``bench/harness_triggers.py --write`` stored where each pinned binary compacted, with its
    default settings and with one changed. The harnesses add to the last response's usage an
    estimate of what followed it (the scripted tool result: a few dozen tokens), so they fire
    that much before the rule's count, never after it and never sooner than that."""
    measured = table(harness)["trigger"]  # type: ignore[index]
    assert measured["version"] and len(measured["runs"]) == 2
    for run in measured["runs"]:
        rule = parse_trigger(run["setting"])
        at = rule.fires_at(run["window"])
        assert run["not_at"] < run["fires_at"] <= at <= run["fires_at"] + 64, run


def req(
    index: int, real: int | None, *, segment: int = 0, output: int = 100, estimate: int = 0, turn: bool = True
) -> Request:
    usage = None if real is None else Usage(prompt_tokens=real, output_tokens=output)
    return Request(
        index=index,
        estimate=estimate or (real or 0),
        messages=1,
        real=real,
        real_source=None if real is None else "usage",
        usage=usage,
        segment=segment,
        turn_start=turn,
    )


def test_replay_fires_once_per_stretch_and_counts_the_previous_response() -> None:
    flat = {"estimate": 1_000}  # nothing grew between them: no tool result after the last usage
    rows = [
        req(0, 150_000, **flat),
        req(1, 166_800, output=150, **flat),
        req(2, 168_000, **flat),
        req(3, 20_000, segment=1, **flat),
        req(4, 170_000, segment=1, **flat),
        req(5, 171_000, segment=1, **flat),
    ]
    r = replay_trigger(rows, Trigger("claude-code"), 200_000)
    # 166,800 + 150 output < 167,000 with nothing after it; 168,000 + 100 reaches it
    assert [(f.request, f.count) for f in r.fires] == [(3, 168_100), (5, 170_100)]
    assert r.first is not None and r.first.request == 3


def test_pi_checks_only_when_the_agent_stops() -> None:
    rows = [req(0, 185_000, turn=True), req(1, 186_000, turn=False), req(2, 186_500, turn=True)]
    r = replay_trigger(rows, Trigger("pi"), 200_000)
    assert [f.request for f in r.fires] == [2]


@pytest.mark.skipif(not REAL.is_dir(), reason="the real sessions are not here")
@pytest.mark.parametrize(
    ("rel", "spec"),
    [("claude-code/posthog-impact-dashboard.jsonl", "claude-code"), ("pi/before-compaction.jsonl", "pi")],
)
def test_the_rule_finds_the_compaction_the_harness_recorded(rel: str, spec: str) -> None:
    """Claude Code compacted the posthog session itself ("auto"), and pi the second time in its
    session (the first, at 175,004 tokens, is under pi's threshold: asked for by hand)."""
    rep = report_file(str(real(rel)), trigger=spec)
    assert rep.trigger is not None
    recorded = {c.before_request for c in rep.estimate.replay.compactions}
    assert rep.trigger.fires and {f.request for f in rep.trigger.fires} <= recorded


@pytest.mark.skipif(not REAL.is_dir(), reason="the real sessions are not here")
def test_report_trigger_text_and_json() -> None:
    path = str(real("claude-code/posthog-impact-dashboard.jsonl"))
    out = CliRunner().invoke(app, ["report", path, "--trigger", "claude-code", "--no-profile"])
    assert out.exit_code == 0, out.output
    assert "Claude Code" in out.output and "would compact before request #" in out.output
    assert "167,000" in out.output
    out = CliRunner().invoke(
        app, ["report", path, "--trigger", "claude-code:pct=60", "--no-profile", "--json"]
    )
    doc = json.loads(out.output)["files"][0]
    t = doc["summary"]["trigger"]
    assert t["harness"] == "claude-code" and t["setting"] == {"pct": 60.0} and t["fires_at"] == 108_000
    assert t["first"]["count"] >= 108_000
    assert [r["index"] for r in doc["requests"] if r["harness_fires"]] == [f["request"] for f in t["fires"]]


def test_report_trigger_typo_fails_before_reading(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["report", str(tmp_path / "missing.jsonl"), "--trigger", "codx"])
    assert out.exit_code == 2 and "did you mean 'codex'" in out.output


# ------------------------------------------------------------------ server-side tools


def test_a_step_over_web_searches_is_not_the_tokenizer() -> None:
    points = [(10_000, 12_000), (12_000, 14_200), (14_000, 26_400)]
    assert slope(points, [0, 0, 3]) == pytest.approx(1.1)
    assert slope(points) == pytest.approx(3.6)  # without knowing of the searches: half a bump


def test_what_a_search_adds_is_learned_and_predicted_for_later_calls() -> None:
    cal = GrowthCalibrator(Prior(0, 1.1, "test"))
    cal.observe(10_000, 12_000, 0)
    cal.observe(12_000, 14_200, 0)
    cal.observe(14_000, 25_000, 2)  # two searches in its response: 8,600 beyond the growth
    assert cal.server_tool() == 4_300
    later = cal.predict(15_000, server_tools=3)  # one more, not yet in a real count
    assert later.tokens == 25_000 + int(1_000 * 1.1) + 4_300 and "server-side" in later.basis
    assert cal.predict(15_000, server_tools=2).tokens == 25_000 + int(1_000 * 1.1)
    cal.reset()  # a compaction keeps what a search was seen to add
    assert cal.prior.server_tool == 4_300


@pytest.mark.skipif(not REAL.is_dir(), reason="the real sessions are not here")
def test_codex_web_searches_are_counted_and_marked() -> None:
    rep = report_file(str(real("codex/rivo-multiturn.jsonl")))
    searched = [r for r in rep.rows if r.server_tool_calls]
    assert [r.server_tool_calls for r in searched] == [3, 1]
    after = next(r for r in rep.rows if r.index == searched[0].index + 1)
    assert after.error is not None and abs(after.error) < 0.1  # the bump is not read as a ratio
