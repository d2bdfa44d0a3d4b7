"""Terminal output of ``estimate``: per file, its heading, facts, the context by part and its
largest messages. Shares the consoles of :mod:`ctxfold.cli.render`; core computes every figure.

Laid out by ``plain.py`` wherever nothing needs Rich's measure: piped, written as it is (no
Rich console is made); on a terminal, the same lines, with the styles Rich gives them
(``render.print_rows``). Rich lays out the rest (a combining accent in a preview, a width too
narrow for the previews): the same text, at about 4 ms a file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ctxfold.cli import plain, render
from ctxfold.cli.render import heading, print_facts, print_rows, warn

if TYPE_CHECKING:
    from rich.console import JustifyMethod

    from ctxfold.engine.calibration import Prediction
    from ctxfold.tokens.estimate import FileEstimate

LARGEST = "largest messages"
LARGEST_LEAST = (4, 9, 7)  # the least widths of its columns "#", "role" and "tokens"
PART_STYLES = ("cyan", None, None)
Rows = list[list[str]]


def estimate(results: Sequence[tuple[FileEstimate, Prediction]]) -> None:
    for r, predicted in results:
        for w in r.warnings:
            warn(f"{r.path}: {w}")
        for s in r.skipped:
            warn(f"skipped {s}")
        _estimate_one(r, predicted)


def _estimate_one(r: FileEstimate, predicted: Prediction) -> None:
    facts = _estimate_facts(r, predicted)
    parts = [
        (cat.replace("_", " "), f"{n:,}", f"{n / max(1, r.context_tokens):.1%}")
        for cat, n in r.replay.by_category.items()
        if n
    ]
    parts.append(("framing", f"{r.replay.per_request:,}", ""))
    tables = _tables(r, parts, render.plain_width() or render.out.width)
    if tables is None:
        _estimate_rich(r, facts, parts)
        return
    heading(r.path, f"  ({r.format})")  # each piece as Rich prints it, piped without Rich's console
    print_facts(facts)
    print_rows(tables[0], PART_STYLES)
    if tables[1]:
        print_rows(tables[1])
    render.blank()


def _estimate_rich(r: FileEstimate, facts: list[tuple[str, str]], parts: list[tuple[str, str, str]]) -> None:
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    heading(r.path, f"  ({r.format})")
    print_facts(facts)
    table = Table(title=None, show_edge=False, pad_edge=False, box=None)
    table.add_column("part", style=PART_STYLES[0])
    table.add_column("tokens", justify="right")
    table.add_column("share", justify="right")
    for row in parts:
        table.add_row(*row)
    render.out.print(table)
    if r.largest:
        # The numbers whole at any width: the previews take what the other columns leave, cut
        # with an ellipsis, or are left out (saying so) when that is too little to read.
        columns, widths, cut = _largest_layout(r, render.out.width, cell_len)
        big = Table(show_edge=False, pad_edge=False, box=None)
        for (name, _, justify), w in zip(columns, widths, strict=True):
            big.add_column(name, justify=justify, no_wrap=True, min_width=w)
        rows = list(zip(*(cells for _, cells, _ in columns), strict=True))
        if cut:
            big.add_column(LARGEST, no_wrap=True, overflow="ellipsis", width=cut)
            for row, lm in zip(rows, r.largest, strict=True):
                big.add_row(*row, Text(lm.preview, no_wrap=True, overflow="ellipsis"))
        else:
            for row in rows:
                big.add_row(*row)
        render.out.print(big, crop=False)
        if not cut:
            print_facts([("", "message previews left out at this width; --json has them")], key_width=0)
    render.blank()


def _largest_layout(
    r: FileEstimate, width: int, measure: Callable[[str], int]
) -> tuple[list[tuple[str, list[str], JustifyMethod]], list[int], int]:
    """The largest messages' columns "#", "role" and "tokens" and their widths, and the width of
    the previews' column at ``width``: as wide as the widest preview (or its header), cut to what
    the others leave; 0 when that is less than its header (the previews are left out)."""
    columns: list[tuple[str, list[str], JustifyMethod]] = [
        ("#", [str(lm.position) for lm in r.largest], "right"),
        ("role", [lm.role for lm in r.largest], "left"),
        ("tokens", [f"{lm.tokens:,}" for lm in r.largest], "right"),
    ]
    widths = [
        max(least, *map(measure, cells)) for least, (_, cells, _) in zip(LARGEST_LEAST, columns, strict=True)
    ]
    room = width - sum(widths) - 2 * len(widths)
    if room < len(LARGEST):
        return columns, widths, 0
    return columns, widths, min(room, max(len(LARGEST), *(measure(lm.preview) for lm in r.largest)))


def _tables(r: FileEstimate, parts: list[tuple[str, str, str]], width: int) -> tuple[Rows, Rows] | None:
    """The rows of the part table and of the largest messages' (none when the log has none) as
    Rich lays them out at ``width``; None when Rich must lay them out (a preview to measure, or
    too little room for the previews)."""
    names, tokens, shares = zip(*parts, strict=True)
    part_rows = plain.table_rows(
        [("part", names, "left"), ("tokens", tokens, "right"), ("share", shares, "right")], width
    )
    if part_rows is None:
        return None
    if not r.largest:
        return part_rows, []
    if any(plain.cells(lm.preview) is None for lm in r.largest):
        return None  # Rich measures them
    columns, _, cut = _largest_layout(r, width, lambda text: plain.cells(text) or 0)
    if not cut:
        return None  # left out, saying so
    # a column of that width: a preview's trailing spaces pad as the column does
    previews = [plain.crop(lm.preview, cut).rstrip() for lm in r.largest]
    largest = plain.table_rows([*columns, (LARGEST, previews, "left")], width, (*LARGEST_LEAST, cut))
    return None if largest is None else (part_rows, largest)


def _estimate_facts(r: FileEstimate, predicted: Prediction) -> list[tuple[str, str]]:
    m = r.model
    facts = [
        ("model", f"{m.name or '?'} ({m.provider}, tokenizer {m.tokenizer})"),
        ("window", f"{m.window:,} tokens ({m.window_source})"),
        (
            "requests",
            f"{len(r.requests):,} ({sum(q.real is not None for q in r.requests):,} with real counts)",
        ),
    ]
    if r.replay.side_requests:
        facts.append(
            ("side chains", f"{r.replay.side_requests:,} sub-agent requests (not in the main context)")
        )
    hp = r.harness_prompt
    if hp is not None:
        what = (
            f"{hp.describe()} sends beyond what its log records (its system prompt and tools are counted "
            f"from the log; measured {hp.measured})"
            if hp.records
            else f"of system prompt and tools {hp.describe()} sends that the log leaves out (measured "
            f"{hp.measured}; {hp.basis.split(': ', 1)[-1]})"
        )
        facts.append(("unlogged", f"{hp.tokens:,} tokens {what}: in the prediction"))
    if r.replay.compactions:
        facts.append(("compactions", f"{len(r.replay.compactions)} recorded in the log"))
    facts.append(
        ("context now", f"{r.context_tokens:,} tokens estimated, {r.used_fraction:.1%} of the window")
    )
    last = r.last_real
    if last is not None and last.real is not None:
        ratio = f"{last.real / last.estimate:.2f}×" if last.estimate else "—"
        facts.append(
            (
                "last real",
                f"request #{last.index}: real {last.real:,} vs estimate {last.estimate:,} (ratio {ratio})",
            )
        )
    share = f", {predicted.tokens / m.window:.1%} of the window" if m.window else ""
    facts.append(("predicted", f"{predicted.tokens:,} real tokens{share}: {predicted.basis}"))
    return facts
