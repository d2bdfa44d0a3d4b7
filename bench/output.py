"""What printing a folder's results costs: each command's text against its own ``--json``.

    python bench/output.py                                   # this interpreter's ctxfold
    python bench/output.py --python /venv-a/bin/python --python /venv-b/bin/python
    python bench/output.py --files 300 --rounds 3

A folder of small logs (``_gen.generate_folder``, as ``speed.py`` makes it) is read once into a
private count cache, so every run after it answers each log from there and what is left is the
same work for all of them, plus the output. Then ``estimate``, ``report``, ``report --brief``
and ``report --by session`` over the folder print their text three ways: piped (no styles,
ctxfold's default width), piped with ``COLUMNS`` set (the width Rich takes from it), and as to
a terminal (``FORCE_COLOR=1``: styles written). Each is run in turns with the same command's
``--json`` (the anchor: the same files read, a document written), and the table gives the
medians and text ÷ json. The lines of ``--brief`` (text and ``--json``) and the text of
``--by`` are taken from the report memo (the first read fills ``--brief``'s); the whole
``--json`` documents never are. With two or more ``--python``, every install runs in each
turn, so each ratio meets the same minute. It prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import child_env
from _gen import MB, generate_folder
from estimate import real_fixtures

COMMANDS = {
    "estimate": ["estimate"],
    "report": ["report"],
    "report --brief": ["report", "--brief"],
    "report --by session": ["report", "--by", "session"],
}
MODES = {"piped": {}, "COLUMNS=120": {"COLUMNS": "120"}, "terminal": {"FORCE_COLOR": "1", "COLUMNS": "120"}}


def _ctl(python: str) -> list[str]:
    beside = Path(python).with_name("ctxfold")
    return [str(beside)] if beside.is_file() else [python, "-m", "ctxfold"]


def _time(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", help="an interpreter whose ctxfold is measured (repeatable)")
    ap.add_argument("--files", type=int, default=2000, help="small logs in the folder (2000)")
    ap.add_argument("--kb", type=float, default=128, help="size cap of each small log (128 KB)")
    ap.add_argument("--rounds", type=int, default=3, help="turns per measure (3)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    pythons = args.python or [sys.executable]
    sources = [p for p, hint in real_fixtures() if hint in ("claude-code", "codex", "pi")]
    folder, _ = generate_folder(sources, args.files, args.kb, seed=args.seed)
    logs = list(folder.glob("*.jsonl"))
    print(f"folder of {len(logs)} logs ({sum(p.stat().st_size for p in logs) / MB:.1f} MB), {folder}")
    envs = []
    for python in pythons:  # each install's own count cache, filled once (its key names its code)
        env = child_env(Path(tempfile.mkdtemp(prefix="ctxfold-output-")), count_cache=True)
        _time([*_ctl(python), "report", str(folder), "--brief", "--no-profile", "--json"], env)
        envs.append(env)
    print(
        f"{'command':<20} {'output':<12} "
        + "  ".join(f"{'text s':>7} {'json s':>7} {'ratio':>6}" for _ in pythons)
    )
    for name, words in COMMANDS.items():
        for mode, extra in MODES.items():
            cells = []
            for python, env in zip(pythons, envs, strict=True):
                base = [*_ctl(python), *words, str(folder), "--no-profile"]
                text, json = [], []
                for _ in range(args.rounds):
                    text.append(_time(base, {**env, **extra}))
                    json.append(_time([*base, "--json"], env))
                t, j = statistics.median(text), statistics.median(json)
                cells.append(f"{t:>7.2f} {j:>7.2f} {t / j:>6.2f}")
            print(f"{name:<20} {mode:<12} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
