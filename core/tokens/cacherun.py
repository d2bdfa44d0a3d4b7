"""One file read with the count cache (``incremental.estimate_incremental``): answered from the
result kept, read on from the state kept, or read cold from its first line, keeping its state.
"""

from __future__ import annotations

import io
import os
import pickle
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any, BinaryIO

from ctxfold.errors import EmptyInputError
from ctxfold.formats.base import Line, ReadWhole
from ctxfold.formats.jsonl import _lines
from ctxfold.formats.loader import SNIFF_LINES, Opened, continue_stream, open_lines
from ctxfold.formats.registry import detect
from ctxfold.hashes import file_identity
from ctxfold.tokens.countstore import ANSWER_MAX, Chunks, Entry, dumps, unpickle
from ctxfold.tokens.estimate import FileEstimate, Spec, Start, begin, end, with_progress
from ctxfold.tokens.filecheck import PrefixCheck, PrefixHash, unchanged
from ctxfold.tokens.heldcounts import HeldCounts, for_header
from ctxfold.tokens.session import SessionCounter
from ctxfold.tokens.split import RawLines, feed
from ctxfold.transcript.model import Entry as LogEntry

UNREADABLE = "the count cache entry for this file could not be read back: ignored, counted afresh"
# a file no state is kept for (a log that names no model yet, one JSON document) is read whole
# into memory up to this size, so that its result is kept for the bytes it was read from
WHOLE_KEPT = 4 << 20


class _Named(io.BytesIO):
    """A file's bytes, read once, under the file's name (what errors and the result name)."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name


def _extended(hasher: PrefixHash, data: bytes) -> PrefixHash:
    """A copy of ``hasher`` that has also seen ``data``."""
    out = PrefixHash()
    out.value = hasher.value
    out.update(data)
    return out


class _Raws(RawLines):
    """The raw lines of a file up to byte ``end``, hashed as they are read (or, without a
    ``hasher``, kept to hash once the prefix's hash is known)."""

    def __init__(self, f: BinaryIO, end: int, hasher: Any, lines: int) -> None:
        self.hasher = hasher
        self.kept: list[bytes] = []
        super().__init__(f, end, lines, hasher.update if hasher is not None else self.kept.append)

    def told(self, crc: int, size: int) -> bool:
        if self.hasher is None:
            return False
        self.hasher.extend(crc, size)
        return True


class CachedRun:
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
        self.held: HeldCounts | None = None  # the counts the state's entry kept (resumed)

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
            meta.update(stat=file_identity(self.stat), kept_ns=time.time_ns())
        return meta, data

    def whole(self, as_one: Callable[[BinaryIO], FileEstimate]) -> FileEstimate:
        """The file read whole by ``as_one`` (``estimate_file``) from its bytes in memory, when a
        cold run keeps no state: its result can be kept all the same, checked by these bytes."""
        self.saved, self.resumed, self.held = None, 0, None
        self.f.seek(0)
        data = self.f.read()
        est = as_one(_Named(data, self.path))
        hasher = PrefixHash()
        hasher.update(data)
        self.read = hasher, len(data)
        return est

    def cold(self, cut: int) -> FileEstimate | None:
        self.saved, self.skipped, self.entries, self.resumed = None, [], 0, 0
        self.read, self.tail, self.held = None, None, None
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
        wrap = lambda it: self._entries(opened, it)  # noqa: E731
        feed(sc, stream, opened, raws, cut, skip_invalid=self.skip_invalid, wrap=wrap)
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
            self.held = HeldCounts.around(sc.counter, head.get("held"))
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
        except ReadWhole:  # the reader needs what its kept state left out
            check.result()
            self.saved, self.resumed, self.read = None, 0, None
            return None
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
        held = self.held or HeldCounts.around(sc.counter, None)
        held.record()  # what the reader held at the state is counted from here: the next run reuses it
        sc.feed(self._entries(opened, more), size=None)  # the engine planned for the lines before
        if self.saved is not None and held.recorded:
            self.saved[0]["held"] = for_header(held.recorded)
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
