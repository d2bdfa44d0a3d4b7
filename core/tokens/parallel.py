"""Tokenizing a large input on a second core while the main thread reads and parses it.

Two ways, by engine. quicktok releases the GIL for a whole batch, so one helper thread counts a
batch while the main thread parses the next: no process, no copy of the texts. rs-bpe and
tiktoken hold the GIL (two threads measured no faster than one), so their batches go to worker
processes forked after the engine is built (they share its tables copy-on-write). Results are
applied in order either way, so the counts are those of a serial run. Small inputs (and systems
without ``fork``, for those two) are counted in-process: a helper costs more than it saves there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

if TYPE_CHECKING:  # concurrent.futures (and logging) load only where a helper starts
    from concurrent.futures import Executor

# Inputs smaller than this are counted in-process. `estimate` wall with rs-bpe, in-process against
# two helper processes (medians of 3): Claude Code 5 MB 0.331/0.355 s, 11 MB 0.458/0.443, 20 MB
# 0.672/0.552; Codex 5 MB 0.383/0.372, 10 MB 0.570/0.483, 20 MB 0.851/0.678.
MIN_BYTES = 8_000_000
# A quicktok helper thread's first batch imports numpy (quicktok returns arrays): about what
# counting 3 M characters here costs, which only a long input pays back. It starts once
# THREAD_FIRST characters were counted here and the input, projected from the bytes read so far,
# still holds THREAD_WORTH more; when the bytes read cannot be told, after THREAD_AFTER.
THREAD_FIRST = 2_000_000
THREAD_WORTH = 4_000_000
THREAD_AFTER = 8_000_000
# A large input's engine turns on the text it holds (``BpeTokenizer.by_text``): its batches are
# held until this many bytes were read, then the text they hold, scaled to the input's size, picks
# it. A log's opening is denser than the rest: the generated 200 MB Claude Code log holds 43 M
# characters to count; its first batch (0.5 MB read) projects 70 M, 2.7 MB 56 M, 5.3 MB 40 M,
# 6.5 MB 44 M. Each held batch keeps its entries: the 200 MB Codex log's `compact` peaks 2 MiB
# higher (7 MiB with 8 MB held).
DECIDE_BYTES = 4_000_000
WORKERS_ENV = "CTXFOLD_WORKERS"


def cpus() -> int:
    """The cores this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def configured() -> int | None:
    """``CTXFOLD_WORKERS`` as a number (0: all in-process), or None when unset."""
    env = os.environ.get(WORKERS_ENV, "").strip()
    if not env:
        return None
    if not env.isdigit():
        from ctxfold.errors import UsageError

        raise UsageError(f"{WORKERS_ENV}={env!r}: give a number of workers (0: none)")
    return int(env)


def may_fork() -> bool:
    """Whether a helper process may be forked: a system that forks, a second core, and helpers
    not turned off (``CTXFOLD_WORKERS=0``, as in a folder's workers)."""
    return hasattr(os, "fork") and configured() != 0 and cpus() >= 2


def fork_child(work: Callable[[], bytes]) -> tuple[int, BinaryIO]:
    """A child process that sends back what ``work`` returns, and the pipe it comes through.

    ``os.fork`` itself, not multiprocessing's: its child closes stdin, which hangs for good when
    another thread of this process is reading stdin (the Codex statusline provider's case), and
    imports it (20 ms). The child leaves by ``os._exit``: nothing of this process's runs twice,
    nor is what it buffered for its output written twice."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        raise
    if pid == 0:  # the child
        try:
            os.close(r)
            with os.fdopen(w, "wb") as out:
                out.write(work())
        finally:
            os._exit(0)
    os.close(w)
    return pid, os.fdopen(r, "rb")


def workers_for(size_bytes: int) -> int:
    """How many helpers an input of this size deserves (0: count in-process)."""
    env = configured()
    if env is not None:
        return env
    if size_bytes < MIN_BYTES:
        return 0
    return min(2, cpus())


def _count(name: str, texts: Sequence[str]) -> list[int]:
    from ctxfold.tokens.tokenizers import get_tokenizer

    return get_tokenizer(name).count_batch(texts)


class Pending(Protocol):
    """The counts of a batch handed over: a helper's future, or counts at hand."""

    def result(self) -> list[int]: ...


class Counted:
    """Counts made in-process, shaped like a future (no thread pool imported for them)."""

    __slots__ = ("_counts",)

    def __init__(self, counts: list[int]) -> None:
        self._counts = counts

    def result(self) -> list[int]:
        return self._counts


class _Held:
    """A batch held until the input's engine is chosen (``Counting``); asked for its counts
    before that, it has the engine chosen from what was read so far."""

    __slots__ = ("_counting", "pending", "texts")

    def __init__(self, texts: Sequence[str], counting: Counting) -> None:
        self.texts, self._counting = texts, counting
        self.pending: Pending | None = None

    def result(self) -> list[int]:
        if self.pending is None:
            self._counting.decide()
        assert self.pending is not None, "deciding hands every held batch over"
        return self.pending.result()


class Counting:
    """Submit a batch's texts, get a future of their counts: for an input of ``size`` bytes (0:
    unknown), with the helpers (``workers_for``) that suit its size and the engine that suits
    the text it holds to count (projected once ``DECIDE_BYTES`` were read, when the engine
    turns on it); None: the last lines of an input an earlier call planned for, counted here
    with its engine. ``read`` tells how many of the bytes have been read so far, when it can be
    told. ``in_flight`` is how many batches the caller may leave uncounted."""

    def __init__(self, tokenizer: Any, size: int | None, read: Callable[[], int] | None = None) -> None:
        self._tokenizer = tokenizer
        self._size, self._read = size or 0, read
        self._plan = getattr(tokenizer, "plan", None) if size is not None else None
        if self._plan is not None:
            self._plan(size)
        self._workers = workers_for(size) if size is not None else 0  # started by the first batch
        self._pool: Executor | None = None
        self._submit: Callable[[list[str]], Pending] | None = None
        self._inline = 0  # characters counted here while a helper thread waits to be worth it
        self._handed = True  # batches go to the helpers (once a thread is worth its start)
        self._held: list[_Held] = []  # before the engine is chosen
        by_text = getattr(tokenizer, "by_text", None)
        self._by_text = self._workers > 0 and self._read is not None and by_text is not None and by_text(size)
        self.in_flight = 1

    def _start(self, chars: int, workers: int) -> None:
        """Before the first batch is counted: the engine for the text the input holds to count,
        projected from the ``chars`` of the batches so far and the bytes read for them
        (``tokenizers.QUICK_CHARS``), loaded here, then the helpers that suit it."""
        tokenizer = self._tokenizer
        done = self._bytes_read()
        if self._plan is not None and done > 0:
            self._plan(self._size, chars=chars * self._size // done)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

        native = getattr(tokenizer, "native", None)
        engine = native() if native is not None else None  # loaded before any fork
        released = tokenizer.released() if engine is not None else None
        if released is not None:
            threads = max(1, workers - 1)  # the main thread keeps a core for parsing
            pool: Executor = ThreadPoolExecutor(1, thread_name_prefix="ctxfold-count")
            self._handed = False  # counted here until the thread is worth its start
            self._submit = lambda texts: pool.submit(released, texts, threads)
            self.in_flight = 2
        elif "fork" in multiprocessing.get_all_start_methods():
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
            name = tokenizer.name
            self._submit = lambda texts: pool.submit(_count, name, texts)
            self.in_flight = workers + 1
        else:
            return
        self._pool = pool

    def submit(self, texts: Sequence[str]) -> Pending:
        if self._workers > 0:  # the helpers are not started: held until the engine is chosen
            held = _Held(texts, self)
            self._held.append(held)
            self.in_flight = len(self._held)  # none is counted before the engine is chosen
            if not self._by_text or self._bytes_read() >= DECIDE_BYTES:
                self.decide()
            return held
        return self._route(texts)

    def decide(self) -> None:
        """Choose the engine from the batches held so far, start the helpers and hand the
        batches over in order."""
        held, self._held = self._held, []
        workers, self._workers = self._workers, 0
        self.in_flight = 1  # until the helpers start
        self._start(sum(len(t) for h in held for t in h.texts), workers)
        for h in held:
            h.pending = self._route(h.texts)

    def _route(self, texts: Sequence[str]) -> Pending:
        if self._submit is not None and not self._handed:
            self._handed = self._worth_a_thread()
        if self._submit is not None and self._handed:
            return self._submit(list(texts))
        if self._submit is not None:
            self._inline += sum(map(len, texts))
        return Counted(self._tokenizer.count_batch(texts))

    def _bytes_read(self) -> int:
        """How many of the input's bytes have been read (0 when that cannot be told)."""
        return self._read() if self._read is not None and self._size else 0

    def _worth_a_thread(self) -> bool:
        if self._inline < THREAD_FIRST:
            return False
        done = self._bytes_read()
        if done <= 0:
            return self._inline >= THREAD_AFTER
        return self._inline * (self._size - done) / done >= THREAD_WORTH

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
