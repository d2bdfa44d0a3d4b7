"""blake2b and sha256 from the C modules ``hashlib`` wraps: ``hashlib`` itself loads OpenSSL
first, 3-5 ms of every start that needs a hash (the statusline's, after every message, needs
three, all of a few bytes, where OpenSSL's speed does not tell); and the stamp of ctxfold's own
code, which what a cache keeps depends on."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

TYPE_CHECKING = False  # typing's, without importing typing (3 ms of the statusline's start)
if TYPE_CHECKING:
    from typing import Any

try:
    from _blake2 import blake2b
except ImportError:  # a Python without the module (hashlib then finds blake2b elsewhere)
    from hashlib import blake2b

__all__ = ["blake2b", "code_stamp", "digest", "file_identity", "sha256"]


def _sha256() -> Any:
    for module in ("_sha2", "_sha256"):  # Python 3.12 on; 3.11
        try:
            return importlib.import_module(module).sha256
        except (ImportError, AttributeError):
            continue
    import hashlib  # a Python without either

    return hashlib.sha256


sha256 = _sha256()


def file_identity(st: os.stat_result) -> list[int]:
    """Which file, how long, written when, short of reading it: a write always moves the change
    time (which nothing sets back, unlike the modification time)."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev, st.st_ctime_ns]


def digest(data: bytes) -> str:
    """A name for ``data``: 40 hex digits."""
    return blake2b(data, digest_size=20).hexdigest()


_STAMP: list[str] = []


def code_stamp() -> str:
    """ctxfold's own files (names, sizes, times): what another version's code kept is not reused."""
    if not _STAMP:
        root = Path(__file__).resolve().parent
        lines = []
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".py", ".json")):
                    st = os.stat(os.path.join(folder, name))
                    lines.append(f"{folder[len(str(root)) :]}/{name}:{st.st_size}:{st.st_mtime_ns}\n")
        _STAMP.append(digest("".join(lines).encode()))
    return _STAMP[0]
