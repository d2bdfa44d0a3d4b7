"""`ctxfold compact`: where outputs may go (never onto the input), and a stream as input."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from compact_support import SAMPLE, copy, run, runner

from ctxfold.cli.app import app
from ctxfold.compaction.statefile import load_state


@pytest.mark.parametrize("spelling", ["same", "relative", "symlink", "hardlink"])
def test_an_output_that_is_the_input_is_refused_even_with_force(tmp_path: Path, spelling: str) -> None:
    src = copy(tmp_path)
    before = src.read_bytes()
    target = {"same": src, "relative": tmp_path / "." / src.name}.get(spelling, tmp_path / "link.jsonl")
    if spelling == "symlink":
        target.symlink_to(src)
    elif spelling == "hardlink":
        target.hardlink_to(src)
    code, _, err = run(str(src), "--force", "--window", "3000", "-o", str(target))
    assert code == 1 and "is the input itself" in err
    assert src.read_bytes() == before
    assert not (tmp_path / f"{target.stem}.summary.md").exists()


def test_output_and_out_dir_together_are_a_usage_error(tmp_path: Path) -> None:
    src = copy(tmp_path)
    code, _, err = run(str(src), "--force", "-o", str(tmp_path / "a.jsonl"), "--out-dir", str(tmp_path / "d"))
    assert code == 2 and "not both" in err
    assert not (tmp_path / "d").exists() and not (tmp_path / "a.jsonl").exists()


def test_stdin_does_not_take_an_existing_state_file_for_its_own(tmp_path: Path) -> None:
    """A stream has no file to compare with a state file: outputs already there need --force,
    which starts over, whatever session wrote them."""
    target = tmp_path / "out.jsonl"
    data = SAMPLE.read_text()
    r = runner.invoke(app, ["compact", "-", "--force", "-o", str(target)], input=data)
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["compact", "-", "--window", "3000", "-o", str(target)], input=data)
    assert r.exit_code == 1 and "--force" in r.stderr
    r = runner.invoke(app, ["compact", "-", "--force", "-o", str(target)], input=data)
    assert r.exit_code == 0, r.stderr
    state = load_state(tmp_path / "out.ctxfold.json")
    assert state is not None and len(state.passes) == 1


@pytest.mark.parametrize("kind", ["-o new-folder/", "-o existing folder", "--out-dir a file"])
def test_output_options_that_name_the_wrong_kind_of_path(tmp_path: Path, kind: str) -> None:
    src = copy(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    option = {
        "-o new-folder/": ["-o", str(tmp_path / "new-folder") + "/"],
        "-o existing folder": ["-o", str(tmp_path / "folder")],
        "--out-dir a file": ["--out-dir", str(tmp_path / "a-file")],
    }[kind]
    code, _, err = run(str(src), "--force", *option)
    assert code == 2 and ("is a folder" in err or "is a file" in err), err
    assert not (tmp_path / "new-folder").exists() and list((tmp_path / "folder").iterdir()) == []


def test_a_dry_run_from_stdin_without_o_names_no_output(tmp_path: Path) -> None:
    data = SAMPLE.read_text()
    r = runner.invoke(app, ["compact", "-", "--force", "--dry-run", "--json"], input=data)
    assert r.exit_code == 0, r.stderr
    assert orjson.loads(r.stdout)["would_write"] is None
    r = runner.invoke(app, ["compact", "-", "--force", "--dry-run"], input=data)
    assert r.exit_code == 0 and "needs -o" in r.stdout and "-.compacted.jsonl" not in r.stdout
