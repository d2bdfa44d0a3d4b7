"""The read step of ``compact``: where the outputs go, and the input parsed once, estimated as
it streams (the input is never written to)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxfold.compaction.carry_on import in_a_store
from ctxfold.compaction.options import DEFAULT_OUT_DIR, CompactOptions
from ctxfold.compaction.outputs import Outputs, outputs_for
from ctxfold.compaction.statefile import State, load_state
from ctxfold.config import Config
from ctxfold.formats.loader import materialize, open_transcript
from ctxfold.tokens.estimate import FileEstimate, estimate_entries
from ctxfold.tokens.parallel import workers_for
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


def place_outputs(path: str, opts: CompactOptions) -> tuple[Outputs, str | None]:
    """Where the outputs go, and the harness whose session folder holds the input (outputs
    written beside it would show up as sessions of their own: they go to ./ctxfold-out)."""
    out_dir, harness = opts.out_dir, None
    if out_dir is None and opts.output is None and path != "-":
        harness = in_a_store(Path(path).parent, opts.home)
        if harness is not None:
            out_dir = DEFAULT_OUT_DIR
    return outputs_for(path, out_dir=out_dir, output=opts.output), harness


def read_input(path: str, opts: CompactOptions, config: Config | None, place: Place) -> Read:
    """Parse the file once: it is kept in memory for writing and estimated as it streams."""
    opened = open_transcript(path, fmt=opts.fmt, skip_invalid=opts.skip_invalid)
    kept: list[Entry] = []
    est = estimate_entries(
        _keeping(opened.entries, kept),
        opened.format,
        opened.path,
        model=opts.model,
        window=opts.window,
        config=config,
        workers=workers_for(Path(path).stat().st_size if path != "-" else 0),
    )
    outs = place.outs
    state = load_state(outs.state) if path != "-" else None
    est.notes = list(opened.warnings)  # filled as the entries were read
    transcript = materialize(kept, opened.format, opened.path)
    return Read(transcript, est, outs, state, [str(e) for e in opened.skipped], place.in_store)


def _keeping(entries: Iterator[Entry], kept: list[Entry]) -> Iterator[Entry]:
    for e in entries:
        kept.append(e)
        yield e
