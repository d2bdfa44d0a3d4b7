"""Terminal output of ``report``: per-file summary, sparkline, the notable rows, the totals of a
many-file run. Shares the consoles of :mod:`ctxfold.cli.render`; core computes every figure."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from ctxfold.cli.render import num, out, warn

if TYPE_CHECKING:
    from ctxfold.core.engine.replay import Report


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

    sums = []
    for rep in reports:
        est, pol = rep.estimate, rep.policy
        for w in est.model.warnings:
            warn(f"{est.path}: {w}")
        for s in est.skipped:
            warn(f"skipped {s}")
        s = summary(rep)
        sums.append(s)
        out.print(Text.assemble((est.path, "bold"), f"  ({est.format}, {est.model.name or 'model ?'})"))
        facts = [
            ("window", f"{pol.window:,} ({pol.window_source or est.model.window_source})"),
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
                else f"request #{fire['request']}: predicted {fire['calibrated']:,}, real {num(fire['real'])}",
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
                    f"{c['source']} compacted before request #{c['before_request']} at {num(c['tokens_before'])} tokens{apart}",
                )
            )
        facts.append(("late", f"{s['late']} (real ≥ threshold while ctxfold said no)"))
        facts.append(("early", f"{s['early']}   overflows (real > window): {s['overflows']}"))
        facts.append(("sent", _sent(s)))
        if s["simulation"] is not None:
            sim = s["simulation"]
            facts.append(
                (
                    "simulated",
                    f"{sim['compactions']} compaction(s) needed at requests {sim['at_requests'] or '—'}",
                )
            )
            if sim["compactions"]:
                facts.append(("", _simulated_sent(sim, s["prompt_tokens_total"])))
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
    if len(reports) > 1:
        report_totals(reports, sums)


def _sent(s: dict[str, Any]) -> str:
    sent = f"{s['prompt_tokens_total']:,} prompt tokens over {s['requests']:,} requests"
    if s["prompt_tokens_predicted"]:
        sent += f" ({s['prompt_tokens_predicted']:,} of them predicted, not recorded)"
    if s["cached_tokens_total"]:
        sent += f", {s['cached_tokens_total']:,} read from cache"
    return sent


def _simulated_sent(sim: dict[str, Any], logged: int) -> str:
    calls = sim["summarizer_input_tokens"] + sim["summarizer_output_tokens"]
    change = (sim["prompt_tokens_total"] + calls) / logged - 1 if logged else 0.0
    return (
        f"{sim['prompt_tokens_total']:,} prompt tokens + {calls:,} for the summarizer "
        f"({change:+.0%} tokens against the log)"
    )


def brief(reports: Sequence[Report]) -> None:
    """One line per file (where it fires, how it went), then the totals."""
    from ctxfold.core.engine.report_doc import summary

    paths = [rep.estimate.path for rep in reports]
    under = _common_folder(paths)
    if under:
        out.print(Text.assemble(("files under ", "bold"), (under, "bold")))
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("file", overflow="fold")
    for name in ("requests", "first fire", "late", "overflows", "p90 error", "sent"):
        table.add_column(name, justify="right", no_wrap=True)
    sums = []
    for rep in reports:
        for w in rep.estimate.model.warnings:
            warn(f"{rep.estimate.path}: {w}")
        s = summary(rep)
        sums.append(s)
        fire = s["first_fire"]
        table.add_row(
            os.path.relpath(rep.estimate.path, under) if under else rep.estimate.path,
            f"{s['requests']:,}",
            "never" if fire is None else f"#{fire['request']}",
            str(s["late"]),
            str(s["overflows"]),
            "—" if s["p90_error_pct"] is None else f"{s['p90_error_pct']}%",
            f"{s['prompt_tokens_total']:,}",
        )
    out.print(table)
    out.print()
    report_totals(reports, sums)


def _common_folder(paths: Sequence[str]) -> str | None:
    """The folder all the files are under, when there are several (and none is stdin)."""
    if len(paths) < 2 or "-" in paths:
        return None
    folder = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])
    if folder == os.path.sep:
        return None
    return min(os.path.relpath(folder), folder, key=len)


def report_totals(reports: Sequence[Report], sums: Sequence[dict[str, Any]]) -> None:
    """The closing block of a many-file report (``sums``: each report's summary)."""
    from ctxfold.core.engine.report_doc import totals

    t = totals(reports, sums)
    out.print(Text(f"all {t['files']} files", style="bold"))
    facts = [
        ("requests", f"{t['requests']:,} ({t['requests_with_real']:,} with real counts)"),
        ("fires in", f"{t['files_that_fire']} file(s)   overflows in: {t['files_that_overflow']} file(s)"),
        ("late", f"{t['late']}   early: {t['early']}   overflows: {t['overflows']}"),
    ]
    if t["median_error_pct"] is not None:
        facts.append(("accuracy", f"median error {t['median_error_pct']}%, p90 {t['p90_error_pct']}%"))
    facts.append(("sent", _sent(t)))
    sim = t["simulation"]
    if sim is not None:
        facts.append(("simulated", f"{sim['compactions']} compaction(s) in all"))
        if sim["compactions"]:
            facts.append(("", _simulated_sent(sim, t["prompt_tokens_total"])))
    for k, v in facts:
        out.print(Text(f"  {k:<12} {v}"))


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
            num(r.real),
            err,
            f"{r.threshold:,}",
            f"{r.margin:,}",
            r.decision,
            ", ".join(notes),
        )
    out.print(t)
