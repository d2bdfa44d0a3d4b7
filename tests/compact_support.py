"""What the `ctxfold compact` tests share: the sample, a copy in tmp, the output paths, a run."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app

runner = CliRunner()
SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"


def copy(tmp_path: Path, src: Path = SAMPLE) -> Path:
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def outputs(path: Path) -> tuple[Path, Path, Path]:
    stem = path.name.removesuffix(".jsonl")
    return (
        path.with_name(f"{stem}.compacted.jsonl"),
        path.with_name(f"{stem}.summary.md"),
        path.with_name(f"{stem}.ctxfold.json"),
    )


def run(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, ["compact", *args])
    return r.exit_code, r.stdout, r.stderr
