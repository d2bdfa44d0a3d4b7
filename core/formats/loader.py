"""Open a transcript: detect its format from the first lines, then stream its entries.

``open_transcript`` returns at once with a lazy entry iterator; ``load`` materialises a
:class:`Transcript`. Bad lines raise :class:`LineError` naming the file and line, or with
``skip_invalid`` are collected in ``skipped`` and passed over. A half-written last line (a
session still being written) is always left out, with a warning in ``warnings``. A format given by the caller
(``--format``) that no line of the file is in raises :class:`UnknownFormatError` once the file is
read, instead of an empty conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ctxfold.errors import EmptyInputError, LineError, PartialLineError, UnknownFormatError
from ctxfold.formats import registry
from ctxfold.formats.base import Line, Reader
from ctxfold.formats.jsonl import iter_lines
from ctxfold.transcript.model import ContextUpdate, CountError, Entry, Message, Transcript

SNIFF_LINES = 25
# A reader bug (KeyError, TypeError…) on a strange line becomes a LineError naming the line, so
# users never see a traceback. Tests set this to True to see such bugs instead.
STRICT_READERS = False


@dataclass
class Opened:
    """An open transcript: its format and a one-shot iterator over its entries."""

    path: str
    format: str
    entries: Iterator[Entry]
    skipped: list[LineError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # "line N: …: left out" (a half-written last line)
    bytes_read: int = 0
    lines_read: int = 0
    current_line: int = 0  # the line being read when the entry just yielded was produced
    reader: Reader | None = None  # the format's reader (its state is what resuming needs)
    sniffed: int = 0  # lines detection looked at (SNIFF_LINES when the file had enough)


def open_transcript(
    source: str | Path | BinaryIO, *, fmt: str | None = None, skip_invalid: bool = False
) -> Opened:
    """Detect the format from the first lines and return at once; ``source`` is a path, ``-``
    for stdin, or a binary stream (read, never closed; errors name it by its ``name``).
    Entries are read as the iterator is consumed, so a long log never sits in memory whole.

    >>> opened = ctxfold.open_transcript("fixtures/codex/edge-cases.jsonl")
    >>> opened.format, next(opened.entries).kind
    ('codex', 'context')
    """
    if isinstance(source, (str, Path)):
        path, lines = str(source), iter_lines(source)
    else:
        path = str(getattr(source, "name", "<stream>"))
        lines = iter_lines(path, source)
    return open_lines(path, lines, fmt=fmt, skip_invalid=skip_invalid)


def open_lines(
    path: str,
    lines: Iterator[Line | LineError],
    *,
    fmt: str | None = None,
    skip_invalid: bool = False,
    finish: bool = True,
) -> Opened:
    """``open_transcript`` over lines already being read (``iter_lines``). With ``finish=False``
    the entries stop after the last line, the reader not told the input ended (nor the check of
    a forced format that found no entry made): the count cache snapshots the reader there and
    goes on with :func:`continue_stream`."""
    head: list[Line] = []
    skipped: list[LineError] = []
    warnings: list[str] = []
    for item in lines:
        if isinstance(item, PartialLineError):
            warnings.append(_left_out(item))
            continue
        if isinstance(item, LineError):
            if not skip_invalid:
                raise item.with_path(path)
            skipped.append(item.with_path(path))
            continue
        head.append(item)
        if len(head) >= SNIFF_LINES:
            break
    if not head:
        if warnings:  # nothing but a line still being written
            raise EmptyInputError("no complete line yet: its only line is still being written", path)
        raise EmptyInputError("empty file: no JSON lines", path)
    forced = fmt is not None
    if fmt is None:
        fmt, score = registry.detect([line.data for line in head])
        if score == 0:
            raise UnknownFormatError(
                "unknown format: the first lines match no known transcript format "
                f"(known: {', '.join(registry.FORMATS)}; pass --format to force one)",
                path,
            )
    reader: Reader = registry.get(fmt).Reader()
    opened = Opened(path, fmt, iter(()), skipped, warnings, reader=reader, sniffed=len(head))
    opened.entries = _stream(opened, reader, head, lines, skip_invalid, finish)
    if forced and finish:
        opened.entries = _not_empty(opened, [line.data for line in head], opened.entries)
    return opened


def _not_empty(opened: Opened, head: list[Any], entries: Iterator[Entry]) -> Iterator[Entry]:
    """``entries``, or an error at their end when there were none and no line of the file is of
    the format asked for: a reader passes over the line types it does not know, so a file read
    with another format's ``--format`` would otherwise be a silent, empty conversation."""
    for first in entries:
        yield first
        yield from entries  # the check costs nothing per entry once there is one
        return
    if _has_lines_of(opened.format, head):
        return  # the format's own lines with nothing to read (a Claude Code log of summaries)
    found, score = registry.detect(head)
    looks = (
        f"detection says {found}: drop --format, or pass --format {found}"
        if score > 0 and found != opened.format
        else "detection recognises no known format either"
    )
    raise UnknownFormatError(f"no line is {_a(opened.format)} {opened.format} line ({looks})", opened.path)


def _has_lines_of(fmt: str, head: list[Any]) -> bool:
    """Whether the format's sniffer claims the first lines, or any one of them on its own."""
    sniff = registry.get(fmt).sniff
    for objs in (head, *([d] for d in head)):
        try:
            if sniff(objs) > 0:
                return True
        except (TypeError, ValueError, KeyError, AttributeError, IndexError):
            continue  # as in detection: lines a sniffer cannot make sense of are not its format
    return False


def _a(word: str) -> str:
    return "an" if word[:1] in ("a", "e", "i", "o", "u") else "a"


def continue_stream(
    opened: Opened, lines: Iterator[Line | LineError], *, skip_invalid: bool = False, finish: bool = True
) -> Iterator[Entry]:
    """More entries of ``opened`` (its reader restored or left at the end of earlier lines) from
    the lines that follow; with ``finish`` the reader is then told the input ended."""
    assert opened.reader is not None
    return _stream(opened, opened.reader, [], lines, skip_invalid, finish)


def _stream(
    opened: Opened,
    reader: Reader,
    head: list[Line],
    rest: Iterator[Line | LineError],
    skip_invalid: bool,
    finish: bool = True,
) -> Iterator[Entry]:
    def all_lines() -> Iterator[Line | LineError]:
        yield from head
        yield from rest

    for item in all_lines():
        if isinstance(item, Line):
            opened.bytes_read += item.size
            opened.lines_read += 1
            opened.current_line = item.no
            try:
                yield from reader.feed(item)
                continue
            except Exception as err:
                item = _as_line_error(err, item.no, opened.format)
        if isinstance(item, PartialLineError):
            opened.warnings.append(_left_out(item))
            continue
        if not skip_invalid:
            raise item.with_path(opened.path)
        opened.skipped.append(item.with_path(opened.path))
    if not finish:
        return
    try:
        yield from reader.finish()
    except Exception as err:
        raise _as_line_error(err, opened.current_line, opened.format).with_path(opened.path) from None


LEFT_OUT = ": left out"  # how the warning of a line left out ends (a reader's say other things)


def _left_out(err: PartialLineError) -> str:
    """The warning, without the path: it is said with the file's other warnings, under its name."""
    return f"line {err.line}: {err.reason}{LEFT_OUT}"


# What a reader raises on a line it cannot make sense of; anything else is a bug of ctxfold's.
_STRUCTURE = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError)


def _as_line_error(err: Exception, line: int, fmt: str) -> LineError:
    """A reader's error as the bad line it is: its own LineError (given the line when it had
    none), a count out of range, or a line of unexpected structure (never a traceback)."""
    if isinstance(err, LineError):
        return err if err.line else LineError(err.reason, line)
    if isinstance(err, CountError):
        return LineError(f"bad token count: {err}", line)
    if isinstance(err, _STRUCTURE) and not STRICT_READERS:
        return LineError(f"unexpected structure for {fmt} ({type(err).__name__}: {err})", line)
    raise err


def load(source: str | Path | BinaryIO, *, fmt: str | None = None, skip_invalid: bool = False) -> Transcript:
    opened = open_transcript(source, fmt=fmt, skip_invalid=skip_invalid)
    return materialize(list(opened.entries), opened.format, opened.path)


def materialize(entries: list[Entry], source_format: str, path: str | None = None) -> Transcript:
    session_id: str | None = None
    window: int | None = None
    system: tuple[str, ...] = ()
    tools: tuple = ()
    models: dict[str, None] = {}
    for e in entries:
        if isinstance(e, ContextUpdate):
            session_id = e.session_id or session_id
            window = e.context_window or window
            system = e.system if e.system is not None else system
            tools = e.tools if e.tools is not None else tools
            if e.model:
                models[e.model] = None
        elif isinstance(e, Message) and e.model:
            models[e.model] = None
    return Transcript(
        source_format=source_format,
        entries=tuple(entries),
        path=path,
        session_id=session_id,
        models=tuple(models),
        context_window=window,
        system=system,
        tools=tools,
    )
