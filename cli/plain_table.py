"""A borderless table that does not fit its width, laid out as Rich lays it out, without Rich.

``plain.table_rows`` builds a table whose every cell fits on one line. A table too wide for the
terminal (a folder's long file names, ``report --by session``'s paths) is one Rich shrinks: it
narrows the columns that may wrap, widest first, then wraps and folds their cells onto more
lines. Rich lays out each of a folder's thousands of cells as a renderable of its own (2,000
sessions: about 2 s); the same layout, worked out here from the same rules (Rich's
``Table._calculate_column_widths``, ``_collapse_widths`` and ``Measurement``, its padding of
one space each side but at the edges), takes milliseconds. Only one-cell characters are laid
out here; anything Rich must measure returns None, and Rich prints the table.
``tests/test_render_plain.py`` checks both give the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ctxfold.cli.plain import cells, one_cell, wrap


class Column(NamedTuple):
    """A column as ``render_report.print_fitted`` gives it to Rich: its header, its cells, "left"
    or "right", whether its cells wrap (else each stays on one line) and its least width."""

    name: str
    cells: Sequence[str]
    justify: str
    wrap: bool
    least: int


def rows(columns: Sequence[Column], room: int) -> list[list[str]] | None:
    """The table's lines, header first, each the cells' pieces (two spaces go between them),
    for a table laid out in ``room`` cells (the console's width, or the table's own when it is
    set wider); None when a cell needs Rich's measuring or the header would wrap."""
    if not columns or any(not _plain(c) for c in columns):
        return None
    widths = _widths(columns, room)
    inner = [w - sum(_pads(i, len(columns))) for i, w in enumerate(widths)]
    if min(inner) < 1:
        return None
    out: list[list[str]] = []
    for j in range(len(columns[0].cells) + 1):
        pieces = []
        for c, w in zip(columns, inner, strict=True):
            lines = _lines(c.cells[j - 1] if j else c.name, w, c)
            if lines is None or (j == 0 and len(lines) > 1):
                return None  # (a header Rich would align to the bottom of its row)
            pieces.append(lines)
        for k in range(max(len(p) for p in pieces)):
            out.append([p[k] if k < len(p) else " " * w for p, w in zip(pieces, inner, strict=True)])
    return out


def _plain(c: Column) -> bool:
    """Whether every text of ``c`` is laid out here: measured without Rich, no spaces around it
    (Rich trims them), a header Rich would not read as markup or emoji codes."""
    if any(ch in c.name for ch in "[]:") or not one_cell(c.name):
        return False
    for text in c.cells:
        if cells(text) is None or text[:1].isspace() or text[-1:].isspace():
            return False
        if c.wrap and not one_cell(text):
            return False  # a wide character in wrapped text
    return True


def _pads(i: int, n: int) -> tuple[int, int]:
    """A cell's padding (left, right): one space each side but at the table's edges."""
    return (0 if i == 0 else 1), (0 if i == n - 1 else 1)


def _widths(columns: Sequence[Column], room: int) -> list[int]:
    """Each column's width, padding included, as Rich's ``Table._calculate_column_widths``
    works it out for a borderless table that does not expand."""
    n = len(columns)
    sizes = [_sizes((c.name, *c.cells)) for c in columns]  # measured once
    pads = [sum(_pads(i, n)) for i in range(n)]
    ranges = [_measure(z, c.least, room, p) for z, c, p in zip(sizes, columns, pads, strict=True)]
    widths = [hi or 1 for _, hi in ranges]
    if sum(widths) > room:
        widths = _collapse(widths, [c.wrap for c in columns], room)
        if sum(widths) > room:  # last resort: every column narrower, evenly
            widths = _ratio_reduce(sum(widths) - room, [1] * n, widths, widths)
        widths = [
            _measure(z, c.least, w, p)[1] for z, c, w, p in zip(sizes, columns, widths, pads, strict=True)
        ]
    return widths


def _sizes(texts: Sequence[str]) -> tuple[int, int]:
    """Rich's measure of each ``Text`` is (its longest word, its length) in cells; the most of
    each over ``texts``."""
    word = size = 0
    for text in texts:
        n = cells(text) or 0
        words = text.split()
        if words:
            word = max(word, max(map(len, words)) if len(text) == n else max(cells(w) or 0 for w in words))
        else:
            word = max(word, n)
        size = max(size, n)
    return word, size


def _measure(sizes: tuple[int, int], least: int, room: int, pad: int) -> tuple[int, int]:
    """Rich's ``Table._measure_column`` for cells whose longest word and longest text are
    ``sizes``: the least and most the column needs in ``room`` cells, padded, at least
    ``least``. Each cell's ``Measurement.get`` of its padded text comes to (word + pad, length +
    pad), each at most ``room`` (a word is never longer than its text): so does their most."""
    if room < 1:
        return 0, 0
    if room - pad < 1:  # (``Padding.__rich_measure__``: the room, whatever the cell)
        lo = hi = room
    else:
        word, size = sizes
        lo, hi = min(min(word, room) + pad, room), min(min(size, room) + pad, room)
    least = max(0, least + pad)
    return max(lo, least), max(hi, least)


def _collapse(widths: list[int], wrapable: list[bool], room: int) -> list[int]:
    """Rich's ``Table._collapse_widths``: the widest columns that may wrap narrowed to the next
    widest, in turn, until the table fits or none is left to narrow."""
    excess = sum(widths) - room
    if not any(wrapable):
        return widths
    while sum(widths) and excess > 0:
        widest = max(w for w, ok in zip(widths, wrapable, strict=True) if ok)
        second = max(w if ok and w != widest else 0 for w, ok in zip(widths, wrapable, strict=True))
        ratios = [1 if (w == widest and ok) else 0 for w, ok in zip(widths, wrapable, strict=True)]
        if not any(ratios) or not widest - second:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - room
    return widths


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """Rich's ``_ratio.ratio_reduce``: ``total`` taken from ``values`` in proportion to
    ``ratios``, at most ``maximums`` from each."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums, strict=True)]
    left_ratio = sum(ratios)
    if not left_ratio:
        return values[:]
    left, out = total, []
    for r, most, v in zip(ratios, maximums, values, strict=True):
        if r and left_ratio > 0:
            taken = min(most, round(r * left / left_ratio))
            out.append(v - taken)
            left -= taken
            left_ratio -= r
        else:
            out.append(v)
    return out


def _lines(text: str, width: int, c: Column) -> list[str] | None:
    """``text`` as Rich prints it in a cell ``width`` cells wide: wrapped (and a word longer than
    the width folded) if its column wraps, then justified and padded to the width."""
    if c.wrap:
        parts = wrap(text, width, keep_spaces=True)
        if parts is None:
            return None
    else:
        size = cells(text)
        if size is None or (size > width and len(text) != size):
            return None  # a wide character to cut: Rich cuts it
        parts = [text]
    if c.justify == "left":
        return [p[:width] + " " * (width - min(width, cells(p) or 0)) for p in parts]
    return [" " * (width - min(width, cells(p.rstrip()) or 0)) + p.rstrip()[:width] for p in parts]
