"""What the real sessions cost, and what compaction would change: tokens against dollars.

    python bench/cost.py [FIXTURES_DIR] [--windows 100000,50000]

For each real session: its bill read off the usage records (priced with ctxfold's table), the
cost the harness itself recorded where it has one (pi, LiteLLM), and for each window the
simulated run (``report --simulate-compaction``): compactions, the change in prompt tokens
(the summarizer's included) and in dollars (the summarizer's share apart). Sessions whose model
has no price are listed with their token change only. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson
from estimate import REAL  # the same fixtures folder (and CTXFOLD_REAL_FIXTURES) as the other benches

from ctxfold.engine.replay import report_file
from ctxfold.engine.report_doc import summary


def harness_cost(path: Path) -> float | None:
    """The cost the log records itself: pi's usage.cost.total, LiteLLM's cost."""
    total, seen = 0.0, False
    for line in path.read_bytes().splitlines():
        d = orjson.loads(line)
        if isinstance(d.get("cost"), (int, float)):
            total, seen = total + d["cost"], True
        m = d.get("message") if isinstance(d.get("message"), dict) else {}
        cost = (m.get("usage") or {}).get("cost") if isinstance(m.get("usage"), dict) else None
        if isinstance(cost, dict) and isinstance(cost.get("total"), (int, float)):
            total, seen = total + cost["total"], True
    return total if seen else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=str(REAL))
    ap.add_argument("--windows", default="100000,50000")
    args = ap.parse_args()
    files = sorted(Path(args.root).glob("*/*.jsonl"))
    if not files:
        sys.exit(f"no sessions under {args.root}")
    windows = [int(w) for w in args.windows.split(",")]
    print(f"{'session':52s} {'recorded':>9s} {'harness':>9s}", end="")
    for w in windows:
        print(f" | {w // 1000}k: {'fires':>5s} {'tokens':>7s} {'cost':>7s} {'summ.':>6s}", end="")
    print()
    totals = {w: [0.0, 0.0] for w in windows}
    for f in files:
        base = summary(report_file(str(f)))["cost"]
        rec = base["recorded"]
        logged = harness_cost(f)
        name = f"{f.parent.name}/{f.name}"
        print(f"{name:52s} {_usd(rec['total'] if rec else None):>9s} {_usd(logged):>9s}", end="")
        for w in windows:
            s = summary(report_file(str(f), window=w, simulate=True))
            sim, cost = s["simulation"], s["cost"]
            if sim["cannot_fit_at"] is not None:
                print(f" | {'':4s} {'cannot fit':>29s}", end="")
                continue
            sent = (
                sim["prompt_tokens_total"] + sim["summarizer_input_tokens"] + sim["summarizer_output_tokens"]
            )
            dt = sent / s["prompt_tokens_total"] - 1
            after = cost["simulated"]
            dc = f"{after['total'] / rec['total'] - 1:+.1%}" if rec and after else "—"
            summ = _usd(after["summarizer"]) if after else "—"
            print(f" | {'':4s} {sim['compactions']:5d} {dt:+7.1%} {dc:>7s} {summ:>6s}", end="")
            if rec and after:
                totals[w][0] += rec["total"]
                totals[w][1] += after["total"]
        print(f"   unpriced: {', '.join(base['unpriced_models'])}" if base["unpriced_models"] else "")
    for w, (before, after) in totals.items():
        if before:
            print(
                f"priced sessions at a {w:,}-token window: ${before:.2f} recorded, ${after:.2f} simulated ({after / before - 1:+.1%})"
            )


def _usd(x: float | None) -> str:
    return "—" if x is None else f"${x:.3f}"


if __name__ == "__main__":
    main()
