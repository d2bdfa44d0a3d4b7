"""Piped output laid out as Rich lays it out, without loading Rich.

Printed to a pipe or a file, Rich writes no styles, and what it prints for lines of one-cell
characters and a borderless table of them is plain: words wrapped at the width, each column as
wide as its widest cell (or its minimum), cells padded to it, two spaces between columns (a
table's cells may hold characters two cells wide, CJK's: Rich's measure of one is all it takes).
Loading Rich's console and tables for that is about 50 ms of a piped ``estimate`` (7 % of a
re-run after a 200 MB session grew), so such output is built here. Anything else that needs
measuring (a zero-width or joining character, a control character, a word longer than the
width, a wide character in wrapped text) returns None, and Rich prints it.
``tests/test_render_plain.py`` checks both give the same text.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from itertools import pairwise


def no_terminal(stream: object) -> bool:
    """Whether Rich takes ``stream`` for no terminal, found without loading it: not a TTY (or
    closed, or no real file), and no FORCE_COLOR or TTY_COMPATIBLE saying it is one."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    try:
        return not stream.isatty()  # type: ignore[attr-defined]
    except (AttributeError, ValueError):  # closed, or not a real file
        return True


def width(fixed: object) -> int | None:
    """``fixed`` (a console's set width) when stdout takes no styles; None when Rich is to print."""
    return fixed if isinstance(fixed, int) and no_terminal(sys.stdout) else None


def cells(text: str) -> int | None:
    """The cells ``text`` takes as Rich measures it, when each of its characters is printable and
    takes one or two cells on its own (a CJK ideograph takes two); else None (a combining mark,
    an emoji with a variation selector, a control character: Rich measures those)."""
    if text.isascii():
        return len(text) if text.isprintable() else None
    if text in _measured_cells:  # a preview is measured to lay out, to cut and to print
        return _measured_cells[text]
    if len(_measured_cells) > 4096:
        _measured_cells.clear()
    _measured_cells[text] = n = _cells(text)
    return n


def _cells(text: str) -> int | None:
    if not text.isprintable():
        return None
    from rich.cells import cell_len  # Rich's measure alone: no console, no styles

    wide = {c: cell_len(c) for c in set(text) if not c.isascii()}
    if any(w not in (1, 2) for w in wide.values()):
        return None
    # one cell a character, and one more for each wide one (counted by ``str.count``, not by a
    # loop over a long preview's characters)
    total = len(text) + sum(text.count(c) for c, w in wide.items() if w == 2)
    return total if total == cell_len(text) else None  # (no characters that join)


_measured_cells: dict[str, int | None] = {}


def one_cell(text: str) -> bool:
    """Whether every character of ``text`` is printable and one cell wide as Rich measures it."""
    return cells(text) == len(text)


def crop(text: str, room: int) -> str:
    """``text`` (whose ``cells`` are known) cut to ``room`` cells with an ellipsis, as Rich cuts
    a cell that overflows: a wide character that would cross the edge is a space."""
    if (cells(text) or 0) <= room:
        return text
    if text.isascii():
        return text[: room - 1] + "…"
    from rich.cells import set_cell_size

    return set_cell_size(text, room - 1) + "…"


def line(text: str, room: int) -> str | None:
    """``text`` as one printed line, or None when it must be measured or wrapped."""
    return text + "\n" if len(text) <= room and one_cell(text) else None


def wrap(text: str, room: int, *, keep_spaces: bool = False) -> list[str] | None:
    """``text`` in lines of at most ``room`` cells, cut where Rich's word wrap cuts it (before a
    word, with the spaces after it, that would pass the edge), each without its trailing spaces
    (with ``keep_spaces``, as a printed ``Text`` keeps them: those past the edge cut off); a word
    longer than ``room`` folded as Rich folds it. None when a character needs measuring."""
    if not one_cell(text):
        return None
    if len(text) <= room:  # no word passes the edge
        return [text if keep_spaces else text.rstrip()]
    import re

    cuts, used = [], 0
    for word in re.finditer(r"\s*\S+\s*", text):
        length = len(word.group().rstrip())
        if length <= room - used:
            used += len(word.group())
        elif length > room:  # folded as Rich folds it: on a line of its own, ``room`` cells a line
            start, whole = word.start(), word.group()
            pieces = [whole[i : i + room] for i in range(0, len(whole), room)]
            for i, piece in enumerate(pieces):
                if start:
                    cuts.append(start)
                if i < len(pieces) - 1:
                    start += len(piece)
                else:
                    used = len(piece)
        elif used and word.start():
            cuts.append(word.start())
            used = len(word.group())
    bounds = [0, *cuts, len(text)]
    lines = [text[a:b] for a, b in pairwise(bounds)]
    if not keep_spaces:
        return [x.rstrip() for x in lines]
    return [x[:room] for x in lines]  # (only spaces pass the edge)


def table(
    columns: Sequence[tuple[str, Sequence[str], str]], room: int, least: Sequence[int] = ()
) -> str | None:
    """A borderless table (header row, then the cells; each column ``(name, cells, justify)``,
    "left" or else right) as Rich prints it piped, each column at least ``least[i]`` cells wide;
    None when a cell must be measured or the table needs more than ``room`` cells."""
    rows = table_rows(columns, room, least)
    return None if rows is None else "".join("  ".join(row) + "\n" for row in rows)


def table_rows(
    columns: Sequence[tuple[str, Sequence[str], str]], room: int, least: Sequence[int] = ()
) -> list[list[str]] | None:
    """``table``'s rows, header first, each cell padded to its column's width (two spaces go
    between them); None as for ``table``."""
    if not columns:
        return None
    widths, sizes = [], []
    for i, (name, column, _) in enumerate(columns):
        every = [name, *column]
        size = _measured(every)
        if size is None:
            return None  # zero-width, joining or control characters: Rich measures them
        if any(x[:1].isspace() or x[-1:].isspace() for x in every):
            return None  # Rich trims the spaces around a justified cell
        sizes.append(size)
        widths.append(max(least[i] if i < len(least) else 0, *size))
    if sum(widths) + 2 * (len(columns) - 1) > room:
        return None  # something wraps or folds
    left = [justify == "left" for _, _, justify in columns]
    texts = [[name, *column] for name, column, _ in columns]
    rows = []
    for j in range(len(texts[0])):
        row = []
        for text, size, w, on_left in zip(texts, sizes, widths, left, strict=True):
            pad = " " * (w - size[j])
            row.append(text[j] + pad if on_left else pad + text[j])
        rows.append(row)
    return rows


def _measured(texts: Sequence[str]) -> list[int] | None:
    """The ``cells`` of each of ``texts``, or None when one must be measured by Rich."""
    out = []
    for text in texts:
        n = cells(text)
        if n is None:
            return None
        out.append(n)
    return out
