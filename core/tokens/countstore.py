"""Where the count cache keeps its entries: one file per session file and settings, in the user
cache folder (``~/.cache/ctxfold/counts``, or under ``$XDG_CACHE_HOME``).

An entry is a text header (what it was made from: the settings, the byte offset it stopped at,
the SHA-256 of the bytes before it and of the state) and the state, pickled. It is a cache, so it
is never trusted: an entry that is not one of ours, names other settings, or whose state does not
match its checksum is ignored with a warning and replaced; one written by another version of
ctxfold is replaced without one. The state is unpickled only after those checks, and then only
ctxfold's own classes and plain containers may be rebuilt from it (no function is ever called).
Writes are atomic (a temp file renamed over the entry; no fsync: a torn entry fails its checksum),
and the folder is kept under ``MAX_BYTES``, the entries used longest ago removed first.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxfold.paths import cache_dir

MAGIC = b"ctxfold count cache\n"
VERSION = 1
MAX_BYTES = 256 * 2**20  # the whole folder; a single entry may take a quarter of it
SUFFIX = ".bin"
_STALE_TEMP = 3600.0  # seconds: a temp file this old was left by a process that died
_SAFE = {
    ("builtins", name)
    for name in ("set", "frozenset", "list", "dict", "tuple", "str", "int", "float", "bool", "bytes")
} | {("collections", name) for name in ("deque", "OrderedDict", "defaultdict", "Counter")}


@dataclass(frozen=True)
class Entry:
    """A cached state as read back: its header (``offset``, ``lines``, ``prefix_sha256``...)
    and the pickled state, not yet unpickled."""

    header: dict[str, Any]
    payload: bytes


class _Unpickler(pickle.Unpickler):
    """Rebuilds ctxfold's own classes and plain containers, nothing else: a pickle that names a
    function (the way a pickle runs code) fails to load."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "ctxfold" or module.startswith("ctxfold."):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        elif (module, name) in _SAFE:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} has no place in a count cache entry")


def unpickle(payload: bytes) -> Any:
    return _Unpickler(io.BytesIO(payload)).load()


class CountStore:
    """The entries of one cache folder."""

    swept = False  # per process: the folder is swept at the first write and as writes add up
    written = 0

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir() / "counts"

    def path_for(self, key: dict[str, Any]) -> Path:
        digest = hashlib.sha256(_canonical(key)).hexdigest()[:40]
        return self.folder / f"{digest}{SUFFIX}"

    def load(self, key: dict[str, Any], notes: list[str]) -> Entry | None:
        """The entry for ``key``, or None (none, another version's, or not trusted: then a
        line in ``notes`` says so)."""
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        damaged = f"the count cache entry {path} is damaged: ignored, the file is counted afresh"
        if not data.startswith(MAGIC):
            notes.append(
                f"the count cache entry {path} is not one of ctxfold's: ignored, the file is counted afresh"
            )
            return None
        end = data.find(b"\n", len(MAGIC))
        try:
            header = json.loads(data[len(MAGIC) : end])
        except ValueError:
            notes.append(damaged)
            return None
        if not isinstance(header, dict) or end < 0:
            notes.append(damaged)
            return None
        if header.get("version") != VERSION:
            return None  # another ctxfold's: replaced by this run's
        if header.get("key") != json.loads(_canonical(key)):
            notes.append(f"the count cache entry {path} belongs to another file: ignored")
            return None
        payload = data[end + 1 :]
        if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
            notes.append(damaged)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # used now: evicted last
        return Entry(header, payload)

    def save(self, key: dict[str, Any], header: dict[str, Any], payload: bytes) -> None:
        """Write the entry atomically; a folder that cannot be written only costs the cache."""
        if len(payload) > MAX_BYTES // 4:
            return
        head = {"version": VERSION, "key": json.loads(_canonical(key)), **header}
        head["payload_sha256"] = hashlib.sha256(payload).hexdigest()
        path = self.path_for(key)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=SUFFIX)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + json.dumps(head, sort_keys=True).encode() + b"\n")
                    f.write(payload)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return
        CountStore.written += len(payload)
        if not CountStore.swept or CountStore.written > MAX_BYTES // 8:
            self.sweep()

    def sweep(self, limit: int = MAX_BYTES) -> None:
        """Remove the entries used longest ago until the folder holds ``limit`` bytes at most."""
        CountStore.swept, CountStore.written = True, 0
        now = time.time()
        entries: list[tuple[float, int, str]] = []
        try:
            with os.scandir(self.folder) as it:
                for d in it:
                    with contextlib.suppress(OSError):
                        st = d.stat()
                        if d.name.startswith(".tmp-"):
                            if now - st.st_mtime > _STALE_TEMP:
                                os.unlink(d.path)
                        elif d.name.endswith(SUFFIX):
                            entries.append((st.st_mtime, st.st_size, d.path))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= limit:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
            total -= size


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, default=str).encode()
