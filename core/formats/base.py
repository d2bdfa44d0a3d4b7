"""The reader interface every format implements, and small helpers they share.

A format module exposes ``NAME``, ``sniff(objs) -> int`` (0 = not mine, 100 = certainly
mine, judged from the first parsed lines) and a ``Reader`` class. The loader feeds the
reader one parsed line at a time and it yields entries, so memory stays flat however long
the file is. A reader raises :class:`LineError` (no path; the loader adds it) for a line it
cannot make sense of; with ``--skip-invalid`` the loader reports the line and goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from ctxfold.errors import LineError
from ctxfold.transcript.model import Entry


class Line(NamedTuple):
    """One parsed JSONL line: its 1-based number, its JSON value and its size in bytes. (A named
    tuple, immutable as a frozen dataclass is but made at a third of its cost: one per line.)"""

    no: int
    data: Any
    size: int


class Reader(Protocol):
    def feed(self, line: Line) -> Iterable[Entry]: ...

    def finish(self) -> Iterable[Entry]: ...


class ReadWhole(Exception):  # (a signal, not an error: the caller reads again)
    """A reader resumed from a kept state (the count cache) needs what the state left out: the
    file is read again from its first line."""


def obj(line: Line) -> dict[str, Any]:
    """The line's JSON object, or a LineError if it is something else."""
    if not isinstance(line.data, dict):
        raise LineError(f"expected a JSON object, got {type(line.data).__name__}", line.no)
    return line.data


def need(d: Mapping[str, Any], key: str, line: Line, typ: type | tuple[type, ...] = object) -> Any:
    """``d[key]``, or a LineError naming the missing or mistyped field."""
    try:
        value = d.get(key)
    except AttributeError:  # not a JSON object at all: no field of it can be read
        value = None
    if value is None:
        raise LineError(f"missing required field {key!r}", line.no)
    if typ is not object and not isinstance(value, typ):
        want = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise LineError(f"field {key!r} should be {want}, got {type(value).__name__}", line.no)
    return value


def get_str(d: Mapping[str, Any], key: str) -> str | None:
    """Optional string field: any other type counts as absent."""
    value = d.get(key)
    return value if isinstance(value, str) else None


def get_dict(d: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Optional object field: absent or any other type gives an empty dict."""
    value = d.get(key)
    return value if isinstance(value, dict) else {}


def get_list(d: Mapping[str, Any], key: str) -> list[Any]:
    """Optional array field: absent or any other type gives an empty list."""
    value = d.get(key)
    return value if isinstance(value, list) else []


def epoch_iso(value: Any) -> str | None:
    """Epoch seconds as ISO 8601 UTC; strings pass through, implausible numbers count as absent."""
    if isinstance(value, str):
        return value
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        return datetime.fromtimestamp(value, timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def now_iso() -> str:
    """The current UTC time as the agent logs write it: ISO 8601 with milliseconds and ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def zeroed(record: dict[str, Any]) -> dict[str, Any]:
    """A usage record with every number set to 0 and its shape kept, the way the harnesses write
    one for a message no request stands behind. A message kept across a compaction gets one: the
    count it carried described the context before the compaction (a count of 0 is read as none)."""
    return {
        k: zeroed(v)
        if isinstance(v, dict)
        else 0
        if isinstance(v, int | float) and not isinstance(v, bool)
        else v
        for k, v in record.items()
    }


def as_int(value: Any) -> int:
    """Token counts arrive as ints, floats or numeric strings; anything else counts as 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 20:  # not "²"
        return int(value)
    return 0


def rest(d: Mapping[str, Any], used: Iterable[str]) -> dict[str, Any]:
    """The fields of ``d`` not in ``used``: what goes into an ``extra`` mapping. (A copy with
    the few used fields popped: a reader calls this for every line, and copying is C's work.)"""
    out = dict(d)
    for k in used:
        out.pop(k, None)
    return out


class ListReader:
    """Base for readers that turn each line into zero or more entries with no lookahead."""

    def feed(self, line: Line) -> Iterable[Entry]:
        raise NotImplementedError

    def finish(self) -> Iterator[Entry]:
        return iter(())


_OVERFLOW_PATTERNS = (
    # Anthropic: "prompt is too long: 200819 tokens > 200000 maximum"
    re.compile(r"prompt is too long:\s*(?P<n>[\d,]+)\s*tokens?\s*>\s*(?P<limit>[\d,]+)", re.I),
    # OpenAI: "maximum context length is 128000 tokens. However, your messages resulted in 135189 tokens"
    re.compile(
        r"maximum context length is (?P<limit>[\d,]+) tokens.*?resulted in (?P<n>[\d,]+) tokens", re.I | re.S
    ),
    # OpenAI, with the completion counted in: "you requested 131000 tokens (127000 in the messages, ..."
    re.compile(
        r"maximum context length is (?P<limit>[\d,]+) tokens.*?\((?P<n>[\d,]+) in the messages", re.I | re.S
    ),
    # Anthropic, prompt plus max_tokens: "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000"
    re.compile(r"exceed context limit:\s*(?P<n>[\d,]+)\s*\+\s*[\d,]+\s*>\s*(?P<limit>[\d,]+)", re.I),
    # OpenAI Responses / others: "input (135189 tokens) exceeds the context window of 128000"
    re.compile(r"\((?P<n>[\d,]+) tokens?\) exceeds the context (?:window|length) of (?P<limit>[\d,]+)", re.I),
    # Gemini: "input token count (1048577) exceeds the maximum number of tokens allowed (1048576)"
    re.compile(
        r"input token count \((?P<n>[\d,]+)\) exceeds the maximum number of tokens allowed \((?P<limit>[\d,]+)\)",
        re.I,
    ),
)


_OVERFLOW_WORDS = re.compile(
    r"prompt is too long|context[ _](?:length|window)|context limit|maximum context|too many (?:input )?tokens",
    re.I,
)


def is_overflow(message: str) -> bool:
    """True when a provider error says the request was too long, with or without its size."""
    return parse_overflow(message) is not None or _OVERFLOW_WORDS.search(message) is not None


def parse_overflow(message: str) -> tuple[int, int] | None:
    """(prompt tokens, limit) when a provider error states them, else None."""
    for pat in _OVERFLOW_PATTERNS:
        m = pat.search(message)
        if m:
            try:
                return int(m["n"].replace(",", "")), int(m["limit"].replace(",", ""))
            except ValueError:  # only commas, or absurdly many digits
                continue
    return None


def b64_size(data: str) -> int:
    """Decoded size of base64 text without decoding it (images can be megabytes)."""
    return len(data) * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0)


def score_lines(objs: Sequence[Any], line_score: Callable[[Any], int]) -> int:
    """A sniffer's verdict from per-line scores: the best one, or 0 if any line is foreign (< 0)."""
    best = 0
    for d in objs:
        s = line_score(d)
        if s < 0:
            return 0
        best = max(best, s)
    return best


@dataclass(frozen=True)
class CarryOn:
    """How to resume a compacted session: run ``command`` in ``cwd`` once the file is at
    ``install_to`` (None: the harness reads it wherever it is)."""

    harness: str
    session_id: str | None
    command: tuple[str, ...]
    cwd: str | None = None
    install_to: Path | None = None
    installed: bool = False

    @property
    def ready(self) -> bool:
        """The command works as it stands: installed, or nothing to install."""
        return self.installed or self.install_to is None
