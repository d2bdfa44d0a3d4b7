"""Start-up of the command line: ``ctxfold --help`` against a bare ``python -c pass``.

Runs them in turn, in a new random order each round (so machine load falls on all alike), and prints the medians and
their ratio; ``--other PYTHON`` adds a second interpreter's ``ctxfold --help`` (another
checkout's venv) to compare two versions in one run.

    python bench/startup.py --runs 40
    python bench/startup.py --runs 40 --other /path/to/old/venv/bin/python
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--other", help="another interpreter whose ctxfold to time beside this one")
    args = ap.parse_args()
    help_cmd = [
        sys.executable,
        "-c",
        "from ctxfold.cli.app import main; import sys; sys.argv=['ctxfold','--help']; main()",
    ]
    cmds = {"python -c pass": [sys.executable, "-c", "pass"], "ctxfold --help": help_cmd}
    if args.other:
        cmds["other ctxfold --help"] = [args.other, *help_cmd[1:]]
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name in random.sample(list(cmds), len(cmds)):  # no command always runs first
            times[name].append(timed(cmds[name]))
    anchor = statistics.median(times["python -c pass"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:24} median {med * 1000:6.1f} ms  ({med / anchor:4.2f}× python -c pass)")
    if args.other:
        ratio = statistics.median(times["ctxfold --help"]) / statistics.median(times["other ctxfold --help"])
        print(f"this ctxfold / other: {ratio:.3f}")


if __name__ == "__main__":
    main()
