"""What a ``compact`` run was asked to do: the options of the command, as one value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxfold.engine.calibration import DEFAULT_CALIBRATOR

DEFAULT_OUT_DIR = "ctxfold-out"  # for an input inside a harness's session folder


@dataclass(frozen=True)
class CompactOptions:
    strategy: str = "summary"
    instructions: str | None = None
    model: str | None = None
    window: int | None = None
    buffer: str | None = None
    max_tokens: int | None = None
    fmt: str | None = None
    skip_invalid: bool = False
    out_dir: str | None = None
    output: str | None = None
    dry_run: bool = False
    force: bool = False
    keep_observations: int = 10
    calibration: str = DEFAULT_CALIBRATOR
    to: str | None = None  # write for another harness's format (default: the input's own)
    install: bool = False  # place the compacted session where its harness looks for it
    home: Path | None = None  # the home folder harnesses keep their sessions under (tests)
    cache: bool = False  # decide first from the count cache (compaction/decide.py)
