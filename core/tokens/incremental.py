"""The count cache: a session file read before is read on from where it ended.

A live session only grows, and counting it again from the first line costs as much as the
first time. So ``estimate_file`` keeps, per file and settings (``countstore.py``), the state at
the end of the last complete line it read: that line's byte offset, the CRC-32 of the bytes
before it, the format reader's state and the replay's (every request so far, the context's
per-message counts). The next run checks those bytes, restores the state, reads the lines after
them, and finishes as a cold run does (the reader told the input ended, a half-written last line
left out). Its result is the cold run's, field for field; the tests compare them on every fixture.
Beside the state, the result itself is kept (for a file of up to ``ANSWER_MAX`` bytes, read
cold or found unchanged since its state; not after it grew, as a live session does every
turn): a file of the same size whose bytes all check is answered from it, nothing restored or
read on; one not written to since shortly before the result was kept, as its metadata shows
(``filecheck.unchanged``), without reading its bytes (a folder of old sessions).

What is cached depends only on the file and on the settings that choose the tokenizer, framing
and window (``--model``, ``--tokenizer``, ``--window``, their environment variables and the
config file's ``[defaults]`` and ``[models]``, ``--format``, ``--skip-invalid``) and on
ctxfold's own code; all of it is in the entry's key, so other settings never reuse its counts.
Calibration and the learned profile are applied after it, every run: the cache holds no
prediction, and a run that hits it learns what a cold run would.

A file is read cold, and nothing is kept, when resuming could not give the cold result: a
prefix that changed (a rewritten file, or a shorter one), a log whose model is not decided by
the lines read so far, fewer lines than format detection looks at, one JSON document over many
lines (Gemini CLI's saved chats), or stdin.

One file's read with the cache is ``cacherun.CachedRun``; where entries are kept,
``countstore``; how a file is told unchanged, ``filecheck``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from ctxfold.config import Config
from ctxfold.formats.jsonl import open_binary
from ctxfold.formats.loader import Opened
from ctxfold.hashes import code_stamp
from ctxfold.paths import cache_off
from ctxfold.settings import env_name, setting
from ctxfold.tokens.cacherun import WHOLE_KEPT, CachedRun
from ctxfold.tokens.countstore import CountStore, default_store
from ctxfold.tokens.estimate import FileEstimate, Spec, estimate_file
from ctxfold.tokens.filecheck import complete_end


def cache_enabled(path: str, st: os.stat_result | None = None) -> bool:
    """Whether ``path`` is read with the count cache: a regular file (by ``st``, its ``stat``,
    when the caller has it), not stdin, the cache not turned off."""
    if path == "-" or cache_off():
        return False
    return os.path.isfile(path) if st is None else stat.S_ISREG(st.st_mode)


def count_file(
    path: str | Path | BinaryIO,
    *,
    model: str | None = None,
    tokenizer: str | None = None,
    window: int | None = None,
    fmt: str | None = None,
    skip_invalid: bool = False,
    config: Config | None = None,
    on_progress: Callable[[Opened], None] | None = None,
    cache: bool = True,
) -> FileEstimate:
    """``estimate_file``; with ``cache`` (the commands' default; ``--no-cache`` or
    ``CTXFOLD_NO_CACHE=1`` turn it off) a file read before is read on from where it ended: the
    same result, for the cost of what was appended."""
    kw: dict[str, Any] = {"model": model, "tokenizer": tokenizer, "window": window, "fmt": fmt}
    kw.update(skip_invalid=skip_invalid, config=config, on_progress=on_progress)
    if cache and isinstance(path, (str, Path)) and cache_enabled(str(path)):
        return estimate_incremental(str(path), **kw)
    return estimate_file(path, **kw)


def estimate_incremental(
    path: str,
    *,
    model: str | None = None,
    tokenizer: str | None = None,
    window: int | None = None,
    fmt: str | None = None,
    skip_invalid: bool = False,
    config: Config | None = None,
    on_progress: Callable[[Opened], None] | None = None,
    store: CountStore | None = None,
    trace: dict[str, int] | None = None,
) -> FileEstimate:
    """``estimate_file(path, ...)``, resumed from the cache when it holds this file's prefix.
    ``trace`` (for tests and benchmarks) gets ``resumed`` (the offset read on from, else 0),
    ``kept`` (the offset of the state written, else 0), ``answered`` (1 when the kept result
    was the answer, else 0) and ``checked`` (1 when the file's bytes were read to check it)."""
    spec = Spec(model, tokenizer, window, config or Config())
    store = store or default_store()
    key = cache_key(path, spec, fmt, skip_invalid)
    notes: list[str] = []
    run = CachedRun(path, spec, fmt, skip_invalid, on_progress)
    as_one = partial(
        estimate_file, model=model, tokenizer=tokenizer, window=window, fmt=fmt, skip_invalid=skip_invalid,
        config=spec.config, on_progress=on_progress,
    )  # fmt: skip
    with open_binary(path) as f:
        run.f = f
        run.stat = os.fstat(f.fileno())
        size = run.stat.st_size
        found = store.load(key, notes, size) if size else None
        est = run.answered(found, size, notes) if found is not None else None
        if est is None:
            cut = complete_end(f, size)  # after the answer: an old log answered is not read
            found = store.with_state(found, notes) if found is not None and cut else None
            est = run.resume(found, cut, notes) if found is not None else None
            if est is None and cut:
                est = run.cold(cut)
        if est is None and size <= WHOLE_KEPT:  # kept nothing: read as one, its result kept
            est = run.whole(as_one)
    if est is None:  # a larger one: read as one, nothing kept
        est = as_one(path)
    elif run.saved is not None:
        # a file that grew since its state was kept is live and will grow again (a statusline
        # runs after every line): it pays for no answer; a first read or an unchanged file does
        store.save(key, *run.saved, answer=None if run.resumed else run.answer(est))
    elif not run.answer_hit and found is not None and run.resumed:  # unchanged since the state
        answer = run.answer(est)
        if answer is not None and found.payload is not None:  # (resumed: its state was read)
            store.save(key, found.kept(), found.payload, answer=answer)
    elif not run.answer_hit and not run.resumed and run.read is not None:
        answer = run.answer(est)  # read whole, with no state to keep: the result, for these bytes
        if answer is not None:
            store.save(key, {}, b"", answer=answer)
    if trace is not None:
        trace["resumed"] = run.resumed
        trace["kept"] = run.saved[0]["offset"] if run.saved is not None and est is not None else 0
        trace["answered"] = int(run.answer_hit)
        trace["checked"] = int(run.checked)
    est.notes = [*notes, *est.notes]
    est.cache_notes = len(notes)
    return est


def pending_bytes(paths: list[str], *, store: CountStore | None = None, **settings: Any) -> int:
    """How many bytes of ``paths`` a run with the cache would still parse: none of a file whose
    kept result is for its size, those after the kept state of one that grew, all of any other.
    ``settings`` are :func:`count_file`'s (``model``, ``tokenizer``, ``window``, ``fmt``,
    ``skip_invalid``, ``config``). From the entries' headers, unchecked: it sizes the engine
    loaded for a folder (a report over old sessions needs none), it never decides a count."""
    spec, fmt, skip_invalid = _spec("pending_bytes", settings)
    store = store or default_store()
    total = 0
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        size = st.st_size
        head = store.peek(cache_key(path, spec, fmt, skip_invalid)) if cache_enabled(path, st) else None
        answer, offset = (head or {}).get("answer"), (head or {}).get("offset")
        if isinstance(answer, dict) and answer.get("size") == size:
            continue
        total += size - offset if isinstance(offset, int) and 0 < offset <= size else size
    return total


def settings_key(**settings: Any) -> dict[str, Any]:
    """What the counts depend on besides the file (``cache_key`` without its path), for
    :func:`count_file`'s ``settings`` (as :func:`pending_bytes` takes them)."""
    return _settings_key(*_spec("settings_key", settings))


def _spec(caller: str, settings: dict[str, Any]) -> tuple[Spec, str | None, bool]:
    """:func:`count_file`'s settings (``model``, ``tokenizer``, ``window``, ``fmt``,
    ``skip_invalid``, ``config``) as the cache key takes them."""
    unknown = set(settings) - {"model", "tokenizer", "window", "fmt", "skip_invalid", "config"}
    if unknown:
        raise TypeError(f"{caller}() got unexpected settings {sorted(unknown)}")
    get = settings.get
    spec = Spec(get("model"), get("tokenizer"), get("window"), get("config") or Config())
    return spec, get("fmt"), bool(get("skip_invalid"))


def cache_key(path: str, spec: Spec, fmt: str | None, skip_invalid: bool) -> dict[str, Any]:
    """Everything the cached counts depend on besides the file's bytes."""
    return {"path": _real(path), **_settings_key(spec, fmt, skip_invalid)}


_SETTINGS = ("model", "tokenizer", "window")
_ENV_NAMES = tuple(env_name(n) for n in _SETTINGS)
# the key's settings part, for the settings and environment last asked about (a folder's files
# share it: resolved once, not per file), and the real folders of the files asked about
_last_settings: list[Any] = [None, None, {}]
_real_folders: dict[str, str] = {}


def _settings_key(spec: Spec, fmt: str | None, skip_invalid: bool) -> dict[str, Any]:
    environ = tuple(map(os.environ.get, _ENV_NAMES))
    asked = (spec.model, spec.tokenizer, spec.window, fmt, skip_invalid, environ)
    known, config, key = _last_settings
    if known == asked and config is spec.config:  # (a config is frozen: the same one says the same)
        return key
    chosen = {}
    for name, flag in zip(_SETTINGS, (spec.model, spec.tokenizer, spec.window), strict=True):
        s = setting(name, flag, spec.config)
        chosen[name] = [s.value, s.source]
    key = {
        "format": fmt,
        "skip_invalid": skip_invalid,
        "settings": chosen,
        "models": spec.config.models,
        "code": code_stamp(),
    }
    _last_settings[:] = [asked, spec.config, key]
    return key


def _real(path: str) -> str:
    """``os.path.realpath(path)``, with the real path of its folder found once per folder: a
    file that is no symbolic link is its real folder's entry (one ``lstat``, not one per
    component of the path). A path through ``..`` is resolved whole: a link before it is
    followed before the ``..`` is taken, which ``abspath`` does not do."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        if not name or ".." in path.split(os.sep) or stat.S_ISLNK(os.lstat(path).st_mode):
            return os.path.realpath(path)
    except OSError:
        return os.path.realpath(path)
    real = _real_folders.get(folder)
    if real is None:
        if len(_real_folders) > 1024:
            _real_folders.clear()
        real = _real_folders[folder] = os.path.realpath(folder)
    return os.path.join(real, name)
