"""Many session files on every core, with the results of a serial run.

Reading a file splits in two. The costly half (read, parse, tokenize) is ``work(path)``: a pure
function of the file and the settings (``estimate_file``) that returns plain data, so it can run
in any process. The cheap half, ``finish(result)``, runs here in file order, each file as soon as
it and those before it are in (while the workers read on): it reads and updates the learned profile, whose state after file *i* is what file *i + 1* is predicted
from, so the output is identical to one worker's, file for file.

A file that fails (bad input, or a bug met while reading it) is that file's failure and
``finish`` never sees it, so nothing is learned from it; a worker that dies (killed, out of
memory) costs only the file it was reading: the files it left are read again one at a time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ctxfold.cli.errors import DEBUG_VAR, internal_error, with_hint
from ctxfold.cli.inputs import Failed, read_each
from ctxfold.errors import InputError
from ctxfold.tokens.parallel import WORKERS_ENV, configured, cpus

if TYPE_CHECKING:  # a pool is only built for several files: a single one starts faster
    from concurrent.futures import ProcessPoolExecutor

R = TypeVar("R")
T = TypeVar("T")
# files with less than this to parse in all are read in-process: a pool costs more. A folder of
# 2,000 logs whose every file the count cache answers: 1.09 s in-process against 1.14 s with two
# workers (medians of 7, alternated), and 1.1 s of CPU against 1.7
MIN_BYTES = 1_000_000
CHUNK = 16  # files per task at most
TASKS_PER_WORKER = 8  # at least, when there are files enough: the load stays even


def jobs_for(flag: int | None, paths: Sequence[str], to_read: int | None = None) -> int:
    """Worker processes for ``paths``: ``--jobs``, else ``CTXFOLD_WORKERS``, else one per core;
    1 (this process) for a single file, stdin among them, a small total, under ``--debug`` (its
    tracebacks are this process's) or where processes cannot be forked. ``to_read``: the bytes
    still to parse, when the count cache answers the rest (else all of them): a folder read
    before is answered here, where a pool would only send each answer through a pipe."""
    wanted = flag if flag is not None else configured()
    n = cpus() if wanted is None else wanted
    if n <= 1 or len(paths) < 2 or "-" in paths or os.environ.get(DEBUG_VAR):
        return 1  # stdin is this process's to read
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    size = total_size(paths) if to_read is None else to_read
    return min(n, len(paths)) if size >= MIN_BYTES else 1


def counting(*, cache: bool, **settings: Any) -> tuple[Callable[..., Any], Callable[[list[str]], int] | None]:
    """The costly half of reading a file, a pure function of the file and the settings (it may
    run in a worker): ``count_file`` with ``settings``; and, with the count cache on, how many
    bytes of some files it would still parse (``read_files``'s ``pending``)."""
    from functools import partial

    from ctxfold.tokens.incremental import count_file, pending_bytes

    work = partial(count_file, cache=cache, **settings)
    return work, partial(pending_bytes, **settings) if cache else None


def total_size(paths: Sequence[str]) -> int:
    return sum(os.path.getsize(p) for p in paths if p != "-" and os.path.isfile(p))


def read_files(
    expanded: tuple[list[str], Failed],
    work: Callable[..., R],
    finish: Callable[[R], T],
    *,
    jobs: int | None = None,
    progress: bool = True,
    preload: str | None = None,
    pending: Callable[[list[str]], int] | None = None,
    known: dict[str, Any] | None = None,
) -> tuple[list[T], Failed]:
    """``finish(work(path))`` for every path of ``expand``, in order, on ``jobs`` processes.
    ``work`` takes ``on_progress`` (a byte bar for a large file read here); ``preload`` names
    the tokenizer whose engine is loaded first, for all the files' bytes (not each file's): the
    workers forked after it share it, and one process reading many files keeps the engine that
    suits them all. ``pending`` tells how many of those bytes are still to parse (the count
    cache answers the rest): none, or few, and no engine is loaded for them. ``known``: what
    ``work`` would give for some paths, found already (a report's memo): they are finished
    with it, not read."""
    from ctxfold.cli import render

    paths = expanded[0]
    known = known or {}
    unread = [p for p in paths if p not in known] if known else paths
    to_read = (pending(unread) if pending else total_size(unread)) if len(paths) > 1 else None
    n = jobs_for(jobs, unread, to_read)
    if preload and to_read is not None:
        _load_engine(preload, to_read, now=n > 1)
    if n <= 1:

        def read(path: str) -> T:
            if path in known:
                return finish(known[path])
            with render.progress(path, enabled=progress) as on_progress:
                return finish(work(path, on_progress=on_progress))

        return read_each(expanded, read)
    results: list[T] = []
    failed: Failed = list(expanded[1])
    done = 0

    def take(outcomes: list[Any]) -> None:
        """Finish the files whose outcomes are in, in file order, while the workers read on."""
        nonlocal done
        while done < len(paths) and outcomes[done] is not None:
            path, (kind, value) = paths[done], outcomes[done]
            outcomes[done] = None  # its result is no longer needed here once finished
            done += 1
            if kind != "ok":
                failed.append({"path": path, "error": value})
                continue
            try:
                results.append(finish(value))
            except InputError as err:
                failed.append({"path": path, "error": with_hint(err)})  # as read_each says it
            except Exception as err:  # a bug met on one file must not cost the others
                failed.append({"path": path, "error": internal_error(err)})

    with render.files_progress(len(paths), enabled=progress) as advance:
        _run_all(paths, work, n, advance, take, known)
    return results, failed


def _load_engine(name: str, size: int, *, now: bool) -> None:
    """Plan the tokenizer ``name`` for ``size`` bytes; load its engine ``now`` (before a fork),
    or when the files are many enough to want quicktok (else each file's own plan decides, as
    it does for a few bytes: the Python engine counts them, nothing to load)."""
    from ctxfold.tokens.tokenizers import LIGHT_INPUT, QUICK_FOLDER, get_tokenizer

    tok = get_tokenizer(name)
    plan, native = getattr(tok, "plan", None), getattr(tok, "native", None)
    if plan is None or native is None or size <= LIGHT_INPUT:
        return  # not a BPE encoding, or too few bytes: nothing to load now
    if now or size >= QUICK_FOLDER:
        plan(size, folder=True)
        native()


def _run_all(
    paths: Sequence[str],
    work: Callable[..., Any],
    jobs: int,
    advance: Callable[[], None],
    ready: Callable[[list[Any]], None],
    known: dict[str, Any],
) -> None:
    """Every path's ``("ok", result)`` or ``("error", one line)``, given to ``ready`` in the
    list of outcomes (None: not in yet) each time more are in, the last time complete; those
    of ``known`` paths from there.

    Small files go in chunks (a task's round trip between processes costs about what a small
    log does). A worker that dies breaks the pool: the files it left are read again file by
    file in a new pool, and those that break that one too each in a process of its own, so
    only the file that kills its worker is lost."""
    outcomes: list[Any] = [("ok", known[p]) if p in known else None for p in paths]
    todo = [i for i, p in enumerate(paths) if p not in known]
    for _ in range(len(paths) - len(todo)):
        advance()
    ready(outcomes)
    size = max(1, min(CHUNK, len(todo) // (jobs * TASKS_PER_WORKER)))
    for workers, chunk in ((jobs, size), (jobs, 1)):
        if not todo:
            return
        todo = _round(paths, todo, work, workers, chunk, outcomes, advance, ready)
    for i in todo:
        if _round(paths, [i], work, 1, 1, outcomes, advance, ready):
            outcomes[i] = ("error", f"{paths[i]}: the worker process reading it died")
        ready(outcomes)


def _round(
    paths: Sequence[str],
    todo: list[int],
    work: Callable[..., Any],
    jobs: int,
    chunk: int,
    outcomes: list[Any],
    advance: Callable[[], None],
    ready: Callable[[list[Any]], None],
) -> list[int]:
    """Read the files ``todo`` (indices) in a pool; return those lost to a broken pool."""
    import pickle
    from concurrent.futures.process import BrokenProcessPool

    chunks = _chunks(todo, chunk, jobs)
    lost: list[int] = []
    # pickled here, once: the pool pickles each task in a thread of its own, and meanwhile this
    # thread finishes the files already in, which may add to what ``work``'s settings hold (the
    # price list remembers each model it looked up): "dictionary changed size during iteration"
    call = pickle.dumps(work, pickle.HIGHEST_PROTOCOL)
    pool = _pool(jobs)
    try:
        futures = [pool.submit(_work_all, call, [paths[i] for i in c]) for c in chunks]
        for f, c in zip(futures, chunks, strict=True):
            f.add_done_callback(_advancing(advance, f, len(c)))
        for f, c in zip(futures, chunks, strict=True):
            try:
                for i, outcome in zip(c, f.result(), strict=True):
                    outcomes[i] = outcome
            except BrokenProcessPool:
                lost.extend(c)
            ready(outcomes)
    except BaseException:  # Ctrl-C, or a bug here: the files not started are not read
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return lost


def _chunks(todo: list[int], chunk: int, jobs: int) -> list[list[int]]:
    """``todo`` in tasks of at most ``chunk`` files, in order, smaller towards the end (a
    quarter of what is left per worker): the workers run out of files at about the same time,
    not one chunk apart."""
    out: list[list[int]] = []
    i = 0
    while i < len(todo):
        size = max(1, min(chunk, (len(todo) - i) // (2 * jobs)))
        out.append(todo[i : i + size])
        i += size
    return out


def _advancing(advance: Callable[[], None], future: Any, n: int) -> Callable[[Any], None]:
    """The bar moves by a chunk's files when it is read (not when its pool broke)."""

    def done(_: Any) -> None:
        if not future.cancelled() and future.exception() is None:
            for _i in range(n):
                advance()

    return done


def _pool(jobs: int) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"), initializer=_worker_init)


def _worker_init() -> None:
    """A worker reads its files alone (no helpers of its own) and leaves Ctrl-C to the parent."""
    import signal

    os.environ[WORKERS_ENV] = "0"
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _work_all(call: bytes, paths: list[str]) -> list[tuple[str, Any]]:
    import pickle

    work = pickle.loads(call)
    return [_work(work, p) for p in paths]


def _work(work: Callable[..., Any], path: str) -> tuple[str, Any]:
    """Run in a worker: the result, or the failure as one line (an exception of the reader may
    not survive the trip back between processes)."""
    try:
        return "ok", work(path)
    except InputError as err:
        return "error", with_hint(err)  # as read_each says it
    except Exception as err:
        return "error", internal_error(err)
