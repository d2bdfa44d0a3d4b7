"""Detection and `--format`: whatever ctxfold writes is detected as that format when read
again, a `--format` no line of the file matches is an error, and `validate` prints one line per
violation."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, detect, real_files, write_jsonl
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.formats import registry
from ctxfold.strategies.summary import continuation_message, summary_message
from ctxfold.transcript.model import Transcript

runner = CliRunner()
FIXTURE_FILES = sorted(FIXTURES.glob("*/*.jsonl"))
# every source has a real session or two (codex and pi have no bundled fixture big enough to matter)
REAL_FILES = real_files()


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


# ----------------------------------------------------------------- compacted output re-read


def _compact(src: Path, out_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, Path]:
    # Most fixtures are too small for a summary to make them 10 % smaller; the refusal is not
    # what is tested here, the written file is.
    monkeypatch.setattr("ctxfold.compaction.run.MIN_SHRINK", -100.0)
    r = runner.invoke(
        app,
        [
            "compact",
            str(src),
            "--force",
            "--window",
            "2000000",
            "--no-profile",
            "--out-dir",
            str(out_dir),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    doc = orjson.loads(r.stdout)
    assert doc["status"] == "compacted"
    return doc, Path(doc["outputs"]["compacted"])


@pytest.mark.parametrize("src", FIXTURE_FILES + REAL_FILES, ids=_id)
def test_compacted_output_is_detected_as_its_format(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, out = _compact(src, tmp_path, monkeypatch)
    written = doc["written_format"]
    assert written == registry.writer(doc["format"])[0]
    assert detect(out) == written
    # and every command reads it without --format
    r = runner.invoke(app, ["validate", "--json", str(out)])
    assert orjson.loads(r.stdout)["files"][0]["format"] == written, r.stdout
    r = runner.invoke(app, ["estimate", "--json", "--no-profile", str(out)])
    assert r.exit_code == 0 and orjson.loads(r.stdout)["files"][0]["format"] == written, r.stderr


@pytest.mark.parametrize("writer_name", sorted(registry.WRITERS))
def test_a_summary_alone_is_detected_in_every_written_format(writer_name: str, tmp_path: Path) -> None:
    """The hardest case: nothing but the summary and its continuation (all text, no tool call,
    no system prompt, no model): the written file must still say which format it is."""
    t = Transcript(
        source_format=writer_name,
        entries=(summary_message("The user asked for a fix; it is done."), continuation_message("Fix it")),
    )
    fmt, module = registry.writer(writer_name)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"".join(x + b"\n" for x in module.write(t)))
    assert detect(out) == fmt


def test_a_system_line_with_openai_tools_is_not_claimed_by_anthropic() -> None:
    from ctxfold.formats.anthropic import reader as anthropic

    assert anthropic.sniff([{"system": "s", "tools": [{"name": "t", "input_schema": {}}]}]) == 50
    assert anthropic.sniff([{"system": [{"type": "text", "text": "s"}], "model": "m"}]) == 50
    openai_tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    assert anthropic.sniff([{"system": "s", "tools": openai_tools}]) == 0
    assert anthropic.sniff([{"system": [{"type": "input_text", "text": "s"}]}]) == 0


# ------------------------------------------------------------- --format no line matches

CODEX = FIXTURES / "codex" / "edge-cases.jsonl"
CLAUDE = FIXTURES / "claude-code" / "edge-cases.jsonl"
WRONG = [(CODEX, f, "codex") for f in ("claude-code", "pi", "anthropic", "openai-responses")] + [
    (CLAUDE, f, "claude-code") for f in ("codex", "pi", "anthropic", "openai-responses")
]


@pytest.mark.parametrize(("path", "fmt", "really"), WRONG, ids=lambda x: x.name if isinstance(x, Path) else x)
@pytest.mark.parametrize("command", ["estimate", "report", "validate"])
def test_a_format_no_line_matches_is_an_error(path: Path, fmt: str, really: str, command: str) -> None:
    """Readers pass over line types they do not know, so another format's file used to read as
    an empty conversation: "0 requests", "ok (claude-code, 0 entries)", exit 0."""
    r = runner.invoke(app, [command, str(path), "--format", fmt])
    assert r.exit_code == 1
    assert r.exception is None or isinstance(r.exception, SystemExit)  # no traceback
    said = r.stdout if command == "validate" else r.stderr
    assert f"{path}: no line is {'an' if fmt[0] in 'aeiou' else 'a'} {fmt} line" in said
    assert f"detection says {really}" in said and "Traceback" not in said
    assert len(said.strip().splitlines()) == 1


def test_compact_with_a_format_no_line_matches_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = runner.invoke(app, ["compact", str(CODEX), "--format", "pi", "--force", "--out-dir", str(out)])
    assert r.exit_code == 1 and "no line is a pi line" in r.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_skipping_every_line_of_a_wrong_format_is_the_same_error() -> None:
    r = runner.invoke(app, ["estimate", str(CODEX), "--format", "openai-chat", "--skip-invalid"])
    assert r.exit_code == 1 and "no line is an openai-chat line (detection says codex" in r.stderr


def test_no_known_format_is_said(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "odd.jsonl", [{"type": "note", "text": "x"}, {"type": "note", "text": "y"}])
    r = runner.invoke(app, ["estimate", str(path), "--format", "claude-code"])
    assert r.exit_code == 1
    assert "no line is a claude-code line (detection recognises no known format either)" in r.stderr


def test_a_log_of_the_format_with_nothing_to_read_is_still_fine(tmp_path: Path) -> None:
    """A Claude Code log holding only bookkeeping lines (its summaries) has no conversation, but
    its lines are Claude Code's: forcing the format it is detected as changes nothing."""
    path = write_jsonl(
        tmp_path / "summaries.jsonl",
        [
            {"type": "summary", "summary": "Fix the bug", "leafUuid": "u1"},
            {"type": "summary", "summary": "More"},
        ],
    )
    assert detect(path) == "claude-code"
    for args in ([], ["--format", "claude-code"]):
        r = runner.invoke(app, ["validate", str(path), *args])
        assert r.exit_code == 0 and "ok (claude-code, 0 entries)" in r.stdout, r.stdout
        r = runner.invoke(app, ["estimate", "--json", "--no-profile", str(path), *args])
        assert r.exit_code == 0, r.stderr


def test_a_matching_format_reads_as_detected() -> None:
    for path, fmt in ((CODEX, "codex"), (CLAUDE, "claude-code")):
        forced = orjson.loads(
            runner.invoke(app, ["estimate", "--json", "--no-profile", str(path), "--format", fmt]).stdout
        )
        found = orjson.loads(runner.invoke(app, ["estimate", "--json", "--no-profile", str(path)]).stdout)
        assert forced["files"][0]["context_tokens"] == found["files"][0]["context_tokens"] > 0


# ---------------------------------------------------------------------- validate's lines


def _bad_anthropic(tmp_path: Path) -> Path:
    name = "a-rather-long-directory-name-so-the-line-passes-any-narrow-width"
    (tmp_path / name).mkdir()
    lines = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "again"}]},
        {"role": "user", "content": "and?"},
    ]
    return write_jsonl(tmp_path / name / "bad.jsonl", lines)


@pytest.mark.parametrize("width", [40, 80])
def test_each_violation_is_one_line_whatever_the_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    from rich.console import Console

    from ctxfold.cli import render

    monkeypatch.setattr(render, "out", Console(highlight=False, width=width))
    bad = _bad_anthropic(tmp_path)
    r = runner.invoke(app, ["validate", str(bad)])
    assert r.exit_code == 1
    doc = orjson.loads(runner.invoke(app, ["validate", "--json", str(bad)]).stdout)
    violations = doc["files"][0]["violations"]
    assert violations
    lines = r.stdout.splitlines()
    assert lines == [
        f"{bad}: {len(violations)} violation(s) (anthropic)",
        *(f"  {bad}:{v['line']}: {v['message']}" for v in violations),
    ]


def test_an_empty_file_is_said_as_the_other_commands_say_it(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    r = runner.invoke(app, ["validate", str(path)])
    assert r.exit_code == 1
    assert r.stdout == f"{path}: empty file: no JSON lines\n"
    other = runner.invoke(app, ["estimate", str(path)])
    assert other.exit_code == 1 and f"{path}: empty file: no JSON lines" in other.stderr


def test_a_line_error_after_detection_names_the_format(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n' * 30 + "{oops\n")
    r = runner.invoke(app, ["validate", str(path)])
    assert r.exit_code == 1
    assert r.stdout.splitlines() == [
        f"{path}: 1 violation(s) (openai-chat)",
        f"  {path}:31: {r.stdout.splitlines()[1].split(':31: ', 1)[1]}",
        "  nothing after line 31 was checked (--skip-invalid leaves bad lines out and reads on)",
    ]
    assert "None" not in r.stdout
