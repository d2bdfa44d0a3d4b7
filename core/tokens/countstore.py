"""Where the count cache keeps its entries: one file per session file and settings, in the user
cache folder (``~/.cache/ctxfold/counts``, or under ``$XDG_CACHE_HOME``).

An entry is a text header (what it was made from: the settings, the byte offset it stopped at,
the CRC-32 of the bytes before it, the CRC-32 of the state) and the state, pickled; then, for a
file of up to ``ANSWER_MAX`` bytes, the result of the file as it was read (its size, the CRC-32
of all its bytes, its metadata and when it was kept, the result pickled): a file unchanged since
is answered from it without reading on (a folder of old sessions reported again), and without
reading it at all when its metadata shows no write since (``unchanged``). It is a cache, so it
is never trusted: an entry that is not one of ours, names other settings, or whose state does not
match its checksum is ignored with a warning and replaced; one written by another version of
ctxfold is replaced without one. The state is unpickled only after those checks, and then only
ctxfold's own classes and plain containers may be rebuilt from it (no function is ever called).
Writes are atomic (a temp file renamed over the entry; no fsync: a torn entry fails its checksum),
and the folder is kept under ``MAX_BYTES``, the entries used longest ago removed first (checked
at most every ``SWEEP_EVERY`` seconds, and whenever one process has written an eighth of it).

Also here: the chunks a kept replay is pickled in (``Chunks``), and the check of the bytes an
entry was made from (``PrefixCheck``, in a thread).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import sys
import threading
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from ctxfold.atomic import write_unsynced
from ctxfold.hashes import digest
from ctxfold.paths import cache_dir
from ctxfold.tokens.session import Replay, collector_paused

MAGIC = b"ctxfold count cache\n"
CHUNK = 8 << 20  # bytes read at a time to check a prefix (few: each read gives up the GIL)
TAIL = 1 << 16  # bytes read at a time, backwards, to find a file's last newline
MAX_CHUNKS = 64  # then a kept state's pickled chunks are pickled again, afresh
SLICE = 4096  # requests or messages per pickled chunk
VERSION = 4  # 4: the state and result checked by CRC-32; 3: the file's result may follow the state;
# 2: the prefix checked by CRC-32 (1: SHA-256)
# the largest file whose result is kept beside its state: past it, unpickling the result costs
# what restoring the state and finishing does (0.06 s for a 200 MB session), and pickling it
# would be paid again by every run after the session grew
ANSWER_MAX = 32 << 20
SWEPT = ".swept"  # touched at each sweep; a process sweeps at its first write if it is older than:
SWEEP_EVERY = 300  # seconds
MAX_BYTES = 256 * 2**20  # the whole folder; a single entry may take a quarter of it
SUFFIX = ".bin"
# A file whose size, inode and modification time are those it had when its result was kept is
# answered without reading it again, unless its modification or change time is later than this
# long before the keeping: a write in the same clock tick as the read could leave the times as
# they were (git's "racily clean" files), and any write since moves the change time to now (it
# cannot be set back, unlike the modification time). Filesystems that keep times to 2 s (FAT)
# are covered too.
RACY_NS = 3 * 10**9
_STALE_TEMP = 3600.0  # seconds: a temp file this old was left by a process that died
_SAFE = {
    ("builtins", name)
    for name in ("set", "frozenset", "list", "dict", "tuple", "str", "int", "float", "bool", "bytes")
} | {("collections", name) for name in ("deque", "OrderedDict", "defaultdict", "Counter")}


@dataclass(frozen=True)
class Entry:
    """A cached state as read back: its header (``offset``, ``lines``, ``prefix_crc32``, and
    ``answer``: ``size``, ``crc32``, ``stat`` and ``kept_ns`` of the file the answer was read
    from, the last two when its size did not change as it was read), the pickled state
    and the pickled answer (or None), not yet unpickled."""

    header: dict[str, Any]
    payload: bytes
    answer: bytes | None = None

    def kept(self) -> dict[str, Any]:
        """The header as ``save`` takes it again (what describes the state, no answer)."""
        return {k: self.header[k] for k in ("offset", "lines", "prefix_crc32") if k in self.header}


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
    with collector_paused():
        return _Unpickler(io.BytesIO(payload)).load()


class CountStore:
    """The entries of one cache folder."""

    swept = False  # per process: the folder is swept at the first write (if due) and as writes add up
    written = 0

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir() / "counts"

    def path_for(self, key: dict[str, Any]) -> Path:
        return self.folder / f"{digest(_canonical(key))}{SUFFIX}"

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
        payload, answer = data[end + 1 :], None
        meta = header.get("answer")
        if meta is not None:
            n = meta.get("bytes") if isinstance(meta, dict) else None
            if not isinstance(n, int) or not 0 < n <= len(payload):
                notes.append(damaged)
                return None
            payload, answer = payload[:-n], payload[-n:]
            if zlib.crc32(answer) != meta.get("check"):
                notes.append(damaged)
                return None
        if zlib.crc32(payload) != header.get("payload_crc32"):
            notes.append(damaged)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # used now: evicted last
        return Entry(header, payload, answer)

    def peek(self, key: dict[str, Any]) -> dict[str, Any] | None:
        """The header of ``key``'s entry, unchecked (None: none readable, or another version's):
        enough to tell how much of a file the entry would spare, not to trust it."""
        try:
            with open(self.path_for(key), "rb") as f:
                if f.readline() != MAGIC:  # MAGIC is a line of its own
                    return None
                header = json.loads(f.readline())
        except (OSError, ValueError):
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
        head = {"version": VERSION, "key": json.loads(_canonical(key)), **header}
        head["payload_crc32"] = zlib.crc32(payload)
        if answer is not None:
            head["answer"] = {
                **answer[0],
                "bytes": len(answer[1]),
                "check": zlib.crc32(answer[1]),
            }
        first = MAGIC + json.dumps(head, sort_keys=True).encode() + b"\n"
        try:
            chunks = (first, payload, answer[1] if answer is not None else b"")
            write_unsynced(self.path_for(key), chunks, prefix=".tmp-", suffix=SUFFIX)
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


def stat_of(st: os.stat_result) -> list[int]:
    """What tells a file from another, or from a rewrite of it, short of reading it."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def unchanged(meta: dict[str, Any], st: os.stat_result) -> bool:
    """Whether ``meta`` (an answer's header) was kept from this very file, as ``st`` shows it
    now: the same :func:`stat_of`, and not written since ``RACY_NS`` before the keeping."""
    kept = meta.get("kept_ns")
    if meta.get("stat") != stat_of(st) or not isinstance(kept, int):
        return False
    return max(st.st_mtime_ns, st.st_ctime_ns) <= kept - RACY_NS


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, default=str).encode()


class Chunks:
    """A kept replay's requests and context messages, pickled in chunks that the next kept state
    reuses as they are: a request does not change once the next one exists, nor a message once
    it is in the context (a compaction starts a new context, and its chunks afresh). So a run
    pickles only what it read, not the whole session again."""

    def __init__(
        self,
        requests: list[bytes] | None = None,
        n_requests: int = 0,
        context: list[bytes] | None = None,
        n_context: int = 0,
        segment: int = -1,
    ) -> None:
        self.requests, self.n_requests = requests or [], n_requests
        self.context, self.n_context, self.segment = context or [], n_context, segment

    def chunks(self) -> tuple[list[bytes], int, list[bytes], int, int]:
        return self.requests, self.n_requests, self.context, self.n_context, self.segment

    def pickled(self, replay: Replay) -> Replay:
        """``replay`` without what the chunks hold, the chunks brought up to date."""
        frozen = max(0, len(replay.requests) - 1)  # the last request may still get its count
        if frozen < self.n_requests or len(self.requests) >= MAX_CHUNKS:
            self.requests, self.n_requests = [], 0
        if frozen > self.n_requests:
            self.requests = [*self.requests, *_sliced(replay.requests[self.n_requests : frozen])]
            self.n_requests = frozen
        ctx = replay.context
        if replay.segment != self.segment or len(ctx) < self.n_context or len(self.context) >= MAX_CHUNKS:
            self.context, self.n_context, self.segment = [], 0, replay.segment
        if len(ctx) > self.n_context:
            self.context = [*self.context, *_sliced(ctx[self.n_context :])]
            self.n_context = len(ctx)
        return replace(replay, requests=replay.requests[frozen:], context=[])

    def restored(self, replay: Replay) -> Replay:
        """The whole replay again, from the rest of it and the chunks."""
        requests = [r for chunk in self.requests for r in unpickle(chunk)]
        context = [m for chunk in self.context for m in unpickle(chunk)]
        if len(requests) != self.n_requests or len(context) != self.n_context:
            raise ValueError("the chunks do not add up")
        replay.requests = [*requests, *replay.requests]
        replay.context = context
        return replay


def _sliced(items: list[Any]) -> list[bytes]:
    """``items`` pickled a slice at a time: one pickle of a whole long session's messages
    holds a memo of every object in it (20 MB for 53,000 messages, against 5 MB a slice)."""
    return [dumps(items[i : i + SLICE]) for i in range(0, len(items), SLICE)]


def dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def complete_end(f: BinaryIO, size: int) -> int:
    """The byte offset just after the last newline in the file's first ``size`` bytes."""
    pos = size
    while pos > 0:
        start = max(0, pos - TAIL)
        f.seek(start)
        block = f.read(pos - start)
        nl = block.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


class PrefixHash:
    """CRC-32 of the bytes given so far, with a hasher's ``update`` and ``hexdigest``.

    It tells whether the bytes an entry was made from are still the file's first bytes (an
    appended log keeps them; a rewritten one, or a copied file of the same name, does not), beside
    the offset and line count. A checksum, not a cryptographic hash: it guards counts of the
    user's own files against change, not against forgery, at twice SHA-256's speed here (0.07 s
    against 0.14 s for 200 MB), which a re-run pays for its whole prefix.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def update(self, data: bytes | memoryview) -> None:
        self.value = zlib.crc32(data, self.value)

    def hexdigest(self) -> str:
        return f"{self.value:08x}"


class PrefixCheck(threading.Thread):
    """The :class:`PrefixHash` of a file's first ``offset`` bytes, read in a thread of its own
    (with its own handle; zlib releases the GIL); ``result()`` waits for it. A prefix of up to
    ``INLINE`` bytes is hashed at once: starting a thread costs more (a folder of small logs)."""

    INLINE = 1 << 20

    def __init__(self, path: str, offset: int) -> None:
        super().__init__(daemon=True)
        self.path, self.offset = path, offset
        self.hasher = PrefixHash()
        self.inline = offset <= self.INLINE
        if self.inline:
            self._check()
        else:
            _switch_quickly(True)
            try:
                self.start()
            except BaseException:
                _switch_quickly(False)
                raise

    def run(self) -> None:
        try:
            self._check()
        finally:
            _switch_quickly(False)

    def _check(self) -> None:
        # large reads into one buffer: the thread takes the GIL back after each read and each
        # checksum, and waits up to the switch interval for it while the main thread unpickles.
        # Not larger than an eighth of the prefix, though: each page of a new buffer is a page
        # fault, and at 8 MB they cost a 20 MB session's statusline 10-15 ms.
        left = self.offset
        buf = bytearray(min(CHUNK, left, max(self.INLINE, left // 8)))
        view = memoryview(buf)
        with contextlib.suppress(OSError), open(self.path, "rb", buffering=0) as f:
            while left > 0:
                n = f.readinto(view[: min(len(buf), left)])
                if not n:
                    break
                self.hasher.update(view[:n])
                left -= n
        view.release()
        if left:
            self.hasher.update(b"\0cut short")  # the file shrank meanwhile: no match

    def result(self) -> PrefixHash:
        if not self.inline:
            self.join()
        return self.hasher


# While a prefix is checked beside the unpickling, the checking thread wants the GIL back after
# each read and each checksum, and waits up to the switch interval each time (5 ms by default):
# at SWITCH_INTERVAL, a 200 MB Codex session unchanged resumes in 0.15 s instead of 0.16-0.18.
SWITCH_INTERVAL = 0.0005
_switching = threading.Lock()
_checks = 0  # checks running; the first sets the interval, the last puts the saved one back
_saved_interval = 0.0


def _switch_quickly(on: bool) -> None:
    global _checks, _saved_interval
    with _switching:
        if on:
            if _checks == 0:
                _saved_interval = sys.getswitchinterval()
                sys.setswitchinterval(min(_saved_interval, SWITCH_INTERVAL))
            _checks += 1
        else:
            _checks -= 1
            if _checks == 0:
                sys.setswitchinterval(_saved_interval)
