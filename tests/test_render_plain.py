"""Piped tables are built without Rich's per-cell layout (``render_report._plain``) when nothing
in them needs measuring; what they print must be exactly what Rich prints for the same table."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from ctxfold.cli import render, render_report
from ctxfold.cli.render_report import Col

# words with the characters the tables hold (digits, commas, %, $, the dash of a missing
# value), and some Rich must measure itself (wide CJK, an emoji, a tab, a combining accent)
WORDS = st.text(alphabet="abcXYZ019,.%$#-_/ —é", min_size=0, max_size=14) | st.sampled_from(
    ["日本語", "👍", "a\tb", "e\u0301", "LATE, OVERFLOW", "recorded compaction"]
)


def _both(cols: list[Col], width: int) -> tuple[str | None, str]:
    """(what the fast path builds, or None when it declines; what Rich prints), piped."""
    console = Console(file=io.StringIO(), width=width, highlight=False)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(render, "out", console)
        plain = render_report._plain(cols, width)
        need = sum(c.need() for c in cols) + 2 * (len(cols) - 1)
        render_report._print_table(cols, need, width)
    return plain, console.file.getvalue()  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    ncols=st.integers(1, 6),
    nrows=st.integers(0, 6),
    width=st.integers(20, 120),
)
def test_plain_table_is_what_rich_prints(data: st.DataObject, ncols: int, nrows: int, width: int) -> None:
    cols = []
    for _ in range(ncols):
        name = data.draw(st.from_regex(r"[a-f](?:[a-f #]{0,8}[a-f])?", fullmatch=True))  # as the headers are
        cells = data.draw(st.lists(WORDS, min_size=nrows, max_size=nrows))
        justify = data.draw(st.sampled_from(["left", "right"]))
        wrap = data.draw(st.booleans())
        fold = data.draw(st.sampled_from([0, 12])) if wrap else 0
        cols.append(Col(name, cells, justify=justify, wrap=wrap, fold=fold))
    plain, rich = _both(cols, width)
    if plain is not None:
        assert plain == rich


def test_a_folder_sized_table_takes_the_fast_path() -> None:
    """The brief table of a folder (ASCII names, numbers, dashes) fits and is built directly."""
    n = 500
    cols = [
        Col("file", [f"{i:05d}-session.jsonl" for i in range(n)], justify="left", wrap=True, fold=12),
        Col("requests", [f"{i * 7:,}" for i in range(n)]),
        Col("p90 error", ["—" if i % 3 else f"{i / 7:.2f}%" for i in range(n)]),
        Col("cost", ["—" if i % 2 else f"${i / 3:.2f}" for i in range(n)]),
    ]
    plain, rich = _both(cols, 160)
    assert plain is not None and plain == rich


def test_a_terminal_with_styles_is_left_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(file=io.StringIO(), width=100, force_terminal=True, color_system="standard")
    monkeypatch.setattr(render, "out", console)
    assert render_report._plain([Col("a", ["1"])], 100) is None
