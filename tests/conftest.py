"""Shared test set-up: every test runs with a clean environment and private config dirs,
and real transcripts come from ``../shared/fixtures-real`` (skipped cleanly when absent)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, settings

# `pytest -m fuzz --hypothesis-profile=long`: tests/test_fuzz.py's long run (1,500 mutated
# sessions per format, well over 100,000 mutated lines)
settings.register_profile("long", max_examples=1_500, deadline=None, suppress_health_check=list(HealthCheck))

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
REAL = Path(os.environ.get("CTXFOLD_REAL_FIXTURES", ROOT.parent / "shared" / "fixtures-real"))

_SECRET_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "CTXFOLD_CONFIG",
)


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    """Write ``rows`` as compact JSONL (one object per line) and return the path."""
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def sniff_head(path: Path) -> list[Any]:
    """What format detection sees: the first parsed lines, skipping lines that are not JSON."""
    from itertools import islice

    from ctxfold.formats.base import Line
    from ctxfold.formats.jsonl import iter_lines
    from ctxfold.formats.loader import SNIFF_LINES

    parsed = (x.data for x in iter_lines(path) if isinstance(x, Line))
    return list(islice(parsed, SNIFF_LINES))


def detect(path: Path) -> str:
    """The format detection names for ``path``."""
    from ctxfold.formats.registry import detect as detect_objs

    return detect_objs(sniff_head(path))[0]


def claude_usage_lines(path: Path) -> list[tuple[int, str, int, int]]:
    """Each main-chain line of a Claude Code log that carries a usage record, read straight from
    the JSON: (line index, message id, prompt tokens = input + cache creation + cache read,
    cache reads). A response split over several lines repeats its id."""
    out = []
    for i, line in enumerate(path.read_bytes().splitlines()):
        d = orjson.loads(line)
        m = d.get("message") or {}
        if d.get("type") != "assistant" or d.get("isSidechain") or m.get("model") == "<synthetic>":
            continue
        if u := m.get("usage"):
            reads = u.get("cache_read_input_tokens", 0)
            out.append(
                (i, m["id"], u["input_tokens"] + u.get("cache_creation_input_tokens", 0) + reads, reads)
            )
    return out


def real_files(source: str = "*") -> list[Path]:
    """Every real session file, or those of one source folder (empty when ../shared is absent)."""
    return sorted(REAL.glob(f"{source}/*.jsonl")) if REAL.is_dir() else []


def real(rel: str) -> Path:
    """One real fixture by path relative to fixtures-real, or skip the test."""
    path = REAL / rel
    if not path.is_file():
        pytest.skip(f"real fixture {rel} not available (../shared absent)")
    return path


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in _SECRET_VARS:
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
