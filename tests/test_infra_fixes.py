"""Infrastructure fixes: file modes of atomic writes, broken pipes, config-file checks, a corrupt
profile cache, and where the window of a report came from."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.core.atomic import write_atomic

runner = CliRunner()
SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# 1. atomic writes get the mode open() would give, not mkstemp's 0600


def test_atomic_write_follows_the_umask(tmp_path: Path, umask: None) -> None:
    write_atomic(tmp_path / "a.txt", b"x")
    assert mode(tmp_path / "a.txt") == 0o644
    os.umask(0o027)
    write_atomic(tmp_path / "b.txt", b"x")
    assert mode(tmp_path / "b.txt") == 0o640


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path, umask: None) -> None:
    for bits in (0o600, 0o664, 0o444):
        target = tmp_path / f"t{bits:o}"
        target.write_bytes(b"old")
        target.chmod(bits)
        write_atomic(target, b"new")
        assert target.read_bytes() == b"new" and mode(target) == bits


def test_compact_outputs_and_profile_are_readable_like_any_file(tmp_path: Path, umask: None) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["compact", str(SAMPLE), "--window", "8000", "--force", "--out-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    written = sorted(out.iterdir())
    assert len(written) == 3 and all(mode(p) == 0o644 for p in written), [
        (p.name, oct(mode(p))) for p in written
    ]
    profile = Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "profile.json"
    assert profile.is_file() and mode(profile) == 0o644
