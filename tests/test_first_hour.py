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
