"""Piped output laid out as Rich lays it out, without loading Rich.

Printed to a pipe or a file, Rich writes no styles, and what it prints for lines of one-cell
characters and a borderless table of them is plain: words wrapped at the width, each column as
wide as its widest cell (or its minimum), cells padded to it, two spaces between columns.
Loading Rich's console and tables for that is about 50 ms of a piped ``estimate`` (7 % of a
re-run after a 200 MB session grew), so such output is built here. Anything that needs
measuring (a wide or zero-width character, a control character, a word longer than the width)
returns None, and Rich prints it. ``tests/test_render_plain.py`` checks both give the same text.
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


def one_cell(text: str) -> bool:
    """Whether every character of ``text`` is printable and one cell wide as Rich measures it."""
    if text.isascii():
        return text.isprintable()
    from rich.cells import cell_len  # Rich's measure alone: no console, no styles

    return text.isprintable() and all(cell_len(c) == 1 for c in set(text) if not c.isascii())


def line(text: str, room: int) -> str | None:
    """``text`` as one printed line, or None when it must be measured or wrapped."""
    return text + "\n" if len(text) <= room and one_cell(text) else None


def wrap(text: str, room: int) -> list[str] | None:
    """``text`` in lines of at most ``room`` cells, cut where Rich's word wrap cuts it (before a
    word, with the spaces after it, that would pass the edge), each without its trailing spaces;
    None when a word alone is longer than ``room`` (Rich folds it) or a character needs measuring."""
    if not one_cell(text):
        return None
    import re

    cuts, used = [], 0
    for word in re.finditer(r"\s*\S+\s*", text):
        length = len(word.group().rstrip())
        if length <= room - used:
            used += len(word.group())
        elif length > room:
            return None
        elif used and word.start():
            cuts.append(word.start())
            used = len(word.group())
    bounds = [0, *cuts, len(text)]
    return [text[a:b].rstrip() for a, b in pairwise(bounds)]


def table(
    columns: Sequence[tuple[str, Sequence[str], str]], room: int, least: Sequence[int] = ()
) -> str | None:
    """A borderless table (header row, then the cells; each column ``(name, cells, justify)``,
    "left" or else right) as Rich prints it piped, each column at least ``least[i]`` wide; None
    when a cell must be measured or the table needs more than ``room`` columns."""
    if not columns:
        return None
    widths = []
    for i, (name, cells, _) in enumerate(columns):
        every = [name, *cells]
        if not all(one_cell(x) for x in every):
            return None  # wide, zero-width or control characters: Rich measures them
        if any(x[:1].isspace() or x[-1:].isspace() for x in every):
            return None  # Rich trims the spaces around a justified cell
        widths.append(max(least[i] if i < len(least) else 0, *map(len, every)))
    if sum(widths) + 2 * (len(columns) - 1) > room:
        return None  # something wraps or folds
    pads = [str.ljust if justify == "left" else str.rjust for _, _, justify in columns]
    rows = zip(*([name, *cells] for name, cells, _ in columns), strict=True)
    return "".join(
        "  ".join(pad(x, w) for pad, x, w in zip(pads, row, widths, strict=True)) + "\n" for row in rows
    )
