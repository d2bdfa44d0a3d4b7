"""A new user's first hour (issue 19): what went wrong when ctxfold was tried as a new user would,
each pinned by a test through the command line.

Misreadings of real logs have their tests beside their formats (test_format_*.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app

runner = CliRunner()
SAMPLE = FIXTURES / "real" / "claude-code-sidechains.jsonl"


def _doc(text: str) -> dict:
    return orjson.loads(text)


# ----------------------------------------------------- 1. a provider named alone, without its key


@pytest.mark.parametrize(
    ("spec", "var"),
    [("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY"), ("openai:gpt-4.1-mini", "OPENAI_API_KEY")],
)
def test_a_provider_named_alone_without_its_key_is_an_error(tmp_path: Path, spec: str, var: str) -> None:
    out = tmp_path / "out"
    args = ["compact", str(SAMPLE), "--window", "24000", "--out-dir", str(out), "--provider", spec]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert var in result.stderr and "nothing written" in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()  # not even the folder


def test_a_chain_that_names_offline_falls_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["compact", str(SAMPLE), "--window", "24000", "--out-dir", str(out), "--json"]
    result = runner.invoke(app, [*args, "--provider", "anthropic:claude-haiku-4-5,offline"])
    assert result.exit_code == 0, result.output
    doc = _doc(result.stdout)
    assert doc["status"] == "compacted" and doc["summarizer"]["provider"] == "offline"
    assert any("ANTHROPIC_API_KEY" in w and "falling back to offline" in w for w in doc["warnings"])


def test_a_strategy_without_a_summarizer_needs_no_key(tmp_path: Path) -> None:
    """Masking calls no summarizer: the provider's key is not asked for (the pass itself may
    still be refused on its own merits)."""
    args = ["compact", str(SAMPLE), "--window", "24000", "--out-dir", str(tmp_path), "--dry-run"]
    result = runner.invoke(app, [*args, "-s", "mask-observations", "--provider", "anthropic"])
    assert "API_KEY" not in result.output


def test_a_dry_run_calls_nothing_but_says_the_key_is_missing(tmp_path: Path) -> None:
    args = ["compact", str(SAMPLE), "--window", "24000", "--out-dir", str(tmp_path), "--dry-run"]
    result = runner.invoke(app, [*args, "--provider", "anthropic:claude-haiku-4-5", "--json"])
    assert result.exit_code == 0, result.output
    warnings = _doc(result.stdout)["warnings"]
    assert any("ANTHROPIC_API_KEY" in w and "a real run would stop here" in w for w in warnings)


def _copy(src: Path, tmp_path: Path, name: str | None = None) -> Path:
    dst = tmp_path / (name or src.name)
    shutil.copyfile(src, dst)
    return dst


# ------------------------------------------------ 3. a session still being written (live logs)

HEADER = {"type": "header", "format": "ctxfold", "version": 1, "model": "gpt-4o"}
USER = {"type": "message", "role": "user", "parts": [{"type": "text", "text": "hello"}]}


def _jl(*objs: object) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def _live(tmp_path: Path) -> tuple[Path, int]:
    """The bundled Claude Code session as its harness leaves it mid-write: the last line cut
    inside a value, no newline after it."""
    data = SAMPLE.read_bytes()
    live = tmp_path / "live.jsonl"
    live.write_bytes(data[:-300])
    return live, data[:-300].count(b"\n") + 1


@pytest.mark.parametrize("command", ["estimate", "report", "validate"])
def test_a_half_written_last_line_is_a_warning_and_left_out(tmp_path: Path, command: str) -> None:
    live, last = _live(tmp_path)
    result = runner.invoke(app, [command, str(live)])
    assert result.exit_code == 0, result.output
    assert f"{live}: line {last}: half-written last line" in result.stderr
    assert "left out" in result.stderr
    doc = _doc(runner.invoke(app, [command, str(live), "--json"]).stdout)["files"][0]
    assert any(w.startswith(f"line {last}: half-written") for w in doc["warnings"])
    if command == "validate":
        assert doc["ok"] is True  # the cut line is not a violation either
    elif command == "estimate":
        whole = _doc(runner.invoke(app, [command, str(SAMPLE), "--json"]).stdout)["files"][0]
        assert doc["lines"] == whole["lines"] - 1  # every complete line read, the cut one not


def test_compact_of_a_live_session_warns_and_carries_on(tmp_path: Path) -> None:
    live, last = _live(tmp_path)
    out = tmp_path / "out"
    result = runner.invoke(app, ["compact", str(live), "--window", "24000", "--out-dir", str(out), "--json"])
    assert result.exit_code == 0, result.output
    doc = _doc(result.stdout)
    assert doc["status"] == "compacted"
    assert any(f"line {last}: half-written" in w for w in doc["warnings"])
    # the harness finishes the line: the next run folds only what is new (nothing complete was
    # folded from the cut line, and the bytes before it did not change)
    live.write_bytes(SAMPLE.read_bytes())
    again = _doc(
        runner.invoke(
            app, ["compact", str(live), "--window", "24000", "--out-dir", str(out), "--json"]
        ).stdout
    )
    assert again["incremental"] is True and again["status"] in ("up-to-date", "not-due", "compacted")
    assert not any("half-written" in w for w in again["warnings"])


def test_a_file_whose_only_line_is_half_written_says_so(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    path.write_bytes(b'{"type":"header","format":"ctx')
    result = runner.invoke(app, ["estimate", str(path)])
    assert result.exit_code == 1 and "still being written" in result.stderr


def test_a_cut_multibyte_character_is_half_written_too(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    tail = '{"type":"message","role":"user","parts":[{"type":"text","text":"héllo wörld é'.encode()
    path.write_bytes(_jl(HEADER, USER) + tail[:-1])  # inside the two bytes of the last é
    result = runner.invoke(app, ["estimate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert any("line 3: half-written" in w for w in _doc(result.stdout)["files"][0]["warnings"])


# ------------------------------------------------------ 5. one broken line in a long log


def _broken(tmp_path: Path) -> tuple[Path, int]:
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    lines.insert(100, b'{"type":"user", broken\n')
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"".join(lines))
    return path, 101


@pytest.mark.parametrize("command", ["estimate", "report", "compact", "validate"])
def test_a_bad_line_suggests_skip_invalid_which_every_command_takes(tmp_path: Path, command: str) -> None:
    path, bad = _broken(tmp_path)
    extra = ["--dry-run", "--force", "--out-dir", str(tmp_path / "o")] if command == "compact" else []
    result = runner.invoke(app, [command, str(path), *extra])
    assert result.exit_code == 1
    assert f"{path}:{bad}:" in result.output + result.stderr
    assert "--skip-invalid" in result.output + result.stderr
    result = runner.invoke(app, [command, str(path), *extra, "--skip-invalid"])
    assert result.exit_code == 0, result.output
    assert f"skipped {path}:{bad}:" in result.stderr
    if command == "validate":
        assert ": ok (claude-code" in result.stdout  # the rest was checked, and is fine


def test_a_bad_line_in_one_of_several_files_suggests_it_too(tmp_path: Path) -> None:
    path, _ = _broken(tmp_path)
    good = _copy(SAMPLE, tmp_path)
    result = runner.invoke(app, ["estimate", str(path), str(good), "--json"])
    assert result.exit_code == 1
    failed = _doc(result.stdout)["failed"]
    assert failed[0]["path"] == str(path) and "--skip-invalid" in failed[0]["error"]


# ------------------------------------------------------- 4. re-running with other settings


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--window", "30000"], "window 24,000 → 30,000"),
        ([], "window 24,000 → the model's"),
        (["--window", "24000", "--buffer", "10%"], "buffer the default → 10%"),
        (["--max-tokens", "24000"], "max-tokens none → 24,000"),
        (["--window", "24000", "--model", "gpt-4o"], "model the log's → gpt-4o"),
        (["--window", "24000", "-s", "sliding-window"], "strategy summary → sliding-window"),
        (
            ["--window", "24000", "--provider", "anthropic,offline", "--dry-run"],
            "provider offline → anthropic:",
        ),
        (["--window", "24000", "-i", "the parser"], "instructions none → the parser"),
    ],
)
def test_other_settings_are_noticed_and_said(tmp_path: Path, flags: list[str], said: str) -> None:
    for form in ("json", "text"):
        out = ["--out-dir", str(tmp_path / form)]
        first = runner.invoke(app, ["compact", str(SAMPLE), "--window", "24000", *out, "--json"])
        assert _doc(first.stdout)["status"] == "compacted", first.output
        same = runner.invoke(app, ["compact", str(SAMPLE), "--window", "24000", *out, "--json"])
        assert _doc(same.stdout)["status"] == "up-to-date"  # the same settings: nothing to do
        result = runner.invoke(
            app, ["compact", str(SAMPLE), *flags, *out, *(["--json"] if form == "json" else [])]
        )
        assert result.exit_code == 0, result.output
        if form == "text":
            assert said in " ".join(result.stdout.split()) and "up to date" not in result.stdout
            continue
        doc = _doc(result.stdout)
        assert doc["status"] != "up-to-date" and doc["incremental"] is False
        assert any("settings changed" in n and said in n for n in doc["notes"]), doc["notes"]


def test_the_state_records_the_settings_and_an_older_state_still_resumes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["compact", str(SAMPLE), "--window", "24000", "--out-dir", str(out), "--json"]
    assert _doc(runner.invoke(app, args).stdout)["status"] == "compacted"
    state_path = out / "claude-code-sidechains.ctxfold.json"
    state = _doc(state_path.read_text())
    assert state["settings"]["window"] == 24_000 and state["settings"]["strategy"] == "summary"
    assert state["settings"]["summarizer"] == "offline"
    del state["settings"]  # as written before the settings were recorded
    state_path.write_bytes(orjson.dumps(state))
    assert _doc(runner.invoke(app, args).stdout)["status"] == "up-to-date"


# ------------------------------------- misreading: a model ctxfold does not know, through a router


def _router_log(tmp_path: Path, model: str, counts: list[int]) -> Path:
    """An OpenRouter-style request log (the shape of fixtures/openai-chat/openrouter-log.jsonl)
    whose calls the provider counted at ``counts``."""
    lines, messages = [], [{"role": "system", "content": "You are a coding agent."}]
    for i, n in enumerate(counts):
        messages = [*messages, {"role": "user", "content": f"Step {i}: go on with the refactor."}]
        answer = {"role": "assistant", "content": f"Done with step {i}."}
        usage = {"prompt_tokens": n, "completion_tokens": 40, "total_tokens": n + 40}
        completion = {"id": f"gen-{i}", "object": "chat.completion", "model": model, "provider": "Z.AI"}
        completion["choices"] = [{"index": 0, "finish_reason": "stop", "message": answer}]
        lines.append({"model": model, "messages": messages, "completion": completion, "usage": usage})
        messages = [*messages, answer]
    path = tmp_path / "router.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def test_an_unknown_models_window_is_at_least_what_its_log_counted(tmp_path: Path) -> None:
    log = _router_log(tmp_path, "z-ai/glm-4.6", [90_000, 160_000, 250_000, 374_120, 371_000])
    doc = _doc(runner.invoke(app, ["estimate", str(log), "--json", "--no-profile"]).stdout)["files"][0]
    assert doc["window"] == 374_120 and doc["window_source"] == "the log's largest real count"
    assert any("real counts reach 374,120 tokens" in w for w in doc["warnings"])
    report = _doc(runner.invoke(app, ["report", str(log), "--json", "--no-profile"]).stdout)["files"][0]
    assert report["summary"]["overflows"] == 0  # not "over a 128,000-token window" four times
    # a window the user gives stands, even under the log's counts
    given = _doc(runner.invoke(app, ["estimate", str(log), "--json", "--window", "200000"]).stdout)
    assert given["files"][0]["window"] == 200_000


def test_a_known_models_window_gives_way_to_its_logs_counts(tmp_path: Path) -> None:
    """A Claude model run with its 1M-token option: the registry's 200,000 is a floor it passed."""
    log = _router_log(tmp_path, "anthropic/claude-sonnet-4", [150_000, 420_000])
    doc = _doc(runner.invoke(app, ["estimate", str(log), "--json", "--no-profile"]).stdout)["files"][0]
    assert doc["window"] == 420_000
    assert any("more than the 200,000-token window of the model registry" in w for w in doc["warnings"])


# ------------------------- misreading: compact's fixed part against the estimate of the same file


@pytest.mark.parametrize("fixture", ["pi/v3-tree.jsonl", "codex/edge-cases.jsonl"])
def test_compact_never_reads_a_whole_context_as_its_system_prompt(tmp_path: Path, fixture: str) -> None:
    """Both logs end with an overflow error's count (200,819 and 300,500) over a context they show
    as a few dozen tokens. compact read that count as the hidden system prompt and tools of the
    compacted request; now it says the fold cannot help, in numbers estimate agrees with."""
    path = FIXTURES / fixture
    est = _doc(runner.invoke(app, ["estimate", str(path), "--json", "--no-profile"]).stdout)["files"][0]
    result = runner.invoke(app, ["compact", str(path), "--force", "--no-profile", "--out-dir", str(tmp_path)])
    assert "system prompt and tools alone" not in result.stderr
    assert (
        f"the {est['predicted']['tokens']:,} predicted tokens are mostly what the log does not show"
        in result.stderr
    )
    assert f"({est['context_tokens']:,} → " in result.stderr  # what the log shows, as estimate counts it


# ------------------------------------------ folders: Gemini CLI's saved chats, not other JSON


def test_a_folder_run_finds_gemini_saved_chats_but_no_other_json(tmp_path: Path) -> None:
    chats = tmp_path / "gemini" / "tmp" / "abc" / "chats"
    chats.mkdir(parents=True)
    chat = _copy(
        FIXTURES / "real" / "gemini-cli-pomodoro-timer.json", chats, "session-2025-10-21T20-04-0b23371a.json"
    )
    log = _copy(SAMPLE, tmp_path, "claude.jsonl")
    (tmp_path / "package.json").write_text('{"name": "app", "version": "1.0.0"}\n')
    (tmp_path / "settings.json").write_text('{"sessionId": "not a chat"}\n')
    out = tmp_path / "out"
    runner.invoke(app, ["compact", str(log), "--window", "24000", "--out-dir", str(out)])
    assert (out / "claude.ctxfold.json").exists()  # a state file in the folder: not a session
    for command in ("estimate", "report", "validate"):
        result = runner.invoke(app, [command, str(tmp_path), "--json"])
        assert result.exit_code == 0, (command, result.output)
        doc = _doc(result.stdout)
        paths = sorted(f["path"] for f in doc["files"])
        assert paths == sorted([str(chat), str(log), str(out / "claude.compacted.jsonl")]), command
        assert doc["failed"] == []


# ------------------------------------------- 6. report totals per day, project and session


@pytest.fixture
def tz(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import time

    def set_zone(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield set_zone
    monkeypatch.delenv("TZ", raising=False)
    time.tzset()


def _by(args: list[str]) -> dict:
    result = runner.invoke(app, ["report", *args, "--json"])
    assert result.exit_code == 0, result.output
    return _doc(result.stdout)


def test_report_by_session_adds_up_to_what_the_report_prices(tmp_path: Path) -> None:
    logs = [_copy(SAMPLE, tmp_path), _copy(FIXTURES / "real" / "litellm-sonnet4-requests.jsonl", tmp_path)]
    doc = _by([str(tmp_path), "--by", "session"])
    rows, total = doc["by"]["rows"], doc["by"]["total"]
    assert [r["key"] for r in rows] == [str(p) for p in sorted(logs)]
    for row, file in zip(rows, doc["files"], strict=True):
        assert row["cost_usd"] == pytest.approx(file["summary"]["cost"]["recorded"]["total"], abs=1e-4)
        assert (
            row["calls"] == file["usage"]["calls"] and row["output_tokens"] == file["usage"]["output_tokens"]
        )
    for key in (
        "calls",
        "input_tokens",
        "output_tokens",
        "cache_write_tokens",
        "cache_read_tokens",
        "total_tokens",
    ):
        assert total[key] == sum(r[key] for r in rows), key
    for r in rows:
        parts = r["input_tokens"] + r["output_tokens"] + r["cache_write_tokens"] + r["cache_read_tokens"]
        assert r["total_tokens"] == parts and r["output_tokens"] > 0 and r["first"] <= r["last"]


def test_report_by_day_uses_the_local_date_of_each_call(tmp_path: Path, tz) -> None:  # type: ignore[no-untyped-def]
    """The bundled session ran from 00:52 to 01:02 UTC on 3 September 2025: that is the 2nd in
    New York."""
    tz("UTC")
    assert [r["key"] for r in _by([str(SAMPLE), "--by", "day"])["by"]["rows"]] == ["2025-09-03"]
    tz("America/New_York")
    doc = _by([str(SAMPLE), "--by", "day"])
    assert [r["key"] for r in doc["by"]["rows"]] == ["2025-09-02"]
    text = runner.invoke(app, ["report", str(SAMPLE), "--by", "day"]).stdout
    assert "2025-09-02" in text and "total" in text and "cache read" in text and "$2.39" in text


def test_report_by_project_groups_sessions_by_their_folder(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for d in (a, b):
        _copy(FIXTURES / "real" / "litellm-sonnet4-requests.jsonl", d, "one.jsonl")
    _copy(FIXTURES / "real" / "litellm-sonnet4-requests.jsonl", a, "two.jsonl")
    rows = _by([str(tmp_path), "--by", "project"])["by"]["rows"]
    assert {r["key"]: (r["sessions"], r["calls"]) for r in rows} == {str(a): (2, 12), str(b): (1, 6)}


def test_report_by_says_what_it_takes() -> None:
    result = runner.invoke(app, ["report", str(SAMPLE), "--by", "week"])
    assert result.exit_code == 2 and "day, project or session" in result.stderr
    result = runner.invoke(app, ["report", str(SAMPLE), "--by", "day", "--all"])
    assert result.exit_code == 2


def test_the_plot_draws_the_compacted_run_beside_the_real_one(tmp_path: Path) -> None:
    """--plot runs the simulation itself and draws it: the predicted sizes of the run with
    ctxfold compacting, and the log's real counts less what the compactions removed."""
    pytest.importorskip("matplotlib")
    log = FIXTURES / "real" / "litellm-sonnet4-requests.jsonl"
    out = tmp_path / "plot.svg"
    result = runner.invoke(app, ["report", str(log), "--no-profile", "--window", "8000", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    svg = out.read_text()
    for label in (
        "with ctxfold compacting (predicted)",
        "with ctxfold compacting (real, less what it removed)",
    ):
        assert f"<!-- {label} -->" in svg, label
    assert "<!-- simulated compaction -->" in svg
    assert "1 compaction(s) needed at requests #4" in result.stdout


# ------------------------------------------------------------- 2. help that reads like git's


def _commands() -> list[list[str]]:
    import typer.main

    out: list[list[str]] = [[]]
    root = typer.main.get_command(app)
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        out.append([name])
        out.extend([name, sub] for sub in getattr(cmd, "commands", {}))
    return out


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "ctxfold")
def test_every_help_reads_like_git_and_names_no_internal_thing(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "-h"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    for tag in ("<str>", "<bool>", "<int", "<float", "<list", "{file", "x>=", "seeds", "the seed"):
        assert tag not in text, tag
    usage = text.splitlines()[0]
    assert usage.startswith(f"Usage: ctxfold {' '.join(path)}".rstrip() + " ") and "[OPTIONS]" in usage
    assert "Examples:" in text and "\n  ctxfold " in text.split("Examples:", 1)[1]
    assert "\n\n  " in text  # what the command does, under its usage line


def test_choices_are_listed_as_choices_and_defaults_shown() -> None:
    report = runner.invoke(app, ["report", "-h"]).stdout
    for choices in (
        "[o200k|cl100k|heuristic]",
        "[growth|affine|seed]",
        "[compact|overflow]",
        "[day|project|session]",
    ):
        assert choices in report, choices
    assert "Usage: ctxfold report [OPTIONS] FILE..." in report
    compact = " ".join(runner.invoke(app, ["compact", "-h"]).stdout.split())
    assert "-s, --strategy [summary|sliding-window|mask-observations]" in compact
    assert "[default: summary]" in compact and "[default: offline]" in compact and "--window N" in compact
    assert "Usage: ctxfold compact [OPTIONS] FILE" in compact


def test_the_format_names_in_help_are_the_registry_s() -> None:
    from ctxfold.cli.options import FORMAT_NAMES
    from ctxfold.formats.registry import FORMATS

    assert sorted(FORMAT_NAMES) == sorted(FORMATS)


def test_help_imports_no_rich() -> None:
    """Plain help: ``ctxfold --help`` starts without Rich (and its Markdown parser)."""
    import subprocess
    import sys

    code = "import sys; from ctxfold.cli.app import main; sys.argv=['ctxfold','--help']\ntry: main()\nexcept SystemExit: pass\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'markdown_it')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_a_file_that_is_no_log_gets_no_advice_to_read_past_it(tmp_path: Path) -> None:
    """--skip-invalid helps past a broken line of a log; a README's first line says it is no log."""
    readme = tmp_path / "README.md"
    readme.write_text("# My project\n\nNotes.\n")
    result = runner.invoke(app, ["estimate", str(readme)])
    assert result.exit_code == 1 and f"{readme}:1: not valid JSON" in result.stderr
    assert "--skip-invalid" not in result.stderr


def test_a_provider_named_alone_in_the_config_file_says_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "ctxfold.toml"
    conf.write_text('[compact]\nprovider = "anthropic:claude-haiku-4-5"\n')
    monkeypatch.setenv("CTXFOLD_CONFIG", str(conf))
    result = runner.invoke(
        app, ["compact", str(SAMPLE), "--window", "24000", "--out-dir", str(tmp_path / "o")]
    )
    assert result.exit_code == 1 and "ANTHROPIC_API_KEY" in result.stderr
    assert f"provider from file {conf}" in result.stderr and not (tmp_path / "o").exists()


def test_report_by_teaches_the_profile_what_a_report_teaches_it(tmp_path: Path) -> None:
    """A usage table needs no replay of the sessions, and is printed without one; the learned
    profile ends as a report of the same files leaves it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for src in (SAMPLE, FIXTURES / "heldout" / "claude-code" / "apanloco-random.jsonl"):
        _copy(src, logs)
    learned = []
    for args in (["--by", "session"], []):
        cache = tmp_path / f"cache{len(learned)}"
        result = runner.invoke(app, ["report", str(logs), *args], env={"XDG_CACHE_HOME": str(cache)})
        assert result.exit_code == 0, result.output
        learned.append(orjson.loads((cache / "ctxfold" / "profile.json").read_bytes()))
    assert learned[0] == learned[1] and learned[0]["profiles"]
