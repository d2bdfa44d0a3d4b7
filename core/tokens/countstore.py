"""Where the count cache keeps its entries: one file per session file and settings, in the user
cache folder (``~/.cache/ctxfold/counts``, or under ``$XDG_CACHE_HOME``).

An entry is a text header (what it was made from: the settings, the byte offset it stopped at,
the CRC-32 of the bytes before it, the CRC-32 of the state) and the state, pickled; then, for a
file of up to ``ANSWER_MAX`` bytes, the result of the file as it was read (its size, the CRC-32
of all its bytes, its metadata and when it was kept, the result pickled): a file unchanged since
is answered from it without reading on (a folder of old sessions reported again), and without
reading it at all when its metadata shows no write since (``filecheck.unchanged``). A file read
whole, with no state to keep (a log that names no model yet, a JSON document), has an empty
state and its result (``CachedRun.whole``). It is a
cache, so it is never trusted: an entry that is not one of ours, names other settings, or whose
state does not match its checksum is ignored with a warning and replaced; one written by
another version of ctxfold is replaced without one. The state is unpickled only after those
checks, and then only ctxfold's own classes and plain containers may be rebuilt from it (no
function is ever called).
Writes are atomic (a temp file renamed over the entry; no fsync: a torn entry fails its checksum),
and the folder is kept under ``MAX_BYTES``, the entries used longest ago removed first (checked
at most every ``SWEEP_EVERY`` seconds, and whenever one process has written an eighth of it).

Also here: the chunks a kept replay's requests are pickled in (``Chunks``). Whether the session
file is still the one an entry was made from is ``filecheck``'s.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ctxfold.atomic import write_unsynced
from ctxfold.hashes import digest
from ctxfold.paths import cache_dir
from ctxfold.tokens.session import Replay, collector_paused

MAGIC = b"ctxfold count cache\n"
MAX_CHUNKS = 64  # then a kept state's pickled chunks are pickled again, afresh
SLICE = 4096  # requests per pickled chunk
# 5: the context kept by column (``context_counts``); 4: the state and result checked by CRC-32;
# 3: the file's result may follow the state; 2: the prefix checked by CRC-32 (1: SHA-256)
VERSION = 5
# the largest file whose result is kept beside its state: past it, unpickling the result costs
# what restoring the state and finishing does (0.06 s for a 200 MB session), and pickling it
# would be paid again by every run after the session grew
ANSWER_MAX = 32 << 20
SWEPT = ".swept"  # touched at each sweep; a process sweeps at its first write if it is older than:
SWEEP_EVERY = 300  # seconds
MAX_BYTES = 256 * 2**20  # the whole folder; a single entry may take a quarter of it
SUFFIX = ".bin"
_STALE_TEMP = 3600.0  # seconds: a temp file this old was left by a process that died
_SAFE = {
    ("builtins", name)
    for name in ("set", "frozenset", "list", "dict", "tuple", "str", "int", "float", "bool", "bytes")
} | {("collections", name) for name in ("deque", "OrderedDict", "defaultdict", "Counter")}


@dataclass(frozen=True)
class Entry:
    """A cached state as read back: its header (``offset``, ``lines``, ``prefix_crc32``, ``held``:
    the counts of texts counted after the state, ``heldcounts.py``, and
    ``answer``: ``size``, ``crc32``, ``stat`` and ``kept_ns`` of the file the answer was read
    from, the last two when its size did not change as it was read), the pickled state (None:
    not read yet, see ``CountStore.with_state``) and the pickled answer (or None), not yet
    unpickled; ``source``, the entry's file and header line, to read the state from later."""

    header: dict[str, Any]
    payload: bytes | None
    answer: bytes | None = None
    source: tuple[str, bytes] | None = None

    def kept(self) -> dict[str, Any]:
        """The header as ``save`` takes it again (what describes the state, no answer)."""
        return {k: self.header[k] for k in ("offset", "lines", "prefix_crc32", "held") if k in self.header}


class _Unpickler(pickle.Unpickler):
    """Rebuilds ctxfold's own classes and plain containers, nothing else: a pickle that names a
    function (the way a pickle runs code) fails to load."""

    def find_class(self, module: str, name: str) -> Any:
        found = _allowed.get((module, name))  # found before: a folder's answers name the same few
        if found is not None:
            return found
        if module == "ctxfold" or module.startswith("ctxfold."):
            found = super().find_class(module, name)
            if not isinstance(found, type):
                found = None
        elif (module, name) in _SAFE:
            found = super().find_class(module, name)
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name} has no place in a count cache entry")
        _allowed[module, name] = found
        return found


_allowed: dict[tuple[str, str], Any] = {}  # what ``_Unpickler.find_class`` allowed, by name


def unpickle(payload: bytes) -> Any:
    with collector_paused():
        return _Unpickler(io.BytesIO(payload)).load()


class CountStore:
    """The entries of one cache folder."""

    swept = False  # per process: the folder is swept at the first write (if due) and as writes add up
    written = 0

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir() / "counts"
        self._prefix = os.path.join(self.folder, "")  # entries are named as strings: a folder's
        # thousands of files are looked up one by one, and a ``Path`` costs ten times a ``str``

    def path_for(self, key: dict[str, Any]) -> Path:
        return Path(self._path(_canonical(key)))

    def _path(self, canonical: bytes) -> str:
        return f"{self._prefix}{digest(canonical)}{SUFFIX}"

    def load(self, key: dict[str, Any], notes: list[str], size: int | None = None) -> Entry | None:
        """The entry for ``key``, or None (none, another version's, or not trusted: then a
        line in ``notes`` says so). With ``size`` (the file's now), an entry whose result was
        kept for that size is read as far as its header and then only that result: answering
        from it needs no state, most of an entry; :meth:`with_state` reads it when it does."""
        canonical = _canonical(key)
        path = self._path(canonical)
        try:
            with open(path, "rb") as f:
                head = f.readline()
                line = f.readline() if head == MAGIC else b""
                header = self._header(path, head, line, canonical, notes)
                if header is None:
                    return None
                meta = header.get("answer")
                if size is not None and isinstance(meta, dict) and meta.get("size") == size:
                    left = os.fstat(f.fileno()).st_size - f.tell()
                    entry = self._answer_only(path, f, header, left, notes, line)
                else:
                    entry = self._whole(path, header, f.read(), notes)
        except OSError:
            return None
        if entry is not None:
            with contextlib.suppress(OSError):
                os.utime(path)  # used now: evicted last
        return entry

    def with_state(self, entry: Entry, notes: list[str]) -> Entry | None:
        """``entry`` with its state read and checked, if :meth:`load` left it out (None: not
        readable, damaged, or replaced by another run's since)."""
        if entry.payload is not None or entry.source is None:
            return entry
        path, line = entry.source
        try:
            with open(path, "rb") as f:
                if f.readline() != MAGIC or f.readline() != line:
                    return None  # another run wrote its own since: as if there were none
                rest = f.read()
        except OSError:
            return None
        return self._whole(path, entry.header, rest, notes)

    @staticmethod
    def _damaged(path: str) -> str:
        return f"the count cache entry {path} is damaged: ignored, the file is counted afresh"

    def _header(
        self, path: str, head: bytes, line: bytes, canonical: bytes, notes: list[str]
    ) -> dict[str, Any] | None:
        """The entry's header, if it is one of ours, this version's, for the key ``canonical``."""
        if head != MAGIC:
            notes.append(
                f"the count cache entry {path} is not one of ctxfold's: ignored, the file is counted afresh"
            )
            return None
        try:
            header = orjson.loads(line)
        except orjson.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or not line.endswith(b"\n"):
            notes.append(self._damaged(path))
            return None
        if header.get("version") != VERSION:
            return None  # another ctxfold's: replaced by this run's
        if header.get("key") != orjson.loads(canonical):
            notes.append(f"the count cache entry {path} belongs to another file: ignored")
            return None
        return header

    def _answer_only(
        self, path: str, f: BinaryIO, header: dict[str, Any], left: int, notes: list[str], line: bytes
    ) -> Entry | None:
        """The entry with its result (its last bytes) read and checked, and no state yet."""
        meta = header["answer"]
        n = meta.get("bytes")
        if not isinstance(n, int) or not 0 < n <= left:
            notes.append(self._damaged(path))
            return None
        f.seek(-n, os.SEEK_END)
        answer = f.read(n)
        if zlib.crc32(answer) != meta.get("check"):
            notes.append(self._damaged(path))
            return None
        return Entry(header, None, answer, (path, line))

    def _whole(self, path: str, header: dict[str, Any], rest: bytes, notes: list[str]) -> Entry | None:
        """The entry from everything after its header: the state, then the result if kept."""
        payload, answer = rest, None
        meta = header.get("answer")
        if meta is not None:
            n = meta.get("bytes") if isinstance(meta, dict) else None
            if not isinstance(n, int) or not 0 < n <= len(payload):
                notes.append(self._damaged(path))
                return None
            payload, answer = payload[:-n], payload[-n:]
            if zlib.crc32(answer) != meta.get("check"):
                notes.append(self._damaged(path))
                return None
        if zlib.crc32(payload) != header.get("payload_crc32"):
            notes.append(self._damaged(path))
            return None
        return Entry(header, payload, answer)

    def peek(self, key: dict[str, Any]) -> dict[str, Any] | None:
        """The header of ``key``'s entry, unchecked (None: none readable, or another version's):
        enough to tell how much of a file the entry would spare, not to trust it."""
        try:
            with open(self._path(_canonical(key)), "rb") as f:
                if f.readline() != MAGIC:  # MAGIC is a line of its own
                    return None
                header = orjson.loads(f.readline())
        except (OSError, orjson.JSONDecodeError):
            return None
        return header if isinstance(header, dict) and header.get("version") == VERSION else None

    def save(
        self,
        key: dict[str, Any],
        header: dict[str, Any],
        payload: bytes,
        answer: tuple[dict[str, Any], bytes] | None = None,
    ) -> None:
        """Write the entry atomically, with the ``answer`` (its header, and the pickled result)
        after the state; a folder that cannot be written only costs the cache."""
        if len(payload) + (len(answer[1]) if answer else 0) > MAX_BYTES // 4:
            return
        canonical = _canonical(key)
        head = {"version": VERSION, "key": orjson.loads(canonical), **header}
        head["payload_crc32"] = zlib.crc32(payload)
        if answer is not None:
            head["answer"] = {
                **answer[0],
                "bytes": len(answer[1]),
                "check": zlib.crc32(answer[1]),
            }
        first = MAGIC + orjson.dumps(head, option=_SORTED) + b"\n"
        try:
            chunks = (first, payload, answer[1] if answer is not None else b"")
            write_unsynced(Path(self._path(canonical)), chunks, prefix=".tmp-", suffix=SUFFIX)
        except OSError:
            return
        CountStore.written += len(payload) + (len(answer[1]) if answer else 0)
        if CountStore.written > MAX_BYTES // 8 or (not CountStore.swept and self._sweep_due()):
            self.sweep()

    def _sweep_due(self) -> bool:
        """Whether no process swept the folder in the last ``SWEEP_EVERY`` seconds: a run that
        writes one entry (the statusline, after every message) need not list the whole folder."""
        try:
            return time.time() - (self.folder / SWEPT).stat().st_mtime > SWEEP_EVERY
        except OSError:
            return True

    def sweep(self, limit: int = MAX_BYTES) -> None:
        """Remove the entries used longest ago until the folder holds ``limit`` bytes at most."""
        CountStore.swept, CountStore.written = True, 0
        now = time.time()
        with contextlib.suppress(OSError):
            (self.folder / SWEPT).touch()
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


_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def default_store() -> CountStore:
    """The store of the user's cache folder (as ``CountStore()``), made once per cache folder:
    a folder's every file asks for it."""
    folder = cache_dir()
    if _default[0] is not folder:  # (``cache_dir`` gives the same Path while the environment is the same)
        _default[:] = [folder, CountStore(folder / "counts")]
    store: CountStore = _default[1]
    return store


_default: list[Any] = [None, None]


def _canonical(value: Any) -> bytes:
    """``value`` as JSON, the same bytes for the same value (what an entry is named for)."""
    return orjson.dumps(value, default=str, option=_SORTED)


class Chunks:
    """A kept replay's requests, pickled in chunks that the next kept state reuses as they are:
    a request does not change once the next one exists. So a run pickles only the requests it
    read, not the whole session's again. (The context's counts are columns, pickled whole: 15 ms
    for the 53,000 messages of a 200 MB Codex log, ``context_counts``.)"""

    def __init__(self, requests: list[bytes] | None = None, n_requests: int = 0) -> None:
        self.requests, self.n_requests = requests or [], n_requests

    def chunks(self) -> tuple[list[bytes], int]:
        return self.requests, self.n_requests

    def pickled(self, replay: Replay) -> Replay:
        """``replay`` without what the chunks hold, the chunks brought up to date."""
        frozen = max(0, len(replay.requests) - 1)  # the last request may still get its count
        if frozen < self.n_requests or len(self.requests) >= MAX_CHUNKS:
            self.requests, self.n_requests = [], 0
        if frozen > self.n_requests:
            self.requests = [*self.requests, *_sliced(replay.requests[self.n_requests : frozen])]
            self.n_requests = frozen
        return replace(replay, requests=replay.requests[frozen:])

    def restored(self, replay: Replay) -> Replay:
        """The whole replay again, from the rest of it and the chunks."""
        requests = [r for chunk in self.requests for r in unpickle(chunk)]
        if len(requests) != self.n_requests:
            raise ValueError("the chunks do not add up")
        replay.requests = [*requests, *replay.requests]
        return replay


def _sliced(items: list[Any]) -> list[bytes]:
    """``items`` pickled a slice at a time: one pickle of a whole long session's requests
    holds a memo of every object in it, several times a slice's."""
    return [dumps(items[i : i + SLICE]) for i in range(0, len(items), SLICE)]


def dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
