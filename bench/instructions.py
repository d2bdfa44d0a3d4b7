"""Instructions an estimate executes, next to raw tiktoken's over the same texts: figures that do
not move with the machine's load (valgrind's callgrind counts instructions, not time).

    python bench/instructions.py                                   # 20 MB per shape
    python bench/instructions.py --python /path/to/other/venv/bin/python   # another install
    python bench/instructions.py --size-mb 5 --formats claude-code

On a shared machine a 200 MB ``estimate`` takes 1.7 s one minute and 2.7 s the next, so a change
worth 1-2 % of the time cannot be told from noise by timing it. The instructions it executes
can: two runs of the same code give the same count. For each shape (a file generated from the
real sessions, ``_gen.py``), in children of the measured interpreter under callgrind, one process
(``CTXFOLD_WORKERS=0``), the hash seed fixed, the engine pinned (``--engine``, quicktok by
default: the one a large file gets):

* ``estimate M``: millions of instructions of ``estimate_file(path)`` (a run through the call
  less a run that stops just before it: the imports and the engine's load are left out);
* ``tiktoken M`` and ``quicktok M``: of the raw engine on one thread over exactly the texts the
  estimate counts (captured in this process), one call per text, the same way;
* ``est/tiktoken``: the ratio of instructions. The estimate's count repeats exactly; raw
  tiktoken's has not always (on the Codex texts, 6,362 M in two runs and 5,348 M in a third), so
  compare estimates with each other and read this ratio loosely.

Instructions are not time: a byte loop such as ``bytes.translate`` retires several per cycle,
branchy interpreter code one or fewer. Compare two versions of the code with this; read the
issue's targets off ``speed.py``'s times. Needs ``valgrind`` on ``PATH``; without it, it says so.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import child_env
from _gen import generate
from estimate import capture, generator_sources

SHAPES = ("claude-code", "codex")

_ESTIMATE = r"""
import sys
from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.tokenizers import get_tokenizer
import ctxfold.formats.claude_code.reader, ctxfold.formats.codex.reader, ctxfold.tokens.session
get_tokenizer("o200k").native()
if sys.argv[2] == "run":
    estimate_file(sys.argv[1])
"""

_RAW = r"""
import pickle, sys
texts = [t for batch in pickle.load(open(sys.argv[1], "rb")) for t in batch]
if sys.argv[3] == "tiktoken":
    from ctxfold.tokens.encodings import get_encoding
    count = get_encoding("o200k_base").encode_ordinary
else:
    from ctxfold.tokens.engines import quicktok_encoding
    count = quicktok_encoding("o200k_base")[0].count
count("warm")
if sys.argv[2] == "run":
    for t in texts:
        count(t)
"""


def instructions(python: str, script: str, args: list[str], env: dict[str, str]) -> int:
    """Instructions of ``script`` run with ``args`` + ``run``, less those of ``args`` + ``base``."""
    counts = []
    for mode in ("base", "run"):
        with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}"]
            done = subprocess.run(
                [*cmd, python, "-c", script, *args[:1], mode, *args[1:]],
                capture_output=True, text=True, env=env, check=False,
            )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{python} under callgrind failed: {done.stderr.strip()[-400:]}")
        line = next(x for x in done.stderr.splitlines() if "Collected :" in x)
        counts.append(int(line.split(":")[-1].strip()))
    return counts[1] - counts[0]


def shape(
    fmt: str, size_mb: float, python: str, env: dict[str, str], seed: int, work: Path
) -> dict[str, float]:
    path, _ = generate(fmt, generator_sources(fmt), size_mb, seed=seed)
    _, _, batches, _, _ = capture(path, fmt)
    texts = work / f"{fmt}-texts.pickle"
    texts.write_bytes(pickle.dumps(batches))
    est = instructions(python, _ESTIMATE, [str(path)], env)
    tik = instructions(python, _RAW, [str(texts), "tiktoken"], env)
    qt = instructions(python, _RAW, [str(texts), "quicktok"], env)
    return {"mb": path.stat().st_size / 2**20, "est": est / 1e6, "tiktoken": tik / 1e6, "quicktok": qt / 1e6}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose ctxfold is measured")
    ap.add_argument("--size-mb", type=float, default=20.0, help="size of each generated file (20)")
    ap.add_argument("--formats", default=",".join(SHAPES), help="shapes to measure (claude-code,codex)")
    ap.add_argument("--engine", default="quicktok", help="CTXFOLD_BPE for the estimate (quicktok)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (apt install valgrind)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="ctxfold-instructions-"))
    env = child_env(work / "cache", count_cache=False)
    env.update(CTXFOLD_WORKERS="0", PYTHONHASHSEED="0", CTXFOLD_BPE=args.engine)
    print(f"measuring {args.python} under callgrind; estimate's engine {args.engine}, one process")
    print(
        f"{'shape':<12} {'MB':>6} {'estimate M':>11} {'tiktoken M':>11} {'quicktok M':>11} {'est/tiktoken':>12}"
    )
    try:
        for fmt in args.formats.split(","):
            r = shape(fmt, args.size_mb, args.python, env, args.seed, work)
            print(
                f"{fmt:<12} {r['mb']:>6.1f} {r['est']:>11,.0f} {r['tiktoken']:>11,.0f} {r['quicktok']:>11,.0f} "
                f"{r['est'] / r['tiktoken']:>12.3f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
