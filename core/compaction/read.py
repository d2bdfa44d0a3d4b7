"""The read step of ``compact``: where the outputs go, and the input parsed once, estimated as
it streams (the input is never written to)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path

from ctxfold.compaction.carry_on import in_a_store
from ctxfold.compaction.options import DEFAULT_OUT_DIR, CompactOptions
from ctxfold.compaction.outputs import Outputs, outputs_for
from ctxfold.compaction.skeleton import MASK_COUNT_CHARS, STREAM_CHARS, Outline, Outlining
from ctxfold.compaction.statefile import State, load_state
from ctxfold.config import Config
from ctxfold.formats.loader import materialize, open_transcript
from ctxfold.providers.streamed import Unknowable
from ctxfold.strategies.mask import Premasked
from ctxfold.strategies.masked import MaskedCount
from ctxfold.strategies.streamed import KeepFrom, StreamedContext, TailFits
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.estimate import FileEstimate, estimate_entries
from ctxfold.tokens.parallel import workers_for
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Entry, Transcript


@dataclass(frozen=True)
class Place:
    outs: Outputs
    in_store: str | None  # the harness whose session folder holds the input


@dataclass(frozen=True)
class Read:
    """The input parsed once: the transcript, its estimate, where outputs go, and the state
    file found there (None for stdin, which leaves nothing to check a state file against)."""

    transcript: Transcript
    est: FileEstimate
    outs: Outputs
    state: State | None
    skipped: list[str]
    in_store: str | None = None  # the harness whose session folder holds the input
    outline: Outline | None = None  # read as an outline: ``transcript`` is the writers' outline only

    @property
    def entries(self) -> int:
        return self.outline.entries if self.outline is not None else len(self.transcript.entries)


def place_outputs(path: str, opts: CompactOptions) -> tuple[Outputs, str | None]:
    """Where the outputs go, and the harness whose session folder holds the input (outputs
    written beside it would show up as sessions of their own: they go to ./ctxfold-out)."""
    out_dir, harness = opts.out_dir, None
    if out_dir is None and opts.output is None and path != "-":
        harness = in_a_store(Path(path).parent, opts.home)
        if harness is not None:
            out_dir = DEFAULT_OUT_DIR
    return outputs_for(path, out_dir=out_dir, output=opts.output), harness


def read_input(
    path: str,
    opts: CompactOptions,
    config: Config | None,
    place: Place,
    *,
    outline: bool = False,
    stream: bool = False,
    mask: int | None = None,
) -> Read:
    """Parse the file once, estimating as it streams. The entries are kept in memory, or with
    ``outline`` only what the later steps read (:mod:`ctxfold.compaction.skeleton`): the
    current context (and, after a state file, the context from its watermark) and the writers'
    outline. With ``stream`` too, a long context streams by (which needs the summary or
    sliding-window strategy, the offline digest and no state file); with
    ``mask`` instead, all but that many of the newest tool results are masked as they are read
    (a mask strategy first, no state file)."""
    outs = place.outs
    state = load_state(outs.state) if path != "-" else None
    opened = open_transcript(path, fmt=opts.fmt, skip_invalid=opts.skip_invalid)
    kept: list[Entry] = []
    size = Path(path).stat().st_size if path != "-" else 0
    helper = stream and _helped(size)
    # a mask pass alone counts a masked context too long to hold (a chain folds it further);
    # a sliding window's streamed context keeps what its passes read
    counts = mask is not None and opts.strategy == "mask-observations"
    sliding = opts.strategy == "sliding-window"
    bound = MASK_COUNT_CHARS if counts else STREAM_CHARS
    # a state file's pass goes on from its watermark (or the entry before it: resume.py)
    starts = (state.watermark - 1, state.watermark) if state is not None else ()
    outlining = (
        Outlining(
            stream or counts,
            stream_chars(bound),
            helper,
            starts,
            mask,
            sliding,
        )
        if outline or stream
        else None
    )
    est = estimate_entries(
        outlining.feed(opened.entries) if outlining is not None else _keeping(opened.entries, kept),
        opened.format,
        opened.path,
        model=opts.model,
        window=opts.window,
        config=config,
        size=size,
        on_counter=outlining.counted if outlining is not None else None,
        read=lambda: opened.bytes_read,
    )
    est.notes = list(opened.warnings)  # filled as the entries were read
    skipped = [str(e) for e in opened.skipped]
    if outlining is not None:
        kept_outline = outlining.result(opened.format, opened.path)
        if isinstance(kept_outline.context.messages, StreamedContext):
            kept_outline.context.messages.counted(est.replay.context)
        if not _masked_as_counted(kept_outline, est):
            raise Unknowable("the masks were counted otherwise than the fold counts")
        return Read(kept_outline.transcript, est, outs, state, skipped, place.in_store, kept_outline)
    transcript = materialize(kept, opened.format, opened.path)
    return Read(transcript, est, outs, state, skipped, place.in_store)


def _masked_as_counted(outline: Outline, est: FileEstimate) -> bool:
    """Whether a context masked as it was read used the tokenizer and framing the fold
    counts with (the model the whole log settles on can differ from the first it named)."""
    premasked = outline.context.messages
    if not isinstance(premasked, (Premasked, MaskedCount)):
        return True
    tokenizer = get_tokenizer(est.model.tokenizer)
    return (
        premasked.counter.tokenizer is tokenizer
        and premasked.counter.provider == Counter(tokenizer, est.model.provider).provider
    )


def read_tail(path: str, opts: CompactOptions, read: Read, fits: TailFits) -> Read:
    """``read`` with its context read again for a sliding window whose tail fits: the messages
    from the cut on kept whole, those before it read for the summary as they stream by (the
    first ``read.entries`` entries: a live file may have grown since)."""
    outline = read.outline
    assert outline is not None, "only a read as an outline streams a context"
    opened = open_transcript(path, fmt=opts.fmt, skip_invalid=opts.skip_invalid)
    keep = KeepFrom(outline.context.start, fits.cut, fits.passed)
    outlining = Outlining(True, stream_chars(), _helped(Path(path).stat().st_size), cuts=True, keep=keep)
    for e in islice(opened.entries, read.entries):
        outlining.add(e)
    outlining.building.finish()
    ctx = outlining.building.ctx
    if isinstance(ctx.messages, StreamedContext):
        ctx.messages.counted(read.est.replay.context)
    return replace(read, outline=replace(outline, contexts={**outline.contexts, 0: ctx}))


def _helped(size: int) -> bool:
    """Whether a large log's streamed readings are made beside the reading, by a helper process."""
    return workers_for(size) > 0 and os.name == "posix"


def reread(path: str, opts: CompactOptions, entries: int) -> Transcript:
    """The first ``entries`` entries, kept whole: when a streamed context turns out to need a
    message it did not keep (a live file may have grown since: the rest is left out)."""
    opened = open_transcript(path, fmt=opts.fmt, skip_invalid=opts.skip_invalid)
    return materialize(list(islice(opened.entries, entries)), opened.format, opened.path)


def stream_chars(default: int = STREAM_CHARS) -> int:
    """How many characters of context ``compact`` keeps before it streams the rest;
    ``CTXFOLD_STREAM_CHARS`` sets it (0 streams every context: the tests' check of the path)."""
    raw = os.environ.get("CTXFOLD_STREAM_CHARS", "")
    return int(raw) if raw.isdigit() else default


def _keeping(entries: Iterator[Entry], kept: list[Entry]) -> Iterator[Entry]:
    for e in entries:
        kept.append(e)
        yield e
