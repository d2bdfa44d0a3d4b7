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
    from ctxfold.core.compaction.run import CompactResult
    from ctxfold.core.engine.calibration import Prediction
    from ctxfold.core.engine.profile import Profiles
    from ctxfold.core.engine.replay import Report
    from ctxfold.core.formats.loader import Opened
    from ctxfold.core.formats.validate import Validation
    from ctxfold.core.tokens.estimate import FileEstimate

PROGRESS_MIN_BYTES = 5_000_000

# Piped output is not wrapped at 80 columns: a file or a pager can take long lines.
out = Console(highlight=False, width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)


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


def estimate(results: Sequence[tuple[FileEstimate, Prediction]]) -> None:
    for r, predicted in results:
        for w in r.model.warnings:
            warn(f"{r.path}: {w}")
        for s in r.skipped:
            warn(f"skipped {s}")
        _estimate_one(r, predicted)


def _estimate_one(r: FileEstimate, predicted: Prediction) -> None:
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
    share = f", {predicted.tokens / m.window:.1%} of the window" if m.window else ""
    facts.append(("predicted", f"{predicted.tokens:,} real tokens{share}: {predicted.basis}"))
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


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[int], top: int, width: int = 60) -> str:
    """Values scaled to ``top`` (the window), averaged into at most ``width`` cells."""
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    cells = [max(values[i : i + step]) for i in range(0, len(values), step)]
    return "".join(
        SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1)))] if top else SPARK[0] for v in cells
    )


def report(reports: Sequence[Report], *, all_rows: bool, explain: bool, plot: str | None) -> None:
    from ctxfold.core.engine.report_doc import explain as explain_lines
    from ctxfold.core.engine.report_doc import summary

    for rep in reports:
        est, pol = rep.estimate, rep.policy
        for w in est.model.warnings:
            warn(f"{est.path}: {w}")
        for s in est.skipped:
            warn(f"skipped {s}")
        s = summary(rep)
        out.print(Text.assemble((est.path, "bold"), f"  ({est.format}, {est.model.name or 'model ?'})"))
        facts = [
            ("window", f"{pol.window:,} ({est.model.window_source})"),
            ("threshold", f"{pol.threshold:,} (buffer {pol.buffer:,}: {pol.buffer_rule})"),
            ("calibration", f"{rep.calibration}; before the first real count: {rep.prior.source}"),
            ("requests", f"{s['requests']:,} ({s['requests_with_real']:,} with real counts)"),
        ]
        if s["median_error_pct"] is not None:
            facts.append(
                (
                    "accuracy",
                    f"median error {s['median_error_pct']}%, p90 {s['p90_error_pct']}% (after the first)",
                )
            )
        fire = s["first_fire"]
        facts.append(
            (
                "first fire",
                "never: every request stayed under the threshold"
                if fire is None
                else f"request #{fire['request']}: predicted {fire['calibrated']:,}, real {_n(fire['real'])}",
            )
        )
        for c in s["recorded_compactions"]:
            apart = (
                ""
                if c["requests_apart"] is None
                else f"; ctxfold fired {c['requests_apart']} request(s) earlier"
            )
            facts.append(
                (
                    "recorded",
                    f"{c['source']} compacted before request #{c['before_request']} at {_n(c['tokens_before'])} tokens{apart}",
                )
            )
        facts.append(("late", f"{s['late']} (real ≥ threshold while ctxfold said no)"))
        facts.append(("early", f"{s['early']}   overflows (real > window): {s['overflows']}"))
        total = s["prompt_tokens_total"]
        sent = f"{total:,} prompt tokens over {s['requests']:,} requests"
        if s["prompt_tokens_predicted"]:
            sent += f" ({s['prompt_tokens_predicted']:,} of them predicted, not recorded)"
        if s["cached_tokens_total"]:
            sent += f", {s['cached_tokens_total']:,} read from cache"
        facts.append(("sent", sent))
        if s["simulation"] is not None:
            sim = s["simulation"]
            facts.append(
                (
                    "simulated",
                    f"{sim['compactions']} compaction(s) needed at requests {sim['at_requests'] or '—'}",
                )
            )
            if sim["compactions"]:
                calls = sim["summarizer_input_tokens"] + sim["summarizer_output_tokens"]
                change = (sim["prompt_tokens_total"] + calls) / total - 1 if total else 0.0
                facts.append(
                    (
                        "",
                        f"{sim['prompt_tokens_total']:,} prompt tokens + {calls:,} for the summarizer "
                        f"({change:+.0%} tokens against the log)",
                    )
                )
        for k, v in facts:
            out.print(Text(f"  {k:<12} {v}"))
        if out.is_terminal and rep.rows:
            line = sparkline([r.calibrated for r in rep.rows], pol.window)
            out.print(
                Text(
                    f"  {'tokens':<12} {line}  (of the window; threshold at {pol.threshold / pol.window:.0%})"
                )
            )
        _rows_table(rep, all_rows)
        if explain:
            out.print(Text("  the last decision, step by step:", style="bold"))
            for k, v in explain_lines(rep):
                out.print(Text(f"    {k:<15} {v}"))
        if plot:
            out.print(Text(f"  plot written to {plot}"))
        out.print()


def _rows_table(rep: Report, all_rows: bool) -> None:
    rows = rep.rows
    if not all_rows:
        keep = {0, len(rows) - 1}
        for i, r in enumerate(rows):
            if (
                r.recorded_compaction
                or r.late
                or r.overflow
                or (r.decision == "compact" and (i == 0 or rows[i - 1].decision != "compact"))
            ):
                keep.update({i - 1, i})
        rows = [rows[i] for i in sorted(k for k in keep if 0 <= k < len(rows))]
    t = Table(show_edge=False, pad_edge=False, box=None)
    for col in ("#", "estimate", "calibrated", "real", "error", "threshold", "margin", "decision", "note"):
        t.add_column(col, justify="left" if col in ("decision", "note") else "right", no_wrap=True)
    for r in rows:
        notes = [
            n
            for n, on in (
                ("first", r.first_in_segment),
                ("recorded compaction", r.recorded_compaction),
                ("LATE", r.late),
                ("OVERFLOW", r.overflow),
            )
            if on
        ]
        err = "" if r.error is None else f"{r.error:+.1%}"
        t.add_row(
            str(r.index),
            f"{r.estimate:,}",
            f"{r.calibrated:,}",
            _n(r.real),
            err,
            f"{r.threshold:,}",
            f"{r.margin:,}",
            r.decision,
            ", ".join(notes),
        )
    out.print(t)


def profile(profiles: Profiles) -> None:
    import statistics

    from ctxfold.core.engine.profile import BUILTIN

    out.print(Text(f"profile: {profiles.path}"))
    shipped = ", ".join(f"{f} {o:,} hidden × {r}" for f, (o, r, _) in BUILTIN.items())
    out.print(Text(f"  shipped priors, used until a source has a learned session: {shipped}"))
    if not profiles.profiles:
        out.print("  nothing learned yet: run estimate or report on a session")
        return
    t = Table(show_edge=False, pad_edge=False, box=None)
    for col in ("source | model family", "sessions", "hidden tokens (median)", "tokenizer ratio (median)"):
        t.add_column(col, justify="left" if col.startswith("source") else "right")
    for key, entry in sorted(profiles.profiles.items()):
        sessions = list(entry.get("sessions", {}).values())
        if sessions:
            t.add_row(
                key,
                str(len(sessions)),
                f"{int(statistics.median(s['overhead'] for s in sessions)):,}",
                f"{statistics.median(s['ratio'] for s in sessions):.3f}",
            )
    out.print(t)


def compact(r: CompactResult) -> None:
    from ctxfold.core.compaction.doc import compact_doc

    d = compact_doc(r)
    for w in d["warnings"]:
        warn(w)
    head = Text.assemble((r.path, "bold"), f"  ({r.format}{', incremental' if r.incremental else ''})")
    out.print(head)
    pred = f"{r.tokens_before:,} predicted tokens (counted {r.estimate_before:,}); threshold {r.policy.threshold:,}"
    if r.status == "not-due":
        out.print(Text(f"  not due: {pred}. Nothing written (--force compacts anyway)."))
        return
    if r.status == "up-to-date":
        out.print(
            Text(f"  up to date: nothing new since the last compaction ({r.outputs.state}). Nothing written.")
        )
        return
    if r.status == "dry-run":
        out.print(Text(f"  would compact with {r.strategy}: {pred}, {r.messages_before:,} messages"))
        for k in ("compacted", "summary", "state"):
            out.print(Text(f"  would write  {d['would_write'][k]}"))
        return
    after = r.tokens_after or 0
    out.print(
        Text(
            f"  compacted ({r.strategy}): {r.tokens_before:,} → {after:,} predicted tokens, "
            f"{r.messages_before:,} → {r.messages_after or 0:,} messages ({1 - after / max(1, r.tokens_before):.0%} smaller)"
        )
    )
    if d["summarizer"]:
        sm = d["summarizer"]
        usage = sm["usage"]
        used = (
            f"; used {usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out"
            if usage
            else ""
        )
        out.print(Text(f"  summarizer   {sm['provider']}{' / ' + sm['model'] if sm['model'] else ''}{used}"))
    for n in r.notes:
        out.print(Text(f"  note         {n}"))
    for k, label in (("compacted", "transcript"), ("summary", "summary"), ("state", "state")):
        out.print(Text(f"  {label:<12} {d['outputs'][k]}"))


def validation(results: Sequence[Validation]) -> None:
    for v in results:
        if v.ok:
            out.print(Text(f"{v.path}: ok ({v.format}, {v.entries:,} entries)"))
            continue
        out.print(Text(f"{v.path}: {len(v.violations)} violation(s) ({v.format})"))
        for x in v.violations:
            out.print(Text(f"  {v.path}:{x.line}: {x.message}"))


def config(doc: dict[str, Any]) -> None:
    out.print(Text(f"config file: {doc['config_file'] or 'none'} (searched: {', '.join(doc['searched'])})"))
    t = Table(show_edge=False, pad_edge=False, box=None)
    t.add_column("setting")
    t.add_column("value")
    t.add_column("from")
    for k, v in doc["settings"].items():
        t.add_row(k, "—" if v["value"] is None else str(v["value"]), v["source"])
    for k, v in doc["keys"].items():
        t.add_row(k, v["value"] or "—", v["source"])
    out.print(t)
    for name, conf in doc["models"].items():
        out.print(Text(f"model {name}: {conf}"))
