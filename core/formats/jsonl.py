"""Streaming JSONL: one parsed line at a time, with errors that name file, line and problem.

A last line that ends mid-value with no newline after it is a :class:`PartialLineError`: a
session still being written ends that way, and the loader leaves the line out with a warning.

A file may also hold one JSON document spread over many lines (a pretty-printed saved chat):
when its first line is an unfinished value, the whole file is parsed as one document and read
as a single line numbered where it starts. A broken document whose first line is only its
opening brace or bracket gets one error at the line and column where it breaks; any other
file with a broken first line is reported, and read on, as JSONL.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import orjson

from ctxfold.errors import InputError, LineError, PartialLineError
from ctxfold.formats.base import Line

STDIN = "-"
BOM = b"\xef\xbb\xbf"  # written by some Windows tools; not JSON, so dropped from the first line
# Deeper nesting is refused at parse time: every later step (counting, writing, repr in a message)
# may then walk a value recursively, well inside Python's recursion limit and orjson's 255.
MAX_DEPTH = 128
# Lines are read through a buffer this large: with the default 8 KB, a long line is gathered in
# many reads and copies (200 MB of Claude Code log: 0.10–0.25 s to split into lines, 0.07 s with
# this; its estimate 5–8 % faster). 256 KB split no faster, and a statusline seemed to pay for it.
READ_BUFFER = 64 * 1024
# Every byte but the two that open a nested value: deleting them leaves a line's openers, which
# bound its depth. One pass (0.157 s over 200 MB of Claude Code log), where counting "{" and "["
# took two (0.204 s); that log's `estimate` 2.244 -> 2.215 s (medians of 5).
_NOT_OPENERS = bytes(b for b in range(256) if b not in b"{[")


def open_binary(path: str | Path) -> BinaryIO:
    if str(path) == STDIN:
        return sys.stdin.buffer
    try:
        return open(path, "rb", buffering=READ_BUFFER)
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory", path) from None
    except PermissionError:
        raise InputError("permission denied", path) from None


def _half_written(raw: bytes, err: orjson.JSONDecodeError) -> bool:
    """A last line that ends mid-value, with no newline after it: its writer is still at it (a
    live session) or was interrupted. ``err.pos`` counts characters, not bytes."""
    if raw.endswith(b"\n") or b"\x00" in raw:
        return False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as u:
        return u.reason == "unexpected end of data"  # cut inside a multi-byte character
    return err.pos >= len(text.rstrip())


def _describe(raw: bytes, err: orjson.JSONDecodeError) -> str:
    nul = raw.find(b"\x00")
    if nul >= 0:
        return f"binary data, not JSON text (NUL byte at byte {nul} of the line)"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as u:
        return f"invalid UTF-8 at byte {u.start} of the line"
    text = str(err).split(":", 1)[0]
    size = len(raw)
    big = f" ({size / 1e6:.1f} MB line)" if size > 1_000_000 else ""
    return f"not valid JSON: {text} at char {err.pos}{big}"


def iter_lines(path: str | Path, stream: BinaryIO | None = None) -> Iterator[Line | LineError]:
    """Yield each non-blank line parsed, or a LineError for a line that is not JSON.

    Errors are yielded, not raised, so the caller decides between failing and skipping. A
    ``stream`` given by the caller is read from and left open; a file opened here is closed.
    """
    f = stream if stream is not None else open_binary(path)
    owned = stream is None and f is not sys.stdin.buffer
    try:
        yield from _lines(f)
    finally:
        if owned:
            f.close()


def _lines(f: BinaryIO, raws: Iterable[bytes] | None = None, no: int = 0) -> Iterator[Line | LineError]:
    """The lines of ``raws`` (default: ``f``), numbered after ``no``; the first non-blank one
    may turn out to open a whole-file document, which then reads the rest of ``f``."""
    first = no == 0
    prev: bytes | None = None
    it = iter(raws if raws is not None else f)
    for raw in it:
        if prev and not prev.isspace():  # not blank (no copy, unlike strip)
            if first:
                first = False
                item = _parse(prev, no, last=False)
                if isinstance(item, LineError) and _unfinished(prev):
                    yield from _document(prev, no, raw + b"".join(it) + f.read())
                    return
                yield item
            else:
                yield _parse(prev, no, last=False)
        no += 1
        prev = raw[len(BOM) :] if no == 1 and raw.startswith(BOM) else raw
        if not raw.endswith(b"\n"):
            break  # the end of the file as it was: what a writer adds later is not read into it
    if prev and not prev.isspace():
        yield _parse(prev, no, last=True)


def _unfinished(raw: bytes) -> bool:
    """Whether the line ends inside a JSON value (the decoder ran out of text, nothing else)."""
    try:
        text = raw.decode("utf-8")
        orjson.loads(raw)
    except UnicodeDecodeError:
        return False
    except orjson.JSONDecodeError as err:
        return err.pos >= len(text.rstrip())
    return False


def _document(head: bytes, no: int, rest: bytes) -> Iterator[Line | LineError]:
    """``head`` (line ``no``) and ``rest`` as one JSON document; failing that, a document
    error, or the head's own error and the rest read on as JSONL."""
    data = head + rest
    try:
        yield Line(no, orjson.loads(data), len(data))
        return
    except orjson.JSONDecodeError as err:
        if head.strip() in (b"{", b"["):
            reason, at = _document_error(data, err)
            yield LineError(reason, no + data[:at].count(b"\n"))
            return
    yield _parse(head, no, last=False)
    yield from _lines(io.BytesIO(rest), no=no)


def _document_error(data: bytes, err: orjson.JSONDecodeError) -> tuple[str, int]:
    """What is wrong with a document, and the byte offset where it goes wrong."""
    nul = data.find(b"\x00")
    if nul >= 0:
        return "binary data, not a JSON document (NUL byte)", nul
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as u:
        return "invalid UTF-8 in the JSON document", u.start
    pos = min(err.pos, len(text))
    at = len(text[:pos].encode("utf-8"))
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    if err.pos >= len(text.rstrip()):
        return "truncated JSON document (was the file still being written?)", at
    reason = str(err).split(":", 1)[0]
    return f"not a valid JSON document: {reason} at column {column}", at


def _parse(raw: bytes, no: int, last: bool) -> Line | LineError:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        if last and _half_written(raw, err):
            return PartialLineError(line=no)
        return LineError(_describe(raw, err), no)
    if len(raw.translate(None, _NOT_OPENERS)) > MAX_DEPTH and too_deep(data):
        return LineError(f"nested deeper than {MAX_DEPTH} levels", no)
    return Line(no, data, len(raw))


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v if isinstance(x, (dict, list)))
    return False
