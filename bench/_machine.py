"""How fast this machine runs this hour: two probes whose work never changes.

Most figures here are ratios within one run, so the machine's speed cancels out. Three targets
are absolute times: the statusline (≤ 0.15 s), ``estimate`` of a tiny file (≤ 0.3 s) and
``ctxfold --help`` (≤ 0.15 s). Those move with the machine: on 2026-11-26 round 10's own install
took 0.26 s for the statusline with a line appended, which it had done in 0.091 s in round 10.
So ``speed.py`` and ``cache.py`` print two probes, measured in a fresh child of the measured
interpreter, to read an absolute time against the hour it was taken in:

* ``interpreter ms``: importing ``dataclasses`` and defining 50 frozen dataclasses, the work that
  dominates ctxfold's start-up (best of 5 children);
* ``tiktoken M tokens/s``: raw tiktoken on one thread over 2 MB of seeded, generated text (words,
  numbers, code, CJK), best of 3 passes.
"""

from __future__ import annotations

import sys
from typing import Any

from _child import PRELUDE, run_child

_INTERPRETER = (
    PRELUDE
    + r"""
start = time.perf_counter()
import dataclasses
for i in range(50):
    @dataclasses.dataclass(frozen=True, slots=True)
    class C:
        kind: str = "c"
        a: int = 0
        b: str = ""
        c: tuple = ()
print(json.dumps({"s": time.perf_counter() - start}))
"""
)

_TIKTOKEN = (
    PRELUDE
    + r"""
import random
from ctxfold.tokens.encodings import get_encoding
rng = random.Random(0)
words = ["context", "window", "token", "def", "return", "self.x", "42", "3.14159", "上下文",
         "compaction", "{", "}", "(", ")", "==", "  ", "\n", "\t", "Ünïcödé", "http://x.io/a?b=1"]
texts = ["".join(rng.choice(words) + rng.choice(" .,;:\n") for _ in range(400)) for _ in range(500)]
encode = get_encoding("o200k_base").encode_ordinary
best = 0.0
for _ in range(3):
    start = time.perf_counter()
    tokens = sum(len(encode(t)) for t in texts)
    best = max(best, tokens / (time.perf_counter() - start))
print(json.dumps({"rate": best}))
"""
)


def probes(python: str = sys.executable, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``{"interpreter_ms": ..., "tiktoken_rate": ...}`` for ``python`` this hour."""
    interp = min(run_child(_INTERPRETER, {}, python=python, env=env, what="probe")["s"] for _ in range(5))
    rate = run_child(_TIKTOKEN, {}, python=python, env=env, what="probe")["rate"]
    return {"interpreter_ms": interp * 1000, "tiktoken_rate": rate}


def describe(p: dict[str, Any]) -> str:
    return (
        f"this machine (fixed work, to compare hours; bench/_machine.py): interpreter "
        f"{p['interpreter_ms']:.1f} ms, tiktoken {p['tiktoken_rate'] / 1e6:.2f} M tokens/s"
    )
