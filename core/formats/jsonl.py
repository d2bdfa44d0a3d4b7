"""Streaming JSONL: one parsed line at a time, with errors that name file, line and problem."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import orjson

from ctxfold.errors import InputError, LineError
from ctxfold.formats.base import Line

STDIN = "-"
BOM = b"\xef\xbb\xbf"  # written by some Windows tools; not JSON, so dropped from the first line
# Deeper nesting is refused at parse time: every later step (counting, writing, repr in a message)
# may then walk a value recursively, well inside Python's recursion limit and orjson's 255.
MAX_DEPTH = 128


def open_binary(path: str | Path) -> BinaryIO:
    if str(path) == STDIN:
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory", path) from None
    except PermissionError:
        raise InputError("permission denied", path) from None


def _describe(raw: bytes, err: orjson.JSONDecodeError, last: bool) -> str:
    nul = raw.find(b"\x00")
    if nul >= 0:
        return f"binary data, not JSON text (NUL byte at byte {nul} of the line)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as u:
        return f"invalid UTF-8 at byte {u.start} of the line"
    # a last line that ends mid-value, with no newline after it: a writer was interrupted
    # (``err.pos`` counts characters, not bytes)
    if last and not raw.endswith(b"\n") and err.pos >= len(text.rstrip()):
        return f"truncated last line (invalid JSON at char {err.pos}; was the file still being written?)"
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
        prev: bytes | None = None
        no = 0
        for raw in f:
            if prev is not None and prev.strip():
                yield _parse(prev, no, last=False)
            no += 1
            prev = raw[len(BOM) :] if no == 1 and raw.startswith(BOM) else raw
        if prev is not None and prev.strip():
            yield _parse(prev, no, last=True)
    finally:
        if owned:
            f.close()


def _parse(raw: bytes, no: int, last: bool) -> Line | LineError:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        return LineError(_describe(raw, err, last), no)
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and too_deep(data):
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
