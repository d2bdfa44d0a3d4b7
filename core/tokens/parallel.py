"""Tokenizing large inputs in worker processes.

tiktoken's encoder holds the GIL on this build (two threads measured no faster than one), so a
second core can only be used from a second process. Workers are forked after the encoding is
built, so they start at once and share its tables copy-on-write; batches of texts go out and
token counts come back while the parent goes on reading and parsing. Small inputs (and systems
without ``fork``) are counted in-process: a pool costs more than it saves there.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

MIN_BYTES = 16_000_000  # inputs smaller than this are counted in-process
WORKERS_ENV = "CTXFOLD_WORKERS"


def workers_for(size_bytes: int) -> int:
    """How many worker processes an input of this size deserves (0: count in-process)."""
    env = os.environ.get(WORKERS_ENV)
    if env is not None:
        return max(0, int(env)) if env.isdigit() else 0
    if size_bytes < MIN_BYTES or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    return min(2, os.cpu_count() or 1)


def _count(name: str, texts: Sequence[str]) -> list[int]:
    from ctxfold.tokens.tokenizers import get_tokenizer

    return get_tokenizer(name).count_batch(texts)


class Counting:
    """Submit a batch's texts, get a future of their counts; in-process when ``workers`` is 0."""

    def __init__(self, count_batch: Callable[[Sequence[str]], list[int]], name: str, workers: int) -> None:
        self._count_batch = count_batch
        self._name = name
        self._pool: ProcessPoolExecutor | None = None
        if workers > 0:
            self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        self.in_flight = workers + 1 if workers else 1

    def submit(self, texts: Sequence[str]) -> Future[list[int]]:
        if self._pool is not None:
            return self._pool.submit(_count, self._name, list(texts))
        done: Future[list[int]] = Future()
        done.set_result(self._count_batch(texts))
        return done

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
