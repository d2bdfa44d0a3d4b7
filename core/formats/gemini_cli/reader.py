"""Gemini CLI sessions (``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.json[l]``).

Two shapes, one reader. Older versions save a chat as one JSON document
``{sessionId, projectHash, startTime, lastUpdated, [kind], [summary], messages}``, usually
pretty-printed (the loader reads such a file as one line). Current versions append events to a
``.jsonl`` file: a header (the document without ``messages``), message records, ``{"$set": {…}}``
metadata updates (``$set.messages`` replaces the whole list) and ``{"$rewindTo": id}``. A record
appended again under an id already in the list replaces it in place: the last copy wins.

The reader replays the file the way Gemini CLI loads it and gives the messages in order, each
once it is final (the last record is held back: Gemini CLI appends a reply again when its tool
calls, results or token counts arrive). When the list changes other than by growing at its end
(a resume, whose rebuilt list Gemini CLI writes back with its own ids; ``/compress``; a rewind),
a compaction marker (``source`` ``gemini-cli``) carries the new list as its replacement, so no
request is counted twice; its ``trigger`` says which (``compress``, with Gemini CLI's summary,
``resume``, ``rewind`` or ``rewrite``). See ``records.py`` for what each record sends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, get_str, obj, rest
from ctxfold.formats.gemini_cli.records import (
    ACK,
    SENT_TYPES,
    SHOWN_TYPES,
    SNAPSHOT,
    check_record,
    messages_of,
)
from ctxfold.formats.genai.parts import Calls
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Entry, Message

NAME = "gemini-cli"
DESCRIPTION = "Gemini CLI session (saved chat document, or the JSONL event log of current versions)"

DOCUMENT = "document"
EVENTS = "jsonl"
_HEADER_USED = ("sessionId", "messages")


def _header(d: Any) -> bool:
    return (
        isinstance(d, dict) and isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str)
    )


def _line_score(d: Any) -> int:
    if not isinstance(d, dict):
        return -1
    if _header(d):
        return 100
    if isinstance(d.get("$set"), dict) or isinstance(d.get("$rewindTo"), str):
        return 90
    kind = d.get("type")
    if isinstance(d.get("id"), str) and kind in (*SENT_TYPES, *SHOWN_TYPES) and "content" in d:
        return 80 if kind == "gemini" else 60
    return -1


def sniff(objs: Sequence[Any]) -> int:
    """Sure on the header (sessionId and projectHash); the event lines on their own say so too."""
    best = 0
    for d in objs:
        s = _line_score(d)
        if s < 0:
            return 0
        best = max(best, s)
    return best


class Reader:
    """Keeps the session's message list as Gemini CLI does, and the part of it already given
    out (as the per-record messages it produced, to tell a grown list from a rewritten one)."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._given: list[list[Message]] = []  # what each record given out produced, in order
        self._given_ids: list[str] = []
        self._dirty = False  # the list changed other than at its end since the last sync
        self._why = "rewrite"
        self._calls = Calls()
        self._session: str | None = None
        self._later: dict[str, Any] = {}  # metadata set after the first header
        self._line = Line(0, None, 0)

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        self._line = line
        out: list[Entry] = []
        if isinstance(d.get("$rewindTo"), str):
            self._flush(out)
            self._rewind(d["$rewindTo"])
        elif "$set" in d:
            update = d["$set"]
            if not isinstance(update, dict):
                raise LineError("field '$set' should be an object", line.no)
            if "messages" in update:
                self._flush(out)
                self._replace(update["messages"], "$set.messages", line)
            self._meta(update, out, EVENTS)
        elif isinstance(d.get("id"), str):
            self._add(check_record(d, "message", line))
            self._sync(out, final=False)
        elif _header(d):
            if "messages" in d:
                self._flush(out)
                self._replace(d["messages"], "messages", line)
            self._meta(d, out, EVENTS if "messages" not in d or self._session else DOCUMENT)
        else:
            raise LineError("not a Gemini CLI session line (no sessionId, id, $set or $rewindTo)", line.no)
        return out

    def finish(self) -> Iterable[Entry]:
        out: list[Entry] = []
        self._sync(out, final=True)
        if self._later:
            out.append(ContextUpdate(extra={"update": self._later}))
        return out

    # --------------------------------------------------------------------------- the list

    def _meta(self, d: Mapping[str, Any], out: list[Entry], shape: str) -> None:
        """The first header is given out at once; later metadata (a title, directories) is
        gathered and given at the end, a changed session id at once."""
        sid = get_str(d, "sessionId")
        fields = rest(d, _HEADER_USED)
        if self._session is None and sid is not None:
            self._session = sid
            out.append(ContextUpdate(session_id=sid, extra={**fields, "shape": shape}))
            return
        if sid is not None and sid != self._session:
            self._session = sid
            out.append(ContextUpdate(session_id=sid))
        self._later.update(fields)

    def _add(self, record: dict[str, Any]) -> None:
        rid = record["id"]
        if rid in self._records and rid != next(reversed(self._records)):
            self._dirty, self._why = True, "rewrite"  # an earlier record changed
        self._records[rid] = record

    def _replace(self, messages: Any, where: str, line: Line) -> None:
        if not isinstance(messages, list):
            raise LineError(f"field {where!r} should be an array", line.no)
        self._records = {}
        for i, m in enumerate(messages):
            r = check_record(m, f"{where}[{i}]", line)
            self._records[r["id"]] = r
        self._dirty, self._why = True, "resume"

    def _rewind(self, rid: str) -> None:
        ids = list(self._records)
        keep = ids[: ids.index(rid)] if rid in ids else []
        self._records = {k: self._records[k] for k in keep}
        self._dirty, self._why = True, "rewind"

    def _flush(self, out: list[Entry]) -> None:
        """Before the list is replaced or rewound, its last record was final (and sent): give it
        out, unless the list is itself a replacement no message followed (never sent)."""
        if not self._dirty:
            self._sync(out, final=True)

    def _sync(self, out: list[Entry], *, final: bool) -> None:
        """Give out the records that are final now: all but the last, or all of them at the end."""
        records = list(self._records.values())
        stable = records if final else records[:-1]
        if not self._dirty:
            for i in range(len(self._given), len(stable)):
                self._give(records, i, out)
            return
        made = [messages_of(records, i, self._line, self._calls) for i in range(len(stable))]
        ids = [r["id"] for r in stable]
        n = len(self._given)
        if ids[:n] == self._given_ids and _same(made[:n], self._given):
            for i in range(n, len(stable)):
                self._given.append(made[i])
                self._given_ids.append(ids[i])
                out.extend(made[i])
        else:
            out.append(self._marker(stable, made))
            self._given, self._given_ids = made, ids
        self._dirty = False

    def _give(self, records: list[dict[str, Any]], i: int, out: list[Entry]) -> None:
        made = messages_of(records, i, self._line, self._calls)
        self._given.append(made)
        self._given_ids.append(records[i]["id"])
        out.extend(made)

    def _marker(self, stable: list[dict[str, Any]], made: list[list[Message]]) -> CompactionMarker:
        """The list was rewritten: say how, and carry what the model sees from now on."""
        flat = tuple(m for ms in made for m in ms)
        summary = _snapshot(flat)
        why = self._why
        if summary is not None:
            why = "compress"
        elif why == "resume" and not _kept_in_order(self._given_ids, [r["id"] for r in stable]):
            why = "rewrite"
        return CompactionMarker(NAME, summary=summary, trigger=why, replacement=flat)


def _same(a: list[list[Message]], b: list[list[Message]]) -> bool:
    """The same messages sent, whatever the record's spelling (a string or a part list)."""
    if len(a) != len(b):
        return False
    for xs, ys in zip(a, b, strict=True):
        if [(x.role, _plain(x)) for x in xs] != [(y.role, _plain(y)) for y in ys]:
            return False
    return True


def _plain(m: Message) -> tuple[Any, ...]:
    return tuple(
        (p.kind, getattr(p, "text", None), getattr(p, "id", None), getattr(p, "call_id", None))
        for p in m.parts
    )


def _kept_in_order(old: list[str], new: list[str]) -> bool:
    """Every id given out before is still there, in the same order (records may be added)."""
    it = iter(new)
    return all(any(x == y for y in it) for x in old)


def _snapshot(messages: Sequence[Message]) -> str | None:
    """Gemini CLI's own summary: a user turn holding a state snapshot, then the model's ack."""
    for i, m in enumerate(messages[:-1]):
        nxt = messages[i + 1]
        if m.role == "user" and SNAPSHOT in m.text and nxt.role == "assistant" and nxt.text.strip() == ACK:
            return m.text
    return None
