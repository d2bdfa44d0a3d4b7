"""Piped output and tables are built without Rich's per-cell layout (``plain.py``) when nothing
in them needs measuring; what they print must be exactly what Rich prints for the same text."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from ctxfold.cli import plain, render, render_estimate, render_report
from ctxfold.cli.render_report import Col

# words with the characters the tables hold (digits, commas, %, $, the dash of a missing
# value), and some Rich must measure itself (wide CJK, an emoji, a tab, a combining accent)
WORDS = st.text(alphabet="abcXYZ019,.%$#-_/ —é", min_size=0, max_size=14) | st.sampled_from(
    ["日本語", "👍", "a\tb", "e\u0301", "LATE, OVERFLOW", "recorded compaction"]
)


def _both(cols: list[Col], width: int, terminal: bool = False) -> tuple[str | None, str]:
    """(what the fast path prints, or None when it declines; what Rich's table prints), piped or
    on a terminal that takes styles."""
    styles: dict[str, Any] = {"force_terminal": True, "color_system": "truecolor"} if terminal else {}
    fast, rich = (Console(file=io.StringIO(), width=width, highlight=False, **styles) for _ in range(2))
    need = sum(c.need() for c in cols) + 2 * (len(cols) - 1)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(render, "out", fast)
        rows = render_report.fast_rows(cols, need, width)
        if rows is not None:
            render.print_rows(rows)
        m.setattr(render, "out", rich)
        render_report._print_table(cols, need, width)
    return (fast.file.getvalue() if rows is not None else None), rich.file.getvalue()  # type: ignore[attr-defined]


def _tables(widest: int) -> Callable[[Callable[..., None]], Any]:
    """A property test over tables: ``ncols`` columns of ``nrows`` cells drawn from ``data``,
    laid out ``width`` cells wide (20 to ``widest``), piped or on a ``terminal``."""
    drawn = given(
        data=st.data(),
        ncols=st.integers(1, 6),
        nrows=st.integers(0, 6),
        width=st.integers(20, widest),
        terminal=st.booleans(),
    )
    return lambda test: settings(max_examples=300, deadline=None)(drawn(test))


@_tables(widest=120)
def test_plain_table_is_what_rich_prints(
    data: st.DataObject, ncols: int, nrows: int, width: int, terminal: bool
) -> None:
    headers = st.from_regex(r"[a-f](?:[a-f #]{0,8}[a-f])?", fullmatch=True)  # as the headers are
    fast, rich = _both(_columns(data, ncols, nrows, headers, WORDS), width, terminal)
    if fast is not None:
        assert fast == rich


def _columns(
    data: st.DataObject, ncols: int, nrows: int, names: st.SearchStrategy[str], cells: st.SearchStrategy[str]
) -> list[Col]:
    """``ncols`` columns of ``nrows`` cells, each left or right, wrapping (and folding) or not."""
    cols = []
    for _ in range(ncols):
        name = data.draw(names)
        column = data.draw(st.lists(cells, min_size=nrows, max_size=nrows))
        justify = data.draw(st.sampled_from(["left", "right"]))
        wrap = data.draw(st.booleans())
        fold = data.draw(st.sampled_from([0, 12])) if wrap else 0
        cols.append(Col(name, column, justify=justify, wrap=wrap, fold=fold))
    return cols


# what a table too wide for its terminal holds: words, and paths longer than a column (folded)
LONG = st.text(alphabet="abc019,.%$-_/", min_size=1, max_size=14) | st.text(
    alphabet="abc019-_./", min_size=15, max_size=90
)


@_tables(widest=160)
def test_a_table_too_wide_is_wrapped_as_rich_wraps_it(
    data: st.DataObject, ncols: int, nrows: int, width: int, terminal: bool
) -> None:
    """Columns narrowed and cells wrapped and folded (``plain_table``): of one-cell characters,
    never left to Rich, and what Rich prints."""
    names = st.sampled_from(["file", "models", "calls", "cost", "session", "p90"])
    cells = st.lists(LONG, min_size=1, max_size=4).map(" ".join)
    fast, rich = _both(_columns(data, ncols, nrows, names, cells), width, terminal)
    assert fast == rich


@pytest.mark.parametrize("terminal", [False, True])
def test_a_folder_sized_table_takes_the_fast_path(terminal: bool) -> None:
    """The brief table of a folder (ASCII names, numbers, dashes) fits and is built directly,
    its header bold on a terminal as Rich makes it."""
    n = 500
    cols = [
        Col("file", [f"{i:05d}-session.jsonl" for i in range(n)], justify="left", wrap=True, fold=12),
        Col("requests", [f"{i * 7:,}" for i in range(n)]),
        Col("p90 error", ["—" if i % 3 else f"{i / 7:.2f}%" for i in range(n)]),
        Col("cost", ["—" if i % 2 else f"${i / 3:.2f}" for i in range(n)]),
    ]
    fast, rich = _both(cols, 160, terminal)
    assert fast is not None and fast == rich
    assert ("\x1b[1m" in fast) == terminal


def _rich_only(m: pytest.MonkeyPatch) -> None:
    """Everything printed through Rich's own layout: the reference the fast paths must equal."""
    m.setattr(plain, "width", lambda fixed: None)
    m.setattr(plain, "table_rows", lambda *args, **kwargs: None)
    m.setattr(render, "write_plain", lambda text: False)


BUNDLED = sorted(p for p in FIXTURES.rglob("*.json*") if p.is_file())


def _estimate(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    rich: bool,
    width: int = 160,
    command: tuple[str, ...] = ("estimate",),
    terminal: bool = False,
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """``estimate PATH`` (or another ``command``) piped, or to a terminal that takes styles,
    through the fast paths or with Rich alone. PATH is given relative to the fixtures, so what
    is printed does not depend on where the clone is (a long absolute path on the first line
    does not fit a narrow width, and goes to Rich)."""
    from typer.testing import CliRunner

    from ctxfold.cli.app import app

    monkeypatch.chdir(FIXTURES)
    monkeypatch.setattr(render, "out", render._LazyConsole(highlight=False, width=width))
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    if rich:
        _rich_only(monkeypatch)
    done = CliRunner().invoke(app, [*command, "--no-cache", "--no-profile", str(path.relative_to(FIXTURES))])
    return done.exit_code, done.stdout


@pytest.mark.parametrize("width", [60, 100, 160])
def test_a_piped_estimate_prints_what_rich_prints(width: int) -> None:
    """Every bundled session, estimated piped at a width (160 when no COLUMNS says otherwise):
    the text built without Rich is Rich's (facts wrapped, previews cut), and most take that path
    (a wide character, or a width too narrow for the previews, goes to Rich)."""
    built = []
    for path in BUNDLED:
        with pytest.MonkeyPatch.context() as m:
            code, fast = _estimate(path, m, rich=False, width=width)
            made = render.out.made  # type: ignore[attr-defined]
        with pytest.MonkeyPatch.context() as m:
            rich_code, slow = _estimate(path, m, rich=True, width=width)
        assert (code, fast) == (rich_code, slow), path
        if code == 0 and not made:
            built.append(path)
    assert len(built) >= len(BUNDLED) // 2, f"{len(built)} of {len(BUNDLED)} built without Rich"


@pytest.mark.parametrize("width", [40, 60, 100])
@pytest.mark.parametrize("command", [("estimate",), ("report",), ("report", "--explain")])
def test_on_a_terminal_the_text_and_styles_are_rich_s(command: tuple[str, ...], width: int) -> None:
    """On a terminal (styles written), headings (wrapped where they do not fit), facts and
    tables laid out without Rich's tables carry the styles Rich gives them, escape for escape,
    for every bundled session."""
    for path in BUNDLED:
        with pytest.MonkeyPatch.context() as m:
            fast = _estimate(path, m, rich=False, width=width, command=command, terminal=True)
            styled = render.out.color_system is not None
        with pytest.MonkeyPatch.context() as m:
            slow = _estimate(path, m, rich=True, width=width, command=command, terminal=True)
        assert fast == slow, path
        assert styled and (fast[0] != 0 or "\x1b[1m" in fast[1]), path


@pytest.mark.parametrize("width", [60, 120])
@pytest.mark.parametrize("command", [("report",), ("report", "--explain", "--simulate-compaction")])
def test_a_piped_report_prints_what_rich_prints(width: int, command: tuple[str, ...]) -> None:
    """``report`` piped: its facts, headings and tables built without Rich are what Rich prints,
    for every bundled session; most print that way."""
    built = 0
    for path in BUNDLED:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(render, "write_plain", _counting(render.write_plain))
            fast = _estimate(path, m, rich=False, width=width, command=command)
            built += render.write_plain.written  # type: ignore[attr-defined]
        with pytest.MonkeyPatch.context() as m:
            slow = _estimate(path, m, rich=True, width=width, command=command)
        assert fast == slow, path
    assert built >= len(BUNDLED) * 3  # (heading, facts, rows, blank line: per session)


@pytest.mark.parametrize(
    "env",
    [{"COLORTERM": "truecolor"}, {"TERM": "xterm-256color"}, {"TERM": "xterm"}, {"NO_COLOR": "1"}],
    ids=lambda env: next(iter(env.items()))[1],
)
def test_on_a_terminal_styled_lines_are_written_with_rich_s_escapes(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A terminal's colour system (or NO_COLOR, which keeps bold and drops the cyan): the
    headings and tables of every bundled session's ``estimate`` are written with the escapes
    Rich gives their styles there, not printed through Rich, and the text is Rich's."""
    for name in ("COLORTERM", "TERM"):
        monkeypatch.delenv(name, raising=False)
    written = 0
    for path in BUNDLED:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(render, "write_plain", _counting(render.write_plain))
            m.setattr(render, "_escape_codes", {})
            fast = _estimate(path, m, rich=False, width=100, terminal=True, env=env)
            written += render.write_plain.written  # type: ignore[attr-defined]
            asked = dict(render._escape_codes)
        with pytest.MonkeyPatch.context() as m:
            slow = _estimate(path, m, rich=True, width=100, terminal=True, env=env)
        assert fast == slow, path
        if fast[0] == 0:
            assert {style for _, style in asked} >= {"bold"}, path
            assert all(v is not None for v in asked.values()), path
            assert ("\x1b[36m" in fast[1]) == ("NO_COLOR" not in env and "cyan" in str(asked)), path
    assert written >= len(BUNDLED) * 3


def _counting(write: Any) -> Any:
    def counted(text: str | None) -> bool:
        done = write(text)
        counted.written += int(done)  # type: ignore[attr-defined]
        return bool(done)

    counted.written = 0  # type: ignore[attr-defined]
    return counted


def test_piped_files_after_one_rich_printed_are_built_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder's estimate, piped: a file Rich must print (a combining accent in a preview) does
    not send the files after it to Rich (four seconds a thousand files); a CJK preview is built
    too, cut as Rich cuts it. The text is Rich's either way."""
    import json

    from typer.testing import CliRunner

    from ctxfold.cli.app import app

    source = (FIXTURES / "ctxfold" / "coding-session.jsonl").read_text().splitlines()
    opening = {"a": "Cafe\u0301 menu: ", "b": "結帳總額在價格含有千位分隔符時計算錯誤，請修正。" * 3, "c": ""}
    paths = []
    for name, words in opening.items():
        lines = [json.loads(line) for line in source]
        first = next(d for d in lines if d.get("role") == "user")
        first["parts"][0]["text"] = words + first["parts"][0]["text"] * 20  # among the largest
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
        paths.append(f"{name}.jsonl")
    monkeypatch.chdir(tmp_path)
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    outputs, built = [], []
    real = render_estimate._tables

    def recorded(*args: Any) -> Any:
        built.append(real(*args))
        return built[-1]

    for rich in (False, True):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(render, "out", render._LazyConsole(highlight=False, width=100))
            if rich:
                _rich_only(m)
            m.setattr(render_estimate, "_tables", recorded)
            done = CliRunner().invoke(app, ["estimate", "--no-cache", "--no-profile", *paths])
            outputs.append((done.exit_code, done.stdout))
    assert outputs[0] == outputs[1] and outputs[0][0] == 0
    assert [tables is not None for tables in built[:3]] == [False, True, True]
    assert "結帳總額" in outputs[0][1] and "…" in outputs[0][1]


@pytest.mark.parametrize("command", [["estimate"], ["report"], ["report", "--brief"]])
def test_a_piped_estimate_or_report_loads_no_rich_console(tmp_path: Path, command: list[str]) -> None:
    """Piped, a session whose output needs no measuring prints without Rich's console and tables
    (its measure of a character's width, ``rich.cells``, is all it may load); a report too, of
    one file or, briefly, of two."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    path = FIXTURES / "anthropic" / "requests.jsonl"  # lines that fit, one-cell characters
    paths = [
        str(path),
        *([str(FIXTURES / "ctxfold" / "coding-session.jsonl")] if "--brief" in command else []),
    ]

    def imported(**extra: str) -> set[str]:
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ctxfold", *command, "--no-profile", *paths],
            env={**env, **extra}, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if "import time:" in line}

    assert "rich.console" in imported(FORCE_COLOR="1")  # the measure is real: a terminal needs it
    loaded = imported()
    assert "ctxfold.tokens.session" in loaded
    assert not {"rich.console", "rich.table", "rich.text"} & loaded


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(alphabet="ab cd,.:()×—-", max_size=120) | st.lists(WORDS, max_size=30).map(" ".join),
    room=st.integers(5, 60),
)
def test_plain_wrap_cuts_where_rich_cuts(text: str, room: int) -> None:
    from rich.text import Text

    lines = plain.wrap(text, room)
    if lines is not None:  # (a word longer than the room is folded: the alphabet has few spaces)
        console = Console(file=io.StringIO(), width=200)
        wrapped = [str(line) for line in Text(text).wrap(console, room, overflow="fold")]
        assert lines == [line.rstrip() for line in wrapped]
        assert plain.wrap(text, room, keep_spaces=True) == wrapped  # as a printed Text keeps them
