"""Speed of ctxfold in one run: estimate against raw tokenizers, a folder on every core, start-up.

    python bench/speed.py                    # 200 MB per shape, 2,000 small logs, 15 start-ups
    python bench/speed.py --quick            # 20 MB, 300 logs: a fast check
    python bench/speed.py --python /path/to/other/venv/bin/python   # measure another install

For the Claude Code and Codex shapes (a file generated from the real sessions, ``_gen.py``):

* ``estimate s``: ``estimate_file(path)`` in a fresh child of the measured interpreter, its
  tokenizer loaded before the clock starts (best of ``--rounds``);
* ``tiktoken 1t s``: raw tiktoken on one thread (``encode_ordinary`` per text) over exactly the
  texts ctxfold counts, captured from one in-process estimate; ``quicktok 1t s``: the engine
  ctxfold now uses, the same way (``count`` per text). Rounds alternate child, tiktoken,
  quicktok, so a burst of load from elsewhere falls on all three;
* ``est/tiktoken`` and ``est/quicktok``: the time ratios (the issue's target: est/tiktoken <= 0.5);
* ``parse s``: the same file's entries drained without counting (the floor of the rest);
* ``cpu s``: the CPU time the estimate took (its threads and helper processes, user + system),
  and ``floor/tiktoken``: that time spread evenly over this machine's cores, over raw tiktoken's.
  No split of the work can bring ``est/tiktoken`` under it; only doing less work can.

Under the table, ``est/tiktoken`` round by round: each round's estimate over the raw tiktoken
run right after it, sorted, and their median. The best-of columns pair times from different
minutes; a pair of one round shares the machine's speed of that minute.

Above the table, two probes of fixed work (``_machine.py``): how fast this machine runs this
hour, to read the absolute times (start-up, the statusline) against other hours.

Then a folder of small logs (``report --brief --no-profile``): wall time, the CPU time of the
command and its workers, and their ratio (cpu/wall; ~2 when both cores work), next to one
worker (``--jobs 1``) when the measured ctxfold has ``--jobs``, and as a second report over
the same folder finds it (a private count cache filled by one run first), also without
``--no-profile`` (as a user runs it: the profile learned from the folder by one run first).
Then start-up: ``estimate`` of a tiny file and ``ctxfold --help`` (medians), next to ``python
-c pass``, after one first run that may build the tokenizer's table in the (private) cache
folder.

Then, when a ccusage is installed (``--ccusage PATH``, repeatable, else ``ccusage`` on ``PATH``;
this script never installs it): a folder of Claude Code logs only, laid out as Claude Code
keeps them (``projects/<project>/<session uuid>.jsonl``, hard links to the generated files),
read by ``ctxfold report --brief`` and by ``ccusage session --json --offline`` (pointed at it
with ``CLAUDE_CONFIG_DIR``, ``HOME`` an empty folder, so it reads nothing else and fetches no
prices), alternating, best of the rounds: ctxfold's wall time over ccusage's, cold (no count
cache, as every figure above) and as a second report over the same folder finds it (a private
count cache filled by one run first: every log answered from it, and every line from the
report memo that run kept). Above them, the least time any cold report of that folder can take
here (``floor.py``: parsing every line and counting every text with the fastest tools, spread
over the cores). Without a ccusage, a note says how to add it.

Last, the other two benchmarks of the issue, as their own scripts print them (``--no-more``
leaves them out): ``memory.py`` (peak RSS of estimate, report and compact at three sizes and
the slope; 50/100/200 MB, with ``--quick`` 5/10/20) and ``cache.py`` (a re-run after 2 %
growth and unchanged against a cold run; the statusline warm on a 20 MB session).

It prints numbers and asserts nothing; every figure is a ratio within this run or a time next
to its anchor. Children get a private cache folder and bytecode writing on (as an installed
ctxfold has), whatever ``PYTHONDONTWRITEBYTECODE`` says here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import PRELUDE, child_env, run_child
from _gen import MB, default_dir, generate, generate_folder
from _machine import describe, probes
from estimate import _fresh, _load, capture, generator_sources, parallelism, real_fixtures

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("claude-code", "codex")
TINY = ROOT / "fixtures" / "claude-code" / "subagent.jsonl"

_CHILD = (
    PRELUDE
    + r"""
import os
from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.tokenizers import get_tokenizer
tok = get_tokenizer("o200k")
getattr(tok, "plan", lambda size: None)(os.path.getsize(args["path"]))
getattr(tok, "native", lambda: None)()  # the engine this file's size picks, loaded before the clock
out = {"engine": getattr(tok, "engine", "tiktoken")}
import resource
def cpu():  # this process's threads and its helper processes (rs-bpe, tiktoken), user + system
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
c, t = cpu(), time.perf_counter()
r = estimate_file(args["path"], fmt=args["fmt"])
out["s"] = time.perf_counter() - t
out["cpu_s"] = cpu() - c
out["peak_mb"] = hwm()
out["tokens"] = r.context_tokens
if args["parse"]:
    from ctxfold.formats.loader import open_transcript
    t = time.perf_counter()
    for _ in open_transcript(args["path"], fmt=args["fmt"]).entries:
        pass
    out["parse_s"] = time.perf_counter() - t
print(json.dumps(out))
"""
)


def raw(batches: list[list[str]], engine: str) -> float:
    """One thread, one call per text, over fresh copies of the texts."""
    from ctxfold.tokens.encodings import get_encoding
    from ctxfold.tokens.engines import quicktok_encoding

    if engine == "tiktoken":
        count: Any = get_encoding("o200k_base").encode_ordinary
    else:
        qt, why = quicktok_encoding("o200k_base")
        if qt is None:
            raise RuntimeError(f"quicktok unavailable: {why}")
        count = qt.count
    texts = [t for b in _fresh(batches) for t in b]
    start = time.perf_counter()
    for t in texts:
        count(t)
    return time.perf_counter() - start


def shape(
    fmt: str, size_mb: float, rounds: int, python: str, env: dict[str, str], seed: int
) -> dict[str, Any]:
    path, _ = generate(fmt, generator_sources(fmt), size_mb, seed=seed)
    use, _, batches, _, _ = capture(path, fmt)
    row: dict[str, Any] = {"fmt": fmt, "mb": path.stat().st_size / MB, "texts": sum(map(len, batches))}
    row["chars"] = sum(len(t) for b in batches for t in b)
    est, tik, qt = [], [], []
    for i in range(rounds):
        c = run_child(_CHILD, {"path": str(path), "fmt": use, "parse": i == 0}, python=python, env=env)
        est.append((c["s"], c["cpu_s"]))
        if i == 0:
            row.update(parse_s=c["parse_s"], peak_mb=c["peak_mb"], engine=c["engine"])
        tik.append(raw(batches, "tiktoken"))
        qt.append(raw(batches, "quicktok"))
    est_s, cpu_s = min(est)  # the fastest round's wall time and that round's CPU time
    row.update(est_s=est_s, cpu_s=cpu_s, tiktoken_s=min(tik), quicktok_s=min(qt))
    # each round's estimate over the raw tiktoken run just after it: the machine's speed drifts
    # from minute to minute (20 % here), and a pair a few seconds apart shares most of it
    row["round_ratios"] = sorted(e / t for (e, _), t in zip(est, tik, strict=True))
    return row


def command(python: str) -> list[str]:
    beside = Path(python).parent / "ctxfold"
    return [str(beside)] if beside.is_file() else [python, "-m", "ctxfold"]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (the command's and its workers') of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def folder(python: str, env: dict[str, str], files: int, kb: float, rounds: int, seed: int) -> dict[str, Any]:
    sources = [p for p, hint in real_fixtures() if hint in ("claude-code", "codex", "pi")]
    path, _ = generate_folder(sources, files, kb, seed=seed)
    logs = list(path.glob("*.jsonl"))
    base = [*command(python), "report", str(path), "--brief", "--no-profile"]
    has_jobs = (
        "--jobs"
        in subprocess.run(
            [*command(python), "report", "--help"], env=env, capture_output=True, text=True, check=False
        ).stdout
    )
    row: dict[str, Any] = {"files": len(logs), "mb": sum(p.stat().st_size for p in logs) / MB}
    runs = [timed(base, env) for _ in range(rounds)]
    row["wall"], row["cpu"] = min(runs)
    if has_jobs:
        row["serial_wall"], row["serial_cpu"] = min(timed([*base, "--jobs", "1"], env) for _ in range(rounds))
    # a second report over the same folder: a private count cache filled by one run first
    warm_env = child_env(Path(tempfile.mkdtemp(prefix="ctxfold-speed-warm-")), count_cache=True)
    timed(base, warm_env)
    row["warm_wall"] = min(timed(base, warm_env)[0] for _ in range(rounds))
    # and as a user runs it, with the profile learned (from this folder, by the first run)
    learned = [x for x in base if x != "--no-profile"]
    timed(learned, warm_env)
    row["warm_profile_wall"] = min(timed(learned, warm_env)[0] for _ in range(rounds))
    return row


def startup(python: str, env: dict[str, str], runs: int) -> dict[str, float]:
    tiny = [*command(python), "estimate", str(TINY), "--no-profile"]
    first = timed(tiny, env)[0]  # may build the tokenizer's table in this (private) cache folder
    cmds = {"pass": [python, "-c", "pass"], "tiny": tiny, "help": [*command(python), "--help"]}
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(runs):
        for k, cmd in cmds.items():
            times[k].append(timed(cmd, env)[0])
    return {"first": first, **{k: statistics.median(v) for k, v in times.items()}}


def claude_layout(files: int, kb: float, seed: int) -> tuple[Path, int, float]:
    """Small Claude Code logs as ``~/.claude`` holds them: (the folder for ``CLAUDE_CONFIG_DIR``,
    how many logs, MB). Each generated log is hard-linked (else copied) under a project named
    after its source session, with a session UUID for a name."""
    sources = [p for p, hint in real_fixtures() if hint == "claude-code"]
    flat, _ = generate_folder(sources, files, kb, seed=seed)
    home = flat.with_name(flat.name + "-claude")
    logs = sorted(flat.glob("*.jsonl"))
    if not (home / ".complete").is_file():
        shutil.rmtree(home, ignore_errors=True)
        for i, log in enumerate(logs):
            project = home / "projects" / ("-home-user-" + log.stem.split("-", 1)[1])
            project.mkdir(parents=True, exist_ok=True)
            target = project / f"{uuid.UUID(int=seed << 32 | i + 1)}.jsonl"
            try:
                os.link(log, target)
            except OSError:
                shutil.copyfile(log, target)
        (home / ".complete").write_text("ok\n")
    return home, len(logs), sum(p.stat().st_size for p in logs) / MB


def against_ccusage(
    python: str, env: dict[str, str], tools: list[str], files: int, kb: float, rounds: int, seed: int
) -> None:
    """``report --brief`` (and, read before, ``report --by session``) and each ccusage on the same
    Claude Code folder, alternating."""
    home, n, mb = claude_layout(files, kb, seed)
    empty = Path(tempfile.mkdtemp(prefix="ctxfold-speed-home-"))
    cc_env = {**env, "CLAUDE_CONFIG_DIR": str(home), "HOME": str(empty), "LOG_LEVEL": "0", "NO_COLOR": "1"}
    ours = [*command(python), "report", str(home / "projects"), "--brief", "--no-profile"]
    # ccusage's own table: tokens and cost per session (with --by: ctxfold 0.1 of late 2026 on)
    by_session = [*ours[:-2], "--by", "session", "--no-profile"]
    # a user's second report over the same folder: its count cache already holds every log, and
    # (ctxfold 0.1 of late 2026 on) its report memo every line
    warm_env = child_env(Path(tempfile.mkdtemp(prefix="ctxfold-speed-warm-")), count_cache=True)
    timed(ours, warm_env)
    if subprocess.run(by_session, env=warm_env, capture_output=True, check=False).returncode:
        by_session = []  # a ctxfold without --by

    print(f"\nClaude Code folder of {n} logs ({mb:.1f} MB) as ~/.claude/projects holds them")
    from floor import describe, floor

    from ctxfold.tokens.parallel import cpus

    print("  " + describe(floor(sorted((home / "projects").glob("*/*.jsonl")), cpus())))
    best: dict[str, float] = {}
    for tool in tools:
        version = subprocess.run(
            [tool, "--version"], env=cc_env, capture_output=True, text=True, check=False
        ).stdout.strip()
        theirs = [tool, "session", "--json", "--offline"]
        probe = subprocess.run(theirs, env=cc_env, capture_output=True, text=True, check=False)
        try:
            doc = json.loads(probe.stdout)
            found = len(doc.get("sessions", doc.get("session", [])))
        except ValueError:
            print(f"  {tool}: no JSON from it ({probe.stderr.strip()[-200:]}): left out")
            continue
        times: list[float] = []
        for _ in range(rounds):
            best["ctxfold"] = min(best.get("ctxfold", 1e9), timed(ours, env)[0])
            best["warm"] = min(best.get("warm", 1e9), timed(ours, warm_env)[0])
            if by_session:
                best["by"] = min(best.get("by", 1e9), timed(by_session, warm_env)[0])
            times.append(timed(theirs, cc_env)[0])
        theirs_s = min(times)
        print(
            f"  {version or tool} ({found} sessions in its JSON): ccusage session --json {theirs_s:.2f} s; "
            f"ctxfold report --brief {best['ctxfold']:.2f} s, the folder read before (its count cache and memo "
            f"warm) {best['warm']:.2f} s; ctxfold/ccusage {best['ctxfold'] / theirs_s:.2f}, "
            f"read before {best['warm'] / theirs_s:.2f}"
            + (
                f"; report --by session, read before, {best['by']:.2f} s ({best['by'] / theirs_s:.2f})"
                if "by" in best
                else ""
            )
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose ctxfold is measured")
    ap.add_argument("--quick", action="store_true", help="20 MB files, 300 logs, fewer runs")
    ap.add_argument("--size-mb", type=float, default=None, help="size of each generated file (200)")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds per shape (3)")
    ap.add_argument("--folder-files", type=int, default=None, help="small logs in the folder (2000)")
    ap.add_argument("--folder-kb", type=float, default=128, help="size cap of each small log (128 KB)")
    ap.add_argument("--startup-runs", type=int, default=None, help="start-up runs (15)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--ccusage",
        action="append",
        default=None,
        metavar="PATH",
        help="a ccusage to compare report --brief with (repeatable; default: ccusage on PATH, if any)",
    )
    ap.add_argument("--no-more", action="store_true", help="leave out memory.py and cache.py")
    args = ap.parse_args(argv)
    size = args.size_mb or (20.0 if args.quick else 200.0)
    rounds = args.rounds or (2 if args.quick else 3)
    files = args.folder_files or (300 if args.quick else 2000)
    runs = args.startup_runs or (7 if args.quick else 15)
    # cold figures: repeated rounds would read on from the count cache
    env = child_env(Path(tempfile.mkdtemp(prefix="ctxfold-speed-cache-")), count_cache=False)
    print(f"measuring {args.python}; generated files in {default_dir()}")
    print(
        f"{os.cpu_count()} CPUs; load average {_load()}; 2-thread speed-up of a GIL-free task {parallelism():.2f}x"
    )
    print(describe(probes(args.python, env)))

    from ctxfold.tokens.parallel import cpus

    cores = cpus()
    print(f"\nestimate, {size:g} MB per shape (best of {rounds} alternating rounds)")
    head = (
        f"{'shape':<12} {'MB':>6} {'texts':>7} {'M chars':>8} {'engine':>9} {'estimate s':>10} "
        f"{'parse s':>8} {'tiktoken 1t s':>13} {'quicktok 1t s':>13} {'est/tiktoken':>12} {'est/quicktok':>12} {'peak MB':>8} "
        f"{'cpu s':>6} {'floor/tiktoken':>14}"
    )
    print(head + "\n" + "-" * len(head))
    paired = []
    for fmt in SHAPES:
        r = shape(fmt, size, rounds, args.python, env, args.seed)
        ratios = r["round_ratios"]
        paired.append(
            f"{fmt} median {statistics.median(ratios):.2f} ({', '.join(f'{x:.2f}' for x in ratios)})"
        )
        print(
            f"{fmt:<12} {r['mb']:>6.1f} {r['texts']:>7,} {r['chars'] / 1e6:>8.1f} {r['engine']:>9} "
            f"{r['est_s']:>10.2f} {r['parse_s']:>8.2f} {r['tiktoken_s']:>13.2f} {r['quicktok_s']:>13.2f} "
            f"{r['est_s'] / r['tiktoken_s']:>12.2f} {r['est_s'] / r['quicktok_s']:>12.2f} {r['peak_mb']:>8.0f} "
            f"{r['cpu_s']:>6.2f} {r['cpu_s'] / cores / r['tiktoken_s']:>14.2f}"
        )
    print(
        "est/tiktoken round by round (each estimate over the tiktoken run next to it): " + "; ".join(paired)
    )

    f = folder(args.python, env, files, args.folder_kb, 2 if args.quick else 3, args.seed)
    line = (
        f"\nfolder of {f['files']} small logs ({f['mb']:.1f} MB), report --brief: wall {f['wall']:.2f} s, "
        f"cpu {f['cpu']:.2f} s, cpu/wall {f['cpu'] / f['wall']:.2f}"
    )
    if "serial_wall" in f:
        line += f"; --jobs 1: wall {f['serial_wall']:.2f} s (speed-up {f['serial_wall'] / f['wall']:.2f}x)"
    print(
        line
        + f"; read before (count cache and report memo warm): wall {f['warm_wall']:.2f} s, with the profile "
        f"learned from it (no --no-profile) {f['warm_profile_wall']:.2f} s"
    )

    s = startup(args.python, env, runs)
    print(
        f"\nstart-up (medians of {runs}): estimate {TINY.name} {s['tiny']:.3f} s "
        f"({s['tiny'] / s['pass']:.1f}x python -c pass, {s['pass'] * 1000:.0f} ms); ctxfold --help {s['help']:.3f} s "
        f"({s['help'] / s['pass']:.1f}x); the very first estimate (empty cache) {s['first']:.3f} s"
    )
    tools = args.ccusage or [t for t in [shutil.which("ccusage")] if t]
    if tools:
        against_ccusage(args.python, env, tools, files, args.folder_kb, 2 if args.quick else 3, args.seed)
    else:
        print("\nccusage: not installed, comparison left out (npm install ccusage, then --ccusage PATH)")
    if not args.no_more:
        import cache
        import memory

        quick = ["--quick"] if args.quick else []
        print("\n--- memory (bench/memory.py)")
        memory.main(["--python", args.python, "--seed", str(args.seed), *quick])
        print("\n--- incremental cache and statusline (bench/cache.py)")
        cache.main(["--python", args.python, "--seed", str(args.seed), *quick])
    print(f"\nload average at end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
