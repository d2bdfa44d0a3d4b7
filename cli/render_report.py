"""Terminal output of ``report``: per-file summary, sparkline, the notable rows, the totals of a
many-file run. Shares the consoles of :mod:`ctxfold.cli.render`; core computes every figure.

Tables are fitted to the terminal, never cropped: a number is shown whole or its column is left
out, and a line under the table says which (see :func:`print_fitted`). ``key  value`` lines wrap
under their value (:func:`ctxfold.cli.render.print_facts`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len

from ctxfold.cli import plain, render, render_cost
from ctxfold.cli.render import num, print_facts, warn

if TYPE_CHECKING:
    from rich.console import JustifyMethod

    from ctxfold.engine.replay import Report
    from ctxfold.engine.report_doc import Brief


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
    from ctxfold.engine.report_doc import brief_of
    from ctxfold.engine.report_doc import explain as explain_lines
    from ctxfold.engine.usage import session_usage

    briefs = [brief_of(rep) for rep in reports]
    for rep, b in zip(reports, briefs, strict=True):
        est, pol = rep.estimate, rep.policy
        for w in est.warnings:
            warn(f"{est.path}: {w}")
        for bad in est.skipped:
            warn(f"skipped {bad}")
        s = b.summary
        render.heading(est.path, f"  ({est.format}, {est.model.name or 'model ?'})")
        facts = [
            ("window", f"{pol.window:,} ({pol.window_source or est.model.window_source})"),
            ("threshold", f"{pol.threshold:,} (buffer {pol.buffer:,}: {pol.buffer_rule})"),
            ("calibration", f"{rep.calibration}; before the first real count: {rep.prior.source}"),
            ("requests", f"{s['requests']:,} ({s['requests_with_real']:,} with real counts)"),
        ]
        if s["median_error_pct"] is not None:
            facts.append(("accuracy", _accuracy(s, [b])))
        fire = s["first_fire"]
        facts.append(
            (
                "first fire",
                "never: no prediction reached the threshold"
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
        if s["trigger"] is not None:
            facts.extend(_trigger_facts(s["trigger"]))
        facts.append(("late", f"{s['late']} (real ≥ threshold while ctxfold said no)"))
        facts.append(("early", f"{s['early']}   overflows (real > the model's window): {s['overflows']}"))
        facts.append(("sent", _sent(s)))
        facts.append(("billed", render_cost.billed(session_usage(est, rep.prices))))
        facts.append(("cost", render_cost.recorded(s["cost"])))
        if s["simulation"] is not None:
            sim = s["simulation"]
            facts.append(("simulated", _simulated(sim)))
            if sim["cannot_fit_at"] is not None:
                facts.append(("", _cannot_fit(sim, pol.threshold)))
            elif sim["compactions"]:
                facts.append(("", _simulated_sent(sim, s["prompt_tokens_total"])))
                facts.extend(("", line) for line in [render_cost.simulated(s["cost"])] if line)
        if rep.rows and render.plain_width() is None and render.out.is_terminal:  # (piped: no Rich)
            cells = min(60, max(10, render.out.width - 15))
            line = sparkline([r.calibrated for r in rep.rows], pol.window, cells)
            share = pol.threshold / pol.window
            facts.append(("tokens", f"{line}  (of the window; threshold at {share:.0%})"))
        print_facts(facts)
        _rows_table(rep, all_rows)
        if explain:
            render.heading("  the last decision, step by step:")
            print_facts(explain_lines(rep), indent=4, key_width=15)
        if plot:
            print_facts([("", f"plot written to {plot}")], key_width=0)
        render.blank()
    if len(reports) > 1:
        report_totals(briefs)


def _trigger_facts(t: dict[str, Any]) -> list[tuple[str, str]]:
    """``--trigger``: where the harness's own rule fires, next to ctxfold's first fire."""
    first = t["first"]
    if first is None:
        where = f"would not compact: no response reached its count of {t['fires_at']:,}"
    else:
        where = f"would compact before request #{first['request']} (its count {first['count']:,})"
        ahead = t["ctxfold_ahead_by"]
        if ahead is not None:
            where += (
                "; ctxfold fires at the same request"
                if ahead == 0
                else f"; ctxfold fires {abs(ahead)} request(s) {'earlier' if ahead > 0 else 'later'}"
            )
        more = len(t["fires"]) - 1
        if more:
            where += f", and {more} more time(s) after the log's own compactions"
    lines = [(t["name"], where), ("", f"its rule: {t['rule']} (window {t['window']:,})")]
    return lines


def _sent(s: dict[str, Any]) -> str:
    n = s["requests"]
    sent = f"{s['prompt_tokens_total']:,} prompt tokens over {n:,} request{'' if n == 1 else 's'}"
    if s["prompt_tokens_predicted"]:
        sent += f" ({s['prompt_tokens_predicted']:,} of them predicted, not recorded)"
    if s["cached_tokens_total"]:
        sent += f", {s['cached_tokens_total']:,} read from cache"
    return sent


def _simulated(sim: dict[str, Any], shown: int = 12) -> str:
    """How many compactions and where: the first few indices, then how many more."""
    at = sim["at_requests"]
    where = ", ".join(f"#{i}" for i in at[:shown]) + (
        f" and {len(at) - shown} more" if len(at) > shown else ""
    )
    return f"{sim['compactions']} compaction(s) needed" + (f" at requests {where}" if at else "")


def _cannot_fit(sim: dict[str, Any], threshold: int) -> str:
    return (
        f"stopped at request #{sim['cannot_fit_at']}: compacted, it is still predicted at "
        f"{sim['cannot_fit_tokens']:,} tokens (system prompt, tools and summary) against the threshold "
        f"of {threshold:,}; no compaction fits this session in the window"
    )


def _change(change: float) -> str:
    """+12% / -3%, with one decimal under 1 % rather than a "-0%"."""
    return f"{change:+.1%}" if abs(change) < 0.01 else f"{change:+.0%}"


def _simulated_sent(sim: dict[str, Any], logged: int) -> str:
    calls = sim["summarizer_input_tokens"] + sim["summarizer_output_tokens"]
    change = (sim["prompt_tokens_total"] + calls) / logged - 1 if logged else 0.0
    return (
        f"{sim['prompt_tokens_total']:,} prompt tokens + {calls:,} for the summarizer "
        f"({_change(change)} tokens against the log)"
    )


def _accuracy(s: dict[str, Any], briefs: Sequence[Brief]) -> str:
    """The median and p90 of |predicted − real| / real and what they were taken over: one
    file's requests, or in the totals every file's requests pooled, a figure of its own (not
    any one file's p90, nor their mean)."""
    n = sum(len(b.errors) for b in briefs)
    figures = f"median error {s['median_error_pct']}%, p90 {s['p90_error_pct']}%"
    requests = f"{n:,} request{'' if n == 1 else 's'} predicted from an earlier real count"
    if len(briefs) == 1:
        return f"{figures} over the {requests}"
    return f"pooled over the {len(briefs)} files' {requests}: {figures}"


def brief(briefs: Sequence[Brief]) -> None:
    """One line per file (where it fires, how it went), then the totals."""
    paths = [b.path for b in briefs]
    absolute = [os.path.abspath(p) for p in paths]
    under = _common_folder(paths, absolute)
    if under:
        render.heading(f"files under {under}")
    for b in briefs:
        for w in b.warnings:
            warn(f"{b.path}: {w}")
    sums = [b.summary for b in briefs]
    files = _relative(paths, absolute, under) if under else paths
    fires = ["never" if s["first_fire"] is None else f"#{s['first_fire']['request']}" for s in sums]
    p90 = ["—" if s["p90_error_pct"] is None else f"{s['p90_error_pct']}%" for s in sums]
    late, over = [str(s["late"]) for s in sums], [str(s["overflows"]) for s in sums]
    sent = [s["prompt_tokens_total"] for s in sums]
    bills = [
        "—" if s["cost"]["recorded"] is None else render_cost.usd(s["cost"]["recorded"]["total"])
        for s in sums
    ]
    no_late = not any(s["late"] or s["overflows"] for s in sums)

    # Narrower terminals, in this order: no late and overflows columns when both are 0 in every
    # file (the totals say so too), sent in k / M, short headers. The file names fold.
    steps = [
        *([("zeros", "late and overflows left out: 0 in every file")] if no_late else []),
        ("short", "sent in thousands (k) or millions (M)"),
        ("terse", "reqs = requests, fires = first fire, over = overflows, p90 = p90 error"),
    ]

    def columns(done: set[str]) -> list[Col]:
        terse = "terse" in done
        return [
            Col("file", files, justify="left", wrap=True, fold=12),
            Col("reqs" if terse else "requests", [f"{s['requests']:,}" for s in sums]),
            Col("fires" if terse else "first fire", fires),
            *([] if "zeros" in done else [Col("late", late), Col("over" if terse else "overflows", over)]),
            Col("p90" if terse else "p90 error", p90),
            Col("sent", [_short(n) if "short" in done else f"{n:,}" for n in sent]),
            Col("cost", bills),
        ]

    levels = [(columns(set()), "")]
    for i in range(1, len(steps) + 1):
        done = {key for key, _ in steps[:i]}
        levels.append((columns(done), "at this width: " + "; ".join(why for _, why in steps[:i])))
    print_fitted(levels)
    render.blank()
    report_totals(briefs)


def _short(n: int) -> str:
    """``n`` in at most six characters: 9,999, 108.3k, 57.7M."""
    if n < 10_000:
        return f"{n:,}"
    if n < 999_950:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def _relative(paths: Sequence[str], absolute: Sequence[str], under: str) -> list[str]:
    """``os.path.relpath(p, under)`` of each path (``absolute``: their absolute paths), without
    working out ``under``'s again for each."""
    base = os.path.abspath(under) + os.sep
    return [
        a[len(base) :] if a.startswith(base) else os.path.relpath(p, under)
        for p, a in zip(paths, absolute, strict=True)
    ]


def _common_folder(paths: Sequence[str], absolute: Sequence[str]) -> str | None:
    """The folder all the files are under (``absolute``: their absolute paths), when there are
    several (and none is stdin)."""
    if len(paths) < 2 or "-" in paths:
        return None
    folder = os.path.commonpath([os.path.dirname(a) for a in absolute])
    if folder == os.path.sep:
        return None
    return min(os.path.relpath(folder), folder, key=len)


def report_totals(briefs: Sequence[Brief]) -> None:
    """The closing block of a many-file report."""
    from ctxfold.engine.report_doc import totals

    t = totals(briefs)
    render.heading("1 file" if t["files"] == 1 else f"all {t['files']} files")
    facts = [
        ("requests", f"{t['requests']:,} ({t['requests_with_real']:,} with real counts)"),
        ("fires in", f"{t['files_that_fire']} file(s)   overflows in {t['files_that_overflow']} file(s)"),
        ("late", f"{t['late']}   early {t['early']}   overflows {t['overflows']}"),
    ]
    if t["median_error_pct"] is not None:
        facts.append(("accuracy", _accuracy(t, briefs)))
    facts.append(("sent", _sent(t)))
    facts.append(("cost", render_cost.recorded(t["cost"])))
    sim = t["simulation"]
    if sim is not None:
        facts.append(("simulated", f"{sim['compactions']} compaction(s) in all"))
        if sim["files_that_cannot_fit"]:
            n = sim["files_that_cannot_fit"]
            facts.append(("", f"{n} file(s) cannot fit even compacted: no total of tokens sent"))
        elif sim["compactions"]:
            facts.append(("", _simulated_sent(sim, t["prompt_tokens_total"])))
            facts.extend(("", line) for line in [render_cost.simulated(t["cost"])] if line)
    print_facts(facts)


def _rows_table(rep: Report, all_rows: bool) -> None:
    rows = rep.rows
    if not rows:
        print_facts([("", "no model request in this transcript")], key_width=0)
        return
    harness = {f.request for f in rep.trigger.fires} if rep.trigger else set()
    harness_note = f"{rep.trigger.trigger.name()} compacts" if rep.trigger else ""
    if not all_rows:
        keep = {0, len(rows) - 1}
        for i, r in enumerate(rows):
            if (
                r.recorded_compaction
                or r.index in harness
                or r.server_tool_calls
                or r.late
                or r.overflow
                or (r.decision == "compact" and (i == 0 or rows[i - 1].decision != "compact"))
            ):
                keep.update({i - 1, i})
        rows = [rows[i] for i in sorted(k for k in keep if 0 <= k < len(rows))]
    notes = [
        ", ".join(
            n
            for n, on in (
                ("first", r.first_in_segment),
                ("recorded compaction", r.recorded_compaction),
                (harness_note, r.index in harness),
                (f"{r.server_tool_calls} web search(es) in its response", r.server_tool_calls > 0),
                ("LATE", r.late),
                ("OVERFLOW", r.overflow),
            )
            if on
        )
        for r in rows
    ]
    cols = {
        "#": Col("#", [str(r.index) for r in rows]),
        "estimate": Col("estimate", [f"{r.estimate:,}" for r in rows]),
        "calibrated": Col("calibrated", [f"{r.calibrated:,}" for r in rows]),
        "real": Col("real", [num(r.real) for r in rows]),
        "error": Col("error", ["" if r.error is None else f"{r.error:+.1%}" for r in rows]),
        "threshold": Col("threshold", [f"{r.threshold:,}" for r in rows]),
        "margin": Col("margin", [f"{r.margin:,}" for r in rows]),
        "decision": Col("decision", [r.decision for r in rows], justify="left"),
        "note": Col("note", notes, justify="left", wrap=True),
    }
    # Narrower terminals leave out, in this order, the columns a reader misses least: the
    # threshold when it is the one above (every row the same), the margin (threshold −
    # calibrated), ctxfold's raw estimate (the decision uses the calibrated one).
    threshold = rep.policy.threshold
    steps: list[tuple[str, str]] = []
    if all(r.threshold == threshold for r in rows):
        steps.append(("threshold", f"threshold ({threshold:,} on every row)"))
    steps += [("margin", "margin (threshold − calibrated)"), ("estimate", "estimate (ctxfold's raw count)")]
    levels = [(list(cols.values()), "")]
    for i in range(1, len(steps) + 1):
        left_out = {name for name, _ in steps[:i]}
        said = ", ".join(why for _, why in steps[:i])
        shown = [c for name, c in cols.items() if name not in left_out]
        levels.append((shown, f"left out at this width: {said}; --json has them"))
    print_fitted(levels)


@dataclass
class Col:
    """A column of cells. ``wrap``: text that may run onto more lines, so it needs only its
    longest word, or with ``fold`` (paths, cut anywhere) that many cells; any other column
    needs its widest cell."""

    name: str
    cells: list[str]
    justify: JustifyMethod = "right"
    wrap: bool = False
    fold: int = 0

    def need(self) -> int:
        widest = max(cell_len(c) for c in [self.name, *self.cells])
        if not self.wrap:
            return widest
        if self.fold:
            return min(widest, max(self.fold, cell_len(self.name)))
        return max(cell_len(w) for c in [self.name, *self.cells] for w in c.split())


def print_fitted(levels: Sequence[tuple[list[Col], str]]) -> None:
    """The first of ``levels`` (columns, a line on what was left out or shortened) that fits the
    terminal, as a borderless table. No cell is cropped: when not even the last fits, it is
    printed at its own width and the terminal wraps it."""
    width = render.plain_width() or render.out.width
    chosen, said = levels[-1]
    for cols, why in levels:
        if sum(c.need() for c in cols) + 2 * (len(cols) - 1) <= width:
            chosen, said = cols, why
            break
    need = sum(c.need() for c in chosen) + 2 * (len(chosen) - 1)
    rows = fast_rows(chosen, need, width)
    if rows is None:
        _print_table(chosen, need, width)
    else:
        render.print_rows(rows)
    if said:
        print_facts([("", said)], key_width=0)


def fast_rows(chosen: Sequence[Col], need: int, width: int) -> list[list[str]] | None:
    """The lines :func:`_print_table` prints, built without Rich: every cell on one line
    (``plain.table_rows``), else the columns that wrap narrowed and their cells wrapped as Rich
    does it (``plain_table``); None when Rich is to lay them out."""
    rows = plain.table_rows([(c.name, c.cells, c.justify) for c in chosen], width)
    if rows is None:
        from ctxfold.cli import plain_table

        cols = [plain_table.Column(c.name, c.cells, c.justify, c.wrap, c.need()) for c in chosen]
        rows = plain_table.rows(cols, need if need > width else width)
    return rows


def _print_table(chosen: Sequence[Col], need: int, width: int) -> None:
    from rich.table import Table
    from rich.text import Text

    t = Table(show_edge=False, pad_edge=False, box=None, width=need if need > width else None)
    for c in chosen:
        t.add_column(c.name, justify=c.justify, no_wrap=not c.wrap, overflow="fold", min_width=c.need())
    for row in zip(*(c.cells for c in chosen), strict=True):
        t.add_row(*map(Text, row))
    render.out.print(t, crop=False)
