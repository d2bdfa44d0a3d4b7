"""All terminal output: Rich tables on a terminal, plain text when piped, JSON on request.

The only module that imports Rich. Warnings and progress go to stderr so stdout stays clean
for ``--json`` and pipes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from ctxfold.core.formats.loader import Opened
    from ctxfold.core.tokens.estimate import FileEstimate

PROGRESS_MIN_BYTES = 5_000_000

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


def emit_json(doc: Any) -> None:
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {message}" if err.is_terminal else f"warning: {message}")


@contextlib.contextmanager
def progress(path: str, enabled: bool = True) -> Iterator[Callable[[Opened], None] | None]:
    """A progress bar on stderr for large files when stderr is a terminal; else nothing."""
    size = os.path.getsize(path) if path != "-" and os.path.isfile(path) else 0
    if not (enabled and err.is_terminal and size >= PROGRESS_MIN_BYTES):
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(os.path.basename(path), total=size)
        yield lambda opened: bar.update(task, completed=opened.bytes_read)


def _n(x: int | None) -> str:
    return "—" if x is None else f"{x:,}"


def estimate(results: Sequence[FileEstimate]) -> None:
    for r in results:
        for w in r.model.warnings:
            warn(f"{r.path}: {w}")
        for s in r.skipped:
            warn(f"skipped {s}")
        _estimate_one(r)


def _estimate_one(r: FileEstimate) -> None:
    m = r.model
    out.print(Text.assemble((r.path, "bold"), f"  ({r.format})"))
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
    for k, v in facts:
        out.print(Text(f"  {k:<12} {v}"))

    table = Table(title=None, show_edge=False, pad_edge=False, box=None)
    table.add_column("part", style="cyan")
    table.add_column("tokens", justify="right")
    table.add_column("share", justify="right")
    total = max(1, r.context_tokens)
    for cat, n in r.replay.by_category.items():
        if n:
            table.add_row(cat.replace("_", " "), f"{n:,}", f"{n / total:.1%}")
    table.add_row("framing", f"{r.replay.per_request:,}", "")
    out.print(table)
    if r.largest:
        big = Table(show_edge=False, pad_edge=False, box=None)
        big.add_column("#", justify="right", no_wrap=True, min_width=4)
        big.add_column("role", no_wrap=True, min_width=9)
        big.add_column("tokens", justify="right", no_wrap=True, min_width=7)
        big.add_column("largest messages", overflow="ellipsis", no_wrap=True, ratio=1)
        for lm in r.largest:
            big.add_row(str(lm.position), lm.role, f"{lm.tokens:,}", Text(lm.preview))
        out.print(big)
    out.print()
