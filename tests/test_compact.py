"""`ctxfold compact`: outputs, atomicity, the watermark, incremental runs, and every real session."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from compact_support import copy, outputs, run, runner
from conftest import FIXTURES, real, real_files

from ctxfold.cli.app import app
from ctxfold.compaction.statefile import SCHEMA, entry_sha256, load_state
from ctxfold.formats.loader import load
from ctxfold.formats.registry import WRITERS
from ctxfold.formats.validate import validate
from ctxfold.strategies.summary import SUMMARY_OPEN
from ctxfold.tokens.estimate import estimate_file
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import CompactionMarker, ContextReset

SECTIONS = (
    "## Current State",
    "## Key Information",
    "## Context & Decisions",
    "## Exact Next Steps",
    "## Todo List",
)


def test_compact_teaches_the_profile_unless_told_not_to(tmp_path: Path) -> None:
    """Like estimate and report, compact learns from the session it reads."""
    src = copy(tmp_path)
    assert run(str(src), "--no-profile")[0] == 0
    assert run(str(src), "--dry-run", "--force")[0] == 0  # a dry run writes nothing, the profile included
    assert orjson.loads(runner.invoke(app, ["profile", "show", "--json"]).stdout)["profiles"] == {}
    assert run(str(src))[0] == 0
    learned = orjson.loads(runner.invoke(app, ["profile", "show", "--json"]).stdout)["profiles"]
    assert list(learned) == ["ctxfold|claude-sonnet-4"]
    assert len(learned["ctxfold|claude-sonnet-4"]["sessions"]) == 1


def test_not_due_writes_nothing(tmp_path: Path) -> None:
    src = copy(tmp_path)
    code, out, _ = run(str(src))
    assert code == 0 and "not due" in out
    assert not any(p.exists() for p in outputs(src))


def test_force_writes_three_valid_outputs(tmp_path: Path) -> None:
    src = copy(tmp_path)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    code, _, err = run(str(src), "--force", "--json")
    assert code == 0, err
    compacted, summary, state_path = outputs(src)
    assert validate(str(compacted)).ok
    t = load(compacted)
    assert t.source_format == "ctxfold"
    assert t.messages[0].text.startswith(SUMMARY_OPEN)
    assert "round to cents" in t.messages[1].text  # the continuation quotes the latest request
    text = summary.read_text()
    assert all(s in text for s in SECTIONS)
    assert "[in_progress] Add a regression test" in text  # the latest todo list, verbatim
    state = orjson.loads(state_path.read_bytes())
    assert state["schema"] == SCHEMA and state["version"] == 1
    assert state["watermark"] == len(load(src).entries) and len(state["passes"]) == 1
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before  # the input is never modified
    assert b": " not in compacted.read_bytes().split(b"\n")[0]  # compact JSON


def test_second_run_is_a_noop_and_appended_run_folds_only_the_new_part(tmp_path: Path) -> None:
    src = copy(tmp_path)
    assert run(str(src), "--force")[0] == 0
    _, summary, state_path = outputs(src)
    first = state_path.read_bytes()
    code, out, _ = run(str(src))  # nothing new, the same settings
    assert code == 0 and "up to date" in out and state_path.read_bytes() == first
    old = load_state(state_path)
    assert old is not None
    log = "\n".join(
        f"2026-11-20 10:{i % 60:02d} INFO checkout total computed for cart {i}" for i in range(300)
    )
    extra = [
        {
            "type": "message",
            "role": "user",
            "parts": [{"type": "text", "text": "Also add a changelog entry for the fix."}],
        },
        {
            "type": "message",
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c9", "name": "run", "arguments": {"cmd": "tail -300 app.log"}}
            ],
        },
        {
            "type": "message",
            "role": "tool",
            "parts": [
                {
                    "type": "tool_result",
                    "call_id": "c9",
                    "name": "run",
                    "content": [{"type": "text", "text": log}],
                }
            ],
        },
    ]
    with src.open("ab") as f:
        for e in extra:
            f.write(orjson.dumps(e) + b"\n")
    code, out, err = run(str(src), "--force", "--json")  # something new: --force folds it, incrementally
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["incremental"] is True and doc["messages_before"] == 4  # [summary] + the three new messages
    new = load_state(state_path)
    assert new is not None and new.watermark == old.watermark + 3 and len(new.passes) == 2
    assert new.created_at == old.created_at
    assert "changelog" in summary.read_text().lower()
    assert "round to cents" in summary.read_text()  # the previous summary is rolled in


def test_rewritten_prefix_is_refused_unless_forced(tmp_path: Path) -> None:
    src = copy(tmp_path)
    assert run(str(src), "--force")[0] == 0
    lines = src.read_bytes().splitlines()
    lines[1] = lines[1].replace(b"thousands", b"THOUSANDS")
    assert b"THOUSANDS" in lines[1]
    src.write_bytes(b"\n".join(lines) + b"\n")
    code, _, err = run(str(src))
    assert code == 1 and "no longer match" in err and "--force" in err and "rewritten" in err
    assert run(str(src), "--force")[0] == 0
    state = load_state(outputs(src)[2])
    assert state is not None and len(state.passes) == 1  # --force started over


def test_a_state_file_of_another_session_is_not_taken_for_this_ones(tmp_path: Path) -> None:
    """Two sessions named alike (fundwise.jsonl of Claude Code and of Codex) compacted into one
    --out-dir: the second is not "a rewritten file", and --force does not carry the first's passes."""
    out = tmp_path / "out"
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = copy(tmp_path / "one")
    second = tmp_path / "two" / first.name
    second.write_bytes(first.read_bytes().replace(b"7f1c2d9e-sample", b"another-session"))
    assert run(str(first), "--window", "3000", "--out-dir", str(out))[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for force in ((), ("--force",)):  # another session's outputs are never replaced, even forced
        code, _, err = run(str(second), "--window", "3000", *force, "--out-dir", str(out))
        assert code == 1 and "belongs to another session" in err and "--out-dir or -o" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert run(str(second), "--window", "3000", "--out-dir", str(tmp_path / "other"))[0] == 0
    state = load_state(tmp_path / "other" / f"{first.stem}.ctxfold.json")
    assert state is not None and state.session_id == "another-session" and len(state.passes) == 1


def test_force_always_redoes(tmp_path: Path) -> None:
    """--force into a folder that holds this session's outputs, with nothing new since, folds
    the whole session again: not "up to date"."""
    src = copy(tmp_path)
    assert run(str(src), "--window", "3000")[0] == 0
    state_path = outputs(src)[2]
    first = load_state(state_path)
    code, out, err = run(str(src), "--window", "3000", "--force", "--json")
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["status"] == "compacted" and doc["incremental"] is False
    again = load_state(state_path)
    assert first is not None and again is not None and len(again.passes) == 1
    assert again.created_at >= first.created_at


def test_a_set_that_was_never_completed_is_not_resumed(tmp_path: Path) -> None:
    """The state names the compacted transcript and summary by hash: outputs that are not the ones
    written with it (a run cut between files, or a hand edit) are folded afresh, not trusted."""
    src = copy(tmp_path)
    assert run(str(src), "--window", "3000")[0] == 0
    _, summary, state_path = outputs(src)
    state = load_state(state_path)
    assert state is not None and set(state.outputs) == {"compacted", "summary"}
    summary.write_text("an older summary")
    code, out, err = run(str(src), "--window", "3000", "--json")
    assert code == 0, err
    assert orjson.loads(out)["incremental"] is False and "older" not in summary.read_text()


def test_existing_outputs_need_force(tmp_path: Path) -> None:
    src = copy(tmp_path)
    compacted = outputs(src)[0]
    compacted.write_text("precious")
    code, _, err = run(str(src), "--window", "3000")
    assert code == 1 and "already exist" in err
    assert compacted.read_text() == "precious"


def test_dry_run_calls_and_writes_nothing(tmp_path: Path) -> None:
    src = copy(tmp_path)
    # anthropic with no key would fail if it were called
    code, out, err = run(
        str(src), "--force", "--dry-run", "--provider", "anthropic:claude-haiku-4-5", "--strict"
    )
    assert code == 0, err
    assert "would write" in out
    assert not any(p.exists() for p in outputs(src))


def test_failure_leaves_no_partial_file(tmp_path: Path) -> None:
    src = copy(tmp_path)
    code, _, err = run(str(src), "--force", "--provider", "anthropic:claude-haiku-4-5", "--strict")
    assert code == 1 and "ANTHROPIC_API_KEY" in err and "--provider offline" in err
    assert not any(p.exists() for p in outputs(src))
    assert not list(tmp_path.glob(".*.tmp"))


def test_fallback_warns_and_never_leaks_the_key(tmp_path: Path) -> None:
    src = copy(tmp_path)
    key = "sk-test-SECRET-0123456789abcdef"
    r = runner.invoke(
        app,
        [
            "compact",
            str(src),
            "--force",
            "--provider",
            "openai-compatible:local,offline",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            key,
            "--timeout",
            "2",
            "--max-retries",
            "0",
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert "falling back" in r.stderr
    written = b"".join(p.read_bytes() for p in outputs(src))
    assert key.encode() not in written and key not in r.stdout + r.stderr


def test_out_dir_and_output(tmp_path: Path) -> None:
    src = copy(tmp_path)
    out_dir = tmp_path / "out"
    assert run(str(src), "--force", "--out-dir", str(out_dir))[0] == 0
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "coding-session.compacted.jsonl",
        "coding-session.ctxfold.json",
        "coding-session.summary.md",
    ]
    target = tmp_path / "elsewhere" / "short.jsonl"
    assert run(str(src), "--force", "-o", str(target))[0] == 0
    assert target.exists() and (target.parent / "short.summary.md").exists()


@pytest.mark.parametrize(
    "strategy", ["summary", "sliding-window", "mask-observations", "mask-observations+summary"]
)
def test_strategies_on_the_sample(tmp_path: Path, strategy: str) -> None:
    src = copy(tmp_path)
    code, out, err = run(str(src), "--window", "3000", "--strategy", strategy, "--json")
    if strategy == "mask-observations" and code == 1:
        # the sample's tool results are small: masking alone saves too little, and says so
        assert "10% reduction" in err or "still over the threshold" in err or "changed nothing" in err
        return
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["status"] == "compacted" and doc["tokens_after"] < doc["threshold"]
    assert validate(doc["outputs"]["compacted"]).ok


def test_a_chain_goes_on_when_its_first_pass_saves_too_little(tmp_path: Path) -> None:
    """Just over the threshold, masking a few old results brings the request under it but by
    less than a pass must make: the summary runs instead of the whole pass being refused."""
    src = copy(tmp_path, real("litellm/openhands-sdk-sonnet4-requests.jsonl"))
    before = orjson.loads(run(str(src), "--dry-run", "--force", "--no-profile", "--json")[1])["tokens_before"]
    args = ("--window", str(int(before / 0.8 * 0.95)), "--no-profile", "--json")  # 5 % over the threshold
    code, out, err = run(str(src), *args, "--strategy", "mask-observations+summary")
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["tokens_after"] <= 0.9 * doc["tokens_before"] and doc["summarizer"] is not None


def test_a_pass_that_changes_nothing_is_refused(tmp_path: Path) -> None:
    """The log's last count (a refusal at 201k) is far above what its messages count: a mask
    with nothing to mask must not be reported as 99 % smaller."""
    src = copy(tmp_path, FIXTURES / "anthropic" / "session.jsonl")
    code, _, err = run(str(src), "--strategy", "mask-observations", "--window", "100617", "--force")
    assert code == 1 and "changed nothing" in err
    assert not outputs(src)[0].exists()


def test_unknown_strategy_and_provider_are_usage_errors(tmp_path: Path) -> None:
    src = copy(tmp_path)
    assert run(str(src), "--strategy", "sumary")[0] == 2
    assert "did you mean" in run(str(src), "--provider", "antropic:x")[2]
    # checked even when only the offline summarizer would run, which does not use it
    code, _, err = run(str(src), "--tool-results", "heads:3", "--dry-run")
    assert code == 2 and "invalid --tool-results 'heads:3'" in err


@pytest.mark.parametrize("strategy", ["summary", "sliding-window", "mask-observations"])
@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_session(tmp_path: Path, path: Path, strategy: str) -> None:
    src = copy(tmp_path, path)
    est = estimate_file(src)
    code, out, err = run(str(src), "--dry-run", "--force", "--no-profile", "--json")
    assert code == 0, err
    predicted = orjson.loads(out)["tokens_before"]
    window = int(predicted * 1.02)  # with a 5 % buffer, the context now is just over the threshold
    args = ("--window", str(window), "--buffer", "5%", "--strategy", strategy, "--no-profile")
    code, out, err = run(str(src), *args, "--json")
    if code == 1 and "cannot fit" in err:
        # only when the log shows almost nothing of what was counted (a hidden prompt, nothing to fold)
        visible = est.context_tokens - est.replay.fixed_total
        assert visible < 0.15 * predicted, err
        return
    if code == 1 and strategy != "summary":
        # keeping a verbatim tail (or all but old tool output) may not shrink a small session
        # enough: that is refused and said, never written
        assert "10% reduction" in err or "still over the threshold" in err or "changed nothing" in err, err
        return
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["status"] == "compacted", doc
    compacted, _, state_path = outputs(src)
    v = validate(str(compacted))
    assert v.ok, v.violations[:3]
    again = load(compacted)
    assert again.source_format == (est.format if est.format in WRITERS else "ctxfold")
    assert doc["tokens_after"] < doc["threshold"]
    state = load_state(state_path)
    assert state is not None and state.watermark == len(load(src).entries)
    code, out, _ = run(str(src), *args)
    assert code == 0 and "up to date" in out  # a second run is a no-op
    # read back, the output claims no count of the old context, and keeps model and window
    back = estimate_file(compacted)
    assert [r.real for r in back.requests if r.real is not None] == []
    assert back.model.provider == est.model.provider
    if est.model.window_source == "recorded in the log":
        assert (back.model.window, back.model.window_source) == (est.model.window, "recorded in the log")


@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_appended_real_session_folds_only_the_new_part(tmp_path: Path, path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    src = tmp_path / path.name
    src.write_bytes(b"".join(lines[: max(1, len(lines) // 2)]))
    code, out, err = run(str(src), "--dry-run", "--force", "--no-profile", "--json")
    assert code == 0, err
    window = int(orjson.loads(out)["tokens_before"] * 1.02)
    args = ("--window", str(window), "--buffer", "5%", "--no-profile")
    code, out, err = run(str(src), *args, "--json")
    if code == 1 and ("cannot fit" in err or "10% reduction" in err):
        return  # the first half shows almost nothing of what was counted (see test_every_real_session)
    assert code == 0, err
    first = load_state(outputs(src)[2])
    assert first is not None
    src.write_bytes(b"".join(lines))  # the session went on: the file grew
    entries = load(src).entries
    code, out, err = run(str(src), *args, "--force", "--json")
    assert code == 0 or "10% reduction" in err, err
    if code == 1:
        return
    doc = orjson.loads(out)
    wm = first.watermark
    if any(isinstance(e, (CompactionMarker, ContextReset)) for e in entries[wm:]):
        # the tool compacted (or a new conversation began) after our summary: its own context wins
        assert doc["incremental"] is False
        assert doc["messages_before"] == len(current_context(entries).messages)
        return
    assert doc["incremental"] is True
    # only what came after the watermark is folded, behind the previous summary; one entry
    # earlier when the last summarized entry was a response still being written
    start = wm if entry_sha256(entries[wm - 1]) == first.last_entry_sha256 else wm - 1
    assert doc["messages_before"] == 1 + len(current_context(entries, start).messages)
    second = load_state(outputs(src)[2])
    assert second is not None and second.watermark == len(entries) and len(second.passes) == 2
    assert validate(str(outputs(src)[0])).ok


def test_state_keeps_a_fully_logged_first_ratio(tmp_path: Path) -> None:
    """The LiteLLM log records whole requests: its first counts 4,812 real for 4,363 estimated
    (1.10), under the growth slope, so the state file keeps the first-request ratio apart."""
    src = copy(tmp_path, real("litellm/openhands-sdk-sonnet4-requests.jsonl"))
    code, _, err = run(str(src), "--force", "--no-profile", "--json")
    assert code == 0, err
    state = load_state(outputs(src)[2])
    assert state is not None
    c = state.calibration
    assert c["overhead"] == 0 and 1.0 < c["first_ratio"] < c["ratio"]


def test_a_dry_run_of_a_pass_without_summary_shows_what_the_real_run_does(tmp_path: Path) -> None:
    """Masking calls no summarizer, so --dry-run runs it: its figures are the real run's, and a
    pass the real run would refuse is refused by the dry run too."""
    src = copy(tmp_path, real("codex/raze.jsonl"))
    args = (str(src), "--strategy", "mask-observations", "--force", "--no-profile", "--json")
    code, out, err = run(*args, "--dry-run")
    assert code == 0, err
    dry = orjson.loads(out)
    assert dry["status"] == "dry-run" and not any(p.exists() for p in outputs(src))
    code, out, err = run(*args)
    assert code == 0, err
    real_run = orjson.loads(out)
    assert (dry["tokens_after"], dry["messages_after"]) == (
        real_run["tokens_after"],
        real_run["messages_after"],
    )
    other = tmp_path / "fresh" / src.name  # no state file: the pass itself is judged
    other.parent.mkdir()
    other.write_bytes(src.read_bytes())
    code, _, err = run(str(other), "--strategy", "mask-observations", "--window", "20000", "--dry-run")
    assert code == 1 and "still over the threshold" in err


def test_a_sliding_window_that_falls_back_says_so(tmp_path: Path) -> None:
    """posthog's hidden prompt leaves no room for a tail under a 45k window: the pass becomes a
    summary of everything, and the notes say so."""
    src = copy(tmp_path, real("claude-code/posthog-impact-dashboard.jsonl"))
    code, out, err = run(
        str(src), "--window", "45029", "-s", "sliding-window", "--force", "--no-profile", "--json"
    )
    assert code == 0, err
    notes = orjson.loads(out)["notes"]
    assert notes[-1].startswith("fell back to a summary of everything") or any(
        "fell back" in n for n in notes
    )


def test_a_mask_alone_names_no_summarizer(tmp_path: Path) -> None:
    src = copy(tmp_path, real("codex/raze.jsonl"))
    before = orjson.loads(run(str(src), "--dry-run", "--force", "--no-profile", "--json")[1])["tokens_before"]
    args = ("--window", str(int(before / 0.8 * 0.6)), "-s", "mask-observations", "--no-profile", "--json")
    code, _, err = run(str(src), *args)
    assert code == 0, err
    _, summary_md, state = outputs(src)
    assert orjson.loads(state.read_bytes())["provider"] == "none"
    assert "no summarizer was called" in summary_md.read_text()
