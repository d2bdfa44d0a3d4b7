"""Whether a session file is still the one the count cache read: its first bytes checked
(``PrefixCheck``: CRC-32, beside the work), or, for a file not written to since its
result was kept, its metadata alone (``unchanged``); and where its complete lines end.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import zlib
from typing import Any, BinaryIO

from ctxfold.hashes import file_identity

CHUNK = 8 << 20  # bytes read at a time to check a prefix (few: each read gives up the GIL)
TAIL = 1 << 16  # bytes read at a time, backwards, to find a file's last newline

# A file whose size, inode and times are those it had when its result was kept is answered
# without reading it again, unless its modification or change time is later than this
# long before the keeping: a write in the same clock tick as the read could leave the times as
# they were (git's "racily clean" files), and any write since moves the change time to now (it
# cannot be set back, unlike the modification time). Filesystems that keep times to 2 s (FAT)
# are covered too.
RACY_NS = 3 * 10**9
# Windows gives a file's creation time where other systems give its change time: a rewrite
# that set the modification time back would go unseen, so there the bytes are always checked.
NO_CHANGE_TIME = sys.platform == "win32"


def unchanged(meta: dict[str, Any], st: os.stat_result) -> bool:
    """Whether ``meta`` (an answer's header) was kept from this very file, as ``st`` shows it
    now: the same :func:`~ctxfold.hashes.file_identity`, and not written since ``RACY_NS``
    before the keeping."""
    kept = meta.get("kept_ns")
    if meta.get("stat") != file_identity(st) or not isinstance(kept, int) or NO_CHANGE_TIME:
        return False
    return max(st.st_mtime_ns, st.st_ctime_ns) <= kept - RACY_NS


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

    def extend(self, crc: int, size: int) -> None:
        """As if the ``size`` bytes whose CRC-32 is ``crc`` were given now (hashed elsewhere: by
        the process that read a large log's second part), without reading them."""
        self.value = crc32_combine(self.value, crc, size)


_POLY = 0xEDB88320  # CRC-32's polynomial, bit-reversed as zlib uses it


def crc32_combine(crc1: int, crc2: int, size2: int) -> int:
    """The CRC-32 of ``A + B`` from that of ``A``, that of ``B`` and ``B``'s size (zlib's own
    combine, which Python's zlib does not offer): ``A``'s register run on over ``size2`` zero
    bytes, a linear map over GF(2) raised to that power by squaring, then xor-ed with ``B``'s."""
    step = [_POLY] + [1 << i for i in range(31)]  # the register after one zero bit, per input bit
    for _ in range(3):
        step = _then(step, step)  # ... after 2, 4, then 8 zero bits: one zero byte
    while size2 > 0:
        if size2 & 1:
            crc1 = _apply(step, crc1)
        size2 >>= 1
        if size2:
            step = _then(step, step)
    return crc1 ^ crc2


def _apply(op: list[int], value: int) -> int:
    out, i = 0, 0
    while value:
        if value & 1:
            out ^= op[i]
        value >>= 1
        i += 1
    return out


def _then(a: list[int], b: list[int]) -> list[int]:
    """The map ``b`` then ``a``, as columns."""
    return [_apply(a, column) for column in b]


class PrefixCheck(threading.Thread):
    """The :class:`PrefixHash` of a file's first ``offset`` bytes, read beside the work with a
    handle of its own; ``result()`` waits for it. A prefix of up to ``INLINE`` bytes is hashed at
    once: starting a thread costs more (a folder of small logs). One of ``FORK`` bytes or more is
    hashed in a forked process, where there is a second core and helpers are not turned off
    (``CTXFOLD_WORKERS=0``, as in a folder's workers): a thread wants the GIL back after every
    read and checksum, which slows the main thread's unpickling and parsing (a whole `estimate`
    after a 200 MB Claude Code log grew by 2 % took 0.90-0.93 of a thread's time, medians of 12
    pairs; docs/benchmarks.md, round 25). Else a thread (zlib releases the GIL)."""

    INLINE = 1 << 20
    FORK = 32 << 20

    def __init__(self, path: str, offset: int) -> None:
        super().__init__(daemon=True)
        self.path, self.offset = path, offset
        self.hasher = PrefixHash()
        self.inline = offset <= self.INLINE
        self.forked: tuple[int, BinaryIO] | None = None  # the process's id and the pipe it answers on
        if self.inline:
            self._check()
            return
        if offset >= self.FORK:
            self.forked = self._fork()
        if self.forked is None:
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

    def _fork(self) -> tuple[int, BinaryIO] | None:
        """A child that hashes the prefix and sends its CRC-32 back (None: no helper process may
        be forked, or it could not be)."""
        from ctxfold.tokens.parallel import fork_child, may_fork  # (here: not in a statusline's start)

        if not may_fork():
            return None
        try:
            return fork_child(lambda: self._check_mapped().value.to_bytes(4, "little"))
        except OSError:
            return None

    def _forked_result(self, pid: int, conn: BinaryIO) -> None:
        """The child's CRC-32; hashed here instead if it sent none (killed, out of memory)."""
        data = b""
        with conn, contextlib.suppress(OSError):
            data = conn.read()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        if len(data) == 4:
            self.hasher.value = int.from_bytes(data, "little")
        else:
            self.hasher = PrefixHash()
            self._check()

    def _check(self) -> None:
        # large reads into one buffer: the thread takes the GIL back after each read and each
        # checksum, and waits up to the switch interval for it while the main thread unpickles.
        # Not larger than an eighth of the prefix, though: each page of a new buffer is a page
        # fault, and at 8 MB they cost a 20 MB session's statusline 10-15 ms.
        left = self.offset
        buf = bytearray(min(CHUNK, left, max(self.INLINE, left // 8, 1 << 16)))
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

    def _check_mapped(self) -> PrefixHash:
        """``_check`` through a memory map, without copying the bytes (an unchanged 200 MB
        Claude Code log's whole `estimate`: 0.90 of the time; round 25). Only in the forked
        child: a file cut short while mapped ends the process that reads it (SIGBUS), and
        the parent then hashes it itself."""
        import mmap

        left = self.offset
        with contextlib.suppress(OSError), open(self.path, "rb", buffering=0) as f:
            n = min(left, os.fstat(f.fileno()).st_size)
            if n > 0:
                with mmap.mmap(f.fileno(), n, access=mmap.ACCESS_READ) as m, memoryview(m) as view:
                    self.hasher.update(view)
                left -= n
        if left:
            self.hasher.update(b"\0cut short")
        return self.hasher

    def result(self) -> PrefixHash:
        if self.forked is not None:
            forked, self.forked = self.forked, None
            self._forked_result(*forked)
        elif not self.inline:
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
