"""How fast this machine runs this hour, against the hour issue 20's figures were taken in.

Most figures here are ratios within one run, so the machine's speed cancels out. Three targets
are absolute times: the statusline (≤ 0.15 s), ``estimate`` of a tiny file (≤ 0.3 s) and
``ctxfold --help`` (≤ 0.15 s). They were set when raw tiktoken counted 5.2-5.6 M tokens/s on one
thread over the generated sessions' texts; on 2026-11-26 the same count ran at 2.0 M, with no
change to tiktoken. So the benchmarks measure that rate in the same run, over the same kind of
texts, and print each absolute time beside it scaled to the issue's hour: ``time × rate ÷
5.4 M``. A scaled time is an estimate (start-up is interpreter work, the rate is tiktoken's); the
time as measured is always printed too.
"""

from __future__ import annotations

import time

ISSUE_RATE = 5.4e6  # raw tiktoken, tokens/s on one thread, when the issue was filed (5.2-5.6 M)


def tiktoken_rate(batches: list[list[str]], passes: int = 3) -> float:
    """Raw tiktoken's tokens per second on one thread over ``batches``, the best of ``passes``."""
    from estimate import _fresh

    from ctxfold.tokens.encodings import get_encoding

    encode = get_encoding("o200k_base").encode_ordinary
    best = 0.0
    for _ in range(passes):
        texts = [t for b in _fresh(batches) for t in b]
        start = time.perf_counter()
        tokens = sum(len(encode(t)) for t in texts)
        best = max(best, tokens / (time.perf_counter() - start))
    return best


def describe(rate: float) -> str:
    return (
        f"raw tiktoken on one thread: {rate / 1e6:.2f} M tokens/s on these texts "
        f"({rate / ISSUE_RATE:.2f} of the issue's hour, 5.2-5.6 M)"
    )


def scaled(seconds: float, rate: float) -> float:
    """``seconds`` as the issue's hour would have taken them, by the tiktoken rate."""
    return seconds * rate / ISSUE_RATE
