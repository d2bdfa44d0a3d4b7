"""The prompts ctxfold ships for the pinned harnesses are what those binaries send today, and a
real Claude Code sub-agent's transcript gets the sub-agent's prompt."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.harness_prompts import table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import harness_prompts as bench  # noqa: E402  (the measuring script itself)
from harness_lab import HARNESSES  # noqa: E402

PINNED = {h.name: h.package for h in HARNESSES.values()}


def pinned(name: str) -> str:
    deps = json.loads((ROOT / "tests" / "interop" / "package.json").read_text())["dependencies"]
    return str(deps[PINNED[name]])


@pytest.mark.parametrize("name", ["claude-code", "codex", "pi", "gemini-cli"])
def test_the_shipped_prompt_is_what_the_pinned_binary_sends(
    name: str, harness_bin: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured again now, with the binary the lab installed: within 2 % of the shipped row
    (the working directory's path and the day are part of what a harness sends)."""
    version = pinned(name)
    row = next((r for r in table(name)["versions"] if r["version"] == version), None)  # type: ignore[index]
    assert row is not None, (
        f"{name} {version} is pinned in the lab but not measured: run bench/harness_prompts.py add"
    )
    binary = harness_bin({"claude-code": "claude", "gemini-cli": "gemini"}.get(name, name))
    monkeypatch.setattr(bench, "install", lambda h, v: binary)
    monkeypatch.setattr(bench, "installed_version", lambda h, b: version)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    now = bench.measure(name, version, subagent=name == "claude-code")
    for part in ("unlogged", "tools"):
        shipped, measured = row["tokens"]["o200k"][part], now["tokens"]["o200k"][part]
        assert abs(measured - shipped) <= 0.02 * shipped + 20, (part, shipped, measured)
    if name == "claude-code":
        assert now["subagent"] is not None
        assert (
            abs(
                now["subagent"]["tokens"]["o200k"]["unlogged"]
                - row["subagent"]["tokens"]["o200k"]["unlogged"]
            )
            <= 0.02 * row["subagent"]["tokens"]["o200k"]["unlogged"] + 20
        )


def test_a_real_sub_agent_transcript_gets_the_sub_agents_prompt(
    harness_bin: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code writes each sub-agent's conversation to ``<session>/subagents/agent-*.jsonl``:
    read with ctxfold, its first request plus the measured sub-agent prompt is the sub-agent's
    real first request, as ctxfold counts the request the server received."""
    from harness_lab import Reply, run_session

    h = HARNESSES["claude-code"]
    binary = harness_bin("claude")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    first = run_session(h, binary, [Reply("Hello.")], home=tmp_path / "home")
    script = bench._subagent_script(bench._first(h, first, "print"))
    s = run_session(h, binary, script, bench.MAIN_SUBAGENT_PROMPT, home=tmp_path / "home-sub")
    request = bench._subagent_request(s)
    assert request is not None
    (log,) = s.home.glob(".claude/projects/*/*/subagents/agent-*.jsonl")
    est = estimate_file(log)
    hp = est.harness_prompt
    assert hp is not None and hp.variant == "subagent" and hp.version == pinned("claude-code")
    sent = bench.count_request(h, request, "o200k", tmp_path)["request"]
    assert est.requests, "the sub-agent's transcript has its first request"
    assert abs(est.requests[0].estimate + hp.tokens - sent) <= 0.05 * sent
