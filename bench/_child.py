"""A measured run in a fresh child interpreter: its environment, and the JSON line it prints.

Each benchmark runs its measured code in a child (``python -c SCRIPT JSON``) so that nothing
loaded by an earlier run is warm in the next; the child prints one JSON object as its last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# What every child script starts with: its arguments, and its own high-water RSS in MiB (VmHWM;
# ru_maxrss would carry the parent's RSS over the fork), 0.0 where /proc has none.
PRELUDE = r"""
import json, shutil, sys, tempfile, time
args = json.loads(sys.argv[1])
def hwm():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
"""


def child_env(cache: Path, *, count_cache: bool | None = None) -> dict[str, str]:
    """This environment for a child: a private cache folder ``cache``, bytecode writing on (as
    an installed ctxfold has it), no worker count pinned; ``count_cache`` True or False turns
    the count cache on or off (None: as set here)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "CTXFOLD_WORKERS")}
    env["XDG_CACHE_HOME"] = str(cache)
    if count_cache is True:
        env.pop("CTXFOLD_NO_CACHE", None)
    elif count_cache is False:
        env["CTXFOLD_NO_CACHE"] = "1"
    return env


def run_child(
    script: str, args: dict[str, Any], *, python: str = sys.executable, env: dict[str, str] | None = None,
    what: str = "child",
) -> dict[str, Any]:  # fmt: skip
    """``python -c script json(args)``: the JSON object on its last line of output."""
    proc = subprocess.run(
        [python, "-c", script, json.dumps(args)], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
