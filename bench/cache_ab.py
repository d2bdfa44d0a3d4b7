"""Two installs' whole ``estimate`` with the count cache, alternated run by run.

    python bench/cache_ab.py --old /venv-a/bin/python --new /venv-b/bin/python
    python bench/cache_ab.py --old ... --new ... --pairs 12 --size-mb 200 --shapes claude-code

``cache.py`` measures one install; this one tells whether a change to the cache's path helped,
through the noise of a machine whose speed drifts from minute to minute: the two installs run
in turns, so each pair meets the same minute, and it prints the median of the pairs' ratios.
For each shape (a file generated from the real sessions, ``_gen.py``), each install keeps its
own state (the cache key names the code) for the file less its last 2 % and for the whole file,
restored before every run: ``grown`` reads on from the first, ``same`` finds the file unchanged
since the second; ``cold`` reads it all (``--no-cache``, a few pairs: the anchor of the ratio).
It prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import child_env
from _gen import generate
from cache import GROWTH, _ctl, _cut
from estimate import generator_sources

CASES = ("grown", "same", "cold")


def _run(python: str, env: dict[str, str], live: Path, *extra: str) -> float:
    t = time.perf_counter()
    cmd = [*_ctl(python), "estimate", str(live), "--json", *extra]
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def _states(python: str, data: bytes, cut: int, live: Path, work: Path) -> dict[str, Path]:
    """The cache folders this install keeps for the file less its last lines, then whole."""
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    kept = {}
    for case, size in (("grown", cut), ("same", len(data))):
        live.write_bytes(data[:size])
        _run(python, child_env(cache, count_cache=True), live)
        kept[case] = work / f"kept-{case}"
        shutil.rmtree(kept[case], ignore_errors=True)
        shutil.copytree(cache, kept[case])
    os.sync()
    return kept


def shape(
    fmt: str, size_mb: float, pairs: int, installs: dict[str, str], work: Path
) -> dict[str, dict[str, list[float]]]:
    path, _ = generate(fmt, generator_sources(fmt), size_mb, seed=0)
    data = path.read_bytes()
    cut, live = _cut(data, GROWTH), work / f"{fmt}-live.jsonl"
    kept = {name: _states(py, data, cut, live, work / name) for name, py in installs.items()}
    times: dict[str, dict[str, list[float]]] = {case: {name: [] for name in installs} for case in CASES}
    for case in CASES:
        for _ in range(pairs if case != "cold" else min(pairs, 3)):
            for name, py in installs.items():
                cache = work / name / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                shutil.copytree(kept[name]["grown" if case == "cold" else case], cache)
                extra = ("--no-cache",) if case == "cold" else ()
                times[case][name].append(_run(py, child_env(cache, count_cache=True), live, *extra))
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, metavar="PYTHON", help="the interpreter of the install before")
    ap.add_argument("--new", required=True, metavar="PYTHON", help="the interpreter of the install after")
    ap.add_argument("--pairs", type=int, default=12, help="alternated pairs per case (12; cold: 3)")
    ap.add_argument("--size-mb", type=float, default=200, help="size of each generated file (200)")
    ap.add_argument("--shapes", nargs="+", default=["claude-code", "codex"], choices=["claude-code", "codex"])
    args = ap.parse_args(argv)
    installs = {"old": args.old, "new": args.new}
    print(f"old: {args.old}\nnew: {args.new}\nload average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="ctxfold-cache-ab-") as tmp:
        work = Path(tmp)
        for fmt in args.shapes:
            t = shape(fmt, args.size_mb, args.pairs, installs, work)
            for case in CASES:
                old, new = t[case]["old"], t[case]["new"]
                ratio = statistics.median(b / a for a, b in zip(old, new, strict=True))
                print(
                    f"{fmt} {case:<5}: old median {statistics.median(old):.3f} s, new {statistics.median(new):.3f} s;"
                    f" new/old, median of {len(old)} pairs {ratio:.3f}"
                )
            for name in installs:
                grown, cold = statistics.median(t["grown"][name]), statistics.median(t["cold"][name])
                print(f"{fmt} {name}: grown / cold {grown / cold:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
