"""The count cache in one run: a re-run after the session grew, a re-run unchanged, the statusline.

    python bench/cache.py                    # 200 MB per shape, 3 rounds; statusline on 20 MB
    python bench/cache.py --quick            # 20 MB per shape, 2 rounds
    python bench/cache.py --python /path/to/other/venv/bin/python   # another install

For the Claude Code and Codex shapes (a file generated from the real sessions, ``_gen.py``),
each time in a fresh child of the measured interpreter, its tokenizer loaded before the clock
starts, the best of ``--rounds``:

* ``keep s``: the first run with the cache on an empty cache folder (it reads cold and keeps
  the state), on the file less its last 2 %;
* ``cold s``: once the last 2 % of lines are appended, the file read from its first line
  (``cache=False``: the anchor);
* ``grown s``: the run with the cache on the grown file (the issue's target: grown ÷ cold ≤ 0.10);
* ``same s``: a run again, the file unchanged.

Then the whole commands, as a user runs them (a fresh ``ctxfold`` process each, start-up and
the engine's load included; the best of ``--rounds``): ``estimate`` cold (``--no-cache``),
after 2 % growth and unchanged; ``compact`` of the session (not due at its model's window)
reading it whole for the summary (``--no-cache``), and deciding from the cache after 2 % growth
and unchanged. ``--no-commands`` skips them.

Then ``ctxfold statusline`` on a 20 MB Claude Code session (the whole command, as Claude Code
runs it, with a private cache folder already holding the session): the median of ``--runs``
runs of the file unchanged, and with one line appended before each run (a live session), next
to ``python -c pass`` (the issue's target: ≤ 0.15 s); the first line prints two probes of
fixed work (``_machine.py``) to read that time against other hours. Then Codex's status line
provider (``statusline --codex``, one process, as Codex runs it) on a 20 MB Codex session, read
unchanged and after a line was appended (``_codex_provider.py``). It prints numbers and asserts
nothing.

``rows(...)`` returns the same figures for ``speed.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import child_env, run_child
from _codex_provider import codex_provider
from _gen import MB, generate
from _machine import describe, probes
from estimate import generator_sources

SHAPES = ("claude-code", "codex")
GROWTH = 0.02

_CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
from ctxfold.tokens.tokenizers import get_tokenizer
tok = get_tokenizer("o200k")
getattr(tok, "native", lambda: None)()  # the engine a large file uses, loaded before the clock
try:
    from ctxfold.tokens.incremental import count_file
except ImportError:  # an install without the cache: every run is cold
    from ctxfold.tokens.estimate import estimate_file as count_file
    args["cache"] = None
t = time.perf_counter()
if args["cache"] is None:
    r = count_file(args["path"])
else:
    r = count_file(args["path"], cache=args["cache"])
print(json.dumps({"s": time.perf_counter() - t, "tokens": r.context_tokens}))
"""


def child(python: str, env: dict[str, str], path: Path, cache: bool) -> float:
    return float(run_child(_CHILD, {"path": str(path), "cache": cache}, python=python, env=env)["s"])


def _cut(data: bytes, growth: float) -> int:
    """The end of the line that holds the byte at ``1 - growth`` of the file."""
    return data.index(b"\n", int(len(data) * (1 - growth))) + 1


def shape(
    fmt: str, size_mb: float, rounds: int, python: str, seed: int, work: Path, whole: bool = True
) -> dict[str, Any]:
    path, _ = generate(fmt, generator_sources(fmt), size_mb, seed=seed)
    data = path.read_bytes()
    cut = _cut(data, GROWTH)
    live = work / f"{fmt}-live.jsonl"
    times: dict[str, list[float]] = {"cold": [], "keep": [], "grown": [], "same": []}
    ran: list[dict[str, Any]] = []
    for i in range(rounds):
        cache = work / f"cache-{fmt}-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        env = child_env(cache, count_cache=True)
        live.write_bytes(data[:cut])
        os.sync()  # no write-back of the copy under the clock
        times["keep"].append(child(python, env, live, True))
        with live.open("ab") as f:
            f.write(data[cut:])
        os.sync()
        times["cold"].append(child(python, env, live, False))
        times["grown"].append(child(python, env, live, True))
        times["same"].append(child(python, env, live, True))
        shutil.rmtree(cache, ignore_errors=True)
        if whole:
            ran.append(commands(python, env, data, cut, work))
            shutil.rmtree(cache, ignore_errors=True)
    best = {k: min(v) for k, v in times.items()}
    cmds = {k: min(r[k] for r in ran) for k in ran[0] if k != "compact status"} if ran else {}
    return {
        "fmt": fmt,
        "mb": len(data) / MB,
        "growth_mb": (len(data) - cut) / MB,
        **{f"{k}_s": v for k, v in best.items()},
        "grown/cold": best["grown"] / best["cold"],
        "same/cold": best["same"] / best["cold"],
        "keep/cold": best["keep"] / best["cold"],
        "commands": cmds,
        "compact status": sorted({r["compact status"] for r in ran}),
    }


def commands(python: str, env: dict[str, str], data: bytes, cut: int, work: Path) -> dict[str, Any]:
    """The whole commands' wall times in one round, and the status ``compact`` answered."""
    ctl, live, out = _ctl(python), work / "commands-live.jsonl", work / "commands-out"

    def kept() -> None:  # the cache holds the file less its last 2 %, which is then appended
        live.write_bytes(data[:cut])
        os.sync()
        _timed([*ctl, "estimate", str(live), "--json"], env)
        with live.open("ab") as f:
            f.write(data[cut:])
        os.sync()

    estimate, compact = [*ctl, "estimate", str(live), "--json"], [*ctl, "compact", str(live), "--json"]
    compact += ["--out-dir", str(out)]
    t: dict[str, Any] = {}
    live.write_bytes(data[: data.index(b"\n", 50_000) + 1])  # a small file: the Python engine's
    _timed(estimate, env)  # table is built, once per cache folder, before any clock
    kept()
    t["estimate grown"], _ = _timed(estimate, env)
    t["estimate same"], _ = _timed(estimate, env)
    t["estimate cold"], _ = _timed([*estimate, "--no-cache"], env)
    kept()
    t["compact grown"], _ = _timed(compact, env)
    t["compact same"], _ = _timed(compact, env)
    t["compact whole"], doc = _timed([*compact, "--no-cache"], env)
    shutil.rmtree(out, ignore_errors=True)
    t["compact status"] = json.loads(doc).get("status") if doc.startswith("{") else "failed"
    return t


def _ctl(python: str) -> list[str]:
    beside = Path(python).parent / "ctxfold"
    return [str(beside)] if beside.is_file() else [python, "-m", "ctxfold"]


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - t, done.stdout


def _payload(transcript: Path) -> str:
    """What Claude Code sends a statusline command (docs/commands.md, "statusline")."""
    return json.dumps(
        {
            "hook_event_name": "Status",
            "session_id": "bench",
            "transcript_path": str(transcript),
            "cwd": str(transcript.parent),
            "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
            "workspace": {"current_dir": str(transcript.parent), "project_dir": str(transcript.parent)},
            "version": "2.1.121",
            "output_style": {"name": "default"},
        }
    )


def _wall(cmd: list[str], env: dict[str, str], stdin: str = "") -> float:
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - t


def _has_statusline(cmd: list[str], env: dict[str, str]) -> bool:
    done = subprocess.run([*cmd, "-h"], capture_output=True, text=True, env=env, check=False)
    return done.returncode == 0


def statusline(python: str, size_mb: float, runs: int, seed: int, work: Path) -> dict[str, Any]:
    path, _ = generate("claude-code", generator_sources("claude-code"), size_mb, seed=seed)
    data = path.read_bytes()
    live = work / "statusline-live.jsonl"
    live.write_bytes(data)
    cache = work / "cache-statusline"
    shutil.rmtree(cache, ignore_errors=True)
    env = child_env(cache, count_cache=True)
    cmd = [*_ctl(python), "statusline"]
    if not _has_statusline(cmd, env):
        return {"mb": len(data) / MB, "line": None}
    payload = _payload(live)
    first = _wall(cmd, env, payload)  # reads the session cold and keeps it
    lines = data.splitlines(keepends=True)
    same, grown, anchor = [], [], []
    for i in range(runs):
        anchor.append(_wall([python, "-c", "pass"], env))
        same.append(_wall(cmd, env, payload))
        with live.open("ab") as f:  # the session goes on: one more line (a copy of an earlier one)
            f.write(lines[len(lines) // 2 + i])
        grown.append(_wall(cmd, env, payload))
    out = subprocess.run(cmd, input=payload, capture_output=True, text=True, env=env, check=False)
    shutil.rmtree(cache, ignore_errors=True)
    return {
        "mb": len(data) / MB,
        "first_s": first,
        "same_s": statistics.median(same),
        "grown_s": statistics.median(grown),
        "python_s": statistics.median(anchor),
        "line": out.stdout.strip(),
    }


def rows(
    size_mb: float = 200,
    rounds: int = 3,
    python: str = sys.executable,
    seed: int = 0,
    statusline_mb: float = 20,
    runs: int = 15,
    whole: bool = True,
) -> dict[str, Any]:
    """Every figure of this benchmark: ``{"shapes": [row per shape], "statusline": {...}}``."""
    work = Path(tempfile.mkdtemp(prefix="ctxfold-cache-bench-"))
    try:
        shapes = [shape(fmt, size_mb, rounds, python, seed, work, whole) for fmt in SHAPES]
        line = statusline(python, statusline_mb, runs, seed, work)
        codex = codex_provider(
            python, statusline_mb, runs, seed, work, child_env(work / "cache-codex", count_cache=True)
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"shapes": shapes, "statusline": line, "codex": codex}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 MB files, 2 rounds, 7 statusline runs")
    ap.add_argument("--size-mb", type=float, default=None, help="size of each generated file (200)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--runs", type=int, default=None, help="statusline runs (15)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose ctxfold is measured")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-commands", action="store_true", help="skip the whole commands' times")
    args = ap.parse_args(argv)
    size = args.size_mb or (20 if args.quick else 200)
    rounds = args.rounds or (2 if args.quick else 3)
    runs = args.runs or (7 if args.quick else 15)
    print(f"measuring {args.python}; load average {os.getloadavg()[0]:.2f}")
    print(describe(probes(args.python)))
    out = rows(size, rounds, args.python, args.seed, 20, runs, not args.no_commands)
    print(f"\n{'shape':<12} {'MB':>6} {'cold s':>7} {'keep s':>7} {'grown s':>8} {'same s':>7} "
          f"{'grown/cold':>10} {'same/cold':>9} {'keep/cold':>9}")  # fmt: skip
    for r in out["shapes"]:
        print(
            f"{r['fmt']:<12} {r['mb']:>6.0f} {r['cold_s']:>7.3f} {r['keep_s']:>7.3f} {r['grown_s']:>8.3f} "
            f"{r['same_s']:>7.3f} {r['grown/cold']:>10.3f} {r['same/cold']:>9.3f} {r['keep/cold']:>9.3f}"
        )
    for r in out["shapes"]:
        c = r["commands"]
        if not c:
            continue
        print(
            f"{r['fmt']} whole commands: estimate cold {c['estimate cold']:.2f} s, grown "
            f"{c['estimate grown']:.2f} s ({c['estimate grown'] / c['estimate cold']:.3f}), same "
            f"{c['estimate same']:.2f} s; compact ({'/'.join(r['compact status'])}) reading for the "
            f"summary {c['compact whole']:.2f} s, from the cache grown {c['compact grown']:.2f} s "
            f"({c['compact grown'] / c['compact whole']:.3f}), same {c['compact same']:.2f} s"
        )
    for figures, missing, say in (
        (out["statusline"], "no statusline command in this install", _statusline_figures),
        (out["codex"], "no Codex status line provider in this install", _codex_figures),
    ):
        if figures["line"] is None:
            print(f"\n{missing}")
            continue
        print(say(figures, runs))
        print(f"its line: {figures['line']}")
    return 0


def _statusline_figures(s: dict[str, Any], runs: int) -> str:
    return (
        f"\nstatusline on a {s['mb']:.0f} MB Claude Code session (median of {runs}): unchanged "
        f"{s['same_s']:.3f} s, one line appended {s['grown_s']:.3f} s, first run {s['first_s']:.3f} s; "
        f"python -c pass {s['python_s']:.3f} s"
    )


def _codex_figures(c: dict[str, Any], runs: int) -> str:
    return (
        f"Codex's status line provider on a {c['mb']:.0f} MB Codex session, each read as Codex makes it "
        f"(median of {runs}): unchanged {c['same_s']:.3f} s, one line appended {c['grown_s']:.3f} s "
        f"({c['late']} of {runs} came back with the previous line), first line {c['first_s']:.2f} s"
    )


if __name__ == "__main__":
    raise SystemExit(main())
