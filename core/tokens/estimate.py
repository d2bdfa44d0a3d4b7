"""``estimate``: the tokens of the request a model would see now, next to the real counts.

The model (hence tokenizer, framing and window) is only known once the log names it, so the
first entries are held back until a model appears (at most ``PEEK`` entries), then the
whole stream is replayed through one :class:`SessionCounter`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ctxfold.config import Config
from ctxfold.formats.jsonl import _lines, open_binary
from ctxfold.formats.loader import Opened, continue_stream, open_lines, open_transcript
from ctxfold.settings import setting
from ctxfold.tokens import split
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.filecheck import complete_end
from ctxfold.tokens.harness_prompts import HarnessPrompt, choose
from ctxfold.tokens.models import ResolvedModel, resolve
from ctxfold.tokens.session import Replay, Request, SessionCounter
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import ContextUpdate, Entry, Message

PEEK = 500
# A harness that runs one provider's models: a log of it that names no model yet (its first
# request not answered, or ctxfold's compacted output holding only a summary) is read as one of
# them, so its framing, window and profile are the provider's, not generic guesses.
HARNESS_MODEL = {"claude-code": "claude"}


@dataclass(frozen=True)
class LargeMessage:
    position: int  # index in the current context
    role: str
    tokens: int
    preview: str


@dataclass
class FileEstimate:
    path: str
    format: str
    model: ResolvedModel
    replay: Replay
    largest: list[LargeMessage]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what reading it left out (a half-written last line)
    # where the model came from: "log", "--model" (the log names none, or the same), "--model
    # over the log's", "settings" (CTXFOLD_MODEL, [defaults]), "harness" (HARNESS_MODEL) or None
    model_source: str | None = None
    bytes_read: int = 0
    lines_read: int = 0
    # what the harness that wrote the log sends that the log does not record (measured for its
    # version: tokens/harness_prompts.py); not in the counts above, the engine adds it
    harness_prompt: HarnessPrompt | None = None
    # how many of ``notes`` (the first) are the count cache's, about this run, not the file
    cache_notes: int = 0

    @property
    def warnings(self) -> list[str]:
        """What the user should know: how the model was resolved, what reading left out."""
        return [*self.model.warnings, *self.notes]

    @property
    def requests(self) -> list[Request]:
        return self.replay.requests

    @property
    def context_tokens(self) -> int:
        return self.replay.context_total

    @property
    def last_real(self) -> Request | None:
        return next((r for r in reversed(self.replay.requests) if r.real is not None), None)

    @property
    def used_fraction(self) -> float:
        return self.context_tokens / self.model.window if self.model.window else 0.0


def estimate_file(
    path: str | Path | BinaryIO,
    *,
    model: str | None = None,
    tokenizer: str | None = None,
    window: int | None = None,
    fmt: str | None = None,
    skip_invalid: bool = False,
    config: Config | None = None,
    on_progress: Callable[[Opened], None] | None = None,
) -> FileEstimate:
    """A file's counts, read from its first line (``incremental.count_file`` reads on from
    where an earlier run ended)."""
    size = 0  # a stream (bytes an engine read from a bucket) has none to plan helpers by
    if isinstance(path, (str, Path)) and str(path) != "-" and os.path.isfile(path):
        size = os.path.getsize(path)
    spec = Spec(model, tokenizer, window, config or Config())
    if size >= split.MIN_BYTES:
        large = _estimate_large(str(path), size, spec, fmt, skip_invalid, on_progress)
        if large is not None:
            return large
    opened = open_transcript(path, fmt=fmt, skip_invalid=skip_invalid)
    entries = with_progress(opened, on_progress) if on_progress else opened.entries
    result = estimate_entries(
        entries,
        opened.format,
        opened.path,
        model=model,
        tokenizer=tokenizer,
        window=window,
        config=spec.config,
        size=size,
        read=lambda: opened.bytes_read,
    )
    return _read_from(result, opened)


def _read_from(result: FileEstimate, opened: Opened) -> FileEstimate:
    result.skipped = [str(e) for e in opened.skipped]
    result.notes = list(opened.warnings)
    result.bytes_read, result.lines_read = opened.bytes_read, opened.lines_read
    return result


def _estimate_large(
    path: str,
    size: int,
    spec: Spec,
    fmt: str | None,
    skip_invalid: bool,
    on_progress: Callable[[Opened], None] | None,
) -> FileEstimate | None:
    """A large file: its complete lines read with ``split.feed`` (for a format whose reader can
    start mid-file, the part after a seam in a second process), then the rest. None: read it
    as a stream instead (one JSON document; a log whose model its first entries do not name, as
    the count cache's cold read refuses it; a forced format no line is in: that read says so)."""
    seen = 0

    def wrap(it: Iterator[Any]) -> Iterator[Any]:
        nonlocal seen
        for e in with_progress(opened, on_progress, it) if on_progress else it:
            seen += 1
            yield e

    with open_binary(path) as f:
        cut = complete_end(f, size)
        f.seek(0)
        raws = split.RawLines(f, cut)
        opened = open_lines(path, _lines(f, raws), fmt=fmt, skip_invalid=skip_invalid, finish=False)
        if f.tell() != raws.pos:
            return None  # one JSON document, read whole by detection
        head, start = begin(wrap(opened.entries), opened.format, spec)
        if not start.decided:
            return None  # no model named in the first entries: the reader's last ones may
        sc = start.counter(spec)
        split.feed(sc, head, opened, raws, cut, skip_invalid=skip_invalid, wrap=wrap)
        f.seek(raws.pos)
        sc.feed(wrap(continue_stream(opened, _lines(f, no=raws.lines), skip_invalid=skip_invalid)), size=None)
    if fmt is not None and not seen:
        return None
    return _read_from(end(sc.state, start, opened.format, path, spec), opened)


def estimate_entries(
    entries: Iterable[Entry],
    source_format: str,
    path: str,
    *,
    model: str | None = None,
    tokenizer: str | None = None,
    window: int | None = None,
    config: Config | None = None,
    size: int = 0,
    on_counter: Callable[[Counter], None] | None = None,
    read: Callable[[], int] | None = None,
) -> FileEstimate:
    """Estimate an entry stream (read once, lazily) that came from ``path`` in ``source_format``.

    ``model`` overrides the model the log names; ``CTXFOLD_MODEL`` or ``[defaults] model`` is
    only assumed when it names none. ``window`` and ``tokenizer`` come from the argument, else
    ``CTXFOLD_WINDOW``/``CTXFOLD_TOKENIZER``, else ``[defaults]``, and override the model's own.
    ``size`` (the bytes of log behind ``entries``, 0 if unknown) picks the counting engine and
    helpers that suit it, ``read`` how many of them have been read so far. ``on_counter`` is
    told the counter the log is counted with before any entry after the first few is read
    (``compact`` masks with it as it reads).
    """
    spec = Spec(model, tokenizer, window, config or Config())
    head, start = begin(iter(entries), source_format, spec)
    session = start.counter(spec)
    if on_counter is not None:
        on_counter(session.counter)
    replay = session.feed(head, size=size, read=read)
    return end(replay, start, source_format, path, spec)


@dataclass(frozen=True)
class Spec:
    """The settings a count depends on, as the caller gave them."""

    model: str | None
    tokenizer: str | None
    window: int | None
    config: Config

    def resolve(
        self, name: str | None, recorded_window: int | None, observed: int | None = None
    ) -> ResolvedModel:
        win = setting("window", self.window, self.config)
        return resolve(
            name,
            window=win.value,
            window_source="--window" if win.source == "flag" else win.source,
            recorded_window=recorded_window,
            tokenizer=setting("tokenizer", self.tokenizer, self.config).value,
            config_models=self.config.models,
            observed=observed,
        )


@dataclass(frozen=True)
class Start:
    """What the first entries decided: the model the log is counted as (its tokenizer and
    framing), and where that came from. Plain data: the count cache keeps it."""

    name: str | None
    model_source: str | None
    recorded: int | None
    decided: bool  # the log named its model, or PEEK entries went by: more lines change nothing

    def counter(self, spec: Spec) -> SessionCounter:
        resolved = spec.resolve(
            self.name, self.recorded
        )  # the tokenizer and framing the whole log is counted with
        return SessionCounter(Counter(get_tokenizer(resolved.tokenizer), resolved.provider))


def begin(stream: Iterator[Entry], source_format: str, spec: Spec) -> tuple[Iterator[Entry], Start]:
    """Read ahead until the log names its model; the entries (those read ahead first) and what
    they decided."""
    head, found_model, recorded = _peek_model(stream)
    configured = setting("model", None, spec.config).value
    name = spec.model or found_model or configured or HARNESS_MODEL.get(source_format)
    model_source: str | None
    if spec.model:
        model_source = "--model" if not found_model or spec.model == found_model else "--model over the log's"
    else:
        model_source = "log" if found_model else "settings" if configured else "harness" if name else None
    start = Start(name, model_source, recorded, found_model is not None or len(head) >= PEEK)
    return itertools.chain(head, stream), start


def end(replay: Replay, start: Start, source_format: str, path: str, spec: Spec) -> FileEstimate:
    """The estimate once every entry is replayed: the model the session uses now and its window."""
    name = start.name
    now = (replay.requests[-1].model if replay.requests else None) or replay.model
    if start.model_source == "log" and now and now != name:
        # the next request goes to the model the session uses now; the first one it named only
        # chose the tokenizer and framing, which a switch within the same family keeps
        tok = setting("tokenizer", spec.tokenizer, spec.config).value
        first = spec.resolve(name, start.recorded)
        later = resolve(now, tokenizer=tok, config_models=spec.config.models)
        if (later.tokenizer, later.provider) == (first.tokenizer, first.provider):
            name = now
    # the window the log recorded last, unless a flag, the environment or the config file set one
    # the largest prompt the provider answered proves the window is at least that large
    answered = [q.real for q in replay.requests if q.real is not None and q.real_source == "usage"]
    resolved = spec.resolve(name, replay.context_window or start.recorded, max(answered, default=None))
    return FileEstimate(
        path=path,
        format=source_format,
        model=resolved,
        replay=replay,
        largest=_largest(replay, 10),
        model_source=start.model_source,
        harness_prompt=choose(source_format, replay.facts, agent=replay.agent, tokenizer=resolved.tokenizer),
    )


def _peek_model(entries: Iterator[Entry]) -> tuple[list[Entry], str | None, int | None]:
    """Read ahead until the log names its model; return what was read and what was found."""
    head: list[Entry] = []
    window: int | None = None
    for e in entries:
        head.append(e)
        if isinstance(e, ContextUpdate):
            window = e.context_window or window
            if e.model:
                return head, e.model, window
        elif isinstance(e, Message) and e.branch is None:
            name = e.model or (e.usage.model if e.usage else None)
            if name:
                return head, name, window or (e.usage.context_window if e.usage else None)
        if len(head) >= PEEK:
            break
    return head, None, window


def _largest(replay: Replay, n: int) -> list[LargeMessage]:
    return [LargeMessage(*row) for row in replay.context.largest(n)]


def with_progress(
    opened: Opened, callback: Callable[[Opened], None], entries: Iterator[Entry] | None = None
) -> Iterator[Entry]:
    for i, e in enumerate(entries if entries is not None else opened.entries):
        if i % 256 == 0:
            callback(opened)
        yield e
    callback(opened)


def estimate_to_dict(r: FileEstimate) -> dict[str, Any]:
    """The ``--json`` form of one file's estimate (schema: docs/commands.md, "estimate")."""
    last = r.last_real
    return {
        "path": r.path,
        "format": r.format,
        "session_id": r.replay.session_id,
        "model": r.model.name,
        "provider": r.model.provider,
        "tokenizer": r.model.tokenizer,
        "window": r.model.window,
        "window_source": r.model.window_source,
        "requests": len(r.requests),
        "requests_with_real": sum(1 for q in r.requests if q.real is not None),
        "side_requests": r.replay.side_requests,
        "recorded_compactions": len(r.replay.compactions),
        "context_tokens": r.context_tokens,
        "used_fraction": round(r.used_fraction, 4),
        "breakdown": dict(r.replay.by_category),
        "request_framing": r.replay.per_request,
        "harness_prompt": r.harness_prompt.to_dict() if r.harness_prompt else None,
        "largest": [
            {"position": m.position, "role": m.role, "tokens": m.tokens, "preview": m.preview}
            for m in r.largest
        ],
        "last_real": None
        if last is None
        else {
            "request": last.index,
            "estimate": last.estimate,
            "real": last.real,
            "source": last.real_source,
            "ratio": round(last.real / last.estimate, 4) if last.real and last.estimate else None,
        },
        "warnings": r.warnings,
        "skipped_lines": r.skipped,
        "lines": r.lines_read,
        "bytes": r.bytes_read,
    }
