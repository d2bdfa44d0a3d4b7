"""Atomic file writes: a temp file in the same folder, fsync, then rename over the target.

A crash or an error mid-write leaves the old file (or nothing), never a partial one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ctxfold.core.errors import OutputError


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """Yield a file to write; it replaces ``path`` only if the block finishes without error."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | Path, data: bytes) -> None:
    try:
        with atomic_writer(path) as f:
            f.write(data)
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}") from None
