"""``report --brief`` over a folder read before answers each file from its memo only when the
file, the settings and the profile's answer are what the line was made from: every run prints
what the same run prints without the memo (its twin: the same cache folder, no memo in it)."""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.tokens import filecheck, incremental

runner = CliRunner()
SOURCES = [
    FIXTURES / "heldout" / "claude-code" / "apanloco-random.jsonl",
    FIXTURES / "heldout" / "claude-code" / "ai-sessions-pomodoro.jsonl",
    FIXTURES / "real" / "claude-code-sidechains.jsonl",
    FIXTURES / "claude-code" / "edge-cases.jsonl",  # warnings
    FIXTURES / "codex" / "lab-0169.jsonl",
    FIXTURES / "pi" / "v3-tree.jsonl",
]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(filecheck, "RACY_NS", 0)  # the files are this test's, written just now
    out = tmp_path / "sessions"
    out.mkdir()
    for i, src in enumerate(SOURCES):
        shutil.copyfile(src, out / f"{i}-{src.name}")
    return out


_READ: list[str] = []  # the files read (here, not in a worker) by the spy below
_count_file = incremental.count_file


def _counting_spy(path: Any, **kw: Any) -> Any:  # (a module's function: workers are sent it)
    _READ.append(str(path))
    return _count_file(path, **kw)


class Runs:
    """``report FOLDER --brief`` in one cache folder, counting the files read (not answered by the memo)."""

    def __init__(
        self, folder: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, view: tuple[str, ...] = ("--brief",)
    ) -> None:
        self.folder, self.cache, self.monkeypatch, self.view = folder, cache, monkeypatch, view
        _READ.clear()
        self.read = _READ
        monkeypatch.setattr(incremental, "count_file", _counting_spy)

    def run(self, *args: str, cache: Path | None = None) -> tuple[str, str]:
        self.read.clear()
        env = {"XDG_CACHE_HOME": str(cache or self.cache)}
        result = runner.invoke(app, ["report", str(self.folder), *self.view, "--jobs", "1", *args], env=env)
        assert result.exit_code == 0, result.stderr
        return result.stdout, result.stderr

    def twin(self, *args: str) -> tuple[str, str]:
        """The same run in a copy of the cache folder without the memo: the lines made afresh."""
        copy = self.cache.with_name(self.cache.name + "-twin")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(self.cache, copy)
        shutil.rmtree(copy / "ctxfold" / "reports", ignore_errors=True)
        read = list(self.read)
        out = self.run(*args, cache=copy)
        self.read[:] = read
        return out

    def settled(self) -> None:
        """Three runs: the profile learned from the folder, and every line the memo's."""
        for _ in range(3):
            self.run()
        assert self.read == []

    def first_memo(self) -> Path:
        """One run without the profile, and the memo it wrote."""
        self.run("--no-profile")
        (memo,) = self.memos()
        return memo

    def memos(self) -> list[Path]:
        return sorted((self.cache / "ctxfold" / "reports").glob("*.memo"))


def test_a_folder_reported_again_is_answered_from_its_memo(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    for args in (["--no-profile"], []):
        first = runs.run(*args)
        assert len(runs.read) == len(SOURCES)
        for _ in range(3):  # with the profile, a run learns what the next is predicted from
            twin = runs.twin(*args)
            again = runs.run(*args)
            assert again == twin
        assert runs.read == []  # every line from the memo
        assert "warning" in again[1]  # (the edge cases')
        if args:  # (with the profile, the first run's predictions came from an empty one)
            assert again == first
    assert len(runs.memos()) == 2  # one per setting of the profile


def test_brief_json_is_the_table_s_document_and_reads_from_the_memo(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--brief --json`` holds what the table shows (each file's summary and warnings, and the
    totals), the same as the whole ``--json`` document's; its lines are the text table's, kept
    in the same memo: a text run made them, the JSON run reads none of the files."""
    runs = Runs(folder, tmp_path / "cache", monkeypatch, view=("--brief", "--json"))
    first, err = runs.run("--no-profile")
    assert len(runs.read) == len(SOURCES) and err == ""  # (the edge cases' warnings are in the document)
    brief = orjson.loads(first)
    full = orjson.loads(runner.invoke(app, ["report", str(folder), "--json", "--no-profile"]).stdout)
    assert [set(f) for f in brief["files"]] == [{"path", "warnings", "summary"}] * len(SOURCES)
    assert [(f["path"], f["summary"]) for f in brief["files"]] == [
        (f["path"], f["summary"]) for f in full["files"]
    ]
    assert brief["totals"] == full["totals"] and any(f["warnings"] for f in brief["files"])
    assert runs.run("--no-profile") == runs.twin("--no-profile") == (first, "")
    assert runs.read == []
    text = Runs(folder, tmp_path / "text-first", monkeypatch)
    text.run("--no-profile")  # the table, as text: its lines kept
    runs.cache = tmp_path / "text-first"
    assert runs.run("--no-profile") == (first, "") and runs.read == []
    (memo,) = runs.memos()
    memo.write_bytes(memo.read_bytes()[:-40] + b"x" * 40)
    out, err = runs.run("--no-profile")  # a damaged memo is said in the document, not on stderr
    assert (
        err == ""
        and f"the report memo {memo} is damaged: ignored, and replaced" in orjson.loads(out)["warnings"]
    )


@pytest.mark.parametrize("by", ["session", "day", "project"])
def test_a_usage_table_again_takes_each_file_s_calls_from_its_memo(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by: str
) -> None:
    """``--by`` keeps each file's billed calls (no prior to check: a usage table predicts
    nothing); the profile learns from them as from the file."""
    runs = Runs(folder, tmp_path / "cache", monkeypatch, view=("--by", by))
    first = runs.run()
    assert len(runs.read) == len(SOURCES) and "total" in first[0]
    profile = tmp_path / "cache" / "ctxfold" / "profile.json"
    learned = profile.read_bytes()
    twin = runs.twin()
    assert runs.run() == twin == first
    assert runs.read == [] and profile.read_bytes() == learned
    changed = sorted(folder.iterdir())[0]
    with changed.open("ab") as f:
        f.write(changed.read_bytes().splitlines(keepends=True)[-1])
    twin = runs.twin()
    assert runs.run() == twin and runs.read == [str(changed)]


def test_a_file_changed_since_is_reported_afresh(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    runs.run("--no-profile")
    appended, rewritten = sorted(folder.iterdir())[:2]
    with appended.open("ab") as f:  # a session that went on
        f.write(appended.read_bytes().splitlines(keepends=True)[-1])
    data = rewritten.read_bytes()  # the same size, its modification time set back
    st = rewritten.stat()
    at = data.index(b'"text":"') + 8
    rewritten.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
    os.utime(rewritten, ns=(st.st_atime_ns, st.st_mtime_ns))
    twin = runs.twin("--no-profile")
    assert runs.run("--no-profile") == twin
    assert sorted(runs.read) == [str(appended), str(rewritten)]


def test_a_prior_the_profile_now_gives_otherwise_is_not_trusted(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    runs.settled()
    profile = tmp_path / "cache" / "ctxfold" / "profile.json"
    doc = orjson.loads(profile.read_bytes())
    key = next(k for k in doc["profiles"] if k.startswith("claude-code|"))
    doc["profiles"][key]["sessions"].update(
        {f"other{i}": {"overhead": 9000 + i, "ratio": 1.5, "provider": "anthropic"} for i in range(5)}
    )
    profile.write_bytes(orjson.dumps(doc))
    twin = runs.twin()
    assert runs.run() == twin
    assert 0 < len(runs.read) < len(SOURCES)  # the Claude Code logs, predicted otherwise now


def test_other_settings_make_another_memo(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    runs.run("--no-profile")
    for args in (["--window", "100000"], ["--calibration", "affine"], ["--simulate-compaction"]):
        twin = runs.twin("--no-profile", *args)
        assert runs.run("--no-profile", *args) == twin
        assert len(runs.read) == len(SOURCES), args
    assert len(runs.memos()) == 4


def test_a_damaged_memo_is_ignored_and_replaced(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    memo = runs.first_memo()
    data = memo.read_bytes()
    memo.write_bytes(data[:-40] + b"x" * 40)  # its lines no longer match their checksum
    out, err = runs.run("--no-profile")
    assert f"the report memo {memo} is damaged: ignored, and replaced" in err
    assert len(runs.read) == len(SOURCES)
    assert (out, err.replace(err.splitlines()[0] + "\n", "", 1)) == runs.twin("--no-profile")
    assert runs.run("--no-profile") == (out, err.split("\n", 1)[1]) and runs.read == []


def test_fail_on_is_decided_from_the_lines_of_the_memo(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["report", str(folder), "--brief", "--jobs", "1", "--no-profile", "--window", "50000"]
    for reads in (len(SOURCES), 0):
        runs.read.clear()
        assert runner.invoke(app, [*args, "--fail-on", "compact"], env=env).exit_code == 3
        assert len(runs.read) == reads
    assert (
        runner.invoke(app, [*args, "--fail-on", "overflow", "--window", "10000000"], env=env).exit_code == 0
    )


def test_a_line_not_as_this_code_writes_it_is_made_afresh(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    runs.settled()
    (memo,) = runs.memos()
    magic, header, body = memo.read_bytes().split(b"\n", 2)
    lines = orjson.loads(body)
    names = sorted(lines)
    lines[names[0]]["lesson"] = [1, 2]  # checksummed again: only this code's checks stand
    del lines[names[1]]["warnings"]
    body = orjson.dumps(lines)
    head = {**orjson.loads(header), "crc32": zlib.crc32(body)}
    memo.write_bytes(b"\n".join([magic, orjson.dumps(head), body]))
    twin = runs.twin()
    assert runs.run() == twin
    assert sorted(runs.read) == names[:2]


def test_the_memos_used_last_are_kept(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxfold.engine import report_memo

    monkeypatch.setattr(report_memo, "KEPT", 2)
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    first = runs.first_memo()
    os.utime(first, ns=(1, 1))  # made long ago
    runs.run("--no-profile", "--window", "100000")
    runs.run("--no-profile")  # used again as it was: nothing new to write
    assert runs.read == []
    runs.run("--no-profile", "--window", "90000")  # a third: the one used longest ago goes
    assert first in runs.memos() and len(runs.memos()) == 2
    runs.run("--no-profile", "--window", "100000")
    assert len(runs.read) == len(SOURCES)


def test_the_files_left_to_read_go_to_workers_and_come_back_in_order(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxfold.cli import jobs

    monkeypatch.setattr(jobs, "MIN_BYTES", 0)  # a pool for whatever is left to read
    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    runs.run("--no-profile")
    for changed in sorted(folder.iterdir())[1::2]:  # every other file went on
        with changed.open("ab") as f:
            f.write(changed.read_bytes().splitlines(keepends=True)[-1])
    args = ("--no-profile", "--jobs", "2")
    twin = runs.twin(*args)
    assert runs.run(*args) == twin
    assert runs.run(*args) == twin  # and once more, every line from the memo
    assert runs.read == []


def test_the_memos_are_kept_under_a_size(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxfold.engine import report_memo

    runs = Runs(folder, tmp_path / "cache", monkeypatch)
    first = runs.first_memo()
    monkeypatch.setattr(report_memo, "MAX_BYTES", first.stat().st_size + 10)  # room for one
    os.utime(first, ns=(1, 1))
    runs.run("--no-profile", "--window", "100000")
    (second,) = runs.memos()
    assert second != first
    runs.run("--no-profile", "--window", "100000")
    assert runs.read == []  # the one just written is always kept
