"""Atomic file writes: a temp file in the same folder, fsync, then rename over the target.

A crash or an error mid-write leaves the old file (or nothing), never a partial one. The file
gets the mode a plain ``open()`` would give it (``0o666`` less the umask), or keeps the mode of
the file it replaces: ``mkstemp``'s private ``0o600`` never leaks into the result.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from ctxfold.errors import OutputError


def current_umask() -> int:
    """The process umask, read without changing it where the system says (Linux ≥ 4.7);
    elsewhere set and restored at once (``os.umask`` is the only way to read it)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", errors="replace") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def mode_for(path: Path) -> int:
    """The permission bits ``path`` should get: those of the file there now (not its set-id or
    sticky bits), else the mode a plain ``open(path, "w")`` would create it with."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except OSError:
        return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "wb", *, sync: bool = True) -> Iterator[IO]:
    """Yield a file to write; it replaces ``path`` only if the block finishes without error.
    ``sync=False`` leaves out the fsync, for a cache whose torn file after a crash is set aside
    when read."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    with _renamed_over(path, fd, tmp, mode) as f:
        _chmod(f.fileno(), tmp, mode_for(path))
        yield f
        if sync:
            f.flush()
            os.fsync(f.fileno())


@contextlib.contextmanager
def _renamed_over(path: Path, fd: int, tmp: str, mode: str) -> Iterator[IO]:
    """The temp file ``tmp`` (open as ``fd``) to write; renamed over ``path`` if the block ends
    without error, removed otherwise."""
    try:
        with os.fdopen(fd, mode) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file in ``path``'s folder (made if need be): a rename or link from it is atomic."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return new_temp(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}") from None


_TEMP_FLAGS = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)  # fmt: skip


def new_temp(folder: str | Path, *, prefix: str, suffix: str) -> tuple[int, str]:
    """A file made here and now in ``folder``, readable by its owner only, as
    ``tempfile.mkstemp`` makes one; without importing ``tempfile`` (with ``shutil`` and
    ``random``, 4 ms of a statusline run, which writes its count cache entry every time)."""
    while True:
        name = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(name, _TEMP_FLAGS, 0o600), name
        except FileExistsError:  # 48 random bits taken: another name
            continue


def write_unsynced(path: Path, chunks: Iterable[bytes], *, prefix: str, suffix: str) -> None:
    """Write ``chunks`` to ``path`` through a temp file renamed over it, without fsync: for a
    cache, whose torn entry after a crash fails its own check. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temp(path.parent, prefix=prefix, suffix=suffix)
    with _renamed_over(path, fd, tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)


def _chmod(fd: int, tmp: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # pragma: no cover - Windows before 3.13: only the read-only bit means anything
        os.chmod(tmp, mode)


def write_atomic(path: str | Path, data: bytes, *, sync: bool = True) -> None:
    try:
        with atomic_writer(path, sync=sync) as f:
            f.write(data)
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}") from None


def create_atomic(path: str | Path, data: bytes) -> None:
    """Write ``path`` whole or not at all, and only if no file is there: the temp file is
    linked to the name, which fails when another file (a harness's own) already holds it."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            _chmod(f.fileno(), tmp, mode_for(path))
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)
    except FileExistsError:
        raise OutputError(f"{path} already exists: ctxfold never replaces a file the harness wrote") from None
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
