"""Reading a large log in two processes: its first part here, the rest in a forked process.

Parsing is most of a large Claude Code log's estimate (1.7 s of 4.0 for 200 MB), and one process
parses it however fast the tokenizer counts. A format whose reader can start mid-file at a *seam*
(its ``seam`` module, ``SEAMS``) has the part from the first seam after the middle read, counted
and replayed by a forked process, from a blank state, while this one reads up to it. That replay
comes back (request rows and context counts, not entries) and is joined to this one's
(``replay_join``), after the entries the first part's reader emits at the seam. The join is
checked (``seam.join``, ``replay_join.joinable``): when the other reader could not have read what
the whole file's reader reads, or met anything but good lines (a bad line, a line still being
written), its work is dropped and the part read here instead. The result is the serial run's
either way; the tests compare them at many seams.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, BinaryIO

from ctxfold.formats.base import Line
from ctxfold.formats.jsonl import READ_BUFFER, _lines
from ctxfold.formats.loader import Opened, continue_stream
from ctxfold.tokens import parallel, replay_join
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.filecheck import PrefixHash
from ctxfold.tokens.session import SessionCounter, collector_paused
from ctxfold.transcript.model import CompactionMarker

# Logs smaller than this are read in one process. `estimate_file` of the generated Claude Code
# log (prefixes of it below 20 MB) in a fresh process, one process against two, medians of 5:
# 3 MB 0.20/0.19 s, 5 MB 0.22/0.23, 10 MB 0.43/0.34, 20 MB 0.76/0.58, 50 MB 1.38/1.14.
MIN_BYTES = 8_000_000
# Where the seam is looked for, as a fraction of the bytes to read: a little past the middle, as
# the first process also joins the replays. 200 MB, noisy hours: best of 4, 0.50 2.71 s, 0.53
# 2.56, 0.56 2.58, 0.59 2.88; medians of 5, 0.50 3.42, 0.52 3.38, 0.54 3.54, 0.56 3.65; medians
# of 8 alternating, 0.52 3.37, 0.54 3.46. (At 0.54 the first part ended 0.1-0.4 s after the other.)
AT = 0.52
LOOK = 8_000_000  # how far past that point (a seam is a user's line: a few per megabyte)
SEAMS = {"claude-code": "ctxfold.formats.claude_code.seam"}


class RawLines:
    """A file's raw lines from where it stands up to byte ``end`` (lowered to stop at a seam),
    each shown to ``seen`` (a hash's ``update``, a list's ``append``) as it is read."""

    def __init__(
        self, f: BinaryIO, end: int, lines: int = 0, seen: Callable[[bytes], Any] | None = None
    ) -> None:
        self.f, self.end, self.lines, self.seen = f, end, lines, seen
        self.pos = f.tell()

    def __iter__(self) -> Iterator[bytes]:
        f, seen = self.f, self.seen
        while self.pos < self.end:
            raw = f.readline()
            if not raw:
                return
            if seen is not None:
                seen(raw)
            self.pos += len(raw)
            self.lines += 1
            yield raw

    def skip(self, to: int, lines: int, crc: int | None = None) -> None:
        """Pass over the bytes up to ``to`` (``lines`` lines, read elsewhere; ``crc``, their
        CRC-32 when it was taken as they were read), shown to ``seen`` in blocks unless ``told``
        takes their CRC-32 instead."""
        self.f.seek(self.pos)
        if crc is not None and self.told(crc, to - self.pos):
            self.pos = to
        while self.seen is not None and self.pos < to:
            block = self.f.read(min(1 << 20, to - self.pos))
            if not block:
                break
            self.seen(block)
            self.pos += len(block)
        self.pos = to
        self.f.seek(to)
        self.lines += lines

    def told(self, crc: int, size: int) -> bool:
        """Whether ``seen`` takes the CRC-32 of ``size`` bytes for the bytes themselves."""
        return False


@dataclass
class Tail:
    """What the forked process read: its replay (``SessionCounter.snapshot``, from a blank
    state), its reader at the end, what that reader looked for and did not find (the format's
    ``seam.detach``), and how much it read."""

    replay: dict[str, Any]
    reader: Any
    missed: Any
    lines: int  # lines read (not blank)
    raw_lines: int  # lines passed over, blank ones too
    size: int  # bytes of the lines read
    last: int  # the last line's number, counted from the seam (1: the seam's line)
    crc: int  # the CRC-32 of every byte read (``filecheck.PrefixHash``)


class _Refused(Exception):
    """The forked process met what only the first one may report (a bad line...)."""


def seams(fmt: str) -> ModuleType | None:
    """The seam rules of a format whose reader can start mid-file, else None."""
    name = SEAMS.get(fmt)
    return importlib.import_module(name) if name is not None else None


def feed(
    sc: SessionCounter,
    stream: Iterator[Any],
    opened: Opened,
    raws: RawLines,
    cut: int,
    *,
    skip_invalid: bool = False,
    wrap: Callable[[Iterator[Any]], Iterator[Any]] = lambda it: it,
) -> None:
    """``sc.feed(stream)`` over ``opened``'s lines up to byte ``cut`` (``raws``), its reader left
    at the end of them; a large log's part after a seam read in a forked process meanwhile.
    ``wrap`` wraps every further stream of entries as the caller wrapped ``stream``."""
    two = _Split.start(opened, raws, sc.counter, cut)
    if two is None:
        sc.feed(stream, size=cut, finish=False, read=lambda: opened.bytes_read)
        return
    try:
        sc.feed(stream, size=None, finish=False)
        if two.join(sc, wrap):
            return
    finally:
        two.close()
    raws.end = cut  # the part after the seam, read here
    raws.f.seek(raws.pos)
    more = continue_stream(
        opened, _lines(raws.f, raws, no=raws.lines), skip_invalid=skip_invalid, finish=False
    )
    sc.feed(wrap(more), size=None, finish=False)


class _Split:
    """The forked process reading from the seam, and the join of what it read."""

    def __init__(
        self, opened: Opened, raws: RawLines, rules: ModuleType, cut: int, pid: int, conn: BinaryIO
    ) -> None:
        self.opened, self.raws, self.rules, self.cut = opened, raws, rules, cut
        self.pid, self.conn = pid, conn
        self.seam = raws.end

    @classmethod
    def start(cls, opened: Opened, raws: RawLines, counter: Counter, cut: int) -> _Split | None:
        rules = seams(opened.format)
        if rules is None or not _worth(cut - raws.pos) or raws.f.tell() != raws.pos:
            return None  # (the last: one JSON document, read whole by detection)
        seam = _find_seam(raws.f, max(raws.pos, int(cut * AT)), cut, rules.is_seam)
        raws.f.seek(raws.pos)
        if seam is None:
            return None
        g = _reopened(raws.f, opened.path)
        if g is None:
            return None
        tokenizer = counter.tokenizer
        getattr(tokenizer, "plan", lambda size: None)(cut)
        getattr(tokenizer, "native", lambda: None)()  # loaded once, shared with the child
        with g:  # the child's (its own position in the file), closed here once it is forked
            pid, conn = parallel.fork_child(lambda: _tail(g, opened.format, seam, cut, counter))
        raws.end = seam
        return cls(opened, raws, rules, cut, pid, conn)

    def join(self, sc: SessionCounter, wrap: Callable[[Iterator[Any]], Iterator[Any]]) -> bool:
        """Go on with the forked process's replay of the part after the seam, when it is the
        whole file's; False (nothing of it taken) when the part must be read here."""
        try:
            data = self.conn.read()
            with collector_paused():
                tail: Tail | None = pickle.loads(data)
        except (EOFError, OSError, pickle.UnpicklingError):
            return False
        opened, reader = self.opened, self.opened.reader
        if tail is None or reader is None or self.raws.pos != self.seam:
            return False
        sc.feed(wrap(iter(self.rules.at_seam(reader, tail.missed))), size=None, finish=False)
        merged = self.rules.join(reader, tail.reader, tail.missed)
        replay = replay_join.join(sc.snapshot(), tail.replay) if merged is not None else None
        if replay is None:
            return False
        sc.go_on_from(replay)
        opened.reader = merged
        opened.bytes_read += tail.size
        opened.lines_read += tail.lines
        opened.current_line = self.raws.lines + tail.last
        self.raws.skip(self.cut, tail.raw_lines, tail.crc)
        for _ in wrap(iter(())):  # (a progress bar shows where reading stands now)
            pass
        return True

    def close(self) -> None:
        self.conn.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)  # (gone already when its replay was read)
        os.waitpid(self.pid, 0)


def _worth(size: int) -> bool:
    """Whether a log of ``size`` bytes is read in two processes: large enough, where a helper
    process may be forked (``parallel.may_fork``)."""
    return size >= MIN_BYTES and parallel.may_fork()


def _find_seam(f: BinaryIO, start: int, cut: int, is_seam: Callable[[Any], bool]) -> int | None:
    """The offset of the first seam line that starts after byte ``start`` (and before ``cut``)."""
    import orjson

    f.seek(start)
    f.readline()  # the rest of the line ``start`` falls in
    pos, stop = f.tell(), min(cut, start + LOOK)
    while pos < stop:
        raw = f.readline()
        if not raw.endswith(b"\n"):
            return None
        if b'"user"' in raw:
            try:
                if is_seam(orjson.loads(raw)):
                    return pos
            except orjson.JSONDecodeError:
                return None  # a bad line: the error is the first part's to report
        pos += len(raw)
    return None


def _reopened(f: BinaryIO, path: str) -> BinaryIO | None:
    """The file ``f`` reads, opened again (a position of its own), unless its path now names
    another file (replaced since it was opened: the other process must read the same bytes)."""
    try:
        g = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 (closed by the caller)
        same = os.path.samestat(os.fstat(g.fileno()), os.fstat(f.fileno()))
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    if not same:
        g.close()
        return None
    return g


def _tail(f: BinaryIO, fmt: str, seam: int, cut: int, counter: Counter) -> bytes:
    """In the child: the lines from ``seam`` to ``cut`` read, counted and replayed, pickled (None:
    the first process reads them itself)."""
    gc.disable()  # millions of short-lived dicts, no cycles among them (``collector_paused``)
    try:
        out: Tail | None = _read_tail(f, fmt, seam, cut, counter)
    except BaseException:  # whatever went wrong, the first process meets it as a serial run does
        out = None
    return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def _read_tail(f: BinaryIO, fmt: str, seam: int, cut: int, counter: Counter) -> Tail | None:
    rules = seams(fmt)
    assert rules is not None
    sc = SessionCounter(counter)
    tally = [0, 0, 0]  # lines, bytes, the last line's number
    with f:
        reader = rules.tail_reader(f, seam)
        f.seek(seam)
        crc = PrefixHash()
        raws = RawLines(f, cut, seen=crc.update)
        try:
            sc.feed(_entries(_lines(f, raws, no=1), reader, tally), size=None, finish=False)
        except _Refused:
            return None
    replay = sc.snapshot()
    if not replay_join.joinable(replay):
        return None
    lines, size, last = tally
    return Tail(replay, reader, rules.detach(reader), lines, raws.lines, size, last, crc.value)


def _entries(lines: Iterator[Any], reader: Any, tally: list[int]) -> Iterator[Any]:
    """The entries of the part's lines (numbered from 2: 1 would read the first as the start of
    a document), ``tally`` kept up to date."""
    for item in lines:
        if not isinstance(item, Line):
            raise _Refused  # a bad line, or one still being written: for the first process
        tally[0] += 1
        tally[1] += item.size
        tally[2] = item.no - 1
        for e in reader.feed(item):
            if isinstance(e, CompactionMarker) and e.first_kept_id is not None:
                raise _Refused  # the messages it keeps may be the first part's
            yield e
