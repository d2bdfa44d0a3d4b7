"""What the API-shaped writers (openai-chat, openai-responses, anthropic, genai, litellm) share:
which entries to write, split into conversations, and the fixed parts in force for each.

An API transcript is a model's context, not a history: after a compaction only what the model
sees next is written (the marker's replacement, or the entries after it: summary, continuation
and kept tail). Those formats have no line that says "the conversation restarted" except a
request that does not extend the previous one, so every conversation but the last is written as
a request log (a line per model call, see :func:`request_log`) and the last one as its own
lines after a request line with no messages (see :func:`segments`). ``read_items`` gives each
entry of a file with its own line, for the writers' ``check_file``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from ctxfold.errors import LineError
from ctxfold.formats import registry
from ctxfold.formats.jsonl import iter_lines
from ctxfold.transcript.context import live
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    Message,
    Part,
    TextPart,
    Transcript,
)

EMPTY = ContextUpdate()
# Keys ctxfold itself adds to Message.extra: never written into another API's objects.
OWN_KEYS = ("ctxfold",)


def dumps(obj: Any) -> bytes:
    """One compact JSON line (orjson never puts spaces after separators)."""
    return orjson.dumps(obj)


def fold(state: ContextUpdate, update: ContextUpdate) -> ContextUpdate:
    """The fixed parts after ``update``: its non-None fields win."""
    return ContextUpdate(
        system=update.system if update.system is not None else state.system,
        tools=update.tools if update.tools is not None else state.tools,
        model=update.model or state.model,
        context_window=update.context_window or state.context_window,
        session_id=update.session_id or state.session_id,
        extra={**state.extra, **update.extra},
    )


def current(t: Transcript) -> tuple[ContextUpdate, list[Entry]]:
    """The fixed parts in force before the written entries, and those entries: everything,
    or after the last compaction marker only what the model sees from there on. Messages the
    harness no longer sent (``Message.dropped``) are left out: another harness would send them."""
    entries = [e for e in live(t.entries) if not (isinstance(e, Message) and e.dropped)]
    cut = max((i for i, e in enumerate(entries) if isinstance(e, CompactionMarker)), default=-1)
    state = EMPTY
    for e in entries[: max(cut, 0)]:
        if isinstance(e, ContextUpdate):
            state = fold(state, e)
    if cut < 0:
        return state, list(entries)
    marker = entries[cut]
    assert isinstance(marker, CompactionMarker)
    after = list(entries[cut + 1 :])
    if marker.replacement is not None:
        return state, [*marker.replacement, *after]
    first = next((e for e in after if isinstance(e, Message)), None)
    if marker.summary and not (first is not None and marker.summary in first.text):
        after.insert(0, Message("user", (TextPart(marker.summary),), extra={"ctxfold": "summary"}))
    return state, after


@dataclass
class Segment:
    """One conversation: the fixed parts at its start, then its messages, API errors and any
    later context changes, in order."""

    start: ContextUpdate
    entries: list[Entry] = field(default_factory=list)

    @property
    def end(self) -> ContextUpdate:
        """The fixed parts after its last entry (for a request line holding it whole)."""
        state = self.start
        for e in self.entries:
            if isinstance(e, ContextUpdate):
                state = fold(state, e)
        return state

    @property
    def messages(self) -> list[Message]:
        return [e for e in self.entries if isinstance(e, Message)]


def segments(state: ContextUpdate, entries: Iterable[Entry]) -> list[Segment]:
    """Split at ContextReset. Context updates before a conversation's first message (or just
    before the reset that starts it) become its start state; the others stay in place."""
    out = [Segment(state)]
    started = False  # whether the last segment has a message or API error yet
    for e in entries:
        seg = out[-1]
        if isinstance(e, ContextReset):
            if not started:
                continue
            trailing: list[ContextUpdate] = []
            while seg.entries and isinstance(last := seg.entries[-1], ContextUpdate):
                trailing.insert(0, last)
                seg.entries.pop()
            start = seg.end
            for u in trailing:
                start = fold(start, u)
            out.append(Segment(start))
            started = False
        elif isinstance(e, ContextUpdate) and not started:
            seg.start = fold(seg.start, e)
        elif isinstance(e, (Message, ApiError, ContextUpdate)):
            seg.entries.append(e)
            started = started or not isinstance(e, ContextUpdate)
    return out


@dataclass
class Call:
    """One line of a request log: the fixed parts, the messages sent, and the model's
    response to them (empty when the line records a request only)."""

    context: ContextUpdate
    history: list[Message]
    response: list[Message]


def request_log(seg: Segment, single: bool = True) -> Iterator[Call | ApiError]:
    """A conversation as a request log: a line per model response (an assistant message with
    usage; with ``single=False`` the run of assistant messages ending there). Each line's
    history repeats all before it, as request logs do; readers keep only what is new."""
    ctx = seg.start
    history: list[Message] = []
    run: list[Message] = []
    written = 0
    for e in seg.entries:
        if isinstance(e, ContextUpdate):
            ctx = fold(ctx, e)
        elif isinstance(e, ApiError):
            if len(history) + len(run) > written:
                yield Call(ctx, history + run, [])
                written = len(history) + len(run)
            yield e
        elif isinstance(e, Message) and e.role == "assistant":
            run.append(e)
            if e.usage is not None:
                response = run if not single else run[-1:]
                history += run[: len(run) - len(response)]
                yield Call(ctx, list(history), response)
                history += response
                written = len(history)
                run = []
        elif isinstance(e, Message):
            history += [*run, e]
            run = []
    history += run
    if len(history) > written:
        yield Call(ctx, history, [])


def merge_runs(entries: Sequence[Entry], merge: Any) -> list[Entry]:
    """Join consecutive messages for which ``merge(a, b)`` is true into one message holding
    both's parts (the first one's fields, the last one's usage)."""
    out: list[Entry] = []
    for e in entries:
        prev = out[-1] if out else None
        if isinstance(e, Message) and isinstance(prev, Message) and merge(prev, e):
            out[-1] = replace(prev, parts=prev.parts + e.parts, usage=e.usage or prev.usage)
        else:
            out.append(e)
    return out


def is_ctxfold(m: Message) -> bool:
    return bool(m.extra.get("ctxfold"))


def extra_of(m: Message, *skip: str) -> dict[str, Any]:
    """The message's own format fields to put back, without ctxfold's markers."""
    return {k: v for k, v in m.extra.items() if k not in OWN_KEYS and k not in skip}


def plain_text(parts: Sequence[Part]) -> str | None:
    """The text when ``parts`` is a single TextPart with no extra fields (written as a bare
    string, which every reader turns back into the same part)."""
    if len(parts) == 1 and isinstance(parts[0], TextPart) and not parts[0].extra:
        return parts[0].text
    return None


def error_body(e: ApiError) -> dict[str, Any]:
    """The error object a reader kept in ``extra["error"]``, or one made of the message."""
    err = e.extra.get("error")
    return dict(err) if isinstance(err, dict) else {"message": e.message}


def data_url(mime: str, data: str) -> str:
    return f"data:{mime};base64,{data}"


# ------------------------------------------------------------------------------ checking


def read_items(path: str | Path, fmt: str) -> list[tuple[int, Entry]]:
    """Every entry ``fmt``'s reader gives for the file, with the line it came from.

    Readers that hold a message back (for a ``{usage}`` line or stream chunks that may follow)
    release it while reading a later line, so the loader's current line would name that later
    line. When the reader has a held message (its ``_pending``/``_held``), the entry that
    releases it gets the line it was first held at.
    """
    reader = registry.get(fmt).Reader()
    out: list[tuple[int, Entry]] = []
    held: Message | None = None
    held_line = 0
    for item in iter_lines(str(path)):
        if isinstance(item, LineError):
            raise item.with_path(str(path))
        try:
            batch = list(reader.feed(item))
        except LineError as err:
            raise err.with_path(str(path)) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            raise LineError(
                f"unexpected structure for {fmt} ({type(err).__name__}: {err})", item.no, str(path)
            ) from None
        released = _attribute(batch, item.no, held, held_line, out)
        now = getattr(reader, "_pending", None) or getattr(reader, "_held", None)
        if not isinstance(now, Message):
            held = None
        elif held is None or released or not _same(now, held):
            held, held_line = now, item.no
        else:
            held = now  # still the same message (merged with a chunk): keep its first line
    _attribute(list(reader.finish()), held_line, held, held_line, out)
    return out


def _same(a: Entry, b: Message) -> bool:
    if not isinstance(a, Message) or a.role != b.role:
        return False
    return a.parts == b.parts or (a.id is not None and a.id == b.id)


def _attribute(
    batch: list[Entry], no: int, held: Message | None, held_line: int, out: list[tuple[int, Entry]]
) -> bool:
    """Append the batch with its lines; whether it released the held message."""
    released = False
    for e in batch:
        if held is not None and not released and _same(e, held):
            out.append((held_line, e))
            released = True
        else:
            out.append((no, e))
    return released


def split_items(items: Sequence[tuple[int, Entry]]) -> Iterator[list[tuple[int, Message]]]:
    """The messages of each conversation (split at ContextReset), with their lines."""
    seg: list[tuple[int, Message]] = []
    for no, e in items:
        if isinstance(e, ContextReset):
            if seg:
                yield seg
            seg = []
        elif isinstance(e, Message) and e.branch is None:
            seg.append((no, e))
    if seg:
        yield seg


def model_in_force(t: Transcript) -> str | None:
    """The model a transcript names last (a context change, a message or its usage); for a
    compacted one, the transcript it was made from, whose messages kept their usage."""
    original = t.extra.get("original")
    source = original if isinstance(original, Transcript) else t
    for e in reversed(source.entries):
        if isinstance(e, ContextUpdate) and e.model:
            return e.model
        if isinstance(e, Message) and e.branch is None:
            name = (e.usage.model if e.usage is not None else None) or e.model
            if name:
                return name
    return None


def with_model(
    t: Transcript, state: ContextUpdate, entries: Iterable[Entry], named: Callable[[Message], str | None]
) -> ContextUpdate:
    """``state`` (the fixed parts a writer starts with), naming the transcript's model when no
    written line would: API formats name it on a request or on a response's usage, and a
    compacted transcript's messages have no usage left (``named``: the model the lines written
    for a message name, if any). Without it a re-read would assume a generic model, window and
    tokenizer."""
    if state.model:
        return state
    for e in entries:
        if (isinstance(e, ContextUpdate) and e.model) or (isinstance(e, Message) and named(e)):
            return state
    model = model_in_force(t)
    return replace(state, model=model) if model else state
