"""``report --by day|project|session``: one row per day, project or session with the tokens by
how they are billed and the cost, then the total, as the usage tables people keep (ccusage's
daily, project and session reports). Core computes every figure (``ctxfold.engine.usage``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from ctxfold.cli import render, render_cost
from ctxfold.cli.render_report import Col, print_fitted

if TYPE_CHECKING:
    from ctxfold.engine.usage import Group, Sheet

HEADERS = {"day": "date", "project": "project", "session": "session"}


def by(sheets: Sequence[Sheet], key: str) -> None:
    from ctxfold.config import load_config
    from ctxfold.engine.usage import group, total

    for sh in sheets:
        for w in sh.warnings:
            render.warn(f"{sh.session}: {w}")
        for s in sh.skipped:
            render.warn(f"skipped {s}")
    prices = load_config().prices
    groups = group(sheets, key, prices)
    if not groups:
        render.out.print(Text("no usage recorded in these logs: nothing to total"))
        return
    rows = [*groups, total(groups)]
    names = [_name(g, key) for g in groups] + ["total"]

    def short(n: int, terse: bool) -> str:
        return _short(n) if terse else f"{n:,}"

    def columns(terse: bool) -> list[Col]:
        return [
            Col(HEADERS[key], names, justify="left", wrap=True, fold=12),
            Col(
                "models",
                [*(", ".join(g.models) for g in groups), _models(rows[-1])],
                justify="left",
                wrap=True,
            ),
            Col("calls", [f"{g.calls:,}" for g in rows]),
            Col("input", [short(g.input, terse) for g in rows]),
            Col("output", [short(g.output, terse) for g in rows]),
            Col("cache write", [short(g.cache_write, terse) for g in rows]),
            Col("cache read", [short(g.cache_read, terse) for g in rows]),
            Col("total", [short(g.total, terse) for g in rows]),
            Col("cost", [_cost(g) for g in rows]),
        ]

    print_fitted(
        [(columns(False), ""), (columns(True), "tokens in thousands (k) or millions (M) at this width")]
    )
    unpriced = rows[-1].cost.unpriced_models
    if unpriced:
        render.out.print(
            Text(
                f'no price for {", ".join(unpriced)}: add [prices."NAME"] to ctxfold.toml '
                "(cost —: none of the calls priced; *: some)"
            )
        )


def _models(t: Group) -> str:
    """The total's: the models by name when they are few, else how many."""
    return ", ".join(t.models) if len(t.models) <= 2 else f"{len(t.models)} models"


def _name(g: Group, key: str) -> str:
    if key == "day":
        return g.key
    home = os.path.expanduser("~")
    path = g.key
    if key == "session":
        path = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


def _cost(g: Group) -> str:
    priced = g.cost.calls - g.cost.unpriced_calls
    if not priced:
        return "—"
    text = render_cost.usd(g.cost.bill.total)
    return text + "*" if g.cost.unpriced_calls else text


def _short(n: int) -> str:
    if n < 10_000:
        return f"{n:,}"
    if n < 999_950:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"
