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
"""

from __future__ import annotations

import io
import os
import pickle
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, BinaryIO

from ctxfold.config import Config
from ctxfold.errors import EmptyInputError
from ctxfold.formats.base import Line
from ctxfold.formats.jsonl import _lines, open_binary
from ctxfold.formats.loader import SNIFF_LINES, Opened, continue_stream, open_lines
from ctxfold.formats.registry import detect
from ctxfold.hashes import code_stamp
from ctxfold.paths import cache_off
from ctxfold.settings import setting
from ctxfold.tokens.countstore import ANSWER_MAX, Chunks, CountStore, Entry, dumps, unpickle
from ctxfold.tokens.estimate import FileEstimate, Spec, Start, begin, end, estimate_file, with_progress
from ctxfold.tokens.filecheck import PrefixCheck, PrefixHash, complete_end, stat_of, unchanged
from ctxfold.tokens.session import SessionCounter
from ctxfold.transcript.model import Entry as LogEntry

UNREADABLE = "the count cache entry for this file could not be read back: ignored, counted afresh"


def cache_enabled(path: str) -> bool:
    return path != "-" and not cache_off() and os.path.isfile(path)


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
    ``kept`` (the offset of the state written, else 0) and ``answered`` (1 when the kept result
    was the answer, else 0)."""
    spec = Spec(model, tokenizer, window, config or Config())
    store = store or CountStore()
    key = cache_key(path, spec, fmt, skip_invalid)
    notes: list[str] = []
    run = _Run(path, spec, fmt, skip_invalid, on_progress)
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
    if est is None:  # nothing a cold run could keep: read as one
        est = estimate_file(
            path, model=model, tokenizer=tokenizer, window=window, fmt=fmt, skip_invalid=skip_invalid,
            config=spec.config, on_progress=on_progress,
        )  # fmt: skip
    elif run.saved is not None:
        # a file that grew since its state was kept is live and will grow again (a statusline
        # runs after every line): it pays for no answer; a first read or an unchanged file does
        store.save(key, *run.saved, answer=None if run.resumed else run.answer(est))
    elif not run.answer_hit and found is not None and run.resumed:  # unchanged since the state
        answer = run.answer(est)
        if answer is not None and found.payload is not None:  # (resumed: its state was read)
            store.save(key, found.kept(), found.payload, answer=answer)
    if trace is not None:
        trace["resumed"] = run.resumed
        trace["kept"] = run.saved[0]["offset"] if run.saved is not None and est is not None else 0
        trace["answered"] = int(run.answer_hit)
        trace["checked"] = int(run.checked)
    est.notes = [*notes, *est.notes]
    return est


def pending_bytes(paths: list[str], *, store: CountStore | None = None, **settings: Any) -> int:
    """How many bytes of ``paths`` a run with the cache would still parse: none of a file whose
    kept result is for its size, those after the kept state of one that grew, all of any other.
    ``settings`` are :func:`count_file`'s (``model``, ``tokenizer``, ``window``, ``fmt``,
    ``skip_invalid``, ``config``). From the entries' headers, unchecked: it sizes the engine
    loaded for a folder (a report over old sessions needs none), it never decides a count."""
    unknown = set(settings) - {"model", "tokenizer", "window", "fmt", "skip_invalid", "config"}
    if unknown:
        raise TypeError(f"pending_bytes() got unexpected settings {sorted(unknown)}")
    get = settings.get
    spec = Spec(get("model"), get("tokenizer"), get("window"), get("config") or Config())
    fmt, skip_invalid = get("fmt"), bool(get("skip_invalid"))
    store = store or CountStore()
    total = 0
    for path in paths:
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        head = store.peek(cache_key(path, spec, fmt, skip_invalid)) if cache_enabled(path) else None
        answer, offset = (head or {}).get("answer"), (head or {}).get("offset")
        if isinstance(answer, dict) and answer.get("size") == size:
            continue
        total += size - offset if isinstance(offset, int) and 0 < offset <= size else size
    return total


def cache_key(path: str, spec: Spec, fmt: str | None, skip_invalid: bool) -> dict[str, Any]:
    """Everything the cached counts depend on besides the file's bytes."""
    chosen = {}
    for name, flag in (("model", spec.model), ("tokenizer", spec.tokenizer), ("window", spec.window)):
        s = setting(name, flag, spec.config)
        chosen[name] = [s.value, s.source]
    return {
        "path": os.path.realpath(path),
        "format": fmt,
        "skip_invalid": skip_invalid,
        "settings": chosen,
        "models": spec.config.models,
        "code": code_stamp(),
    }


def _extended(hasher: PrefixHash, data: bytes) -> PrefixHash:
    """A copy of ``hasher`` that has also seen ``data``."""
    out = PrefixHash()
    out.value = hasher.value
    out.update(data)
    return out


class _Raws:
    """The raw lines of a file up to byte ``end``, hashed as they are read (or, without a
    ``hasher``, kept to hash once the prefix's hash is known)."""

    def __init__(self, f: BinaryIO, end: int, hasher: Any, lines: int) -> None:
        self.f, self.end, self.hasher, self.lines = f, end, hasher, lines
        self.pos = f.tell()
        self.kept: list[bytes] = []

    def __iter__(self) -> Iterator[bytes]:
        f, update = self.f, self.hasher.update if self.hasher is not None else self.kept.append
        while self.pos < self.end:
            raw = f.readline()
            if not raw:
                return
            update(raw)
            self.pos += len(raw)
            self.lines += 1
            yield raw


class _Run:
    """One file read with the cache: cold (from the first line) or resumed (after the prefix)."""

    def __init__(
        self,
        path: str,
        spec: Spec,
        fmt: str | None,
        skip_invalid: bool,
        on_progress: Callable[[Opened], None] | None,
    ) -> None:
        self.path, self.spec, self.fmt, self.skip_invalid = path, spec, fmt, skip_invalid
        self.on_progress = on_progress
        self.f: BinaryIO = io.BytesIO()
        self.saved: tuple[dict[str, Any], bytes] | None = None  # the entry to write
        self.skipped: list[str] = []  # bad lines of the cached prefix (with --skip-invalid)
        self.entries = 0
        self.resumed = 0
        self.answer_hit = False
        self.checked = False  # whether the file's bytes were read to check a kept answer
        self.stat: os.stat_result | None = None  # the file's, when it was opened
        # the CRC-32 of every byte the result was read from, and how many (None: not known),
        # and the bytes after the complete lines (None: not read as a tail)
        self.read: tuple[PrefixHash, int] | None = None
        self.tail: bytes | None = None
        # the first lines' data while fewer than detection reads were seen (None: settled, or
        # --format): a line read later must not change the format detection chooses
        self.head: list[Any] | None = None
        self.detected = 0  # how many of those lines the format was detected from
        self.frozen = Chunks()

    def _entries(self, opened: Opened, it: Iterator[LogEntry]) -> Iterator[LogEntry]:
        for e in with_progress(opened, self.on_progress, it) if self.on_progress else it:
            self.entries += 1
            yield e

    def _capture(self, lines: Iterator[Any]) -> Iterator[Any]:
        for item in lines:
            if self.head is not None and len(self.head) < SNIFF_LINES and isinstance(item, Line):
                self.head.append(item.data)
            yield item

    def answered(self, found: Entry, size: int, notes: list[str]) -> FileEstimate | None:
        """The result kept in ``found``, when the file is the one it was read from: by its
        metadata (``filecheck.unchanged``), else the same size and CRC-32 of all its bytes."""
        meta = found.header.get("answer")
        if found.answer is None or not isinstance(meta, dict) or meta.get("size") != size:
            return None
        known = self.stat is not None and unchanged(meta, self.stat)
        # else the bytes are checked in a thread beside the unpickling, when large
        check = None if known else PrefixCheck(self.path, size)
        self.checked = check is not None
        try:
            est = unpickle(found.answer)
        except Exception:
            est = None
        if check is not None and check.result().hexdigest() != meta.get("crc32"):
            return None  # rewritten in place: the state's own checks decide what to reuse
        if not isinstance(est, FileEstimate):
            notes.append(UNREADABLE)
            return None
        est.path = self.path  # the entry is the file's, however it was named this time
        self.answer_hit = True
        return est

    def answer(self, est: FileEstimate) -> tuple[dict[str, Any], bytes] | None:
        """What ``answered`` checks and returns, for the entry written now (None: the result is
        not kept, for a large file or one whose bytes were not all hashed as read)."""
        if self.read is None or self.read[1] > ANSWER_MAX:
            return None
        try:
            data = dumps(est)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            return None
        meta: dict[str, Any] = {"size": self.read[1], "crc32": self.read[0].hexdigest()}
        if self.stat is not None and self.stat.st_size == self.read[1]:  # nothing written meanwhile
            meta.update(stat=stat_of(self.stat), kept_ns=time.time_ns())
        return meta, data

    def cold(self, cut: int) -> FileEstimate | None:
        self.saved, self.skipped, self.entries, self.resumed = None, [], 0, 0
        self.read, self.tail = None, None
        self.frozen = Chunks()
        self.head = None if self.fmt else []
        self.f.seek(0)
        raws = _Raws(self.f, cut, PrefixHash(), 0)
        try:
            opened = open_lines(
                self.path,
                self._capture(_lines(self.f, raws)),
                fmt=self.fmt,
                skip_invalid=self.skip_invalid,
                finish=False,
            )
        except EmptyInputError:
            return None
        self.detected = opened.sniffed
        stream, start = begin(self._entries(opened, opened.entries), opened.format, self.spec)
        if not start.decided:  # a short log that names no model yet: the next lines may
            return None
        sc = start.counter(self.spec)
        sc.feed(stream, size=cut, finish=False)
        document = self.f.tell() != raws.pos  # one JSON document: the whole file is read
        if self.entries and not document:
            self._keep(opened, sc, start, raws)
        return self._finish(opened, sc, start, raws, document)

    def resume(self, found: Entry, cut: int, notes: list[str]) -> FileEstimate | None:
        head = found.header
        offset, lines = head.get("offset"), head.get("lines")
        if found.payload is None:
            return None  # its state could not be read (``CountStore.with_state``)
        if not isinstance(offset, int) or not isinstance(lines, int) or not 0 < offset <= cut:
            return None  # the file shrank, or its complete lines end earlier: rewritten
        # the prefix is checked beside the work (hashing releases the GIL); nothing read on from
        # it is used, or kept, before its hash matches
        check = PrefixCheck(self.path, offset)
        try:
            state = unpickle(found.payload)
            opened = Opened(self.path, state["format"], iter(()), [], list(state["warnings"]))
            opened.reader, opened.sniffed = state["reader"], state["sniffed"]
            opened.bytes_read, opened.lines_read, opened.current_line = state["position"]
            start = Start(**state["start"])
            self.frozen = Chunks(*state["frozen"])
            session = state["session"]
            session["state"] = self.frozen.restored(session["state"])
            sc = SessionCounter.restore(start.counter(self.spec).counter, session)
            self.skipped = list(state["skipped"])
            self.head = state["head"]
            self.detected = len(self.head) if self.head is not None else 0
        except Exception:  # whatever the bytes held, it is not a state this code made
            check.result()
            notes.append(UNREADABLE)
            return None
        self.resumed = offset
        self.f.seek(offset)
        raws = _Raws(self.f, cut, None, lines)
        try:
            lines_in = self._capture(_lines(self.f, raws, no=lines))
            more = continue_stream(opened, lines_in, skip_invalid=self.skip_invalid, finish=False)
            sc.feed(self._entries(opened, more), size=cut - offset, finish=False)
            if cut > offset:
                self._keep(opened, sc, start, raws)
            est = self._finish(opened, sc, start, raws, False)
        except Exception:
            if check.result().hexdigest() == head.get("prefix_crc32"):
                raise  # the file's own error, as a cold run meets it
            est = None  # read on from a prefix that was rewritten
        hasher = check.result()
        if hasher.hexdigest() != head.get("prefix_crc32"):
            self.saved, self.resumed, self.read = None, 0, None
            return None  # rewritten: counted afresh
        for raw in raws.kept:
            hasher.update(raw)
        if self.saved is not None:
            self.saved[0]["prefix_crc32"] = hasher.hexdigest()
        if est is not None and self.tail is not None:
            self.read = _extended(hasher, self.tail), raws.pos + len(self.tail)
        return est

    def _finish(
        self, opened: Opened, sc: SessionCounter, start: Start, raws: _Raws, document: bool
    ) -> FileEstimate | None:
        tail: list[Any] = []  # the lines after the complete ones: written since, or not finished
        if not document:
            self.f.seek(raws.pos)
            self.tail = self.f.read()
            if raws.hasher is not None:  # read from the first line: every byte is hashed now
                self.read = _extended(raws.hasher, self.tail), raws.pos + len(self.tail)
            tail = list(self._capture(_lines(io.BytesIO(self.tail), no=raws.lines)))
            if (
                self.head is not None
                and len(self.head) > self.detected
                and detect(self.head)[0] != opened.format
            ):
                self.saved = None
                return None  # detection over the lines read since chooses another format: read cold
        more = continue_stream(opened, iter(tail), skip_invalid=self.skip_invalid)
        sc.feed(self._entries(opened, more), size=None)  # the engine planned for the lines before
        if self.fmt and not self.entries:
            self.saved = None
            return None  # a forced format with no entry: the cold run's error says it
        return self._end(opened, sc, start)

    def _end(self, opened: Opened, sc: SessionCounter, start: Start) -> FileEstimate:
        est = end(sc.state, start, opened.format, self.path, self.spec)
        est.skipped = [*self.skipped, *(str(e) for e in opened.skipped)]
        est.notes = list(opened.warnings)
        est.bytes_read, est.lines_read = opened.bytes_read, opened.lines_read
        return est

    def _keep(self, opened: Opened, sc: SessionCounter, start: Start, raws: _Raws) -> None:
        """Pickle the state now (the last complete line read, the reader not told the end)."""
        try:
            session = sc.snapshot()
            session["state"] = self.frozen.pickled(sc.state)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            return  # a state that cannot be kept is only a cost, not an error
        state = {
            "format": opened.format,
            "reader": opened.reader,
            "sniffed": opened.sniffed,
            "position": (opened.bytes_read, opened.lines_read, opened.current_line),
            "warnings": list(opened.warnings),
            "skipped": [*self.skipped, *(str(e) for e in opened.skipped)],
            "head": self.head if self.head is None or len(self.head) < SNIFF_LINES else None,
            "start": asdict(start),
            "session": session,
            "frozen": self.frozen.chunks(),
        }
        try:
            payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            return  # a state that cannot be kept is only a cost, not an error
        digest = raws.hasher.hexdigest() if raws.hasher is not None else ""  # resume() sets it
        header = {"offset": raws.pos, "lines": raws.lines, "prefix_crc32": digest}
        self.saved = (header, payload)
