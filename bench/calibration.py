"""Measure every calibrator on the real sessions: how close is the predicted prompt size?

    python bench/calibration.py [FIXTURES_DIR] [--json] [--observations]

For each request with a real count: |predicted − real| / real. Reported separately for the
first request of a segment (nothing to calibrate with: the per-source profile is learned
leave-one-out, i.e. from every *other* session) and for the requests after it. Also: the share
of requests predicted more than 2 % under, the worst underestimate, p90 on big steps (the
request grew by ≥ 2,000 estimated tokens since the previous one), and late decisions (the real
count reached the threshold while the prediction was under it). Prints numbers; asserts nothing.

Rows: each calibrator with the leave-one-out profile; ``growth (built-in)`` with an empty
profile, so the shipped per-format priors (``profile.BUILTIN``, which are medians over these
same sessions: in-sample) stand in; ``growth (nothing)`` with neither, the provider ratio alone.
``--observations`` prints what each session teaches the profile and the per-format medians
that ``BUILTIN`` records.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from estimate import REAL  # the same fixtures folder (and CTXFOLD_REAL_FIXTURES) as the other benches

from ctxfold.engine.calibration import CALIBRATORS, PROVIDER_RATIO, Prior
from ctxfold.engine.now import with_prompt
from ctxfold.engine.profile import (
    Profiles,
    default_prior,
    key_for,
    observe_session,
    project_key,
    session_key,
)
from ctxfold.engine.replay import replay
from ctxfold.tokens.estimate import FileEstimate, estimate_file
from ctxfold.tokens.harness_prompts import HarnessPrompt


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[max(0, math.ceil(p * len(xs)) - 1)]  # nearest rank: the 9th of 10 for p90


def load_all(root: Path) -> dict[str, tuple[FileEstimate, FileEstimate]]:
    out = {}
    for f in sorted(root.glob("*/*.jsonl")):
        out[f"{f.parent.name}/{f.name}"] = (estimate_file(f), estimate_file(f, tokenizer="heuristic"))
    return out


def prompt_of(est: FileEstimate, measured: bool) -> HarnessPrompt | None:
    return est.harness_prompt if measured else None


def loo_profiles(
    files: dict[str, tuple[FileEstimate, FileEstimate]], tmp: Path, measured: bool = True
) -> Profiles:
    prof = Profiles(tmp / f"profile-{measured}.json")
    for name, (est, _) in files.items():
        hp = prompt_of(est, measured)
        obs = observe_session(
            est.requests, est.model.provider, hp.tokens if hp else 0, hp.family if hp else None
        )
        if obs:
            prof.learn(
                key_for(est.format, est.model.name),
                session_key(name, None),
                obs,
                project_key(est.replay.project),
                est.model.provider,
            )
    return prof


def evaluate(
    files: dict[str, tuple[FileEstimate, FileEstimate]],
    prof: Profiles,
    calibration: str,
    prior_from: str,
    measured: bool = True,
) -> dict:
    after, first, big, unders = [], [], [], []
    late = early = n_under2 = 0
    for name, (est, heur) in files.items():
        source = heur if calibration == "seed" else est
        key = key_for(est.format, est.model.name)
        if prior_from == "profile":
            hp = prompt_of(est, measured)
            prior = prof.prior(
                key,
                est.model.provider,
                exclude=session_key(name, None),
                project=project_key(est.replay.project),
                family=hp.family if hp else None,
            )
        elif prior_from == "built-in":
            prior = default_prior(est.format, est.model.provider)
        else:
            prior = Prior(0, PROVIDER_RATIO.get(est.model.provider, 1.0), "provider ratio")
        prior = with_prompt(prior, prompt_of(est, measured))
        rep = replay(source, calibration=calibration, prior=prior)
        prev = None
        for row in rep.rows:
            if row.real is None:
                continue
            err = row.error or 0.0
            if row.first_in_segment:
                first.append((name, row.segment, err, row.calibrated - row.real))
            else:
                after.append(abs(err))
                if err < -0.02:
                    n_under2 += 1
                unders.append((err, row.calibrated - row.real, name, row.index))
                if prev is not None and row.estimate - prev >= 2_000:
                    big.append(abs(err))
            late += row.late
            early += row.early
            prev = row.estimate
    worst = min(unders) if unders else (0.0, 0, "", 0)
    return {
        "calibration": calibration,
        "prior": prior_from + ("" if measured else ", prompts not measured"),
        "requests_after_first": len(after),
        "median_pct": round(statistics.median(after) * 100, 2) if after else None,
        "p90_pct": round(pct(after, 0.9) * 100, 2),
        "under_2pct_share": round(n_under2 / max(1, len(after)) * 100, 2),
        "worst_under_pct": round(worst[0] * 100, 1),
        "worst_under_tokens": worst[1],
        "worst_at": f"{worst[2]}#{worst[3]}",
        "big_steps": len(big),
        "big_step_p90_pct": round(pct(big, 0.9) * 100, 2),
        "late_decisions": late,
        "early_decisions": early,
        "first_requests": [(n, s, round(e * 100, 1), d) for n, s, e, d in first],
        "first_within_15pct": sum(1 for _, _, e, _ in first if abs(e) <= 0.15),
    }


def print_observations(files: dict[str, tuple[FileEstimate, FileEstimate]]) -> None:
    """Per session: its hidden overhead before and after the measured prompt of its harness
    version, and its ratio; per format the medians (``profile.BUILTIN`` records those of the
    overhead beyond the measured prompt)."""
    by_format: dict[str, list[tuple[int, float]]] = {}
    for name, (est, _) in files.items():
        plain = observe_session(est.requests, est.model.provider)
        hp = est.harness_prompt
        obs = observe_session(est.requests, est.model.provider, hp.tokens if hp else 0)
        if obs is None or plain is None:
            continue
        by_format.setdefault(est.format, []).append((obs.overhead, obs.ratio))
        measured = (
            f"measured {hp.tokens:>6,} ({hp.version}{', ' + hp.variant if hp.variant != 'default' else ''})"
            if hp
            else " " * 28
        )
        print(
            f"{name:<55} hidden {plain.overhead:>7,}  {measured}  beyond it {obs.overhead:>7,}  ratio {obs.ratio:.4f}"
        )
    print()
    for fmt, obs in sorted(by_format.items()):
        overhead = statistics.median(o for o, _ in obs)
        ratio = statistics.median(r for _, r in obs)
        print(
            f"{fmt:<12} {len(obs)} session(s): median beyond the measured prompt {overhead:,.0f}, median ratio {ratio:.4f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("root", nargs="?", type=Path, default=REAL)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--observations", action="store_true", help="what each session teaches the profile")
    args = ap.parse_args()
    if not args.root.is_dir():
        sys.exit(f"no fixtures at {args.root}")
    import tempfile

    files = load_all(args.root)
    if args.observations:
        print_observations(files)
        return
    with tempfile.TemporaryDirectory() as d:
        prof = loo_profiles(files, Path(d))
        results = [evaluate(files, prof, name, "profile") for name in CALIBRATORS]
        results += [evaluate(files, prof, "growth", p) for p in ("built-in", "nothing")]
        plain = loo_profiles(files, Path(d), measured=False)
        results += [evaluate(files, plain, "growth", p, measured=False) for p in ("profile", "nothing")]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{len(files)} sessions, {results[0]['requests_after_first']} requests after the first of their segment\n"
    )
    head = f"{'calibrator':<18}{'median':>8}{'p90':>8}{'>2% under':>11}{'worst under':>22}{'big-step p90':>14}{'late':>6}{'early':>6}{'first ±15%':>12}"
    print(head)
    for r in results:
        label = r["calibration"] + ("" if r["prior"] == "profile" else f" ({r['prior']})")
        worst = f"{r['worst_under_pct']}% ({r['worst_under_tokens']:,})"
        first = f"{r['first_within_15pct']}/{len(r['first_requests'])}"
        print(
            f"{label:<18}{r['median_pct']:>7}%{r['p90_pct']:>7}%{r['under_2pct_share']:>10}%{worst:>22}"
            f"{r['big_step_p90_pct']:>13}%{r['late_decisions']:>6}{r['early_decisions']:>6}{first:>12}"
        )
    print(
        "\nfirst request of each segment, error % (growth; profile learned from the other sessions),"
        "\nwithout and with the measured prompts of the harness versions:"
    )
    by = {(r["calibration"], r["prior"]): r for r in results}
    before = by[("growth", "profile, prompts not measured")]["first_requests"]
    after = by[("growth", "profile")]["first_requests"]
    print(f"  {'session':<55} {'seg':>3} {'before':>8} {'after':>8} {'tokens after':>13}")
    for (name, seg, e0, _), (_, _, e1, d1) in zip(before, after, strict=True):
        print(f"  {name:<55} {seg:>3} {e0:+7.1f}% {e1:+7.1f}% {d1:+13,}")


if __name__ == "__main__":
    main()
