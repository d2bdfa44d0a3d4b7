"""Warnings of the run (the config file's unknown keys, a corrupt profile) reach stderr, or the
--json document's top-level ``warnings``."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app

runner = CliRunner()
SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"


@pytest.fixture
def noisy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxfold.toml").write_text("[defaults]\nwindw = 5\n")
    profile = Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "profile.json"
    profile.parent.mkdir(parents=True)
    profile.write_bytes(b"{truncated")
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        ["estimate", str(SAMPLE)],
        ["report", str(SAMPLE)],
        ["compact", str(SAMPLE), "--dry-run", "--force"],
    ],
)
def test_config_and_profile_warnings_are_shown(noisy: Path, command: list[str]) -> None:
    text = runner.invoke(app, command)
    assert text.exit_code == 0, text.output
    assert "unknown key 'windw' in [defaults], ignored; did you mean 'window'?" in text.stderr
    assert "corrupt profile" in text.stderr and "ctxfold profile reset" in text.stderr
    (noisy / "ctxfold.toml").write_text("[defaults]\nwindw = 5\n")
    doc = orjson.loads(runner.invoke(app, [*command, "--json"]).stdout)
    assert any("windw" in w for w in doc["warnings"])
    profile = Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "profile.json"
    profile.write_bytes(b"{truncated")  # the runs above replaced it with what they learned
    nothing = runner.invoke(app, [*command, "--no-profile"])
    assert nothing.exit_code == 0 and "corrupt profile" not in nothing.stderr
    assert profile.read_bytes() == b"{truncated"  # --no-profile neither reads nor writes it


def test_config_and_profile_show_name_their_warnings(noisy: Path) -> None:
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 0 and "'windw'" in r.stderr
    assert "'windw'" in orjson.loads(runner.invoke(app, ["config", "--json"]).stdout)["warnings"][0]
    r = runner.invoke(app, ["profile", "show"])
    assert r.exit_code == 0 and "corrupt profile" in r.stderr
    doc = orjson.loads(runner.invoke(app, ["profile", "show", "--json"]).stdout)
    assert "corrupt profile" in doc["warnings"][0]
