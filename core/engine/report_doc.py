"""The data a report shows: its summary figures, its ``--json`` document and the ``--explain``
arithmetic. Rendering is the CLI's business; this module only computes."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxfold.engine.cost import Cost, recorded_cost, simulated_cost
from ctxfold.engine.replay import Report, Row
from ctxfold.prices import PRICE_KEYS, Price


def _pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[max(0, math.ceil(p * len(xs)) - 1)]  # nearest rank: the 9th of 10 for p90


@dataclass(frozen=True)
class Brief:
    """What a many-file report shows of one file: its warnings, its summary and the errors of
    its predictions (pooled with the other files' in the totals). Plain data: kept from one
    run to the next by ``report_memo``."""

    path: str
    warnings: tuple[str, ...]
    summary: dict[str, Any]
    errors: tuple[float, ...]  # |error| of each request predicted from an earlier real count


def brief_of(report: Report) -> Brief:
    est = report.estimate
    return Brief(est.path, tuple(est.warnings), summary(report), tuple(_errors(report.rows)))


def _errors(rows: Sequence[Row]) -> list[float]:
    """|error| of each request predicted from an earlier real count (not a segment's first)."""
    return [abs(r.error) for r in rows if r.error is not None and not r.first_in_segment]


def summary(report: Report) -> dict[str, Any]:
    """The report's summary figures (worked out once per report; a caller copies before changing)."""
    if report._summary is None:
        report._summary = _summary(report)
    return report._summary


def _summary(report: Report) -> dict[str, Any]:
    rows = report.rows
    errors = _errors(rows)
    fire = report.first_fire
    recorded = []
    fires: dict[int, int] = {}  # each segment's first firing: its position in the rows
    for i, r in enumerate(rows):
        if r.decision == "compact":
            fires.setdefault(r.segment, i)
    for c in report.estimate.replay.compactions:
        # distance from ctxfold's first firing in the same stretch of the session (the rows are
        # in request order: those before the compaction are the first ``n``)
        n = bisect.bisect_left(rows, c.before_request, key=lambda r: r.index)
        segment = rows[n - 1].segment if n else -1
        at = fires.get(segment, n)
        fired_before = rows[at] if at < n else None
        recorded.append(
            {
                "before_request": c.before_request,
                "source": c.source,
                "tokens_before": c.tokens_before,
                "tokens_after": c.tokens_after,
                "trigger": c.trigger,
                "ctxfold_fired_at": fired_before.index if fired_before else None,
                "requests_apart": c.before_request - fired_before.index if fired_before else None,
            }
        )
    sim = report.simulation
    return {
        "requests": len(rows),
        "requests_with_real": sum(1 for r in rows if r.real is not None),
        "first_fire": None
        if fire is None
        else {"request": fire.index, "calibrated": fire.calibrated, "real": fire.real},
        "fires": sum(1 for r in rows if r.decision == "compact"),
        "late": report.count("late"),
        "early": report.count("early"),
        "overflows": report.count("overflow"),
        "median_error_pct": None if not errors else round(statistics.median(errors) * 100, 2),
        "p90_error_pct": None if not errors else round((_pct(errors, 0.9) or 0) * 100, 2),
        "recorded_compactions": recorded,
        # what the session sent in all: the real count where recorded, else the prediction
        # a request the provider refused as too long was not processed (nor billed): not "sent"
        "prompt_tokens_total": sum(
            r.real if r.real is not None else r.calibrated for r in rows if r.real_source != "error"
        ),
        "prompt_tokens_predicted": sum(r.calibrated for r in rows if r.real is None),
        "cached_tokens_total": sum(q.cache_read for q in report.estimate.requests),
        "simulation": None
        if sim is None
        else {
            "compactions": len(sim.compactions),
            "at_requests": sim.compactions,
            "overflows": sim.overflows,
            "prompt_tokens_total": sim.prompt_tokens,
            "summarizer_input_tokens": sim.summarizer_input,
            "summarizer_output_tokens": len(sim.compactions) * report.policy.summary_budget,
            "cannot_fit_at": sim.cannot_fit_at,
            "cannot_fit_tokens": sim.cannot_fit_tokens if sim.cannot_fit_at is not None else None,
        },
        "cost": cost(report),
        "trigger": trigger_doc(report),
    }


def trigger_doc(report: Report) -> dict[str, Any] | None:
    """With ``--trigger``: where that harness's own rule compacts, next to ctxfold's first fire."""
    t = report.trigger
    if t is None:
        return None
    first, mine = t.first, report.first_fire
    return {
        "harness": t.trigger.harness,
        "name": t.trigger.name(),
        "setting": None if t.trigger.setting is None else {t.trigger.setting: t.trigger.value},
        "window": t.window,
        "fires_at": t.fires_at,
        "rule": t.trigger.describe(t.window),
        "first": None
        if first is None
        else {"request": first.request, "count": first.count, "real": first.real},
        "fires": [{"request": f.request, "count": f.count, "real": f.real} for f in t.fires],
        # > 0: ctxfold fires that many requests before the harness would
        "ctxfold_ahead_by": None if first is None or mine is None else first.request - mine.index,
        "recorded_compactions_matched": sum(
            1
            for c in report.estimate.replay.compactions
            if any(f.request == c.before_request for f in t.fires)
        ),
    }


_PRICE_FIELDS = (*PRICE_KEYS, "long_above", "source")


def _price_row(p: Price) -> dict[str, Any]:
    return {k: getattr(p, k) for k in _PRICE_FIELDS}


def _bill(c: Cost | None) -> dict[str, Any] | None:
    """USD by what was paid for, rounded to a hundredth of a cent; None with nothing priced."""
    if c is None or c.calls == c.unpriced_calls:
        return None
    b = c.bill
    parts = {"input": b.input, "cache_write": b.cache_write, "cache_read": b.cache_read, "output": b.output}
    return {"total": round(b.total, 4), **{k: round(v, 4) for k, v in parts.items()}}


def cost(report: Report) -> dict[str, Any]:
    """What the session's calls cost (see :mod:`ctxfold.engine.cost`), in USD."""
    rec = recorded_cost(report.estimate, report.prices)
    sim = simulated_cost(report, report.prices)
    simulated = _bill(sim)
    if sim is not None and simulated is not None:
        simulated["summarizer"] = round(sim.summarizer.total, 4)
    return {
        "currency": "USD",
        "calls": rec.calls,
        "unpriced_calls": rec.unpriced_calls,
        "unpriced_models": rec.unpriced_models,
        "recorded": _bill(rec),
        "simulated": simulated,
        "prices": {model: _price_row(p) for model, p in rec.prices.items()},
    }


def row_dict(r: Row, harness_fires: frozenset[int] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "index": r.index,
        "estimate": r.estimate,
        "calibrated": r.calibrated,
        "real": r.real,
        "real_source": r.real_source,
        "threshold": r.threshold,
        "window": r.window,
        "decision": r.decision,
        "margin": r.margin,
        "first_in_segment": r.first_in_segment,
        "segment": r.segment,
        "factor": round(r.factor, 4),
        "error_pct": None if r.error is None else round(r.error * 100, 3),
        "late": r.late,
        "overflow": r.overflow,
        "recorded_compaction": r.recorded_compaction,
        "server_tool_calls": r.server_tool_calls,
    }
    if harness_fires is not None:  # with --trigger: would that harness compact before this request
        doc["harness_fires"] = r.index in harness_fires
    return doc


def to_dict(report: Report) -> dict[str, Any]:
    est, pol = report.estimate, report.policy
    return {
        "path": est.path,
        "format": est.format,
        "session_id": est.replay.session_id,
        "model": est.model.name,
        "tokenizer": est.model.tokenizer,
        "window": pol.window,
        "window_source": pol.window_source or est.model.window_source,
        "buffer": pol.buffer,
        "buffer_rule": pol.buffer_rule,
        "threshold": pol.threshold,
        "summary_budget": pol.summary_budget,
        "calibration": report.calibration,
        "prior": {
            "overhead": report.prior.overhead,
            "ratio": report.prior.ratio,
            "first_ratio": report.prior.first_ratio,
            "source": report.prior.source,
        },
        "summary": summary(report),
        "requests": [row_dict(r, _harness_fires(report)) for r in report.rows],
        "warnings": est.warnings,
        "skipped_lines": est.skipped,
    }


def _harness_fires(report: Report) -> frozenset[int] | None:
    return frozenset(f.request for f in report.trigger.fires) if report.trigger else None


def totals(briefs: Sequence[Brief]) -> dict[str, Any]:
    """Across every file of one ``report`` run (a folder of sessions): how many fire, overflow or
    decide late, the pooled accuracy, and the prompt tokens sent in all (with compaction too,
    when simulated)."""
    sums = [b.summary for b in briefs]
    errors = [e for b in briefs for e in b.errors]
    doc: dict[str, Any] = {
        "files": len(briefs),
        "files_that_fire": sum(1 for s in sums if s["first_fire"] is not None),
        "files_that_overflow": sum(1 for s in sums if s["overflows"]),
        **{
            k: sum(s[k] for s in sums)
            for k in ("requests", "requests_with_real", "late", "early", "overflows")
        },
        "median_error_pct": None if not errors else round(statistics.median(errors) * 100, 2),
        "p90_error_pct": None if not errors else round((_pct(errors, 0.9) or 0) * 100, 2),
        **{
            k: sum(s[k] for s in sums)
            for k in ("prompt_tokens_total", "prompt_tokens_predicted", "cached_tokens_total")
        },
        "simulation": None,
    }
    doc["cost"] = _cost_totals([s["cost"] for s in sums])
    simulated = [s["simulation"] for s in sums if s["simulation"] is not None]
    if simulated:
        keys = ("compactions", "prompt_tokens_total", "summarizer_input_tokens", "summarizer_output_tokens")
        doc["simulation"] = {k: sum(x[k] for x in simulated) for k in keys}
        doc["simulation"]["files_that_cannot_fit"] = sum(x["cannot_fit_at"] is not None for x in simulated)
    return doc


def _cost_totals(costs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The files' bills summed; the simulated one only when every priced file has one."""
    recorded = [c["recorded"] for c in costs if c["recorded"] is not None]
    simulated = [c["simulated"] for c in costs if c["recorded"] is not None]

    def total(bills: list[dict[str, Any]]) -> dict[str, Any] | None:
        if not bills or any(b is None for b in bills):
            return None
        return {k: round(sum(b[k] for b in bills), 4) for k in bills[0]}

    models = sorted({m for c in costs for m in c["unpriced_models"]})
    return {
        "currency": "USD",
        "calls": sum(c["calls"] for c in costs),
        "unpriced_calls": sum(c["unpriced_calls"] for c in costs),
        "unpriced_models": models,
        "recorded": total(recorded),
        "simulated": total(simulated),
    }


def explain(report: Report) -> list[tuple[str, str]]:
    """The full arithmetic of the last decision, as (label, text) lines."""
    est, pol = report.estimate, report.policy
    if not report.rows:
        return [("decision", "no model request in this transcript")]
    last = report.rows[-1]
    source_of_real = next(
        (r for r in reversed(report.rows[:-1]) if r.real is not None and r.segment == last.segment), None
    )
    real_from = (
        "none yet in this segment (first request): the prior is used"
        if source_of_real is None
        else f"request #{source_of_real.index}: {source_of_real.real:,} tokens from the provider's "
        + ("usage record" if source_of_real.real_source == "usage" else "'prompt is too long' error")
    )
    return [
        ("request", f"#{last.index} (the last in the log), segment {last.segment}"),
        ("model", f"{est.model.name or '?'} ({est.model.provider})"),
        ("window", f"{pol.window:,} tokens ({pol.window_source or est.model.window_source})"),
        ("buffer", f"{pol.buffer:,} tokens: {pol.buffer_rule}"),
        ("threshold", f"window − buffer = {pol.window:,} − {pol.buffer:,} = {pol.threshold:,}"),
        ("tokenizer", f"{est.model.tokenizer}: the request is estimated at {last.estimate:,} tokens"),
        ("calibration", f"{report.calibration}: {last.basis}"),
        (
            "prior",
            f"hidden {report.prior.overhead:,} + estimate × {report.prior.first:.3f} ({report.prior.source})",
        ),
        ("real count", real_from),
        ("prediction", f"{last.calibrated:,} tokens (factor {last.factor:.3f})"),
        (
            "decision",
            f"{'compact' if last.decision == 'compact' else 'no compaction'}: {last.calibrated:,} "
            f"{'≥' if last.decision == 'compact' else '<'} {pol.threshold:,} (margin {last.margin:,})",
        ),
        ("summary budget", f"buffer × 0.5 = {pol.summary_budget:,} tokens"),
    ]
