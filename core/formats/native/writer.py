"""Write ctxfold's native JSONL: a header line, then every entry as ``codec.encode`` gives it.

Native files are the model itself, so everything is written, compaction markers and the
history before them included, and a round trip is exact: the header holds the first entry when
it is a ContextUpdate that the header form gives back unchanged, else the header is empty and
that entry follows as an ordinary line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from ctxfold.formats.api_writing import dumps, read_items
from ctxfold.formats.base import Line
from ctxfold.formats.native import reader as native
from ctxfold.transcript import codec
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextUpdate,
    Entry,
    Message,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)


def _header_keeps(update: ContextUpdate) -> bool:
    """Whether reading ``header(update)`` back gives ``update`` itself."""
    try:
        back = native.Reader()._header(native.header(update), Line(1, None, 0))
    except Exception:  # a header the reader refuses: write the update as a line instead
        return False
    return back == update


def write(t: Transcript) -> Iterator[bytes]:
    entries = t.entries
    first = entries[0] if entries else None
    if isinstance(first, ContextUpdate) and _header_keeps(first):
        yield dumps(native.header(first))
        entries = entries[1:]
    else:
        yield dumps(native.header(ContextUpdate()))
    for e in entries:
        yield dumps(codec.encode(e))


def check(items: Sequence[tuple[int, Entry]]) -> list[tuple[int, str]]:
    """The model's own rules: tool calls only in assistant messages, tool results only in tool
    or user messages (a tool message holds nothing else), usage only on assistant messages,
    and a ctxfold compaction marker followed by its summary message."""
    out: list[tuple[int, str]] = []
    want_summary: int | None = None
    for no, e in items:
        if isinstance(e, CompactionMarker):
            if want_summary is not None:
                out.append((want_summary, "ctxfold compaction marker not followed by its summary message"))
            want_summary = no if e.source == "ctxfold" else None
            continue
        if not isinstance(e, Message):
            continue
        if want_summary is not None:
            if e.role != "user" or e.extra.get("ctxfold") != "summary":
                out.append((want_summary, "ctxfold compaction marker not followed by its summary message"))
            want_summary = None
        if e.role != "assistant" and any(isinstance(p, ToolCallPart) for p in e.parts):
            out.append((no, f"tool call in a message of role {e.role!r}"))
        if e.role in ("assistant", "system") and any(isinstance(p, ToolResultPart) for p in e.parts):
            out.append((no, f"tool result in a message of role {e.role!r}"))
        if e.role == "tool" and not all(isinstance(p, ToolResultPart) for p in e.parts):
            out.append((no, "a tool message holds something other than tool results"))
        if e.usage is not None and e.role != "assistant":
            out.append((no, f"usage on a message of role {e.role!r}"))
    if want_summary is not None:
        out.append((want_summary, "ctxfold compaction marker not followed by its summary message"))
    return out


def check_file(path: str | Path) -> list[tuple[int, str]]:
    """``check`` over the file as the ctxfold reader reads it, each entry with its own line."""
    return check(read_items(path, "ctxfold"))
