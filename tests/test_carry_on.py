"""Carrying on after ``compact``: a new session id, the command that resumes it, ``--install``
placing it where the harness looks (never over a file), outputs kept out of a harness's own
session folder, and ``--to`` naming a format that can be written."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.compaction.carry_on import in_a_store, install
from ctxfold.compaction.run import CompactOptions, compact_file
from ctxfold.errors import OutputError
from ctxfold.formats.claude_code.resume import project_folder
from ctxfold.providers.offline import OfflineSummarizer

SAMPLE = FIXTURES / "real" / "claude-code-sidechains.jsonl"
runner = CliRunner()


def _session_ids(path: Path) -> set[str]:
    return {d["sessionId"] for d in map(orjson.loads, path.read_bytes().splitlines()) if "sessionId" in d}


def _compact(src: Path, home: Path, **opts: object) -> object:
    options = CompactOptions(window=24_000, home=home, **opts)  # type: ignore[arg-type]
    return compact_file(str(src), OfflineSummarizer(), summarizer_window=None, options=options)


def test_the_compacted_session_has_a_new_id_and_a_command_to_resume_it(tmp_path: Path) -> None:
    r = _compact(SAMPLE, tmp_path / "home", out_dir=str(tmp_path / "out"))
    original, compacted = _session_ids(SAMPLE), _session_ids(r.outputs.compacted)  # type: ignore[attr-defined]
    assert len(compacted) == 1 and not compacted & original
    carry = r.carry_on  # type: ignore[attr-defined]
    (sid,) = compacted
    assert carry.harness == "Claude Code" and carry.session_id == sid
    assert carry.command == ("claude", "--resume", sid) and carry.cwd == "/path/to/Demo"
    assert carry.install_to == tmp_path / "home" / ".claude" / "projects" / "-path-to-Demo" / f"{sid}.jsonl"
    assert not carry.installed and not carry.ready and not carry.install_to.exists()


def test_install_places_it_where_the_harness_looks_and_never_over_a_file(tmp_path: Path) -> None:
    r = _compact(SAMPLE, tmp_path / "home", out_dir=str(tmp_path / "out"), install=True)
    carry = r.carry_on  # type: ignore[attr-defined]
    assert carry.installed and carry.ready
    assert carry.install_to.read_bytes() == r.outputs.compacted.read_bytes()  # type: ignore[attr-defined]
    carry.install_to.write_text("the harness wrote this")
    with pytest.raises(OutputError, match="never replaces a file the harness wrote"):
        install(carry, r.outputs.compacted)  # type: ignore[attr-defined]
    assert carry.install_to.read_text() == "the harness wrote this"
    assert not list(carry.install_to.parent.glob(".*.tmp"))


def test_outputs_stay_out_of_the_harness_session_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / project_folder("/path/to/Demo")
    folder.mkdir(parents=True)
    session = folder / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    shutil.copy(SAMPLE, session)
    monkeypatch.chdir(tmp_path)
    assert in_a_store(folder, home) == "Claude Code" and in_a_store(tmp_path, home) is None
    r = _compact(session, home)
    assert r.outputs.compacted.parent.resolve() == (tmp_path / "ctxfold-out").resolve()  # type: ignore[attr-defined]
    assert sorted(p.name for p in folder.iterdir()) == [session.name]
    assert any("session folder" in n for n in r.notes)  # type: ignore[attr-defined]


def test_compact_prints_the_command_and_json_carries_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    args = ["compact", str(SAMPLE), "--window", "24000", "--out-dir", str(tmp_path / "out")]
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "carry on     cd /path/to/Demo && claude --resume " in text.stdout and "--install" in text.stdout
    args[-1] = str(tmp_path / "again")
    doc = orjson.loads(runner.invoke(app, [*args, "--install", "--json"]).stdout)
    carry = doc["carry_on"]
    assert carry["harness"] == "Claude Code" and carry["installed"] is True
    assert carry["command"] == ["claude", "--resume", carry["session_id"]]
    assert Path(carry["install_to"]).is_file()


def test_to_names_a_format_that_can_be_written(tmp_path: Path) -> None:
    r = runner.invoke(app, ["compact", str(SAMPLE), "--to", "codx", "--out-dir", str(tmp_path / "out")])
    assert r.exit_code == 2 and "did you mean 'codex'" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_format_without_a_harness_has_nothing_to_carry_on_in(tmp_path: Path) -> None:
    r = _compact(FIXTURES / "openai-chat" / "session.jsonl", tmp_path, out_dir=str(tmp_path), force=True)
    assert r.status == "compacted" and r.carry_on is None  # type: ignore[attr-defined]
