"""The statusline through a live session: a real Claude Code session's last lines, one at a time.

    python bench/statusline_replay.py --real ../shared/fixtures-real
    python bench/statusline_replay.py --real DIR --lines 60 --python /path/to/other/venv/bin/python

For each real Claude Code session under ``--real`` (``claude-code/*.jsonl``), the file less its
last ``--lines`` lines is written to a scratch folder and read once by ``ctxfold statusline``
(as Claude Code runs it, a private cache folder); then each of those lines is appended in turn
and the command run again, as Claude Code runs it after each line it writes. Every ``--python``
given is measured on the same lines, in alternation, next to the first one's ``python -c pass`` (the anchor).
A live session's lines are not all messages: a fifth to two fifths are bookkeeping (queue
operations, snapshots, hook progress), which ``bench/cache.py``'s copies of lines from a
generated file's middle hold fewer of. It prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import child_env
from cache import _ctl, _payload, _wall  # the same command, payload and clock as cache.py's statusline runs


def replay(session: Path, pythons: list[str], n: int, work: Path) -> dict[str, list[float]]:
    """Seconds per run, for each interpreter and for ``python -c pass``, over ``n`` lines."""
    lines = session.read_bytes().splitlines(keepends=True)
    n = min(n, len(lines) - 1)
    runs: dict[str, list[float]] = {p: [] for p in [*pythons, "python -c pass"]}
    setups = []
    for k, python in enumerate(pythons):
        live = work / f"{k}" / session.name
        live.parent.mkdir(parents=True, exist_ok=True)
        live.write_bytes(b"".join(lines[:-n]))
        cache = work / f"{k}" / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        env = child_env(cache, count_cache=True)
        cmd = [*_ctl(python), "statusline"]
        _wall(cmd, env, _payload(live))  # the first read, cold
        setups.append((python, live, env, cmd))
    for i, raw in enumerate(lines[-n:]):
        order = setups if i % 2 == 0 else setups[::-1]
        for python, live, env, cmd in order:
            with live.open("ab") as f:
                f.write(raw)
            runs[python].append(_wall(cmd, env, _payload(live)))
        runs["python -c pass"].append(_wall([pythons[0], "-c", "pass"], os.environ.copy()))
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", required=True, help="the real sessions' folder (claude-code/*.jsonl in it)")
    ap.add_argument("--lines", type=int, default=60, help="lines replayed per session (60)")
    ap.add_argument("--python", action="append", help="an interpreter whose ctxfold to measure (repeatable)")
    args = ap.parse_args(argv)
    pythons = args.python or [sys.executable]
    sessions = sorted((Path(args.real) / "claude-code").glob("*.jsonl"))
    sessions = [s for s in sessions if len(s.read_bytes().splitlines()) > args.lines * 2]
    print(f"load average {os.getloadavg()[0]:.2f}; {args.lines} lines each of {len(sessions)} sessions")
    total: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="ctxfold-replay-") as tmp:
        for s in sessions:
            runs = replay(s, pythons, args.lines, Path(tmp) / s.stem)
            for name, times in runs.items():
                total.setdefault(name, []).extend(times)
                print(f"{s.name:<45} {name[-40:]:<40} median {statistics.median(times):.3f} s")
    anchor = statistics.median(total["python -c pass"])
    for name, times in total.items():
        med, mean = statistics.median(times), statistics.mean(times)
        print(
            f"all: {name[-40:]:<40} median {med:.3f} s, mean {mean:.3f} s, {med / anchor:.1f}× python -c pass"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
