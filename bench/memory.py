"""Peak memory of ``estimate``, ``report`` and ``compact`` as the input grows.

    python bench/memory.py                       # 50, 100 and 200 MB of each shape
    python bench/memory.py --quick               # 5, 10 and 20 MB: a fast check
    python bench/memory.py --sizes 25,50 --python /path/to/other/venv/bin/python

For the Claude Code and Codex shapes (files generated from the real sessions by ``_gen.py``,
cached as ``estimate.py`` caches them), each command runs once per size in a fresh child of the
measured interpreter: ``estimate_file``, ``report_file`` and ``compact_file`` (offline digest,
``force``, outputs to a temporary folder; a pass refused for saving too little has read the
whole file all the same, and is measured), each child with an empty cache folder of its own
and every size counted by the same engine (``--engine``, quicktok: what 200 MB gets).
``peak MiB`` is the child's own high-water RSS (``VmHWM``; ``ru_maxrss`` would carry the parent's
RSS over the fork), ``+MiB`` its growth over import and tokenizer load, and the slope is the
least-squares growth of the peak in MiB per MB of input. Then what ``estimate``'s result keeps,
in two parts: a row per model request, and the context now (its per-message counts; a session
that never compacts, as a generated file may be, keeps every message). It prints numbers and
asserts nothing.
The issue's target: ``compact`` at most 160 MB on 200 MB, not growing with the input.

:func:`rows` returns the measurements, for ``speed.py`` to print beside its own.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import PRELUDE, child_env, run_child
from _gen import MB, default_dir, generate
from estimate import GENERATED_FORMATS, generator_sources

COMMANDS = ("estimate", "report", "compact")
SIZES = (50.0, 100.0, 200.0)
# Every size counted by one engine, so the slope is the input's and not an engine's: left to
# choose, ctxfold counts 50 MB with rs-bpe in helper processes (whose memory is theirs, not the
# measured process's) and 100 MB up with quicktok in-process. quicktok is what 200 MB gets.
ENGINE = "quicktok"
QUICK = (5.0, 10.0, 20.0)

_CHILD = (
    PRELUDE
    + r"""
from ctxfold.tokens.tokenizers import get_tokenizer
what, _, strategy = args["what"].partition(":")  # compact:mask-observations: another strategy
if what == "compact":
    from ctxfold.compaction.run import CompactOptions, compact_file
    from ctxfold.providers.registry import make_summarizer
    summarizer = make_summarizer("offline")
    out_dir = tempfile.mkdtemp(prefix="ctxfold-bench-memory-")
elif what == "report":
    from ctxfold.engine.replay import report_file
else:
    from ctxfold.tokens.estimate import estimate_file
get_tokenizer("o200k")
out = {"loaded_mb": hwm()}
t = time.perf_counter()
if what == "compact":
    from ctxfold.errors import CtxfoldError
    try:  # a pass refused (it would not shrink the request) has read the whole file all the same
        r = compact_file(args["path"], summarizer, summarizer_window=summarizer.window,
                         options=CompactOptions(fmt=args["fmt"], force=True, out_dir=out_dir,
                                                strategy=strategy or "summary"))
        out["status"] = r.status
    except CtxfoldError as err:
        out["status"] = "refused"
    shutil.rmtree(out_dir, ignore_errors=True)
elif what == "report":
    report_file(args["path"], fmt=args["fmt"])
else:
    r = estimate_file(args["path"], fmt=args["fmt"])
out["seconds"] = time.perf_counter() - t
out["peak_mb"] = hwm()
import resource  # its own processes' (a large log's second reader, helpers): pages shared counted
out["children_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
out["engine"] = getattr(get_tokenizer("o200k"), "engine", "tiktoken")
if what == "estimate":  # what the result keeps: the request rows, and the context now
    import gc
    def kept(root):
        seen, todo, size = set(), [root], 0
        while todo:
            o = todo.pop()
            if id(o) in seen or isinstance(o, type):
                continue
            seen.add(id(o))
            size += sys.getsizeof(o)
            todo.extend(gc.get_referents(o))
        return size / 2**20
    out["requests"], out["requests_mb"] = len(r.replay.requests), kept(r.replay.requests)
    out["messages"], out["context_mb"] = len(r.replay.context), kept(r.replay.context)
    out["windows"] = r.context_tokens / r.model.window if r.model.window else None
print(json.dumps(out))
"""
)


def measure(python: str, what: str, path: Path, fmt: str, engine: str = ENGINE) -> dict[str, Any]:
    job = {"what": what, "path": str(path), "fmt": fmt}
    with tempfile.TemporaryDirectory(prefix="ctxfold-bench-cache-") as cache:
        env = child_env(Path(cache))
        if engine != "auto":
            env["CTXFOLD_BPE"] = engine
        return run_child(_CHILD, job, python=python, env=env, what=f"{what} child on {path.name}")


def rows(
    sizes: Sequence[float] = SIZES,
    formats: Sequence[str] = GENERATED_FORMATS,
    *,
    python: str = sys.executable,
    seed: int = 0,
    out: Path | None = None,
    commands: Sequence[str] = COMMANDS,
    engine: str = ENGINE,
) -> list[dict[str, Any]]:
    """One row per shape, size and command: ``format``, ``size_mb`` (the file's own), ``command``,
    ``nominal_mb`` (the size asked for), ``peak_mb`` and ``loaded_mb`` (MiB), ``seconds``, and
    ``status`` for compact."""
    found: list[dict[str, Any]] = []
    for fmt in formats:
        sources = generator_sources(fmt)
        if not sources:
            print(f"{fmt}: no real sessions to build a file from; skipped", file=sys.stderr)
            continue
        for size in sizes:
            path, _ = generate(fmt, sources, size, seed=seed, out_dir=out)
            for what in commands:
                r = measure(python, what, path, fmt, engine)
                found.append(
                    {
                        "format": fmt,
                        "nominal_mb": size,
                        "size_mb": path.stat().st_size / MB,
                        "command": what,
                        **r,
                    }
                )
    return found


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (x, y) points (0 for fewer than two sizes)."""
    if len({x for x, _ in points}) < 2:
        return 0.0
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def slopes(found: Sequence[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """MiB of peak per MB of input, per (format, command)."""
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in found:
        groups.setdefault((r["format"], r["command"]), []).append((r["size_mb"], r["peak_mb"]))
    return {k: slope(v) for k, v in groups.items()}


def print_table(found: Sequence[dict[str, Any]]) -> None:
    sizes = sorted({r["nominal_mb"] for r in found})
    w = max(9, *(len(r["command"]) for r in found))
    head = f"{'shape':<12} {'command':<{w}} " + " ".join(f"{f'{s:g} MB':>9}" for s in sizes)
    head += f" {'+MiB':>7} {'MiB/MB':>7}"
    engines = ", ".join(sorted({r.get("engine", "?") for r in found}))
    print(
        f"peak RSS in MiB (VmHWM of a fresh child per run; counted by {engines}); "
        f"+MiB over import and tokenizer load at {sizes[-1]:g} MB"
    )
    print(head)
    print("-" * len(head))
    slope_of = slopes(found)
    for fmt in dict.fromkeys(r["format"] for r in found):
        for what in dict.fromkeys(r["command"] for r in found):
            mine = {r["nominal_mb"]: r for r in found if r["format"] == fmt and r["command"] == what}
            if not mine:
                continue
            cells = " ".join(f"{mine[s]['peak_mb']:>9.1f}" if s in mine else f"{'':>9}" for s in sizes)
            last = mine[max(mine)]
            refused = [s for s, r in mine.items() if r.get("status") == "refused"]
            print(
                f"{fmt:<12} {what:<{w}} {cells} {last['peak_mb'] - last['loaded_mb']:>+7.1f} "
                f"{slope_of[(fmt, what)]:>7.3f}"
                + (f"  (refused at {', '.join(f'{s:g}' for s in refused)} MB)" if refused else "")
            )


def print_children(found: Sequence[dict[str, Any]]) -> None:
    """The peak of the processes a run started itself (a large log's second reader, helpers)."""
    rows = [r for r in found if r.get("children_mb")]
    if not rows:
        return
    print(
        "\nits own processes' peak RSS in MiB (ru_maxrss of the largest; pages shared with the run count in both)"
    )
    for fmt in dict.fromkeys(r["format"] for r in rows):
        for what in dict.fromkeys(r["command"] for r in rows):
            mine = sorted(
                (r["nominal_mb"], r["children_mb"])
                for r in rows
                if (r["format"], r["command"]) == (fmt, what)
            )
            if mine:
                print(f"{fmt:<12} {what:<9} " + ", ".join(f"{mb:g} MB: {peak:.1f}" for mb, peak in mine))


def print_kept(found: Sequence[dict[str, Any]]) -> None:
    """What ``estimate``'s result keeps, per shape and size: the slope's two parts."""
    kept = [r for r in found if r["command"] == "estimate" and "requests_mb" in r]
    if not kept:
        return
    print("\nwhat estimate keeps at the end (MiB): one row per request, and the context now")
    head = f"{'shape':<12} {'MB':>6} {'requests':>9} {'MiB':>6} {'messages':>9} {'MiB':>6} {'× window':>9}"
    print(head + "\n" + "-" * len(head))
    for r in kept:
        windows = f"{r['windows']:>9.1f}" if r["windows"] is not None else f"{'':>9}"
        print(
            f"{r['format']:<12} {r['size_mb']:>6.1f} {r['requests']:>9,} {r['requests_mb']:>6.1f} "
            f"{r['messages']:>9,} {r['context_mb']:>6.1f} {windows}"
        )
    for fmt in dict.fromkeys(r["format"] for r in kept):
        mine = [r for r in kept if r["format"] == fmt]
        req = slope([(r["size_mb"], r["requests_mb"]) for r in mine])
        ctx = slope([(r["size_mb"], r["context_mb"]) for r in mine])
        print(f"{fmt}: MiB per MB of input, requests {req:.3f}, context {ctx:.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose ctxfold is measured")
    ap.add_argument("--sizes", default=None, help="sizes in MB, comma-separated (50,100,200)")
    ap.add_argument("--quick", action="store_true", help="5, 10 and 20 MB")
    ap.add_argument("--formats", default=",".join(GENERATED_FORMATS), help="shapes to generate")
    ap.add_argument(
        "--commands",
        default=",".join(COMMANDS),
        help="commands to measure; compact:STRATEGY for another strategy (compact:mask-observations)",
    )
    ap.add_argument(
        "--engine",
        default=ENGINE,
        help=f"the counting engine at every size ({ENGINE}); auto: the one ctxfold picks per size",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help=f"folder for generated files ({default_dir()})")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows to this file")
    args = ap.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")] if args.sizes else list(QUICK if args.quick else SIZES)
    print(f"measuring {args.python}; generated files in {args.out or default_dir()}")
    found = rows(
        sizes,
        args.formats.split(","),
        python=args.python,
        seed=args.seed,
        out=args.out,
        commands=args.commands.split(","),
        engine=args.engine,
    )
    if found:
        print_table(found)
        print_children(found)
        print_kept(found)
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
