"""The least time a cold report of a folder of logs can take on this machine, whatever the code.

    python bench/floor.py                    # the 2,000 Claude Code logs speed.py compares with ccusage
    python bench/floor.py --files 300        # a smaller folder

A cold report (nothing kept from an earlier run) must do two things no reader can skip: parse
every line of every log as JSON, and tokenize every text of the conversation it counts. This
times each alone, in this process (the best of two runs), with the fastest tools at hand:
orjson's ``loads`` on every line (the files read into memory first, not timed), and each exact
engine's ``count`` once per text, over exactly the texts ctxfold counts (captured from one
estimate of each log, as ``speed.py`` captures them). Then, for each engine, its load (timed
once: an engine may keep what it built) plus the parsing and counting spread evenly over this
machine's cores: no split of the work does better. Nothing else a report does (building
messages, replaying requests, printing) is in it.

``speed.py`` prints the floor next to ccusage's time on the same folder. It prints numbers and
asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gen import MB
from estimate import _fresh, capture

ROUNDS = 2  # each time is the best of this many: a floor is what the machine does at its best


def _best(work: Callable[[], Any]) -> tuple[Any, float]:
    """What ``work`` returns, and its fastest time of ``ROUNDS``."""
    times, out = [], None
    for _ in range(ROUNDS):
        start = time.perf_counter()
        out = work()
        times.append(time.perf_counter() - start)
    return out, min(times)


def _engines() -> dict[str, tuple[Any, float]]:
    """Each exact engine installed here, built and timed: name -> (its count, seconds to load)."""
    from ctxfold.tokens.engines import TiktokenEngine, quicktok_encoding, rs_bpe_encoding

    found: dict[str, tuple[Any, float]] = {}
    builds: tuple[tuple[str, Callable[[str], tuple[Any, str]]], ...] = (
        ("quicktok", quicktok_encoding),
        ("rs-bpe", rs_bpe_encoding),
        ("tiktoken", lambda name: (TiktokenEngine(name), "")),  # the reference, always at hand
    )
    for name, build in builds:
        start = time.perf_counter()  # once: an engine may keep what it built for the next call
        tok, _ = build("o200k_base")
        if tok is not None:
            found[name] = (tok.count, time.perf_counter() - start)
    return found


def _parse(data: list[bytes]) -> None:
    import orjson

    for blob in data:
        for raw in blob.splitlines():
            if raw.strip():
                orjson.loads(raw)


def _count(count: Callable[[str], int], texts: list[str]) -> None:
    for t in texts:
        count(t)


def floor(logs: list[Path], cores: int) -> dict[str, Any]:
    """The parse and count times of ``logs`` on one thread, and per engine the floor over ``cores``."""
    data = [p.read_bytes() for p in logs]
    _, parse_s = _best(lambda: _parse(data))
    batches = [b for p in logs for b in capture(p, None)[2]]
    texts = [t for b in _fresh(batches) for t in b]
    out: dict[str, Any] = {
        "logs": len(logs),
        "mb": sum(map(len, data)) / MB,
        "chars": sum(map(len, texts)),
        "parse_s": parse_s,
        "cores": cores,
        "engines": {},
    }
    for name, (count, load_s) in _engines().items():
        _, count_s = _best(lambda count=count: _count(count, texts))
        out["engines"][name] = {
            "load_s": load_s,
            "count_s": count_s,
            "floor_s": load_s + (parse_s + count_s) / cores,
        }
    return out


def describe(f: dict[str, Any]) -> str:
    best = min(f["engines"].items(), key=lambda kv: kv[1]["floor_s"])
    parts = "; ".join(
        f"{name}: load {e['load_s']:.2f} s + count {e['count_s']:.2f} s -> floor {e['floor_s']:.2f} s"
        for name, e in f["engines"].items()
    )
    return (
        f"a cold report's floor on {f['logs']} logs ({f['mb']:.1f} MB, {f['chars'] / 1e6:.1f} M characters to "
        f"count) over {f['cores']} cores: parse (orjson, one thread) {f['parse_s']:.2f} s; {parts}; "
        f"the least: {best[1]['floor_s']:.2f} s ({best[0]})"
    )


def main(argv: list[str] | None = None) -> int:
    from speed import claude_layout

    from ctxfold.tokens.parallel import cpus

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000, help="logs in the folder (2000)")
    ap.add_argument("--kb", type=float, default=128, help="size cap of each log (128 KB)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    home, _, _ = claude_layout(args.files, args.kb, args.seed)
    print(describe(floor(sorted((home / "projects").glob("*/*.jsonl")), cpus())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
