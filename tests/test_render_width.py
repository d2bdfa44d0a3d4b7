"""Terminal output at the widths people use (60, 80, 100 columns, and 160 when piped): tables
fit the width and never crop a number; a column left out to fit is named under the table; the
p90 of one file and the p90 pooled over a run's files are told apart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, REAL, real
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from ctxfold.cli import render
from ctxfold.cli.app import app

runner = CliRunner()
SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"
SIDECHAINS = FIXTURES / "real" / "claude-code-sidechains.jsonl"
POSTHOG = "claude-code/posthog-impact-dashboard.jsonl"
WIDTHS = [60, 80, 100, 160]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
ROW_COLUMNS = ("#", "estimate", "calibrated", "real", "error", "threshold", "margin", "decision", "note")


def run(monkeypatch: pytest.MonkeyPatch, width: int, args: list[str], *, terminal: bool = False) -> str:
    """``ctxfold ARGS`` on a console ``width`` columns wide (a terminal, or piped)."""
    console = Console(highlight=False, width=width, force_terminal=terminal, no_color=True)
    monkeypatch.setattr(render, "out", console)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return ANSI.sub("", result.stdout)


def json_doc(args: list[str]) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = orjson.loads(result.stdout)
    return doc


def assert_fits(text: str, width: int) -> None:
    wide = [ln for ln in text.splitlines() if cell_len(ln.rstrip()) > width]
    assert not wide, "\n".join(wide)


def rows_of(text: str) -> tuple[list[str], dict[int, list[str]]]:
    """The header of the requests table and its rows by request number (continuation lines of a
    wrapped note are left out)."""
    lines = text.splitlines()
    start = next(
        i
        for i, ln in enumerate(lines)
        if ln.split()[:2] == ["#", "estimate"] or ln.split()[:2] == ["#", "calibrated"]
    )
    header = lines[start].split()
    rows = {}
    for ln in lines[start + 1 :]:
        cells = ln.split()
        if not cells or cells[0] == "left":
            break
        if cells[0].isdigit():
            rows[int(cells[0])] = cells
    return header, rows


def sessions() -> list[Path]:
    found = [SAMPLE, SIDECHAINS]
    if (REAL / POSTHOG).is_file():
        found.append(REAL / POSTHOG)
    return found


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", sessions(), ids=lambda p: p.name)
def test_report_rows_fit_and_every_number_is_whole(
    monkeypatch: pytest.MonkeyPatch, width: int, path: Path
) -> None:
    args = ["report", "--all", "--no-profile", str(path)]
    text = run(monkeypatch, width, args, terminal=True)
    doc = json_doc(args)["files"][0]
    assert_fits(text, width)
    assert "…" not in text
    header, rows = rows_of(text)
    assert header[:1] == ["#"] and "calibrated" in header and "real" in header and "error" in header
    assert sorted(rows) == [r["index"] for r in doc["requests"]]
    left_out = [c for c in ROW_COLUMNS if c not in header]
    if left_out:  # said, not silent
        said = " ".join(text.split("left out at this width:")[1].split())
        assert all(c in said for c in left_out), (left_out, said)
    assert not (width == 160 and left_out)  # piped: the whole table
    for r in doc["requests"]:
        line = rows[r["index"]]
        for col in ("estimate", "calibrated", "real", "threshold", "margin"):
            if col in header:
                value = r[col]
                assert (f"{value:,}" if value is not None else "—") in line, (col, line)


def test_posthog_at_80_columns_shows_the_rows_the_sweep_saw_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """``COLUMNS=80 ctxfold report posthog…``: requests 82, 83 and 183 were shown as '…' and
    108,341 as '108,3…'."""
    text = run(monkeypatch, 80, ["report", str(real(POSTHOG))], terminal=True)
    assert_fits(text, 80)
    _, rows = rows_of(text)
    assert sorted(rows) == [0, 82, 83, 183]
    assert "108,341" in rows[82] and "…" not in text
    assert "threshold (180,000 on every row)" in " ".join(text.split())


def test_piped_report_keeps_every_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped output is 160 wide: the whole table, nothing said about left-out columns."""
    text = run(monkeypatch, 160, ["report", "--all", str(SIDECHAINS)])
    header, _ = rows_of(text)
    assert header == list(ROW_COLUMNS)
    assert "left out" not in text


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", sessions(), ids=lambda p: p.name)
def test_estimate_keeps_the_number_columns_and_gives_way_on_previews(
    monkeypatch: pytest.MonkeyPatch, width: int, path: Path
) -> None:
    text = run(monkeypatch, width, ["estimate", str(path)], terminal=True)
    doc = json_doc(["estimate", str(path)])["files"][0]
    assert_fits(text, width)
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.split()[:3] == ["#", "role", "tokens"])
    assert "largest messages" in lines[start]
    for lm, line in zip(doc["largest"], lines[start + 1 :], strict=False):
        cells = line.split()
        assert cells[:3] == [str(lm["position"]), lm["role"], f"{lm['tokens']:,}"], line
        first_word = lm["preview"].split()[0] if lm["preview"].split() else ""
        assert line.split(None, 3)[3].startswith(first_word[:8]) if first_word else True


def test_estimate_too_narrow_for_previews_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    text = run(monkeypatch, 36, ["estimate", str(SIDECHAINS)], terminal=True)
    assert "previews left out at this width" in " ".join(text.split())
    doc = json_doc(["estimate", str(SIDECHAINS)])["files"][0]
    for lm in doc["largest"]:
        assert f"{lm['tokens']:,}" in text


def test_brief_of_one_file_says_1_file(monkeypatch: pytest.MonkeyPatch) -> None:
    text = run(monkeypatch, 160, ["report", "--brief", "--no-profile", str(SAMPLE)])
    assert "all 1 files" not in text
    assert re.search(r"^1 file$", text, re.M), text


def test_brief_tells_a_files_p90_from_the_pooled_p90(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A file's own p90 (its table row) and the p90 of every file's requests pooled (the totals)
    are different figures, and the totals say which they are."""
    files = [FIXTURES / "anthropic" / "session.jsonl", SAMPLE, SIDECHAINS]
    args = ["report", "--brief", "--no-profile", *map(str, files)]
    text = " ".join(run(monkeypatch, 160, args).split())
    doc = json_doc(args)
    per_file = [f["summary"]["p90_error_pct"] for f in doc["files"]]
    pooled = doc["totals"]["p90_error_pct"]
    assert pooled not in per_file  # not one file's figure
    whole = json_doc([a for a in args if a != "--brief"])  # each file's requests too
    n = sum(
        1
        for f in whole["files"]
        for r in f["requests"]
        if r["error_pct"] is not None and not r["first_in_segment"]
    )
    assert f"pooled over the 3 files' {n} requests" in text
    assert f"p90 {pooled}%" in text
    for p in per_file:
        assert f"{p}%" in text


@pytest.mark.parametrize("width", [60, 80])
def test_brief_fits_and_keeps_numbers(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    files = [SAMPLE, SIDECHAINS, FIXTURES / "anthropic" / "session.jsonl"]
    args = ["report", "--brief", "--no-profile", *map(str, files)]
    text = run(monkeypatch, width, args, terminal=True)
    assert_fits(text, width)
    assert "…" not in text
    for f in json_doc(args)["files"]:
        s = f["summary"]
        assert f"{s['p90_error_pct']}%" in text
