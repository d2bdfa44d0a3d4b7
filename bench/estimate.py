"""Benchmark ``ctxfold estimate``: throughput next to raw tiktoken, peak memory, start-up time.

    python bench/estimate.py [--size-mb 200] [--quick] [--seed 0] [--out DIR]

For each real fixture and for one large generated file per format (real sessions repeated with
fresh ids, see ``_gen.py``) it prints:

* ctxfold's time for ``estimate_file`` (in a fresh child process, tokenizer already loaded, so
  the number is what a user's run spends on the file), as MB/s and tokens/s;
* raw tiktoken on the *same extracted text*: the texts ctxfold hands to ``count_batch`` are
  captured in a separate pass, then ``encode_ordinary_batch(batch, num_threads=2)`` is timed on
  them, batch by batch as ctxfold formed them. ``ratio`` = raw seconds / ctxfold seconds
  (target >= 0.85: ctxfold parses JSON and builds messages on top of tokenizing);
* ctxfold's parse-only time (the entries drained without counting), to show where time goes;
* the child's peak RSS (target <= 150 MB on the 200 MB file) and its growth over a bare
  import + tokenizer load;
* ``ctxfold --help`` wall time over 10 runs (target <= 0.3 s).

It prints numbers and asserts nothing. ``--profile`` adds a cProfile of one estimate of the
generated file(s).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import run_child
from _gen import MB, default_dir, generate

ROOT = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("CTXFOLD_REAL_FIXTURES", ROOT.parent / "shared" / "fixtures-real"))
BUNDLED = ROOT / "fixtures" / "real"
GENERATED_FORMATS = ("claude-code", "codex")
TARGET_RATIO = 0.85
TARGET_RSS_MB = 150
TARGET_STARTUP_S = 0.3
RAW_THREADS = 2

# Runs in a fresh interpreter: peak RSS is that process's alone, and timing starts after the
# tokenizer is loaded (the load is a fixed cost reported by the baseline row).
_CHILD = r"""
import json, resource, sys, time
args = json.loads(sys.argv[1])
def status_mb(key):
    try:
        for line in open("/proc/self/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None
def peak_mb():
    # VmHWM is this process's own high-water mark; ru_maxrss would also count the parent's
    # RSS at fork time (Linux keeps the pre-exec maximum), inflating every number.
    hwm = status_mb("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def vmrss_mb():
    return status_mb("VmRSS")
from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.tokenizers import get_tokenizer
out = {"import_peak_mb": peak_mb()}
tok = get_tokenizer(args["tokenizer"])
getattr(tok, "native", lambda: None)()  # the engine a large file uses (built lazily since issue 20)
out["loaded_peak_mb"] = peak_mb()
out["loaded_rss_mb"] = vmrss_mb()
if args.get("path"):
    times = []
    r = None
    for i in range(args["repeat"]):
        r = None
        t = time.perf_counter()
        r = estimate_file(args["path"], fmt=args["fmt"])
        times.append(time.perf_counter() - t)
        if i == 0:
            out["first_peak_mb"] = peak_mb()
    out["times"] = times
    out["peak_mb"] = peak_mb()
    # large files are tokenized in forked worker processes (tokens/parallel.py): their peak,
    # which includes the tables they share with this process copy-on-write
    out["workers_peak_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out["format"] = r.format
    out["requests"] = len(r.requests)
    out["context_messages"] = len(r.replay.context)
    out["context_tokens"] = r.context_tokens
    out["messages_seen"] = r.replay.messages_seen
    out["lines"] = r.lines_read
    out["bytes"] = r.bytes_read
    fmt = r.format
    r = None
    if args.get("parse"):
        from ctxfold.formats.loader import open_transcript
        t = time.perf_counter()
        n = 0
        for _ in open_transcript(args["path"], fmt=fmt).entries:
            n += 1
        out["parse_s"] = time.perf_counter() - t
        out["entries"] = n
print(json.dumps(out))
"""


@dataclass
class Row:
    label: str
    path: Path
    fmt: str | None  # None = detected
    size: int = 0
    tokens: int = 0
    texts: int = 0
    batches: int = 0
    chars: int = 0
    ctx_s: float = 0.0
    raw_s: float = 0.0
    parse_s: float | None = None
    serial_s: float | None = None
    capture_s: tuple[float, float] = (0.0, 0.0)
    peak_mb: float = 0.0
    loaded_mb: float = 0.0
    child: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.raw_s / self.ctx_s if self.ctx_s else 0.0


# --------------------------------------------------------------------------- inputs


def _format_hint(path: Path) -> str | None:
    """The format a fixture is known to be in (its folder, or its name's prefix for bundled ones)."""
    from ctxfold.formats.registry import FORMATS

    if path.parent.name in FORMATS:
        return path.parent.name
    names = [n for n in FORMATS if path.name.startswith(n + "-")]
    return max(names, key=len) if names else None


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def real_fixtures() -> list[tuple[Path, str | None]]:
    """Every real fixture (shared set, then the bundled copies not already in it), with a hint."""
    paths = sorted(REAL.glob("*/*.jsonl")) if REAL.is_dir() else []
    paths += sorted(BUNDLED.glob("*.jsonl"))
    seen: set[str] = set()
    out = []
    for p in paths:
        d = _digest(p)
        if d in seen:
            continue
        seen.add(d)
        out.append((p, _format_hint(p)))
    return out


def generator_sources(fmt: str) -> list[Path]:
    return [p for p, hint in real_fixtures() if hint == fmt]


# --------------------------------------------------------------------------- measuring


def capture(path: Path, fmt: str | None) -> tuple[str | None, str, list[list[str]], str, tuple[float, float]]:
    """One estimate with the tokenizer's ``count_batch`` wrapped to record its input batches.

    Returns (fmt to use, tokenizer name, batches, note, (seconds, of which in count_batch)).
    Detection is tried first; a format module missing (another helper still writing it) falls
    back to the known format.
    """
    from ctxfold.tokens.estimate import estimate_file
    from ctxfold.tokens.tokenizers import get_tokenizer

    note = ""
    use: str | None = None
    try:
        from ctxfold.formats.loader import open_transcript

        detected = open_transcript(path).format
        if fmt is not None and detected != fmt:
            note = f"detected {detected}, forced {fmt}"
            use = fmt
    except Exception as err:  # a format module missing or broken: say so and force the format
        if fmt is None:
            raise
        note = f"detect failed ({type(err).__name__}), forced"
        use = fmt
    batches: list[list[str]] = []
    saved: str | None = None
    inside = [0.0]
    patched: list[tuple[Any, Any]] = []
    try:
        # get_tokenizer caches instances: wrap every one the estimate could pick.
        for name in ("o200k", "cl100k", "heuristic"):
            tok = get_tokenizer(name)
            if name == "o200k":
                getattr(tok, "native", lambda: None)()  # loaded before the clock, as in the child
            original = tok.count_batch

            def recording(texts: Sequence[str], _orig: Any = original) -> list[int]:
                batches.append(list(texts))
                t = time.perf_counter()
                counts = _orig(texts)
                inside[0] += time.perf_counter() - t
                return counts

            tok.count_batch = recording
            patched.append((tok, original))
        # in-process, so every text passes through the wrapper (workers would count in a child)
        saved = os.environ.get("CTXFOLD_WORKERS")
        os.environ["CTXFOLD_WORKERS"] = "0"
        t0 = time.perf_counter()
        r = estimate_file(path, fmt=use)
        total = time.perf_counter() - t0
    finally:
        if saved is None:
            os.environ.pop("CTXFOLD_WORKERS", None)
        else:
            os.environ["CTXFOLD_WORKERS"] = saved
        for tok, _ in patched:
            del tok.count_batch  # back to the class's method
    return use, r.model.tokenizer, batches, note, (total, inside[0])


def _fresh(batches: list[list[str]]) -> list[list[str]]:
    """Copies of the non-ASCII texts: the capture pass already encoded them, and CPython caches
    a str's UTF-8 form on first use, which would hand raw tiktoken a head start ctxfold lacks."""
    return [
        [t if t.isascii() else t.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") for t in b]
        for b in batches
    ]


def raw_tiktoken(
    tokenizer: str, batches: list[list[str]], repeat: int, serial: bool = False
) -> tuple[float, int]:
    """Best time of ``encode_ordinary_batch`` (or, with ``serial``, one ``encode_ordinary`` per
    text) over the captured batches, and their token total."""
    from ctxfold.tokens.encodings import get_encoding

    name = {"o200k": "o200k_base", "cl100k": "cl100k_base"}.get(tokenizer)
    if name is None:
        return 0.0, 0
    enc = get_encoding(name)
    best, total = float("inf"), 0
    for _ in range(repeat):
        fresh = _fresh(batches)
        total = 0
        t = time.perf_counter()
        if serial:
            for b in fresh:
                total += sum(len(enc.encode_ordinary(x)) for x in b)
        else:
            for b in fresh:
                total += sum(map(len, enc.encode_ordinary_batch(b, num_threads=RAW_THREADS)))
        best = min(best, time.perf_counter() - t)
        del fresh
    return best, total


def measure_child(args: dict[str, Any]) -> dict[str, Any]:
    return run_child(_CHILD, args, what=f"child for {args.get('path')}")


def measure(row: Row, repeat: int, rounds: int = 1) -> Row:
    """Capture the texts, then time ctxfold (child) and raw tiktoken (here).

    With ``rounds`` > 1 (large files) the two alternate, one run each per round, so a burst of
    load from other processes hits both sides alike; the best of each side is kept.
    """
    row.size = row.path.stat().st_size
    fmt, tokenizer, batches, note, row.capture_s = capture(row.path, row.fmt)
    row.fmt, row.note = fmt, note
    row.batches = len(batches)
    row.texts = sum(len(b) for b in batches)
    row.chars = sum(len(t) for b in batches for t in b)
    ctx_times: list[float] = []
    raw_times: list[float] = []
    for i in range(rounds):
        job = {"path": str(row.path), "fmt": fmt, "tokenizer": tokenizer, "repeat": repeat, "parse": i == 0}
        child = measure_child(job)
        ctx_times += child["times"]
        if i == 0:
            row.child = child
            row.parse_s = child.get("parse_s")
            row.peak_mb = child["first_peak_mb"]
            row.loaded_mb = child["loaded_peak_mb"]
        raw_s, row.tokens = raw_tiktoken(tokenizer, batches, repeat)
        raw_times.append(raw_s)
    row.ctx_s, row.raw_s = min(ctx_times), min(raw_times)
    if rounds > 1:
        row.serial_s = raw_tiktoken(tokenizer, batches, 1, serial=True)[0]
    if tokenizer not in ("o200k", "cl100k"):
        row.note = (row.note + "; " if row.note else "") + f"tokenizer {tokenizer}: no raw baseline"
    return row


# --------------------------------------------------------------------------- start-up


def ctxfold_command() -> list[str]:
    """The installed console script (next to this interpreter first), else ``python -m ctxfold``."""
    beside = Path(sys.executable).parent / "ctxfold"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("ctxfold")
    return [found] if found else [sys.executable, "-m", "ctxfold"]


def startup(runs: int = 10) -> tuple[list[str], list[float]]:
    cmd = [*ctxfold_command(), "--help"]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t)
    return cmd, times


# --------------------------------------------------------------------------- output


def _fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.0f}k"
    return f"{x:.0f}"


def parallelism() -> float:
    """How much a second thread really buys here (sha256 releases the GIL): 2.0 on two free
    cores, ~1.0 when the host gives this machine one core's worth. Read the ratio with it."""
    data = b"x" * 50_000_000

    def work() -> None:
        hashlib.sha256(data).digest()

    t = time.perf_counter()
    work()
    work()
    serial = time.perf_counter() - t
    th = threading.Thread(target=work)
    t = time.perf_counter()
    th.start()
    work()
    th.join()
    return serial / (time.perf_counter() - t)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def print_table(title: str, rows: list[Row]) -> None:
    head = (
        f"{'file':<44} {'format':<12} {'MB':>7} {'tokens':>8} {'ctxfold s':>9} {'MB/s':>6} "
        f"{'tok/s':>6} {'raw s':>8} {'raw tok/s':>9} {'ratio':>6} {'parse s':>8} {'peak MB':>7} {'+MB':>6}"
    )
    print(f"\n{title}")
    print(head)
    print("-" * len(head))
    for r in rows:
        mb = r.size / MB
        ratio = f"{r.ratio:.2f}" if r.raw_s else "-"
        raw_rate = _fmt_rate(r.tokens / r.raw_s) if r.raw_s else "-"
        parse = f"{r.parse_s:.3f}" if r.parse_s is not None else "-"
        print(
            f"{r.label[:44]:<44} {r.child.get('format', r.fmt or '?'):<12} {mb:>7.2f} {_fmt_rate(r.tokens):>8} "
            f"{r.ctx_s:>9.3f} {mb / r.ctx_s:>6.1f} {_fmt_rate(r.tokens / r.ctx_s):>6} "
            f"{r.raw_s:>8.3f} {raw_rate:>9} {ratio:>6} {parse:>8} {r.peak_mb:>7.1f} "
            f"{r.peak_mb - r.loaded_mb:>+6.1f}"
        )
    for r in rows:
        if r.note:
            print(f"  note: {r.label}: {r.note}")


def print_totals(rows: list[Row]) -> None:
    ctx = sum(r.ctx_s for r in rows)
    raw = sum(r.raw_s for r in rows if r.raw_s)
    size = sum(r.size for r in rows) / MB
    tokens = sum(r.tokens for r in rows)
    print(
        f"  all fixtures: {size:.2f} MB, {tokens:,} tokens; ctxfold {ctx:.3f} s ({size / ctx:.1f} MB/s), "
        f"raw {raw:.3f} s; ratio {raw / ctx:.2f} (target >= {TARGET_RATIO})"
    )


def profile(path: Path, fmt: str | None, top: int) -> None:
    from ctxfold.tokens.estimate import estimate_file
    from ctxfold.tokens.tokenizers import get_tokenizer

    get_tokenizer("o200k")
    prof = cProfile.Profile()
    prof.enable()
    estimate_file(path, fmt=fmt)
    prof.disable()
    for key in ("tottime", "cumulative"):
        print(f"\ncProfile of estimate_file({path.name}), top {top} by {key}:")
        pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats(key).print_stats(top)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=200.0, help="size of each generated file (default 200)")
    ap.add_argument("--quick", action="store_true", help="a 20 MB generated file, fewer repeats")
    ap.add_argument("--seed", type=int, default=0, help="session order of the generated file")
    ap.add_argument("--out", type=Path, default=None, help=f"folder for generated files ({default_dir()})")
    ap.add_argument("--formats", default=",".join(GENERATED_FORMATS), help="formats to generate")
    ap.add_argument("--repeat", type=int, default=None, help="runs per fixture (best is kept; default 5)")
    ap.add_argument(
        "--repeat-large", type=int, default=None, help="alternating rounds per generated file (default 3)"
    )
    ap.add_argument("--no-fixtures", action="store_true", help="skip the per-fixture table")
    ap.add_argument("--profile", action="store_true", help="cProfile one estimate of each generated file")
    args = ap.parse_args(argv)
    size_mb = 20.0 if args.quick else args.size_mb
    repeat = args.repeat or (3 if args.quick else 5)
    rounds = args.repeat_large or (2 if args.quick else 3)

    from ctxfold.tokens import parallel

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, raw baseline threads={RAW_THREADS}, ")
    print(
        f"ctxfold worker processes from {parallel.MIN_BYTES / 1e6:.0f} MB; real fixtures: {REAL if REAL.is_dir() else 'absent'}"
    )

    print(
        f"load average at start: {_load()}; 2-thread speed-up of a GIL-free task here: {parallelism():.2f}x"
    )
    cmd, times = startup()
    ok = "ok" if min(times) <= TARGET_STARTUP_S else "OVER"
    print(
        f"\nstart-up `{' '.join(Path(c).name if i == 0 else c for i, c in enumerate(cmd))}` x{len(times)}: "
        f"min {min(times):.3f} s, median {statistics.median(times):.3f} s "
        f"(target <= {TARGET_STARTUP_S} s: {ok})"
    )
    base = measure_child({"tokenizer": "o200k"})
    print(
        f"baseline RSS: import ctxfold.tokens.estimate peak {base['import_peak_mb']:.1f} MB; "
        f"+ o200k tokenizer load peak {base['loaded_peak_mb']:.1f} MB "
        f"(resident after load {base['loaded_rss_mb']:.1f} MB)"
    )

    if not args.no_fixtures:
        rows = []
        for path, hint in real_fixtures():
            label = f"{path.parent.name}/{path.name}"
            try:
                rows.append(measure(Row(label, path, hint), repeat))
            except Exception as err:
                print(f"  {label}: FAILED {type(err).__name__}: {str(err).splitlines()[0][:200]}")
        if rows:
            print_table(f"real fixtures (best of {repeat} runs each)", rows)
            print_totals(rows)

    big: list[Row] = []
    for fmt in [f.strip() for f in args.formats.split(",") if f.strip()]:
        sources = generator_sources(fmt)
        if not sources:
            print(f"\n{fmt}: no real sessions to build a large file from; skipped")
            continue
        t = time.perf_counter()
        path, reused = generate(fmt, sources, size_mb, seed=args.seed, out_dir=args.out)
        how = "reused cached" if reused else f"built in {time.perf_counter() - t:.1f} s:"
        print(
            f"\n{fmt}: {how} {path} ({path.stat().st_size / MB:.1f} MB from {len(sources)} sessions: "
            f"{', '.join(p.name for p in sources)})"
        )
        big.append(measure(Row(f"generated {fmt} {size_mb:g} MB", path, fmt), 1, rounds))
    if big:
        print_table(f"generated files (best of {rounds} alternating rounds)", big)
        for r in big:
            c = r.child
            rss = "ok" if r.peak_mb <= TARGET_RSS_MB else "OVER"
            ratio = "ok" if r.ratio >= TARGET_RATIO else "BELOW"
            print(
                f"  {r.label}: {c['lines']:,} lines, {c['messages_seen']:,} messages, {c['requests']:,} requests, "
                f"{r.texts:,} texts in {r.batches:,} batches ({r.chars / 1e6:.1f} M chars); "
                f"context now {c['context_messages']:,} messages / {c['context_tokens']:,} tokens"
            )
            print(
                f"    ratio {r.ratio:.2f} (target >= {TARGET_RATIO}: {ratio}); peak RSS {r.peak_mb:.1f} MB "
                f"(target <= {TARGET_RSS_MB} MB: {rss}; each worker process peaked at "
                f"{c.get('workers_peak_mb', 0):.1f} MB, mostly shared tables); parse-only {r.parse_s:.2f} s "
                f"= {100 * (r.parse_s or 0) / r.ctx_s:.0f}% of ctxfold's time"
            )
            total, inside = r.capture_s
            print(
                f"    capture pass (wrapped, in-process): {total:.2f} s, of which {inside:.2f} s in "
                f"count_batch -> {total - inside:.2f} s reading, parsing and counting around it"
            )
            if r.serial_s:
                print(
                    f"    raw tiktoken 1 thread (encode_ordinary per text): {r.serial_s:.2f} s "
                    f"-> 2-thread batch speed-up {r.serial_s / r.raw_s:.2f}x"
                )
    print(
        f"\nload average at end: {_load()}; 2-thread speed-up of a GIL-free task here: {parallelism():.2f}x"
    )
    if args.profile:
        for r in big:
            profile(r.path, r.fmt, 30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
