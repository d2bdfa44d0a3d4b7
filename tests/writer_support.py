"""Helpers for the writer tests: write a transcript to a file, read it back with line numbers,
compare messages, and build a compacted transcript the way ctxfold's summary strategy does."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import orjson
from conftest import detect

from ctxfold.formats import api_writing, loader
from ctxfold.strategies.summary import SUMMARY_OPEN, continuation_message, summary_message
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    TextPart,
    Transcript,
)

SUMMARY = "The user asked for a fix; the agent found the bug and edited the file. Tests pass."


def write_file(writer: ModuleType, t: Transcript, path: Path) -> Path:
    lines = list(writer.write(t))
    assert all(isinstance(x, bytes) and b"\n" not in x for x in lines)
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    return path


def read_items(path: Path, fmt: str) -> list[tuple[int, Entry]]:
    """Every entry the format's reader gives, with the line it came from (as ``check_file``
    sees them); the loader streams the same entries."""
    items = api_writing.read_items(path, fmt)
    opened = loader.open_transcript(path, fmt=fmt)
    assert isinstance(opened.entries, Iterator)
    assert list(opened.entries) == [e for _, e in items]
    return items


def assert_compact(path: Path) -> None:
    """Every line is exactly what orjson writes: no spaces after separators outside strings."""
    for no, raw in enumerate(path.read_bytes().splitlines(), 1):
        assert raw == orjson.dumps(orjson.loads(raw)), f"line {no} is not compact JSON"


def usage_numbers(m: Entry) -> Entry:
    """The entry with its usage's ``fields`` dropped: they name where in the line each number
    was found, which depends on the line shape (``usage.x`` vs ``response.usage.x``)."""
    if isinstance(m, Message) and m.usage is not None:
        return dataclasses.replace(m, usage=dataclasses.replace(m.usage, fields={}))
    return m


def body(entries: Iterable[Entry]) -> list[Entry]:
    """Messages, API errors and resets (what a round trip must give back), usage normalised."""
    return [usage_numbers(e) for e in entries if isinstance(e, (Message, ApiError, ContextReset))]


def same_context(a: Transcript, b: Transcript) -> None:
    assert (a.system, a.tools, a.models) == (b.system, b.tools, b.models)


def clean_tail(messages: list[Message], keep: int) -> list[Message]:
    """The last ``keep`` messages or a few more: a tail holds the call of every tool result in
    it (cut at a clean tool-call boundary), so no result is left without its call."""
    start = max(len(messages) - keep, 0)
    while start > 0:
        calls = {c.id for m in messages[start:] for c in m.tool_calls}
        if all(r.call_id in calls for m in messages[start:] for r in m.tool_results):
            break
        start -= 1
    return messages[start:]


def compacted(t: Transcript, keep: int = 4, history: bool = False) -> tuple[Transcript, list[Message]]:
    """``t`` after a ctxfold compaction: its fixed parts, a marker, the summary and continuation
    messages, then the last messages (after the last reset) cut at a clean boundary. With
    ``history`` the original entries stay before the marker (writers of API formats drop them)."""
    last_reset = max((i for i, e in enumerate(t.entries) if isinstance(e, ContextReset)), default=-1)
    messages = [e for e in t.entries[last_reset + 1 :] if isinstance(e, Message)]
    tail = clean_tail(messages, keep)
    updates = [e for e in t.entries if isinstance(e, ContextUpdate)]
    marker = CompactionMarker(
        source="ctxfold", summary=SUMMARY, tokens_before=90_000, tokens_after=4_000, trigger="manual"
    )
    request = next((m.text for m in reversed(messages) if m.role == "user" and m.text), None)
    new: list[Entry] = [*(t.entries if history else updates), marker]
    new += [summary_message(SUMMARY), continuation_message(request), *tail]
    return dataclasses.replace(t, entries=tuple(new), extra={"original": t}), tail


def summary_first(messages: list[Message]) -> None:
    """The summary is the first thing the model reads: the first message is the user's and
    its first text is the summary."""
    first = messages[0]
    assert first.role == "user"
    texts = [p for p in first.parts if isinstance(p, TextPart)]
    assert texts and texts[0].text.startswith(SUMMARY_OPEN) and SUMMARY in texts[0].text


class WrittenCompacted(NamedTuple):
    source: Transcript
    tail: list[Message]  # the messages kept verbatim after the summary
    out: Path
    items: list[tuple[int, Entry]]
    messages: list[Message]  # as read back from ``out``


def write_compacted(
    writer: ModuleType, path: Path, fmt: str, out_dir: Path, *, history: bool
) -> WrittenCompacted:
    """Load ``path``, compact it the way ctxfold's summary strategy does, write it with
    ``writer`` and read it back: compact lines, detected as ``fmt``, nothing the format's
    check flags, and the summary is the first thing the model reads."""
    t = loader.load(path, fmt=fmt)
    c, tail = compacted(t, keep=4, history=history)
    out = write_file(writer, c, out_dir / "out.jsonl")
    assert_compact(out)
    assert detect(out) == fmt
    items = read_items(out, fmt)
    assert writer.check(items) == []
    messages = [e for _, e in items if isinstance(e, Message)]
    summary_first(messages)
    return WrittenCompacted(t, tail, out, items, messages)


def tail_kept(back: list[Message], tail: list[Message], same: Callable[[Message, Message], Any]) -> None:
    """The kept tail comes back at the end (its first message may have been merged into the
    summary's, so only the ones after it are compared whole); usage compared by its numbers."""
    assert len(back) >= len(tail) - 1
    for a, b in zip(reversed(tail[1:]), reversed(back), strict=False):
        assert same(usage_numbers(a), usage_numbers(b)), (a, b)
