"""Small inputs without loading a native tokenizer: a memory-mapped rank table and BPE in Python.

Loading a native BPE engine costs a third of a second (its tables are built in memory at
start), more than a small session takes to read and count. The same ranks, written once to the
user's cache folder as an open-addressing hash table and memory-mapped, cost nothing to open;
Python then splits the text with the encoding's own pattern and merges byte pairs by rank as
tiktoken does, which is exact but slow (about 1 M characters a second), so the tokenizer counts
small inputs here and hands large ones, and any piece too long for a quadratic merge, to the
native engine (``tokenizers.BpeTokenizer``). Text that is all ASCII (most of a session's lines)
is split by the same pattern cut to ASCII, in stdlib ``re``: importing and compiling it in the
``regex`` module would cost a statusline 15-25 ms.

The table is built from the hash-checked ranks of ``encodings.read_ranks`` and carries a CRC-32
of its own body, checked when it is opened: a damaged file (cut short, a flipped bit) is
rebuilt, never trusted. A CRC-32, not a sha256: the sum sits in the same file, so a stronger
hash would stop no one who can write it, and checking it is a quarter of the cost (the
statusline opens the table on every run it counts a new line).
"""

from __future__ import annotations

import mmap
import re
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxfold.tokens.encodings import PINNED_SHA256, newer_than_tiktoken, pattern, read_ranks, reference_count

MAGIC = b"CTXFBPE2"  # 1: the same layout with a sha256 of the body
MAX_PIECE = 256  # bytes: a longer piece not in the table goes to the native engine
_RANK_BITS = 18  # ranks < 262,144; the length of the token's bytes sits above them
_HEADER = 8 + 32 + 4 + 4  # magic, CRC-32 of the body (zero-padded), slot count, keys offset


class TooLong(Exception):
    """A piece that Python would merge too slowly: the caller counts the text natively."""


def table_path(name: str) -> Path:
    from ctxfold.paths import cache_dir

    tag = PINNED_SHA256[name][:12]
    return cache_dir() / "bpe" / f"{name}-{tag}-{sys.byteorder[0]}.bin"


def build(name: str) -> bytes:
    """The table file of ``name``: header, slots (key offset, length << 18 | rank), key bytes."""
    ranks = read_ranks(name)
    slots = 1 << (len(ranks) * 2).bit_length()  # load factor under one half
    mask = slots - 1
    table = [0] * (2 * slots)
    keys = bytearray()
    for token, rank in ranks.items():
        i = zlib.crc32(token) & mask
        while table[2 * i + 1]:
            i = (i + 1) & mask
        table[2 * i] = len(keys)
        table[2 * i + 1] = (len(token) << _RANK_BITS) | rank
        keys += token
    import array

    body = array.array("I", table).tobytes() + bytes(keys)
    head = MAGIC + _checksum(body)
    head += slots.to_bytes(4, sys.byteorder) + (_HEADER + 8 * slots).to_bytes(4, sys.byteorder)
    return head + body


class RankTable:
    """Exact BPE counts for ``name`` from the memory-mapped table (built on first use)."""

    def __init__(self, name: str, path: Path | None = None) -> None:
        import importlib.util

        if importlib.util.find_spec("regex") is None:  # the pattern's \p{...} classes need it
            raise ImportError("the regex module is not installed")
        self.name = name
        self._pattern: Any = None  # compiled on the first text that is not all ASCII
        self._ascii = ascii_pattern(name)
        self._path = path or table_path(name)
        self._mm = self._open()
        view = memoryview(self._mm)
        slots = int.from_bytes(view[40:44], sys.byteorder)
        keys_at = int.from_bytes(view[44:48], sys.byteorder)
        self._mask = slots - 1
        self._slots = view[_HEADER:keys_at].cast("I")
        self._keys = view[keys_at:]

    def _open(self) -> mmap.mmap:
        mm = _map(self._path)
        if mm is None:
            from ctxfold.atomic import write_atomic

            write_atomic(self._path, build(self.name))
            mm = _map(self._path)
            if mm is None:
                raise OSError(f"{self._path}: the table just written does not check")
        return mm

    def rank(self, piece: bytes) -> int | None:
        slots, keys, mask, n = self._slots, self._keys, self._mask, len(piece)
        i = zlib.crc32(piece) & mask
        while True:
            packed = slots[2 * i + 1]
            if not packed:
                return None
            if packed >> _RANK_BITS == n:
                at = slots[2 * i]
                if keys[at : at + n] == piece:
                    return int(packed & ((1 << _RANK_BITS) - 1))
            i = (i + 1) & mask

    def _pieces(self, text: str) -> list[str]:
        if self._ascii is not None and text.isascii():
            return self._ascii.findall(text)
        if self._pattern is None:
            import regex  # 15-25 ms with the compile: a statusline's new line is mostly ASCII

            self._pattern = regex.compile(pattern(self.name))
        return self._pattern.findall(valid_text(text))

    def count(self, text: str) -> int:
        if newer_than_tiktoken(text):  # the `regex` module's tables are newer than tiktoken's
            return reference_count(self.name, text)
        rank = self.rank
        n = 0
        for piece in self._pieces(text):
            data = piece.encode("utf-8")
            if rank(data) is not None:
                n += 1
            elif len(data) > MAX_PIECE:
                raise TooLong
            else:
                n += _merged(data, rank)
        return n

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


# What each Unicode class of the encodings' patterns holds among ASCII characters.
_ASCII_MEMBERS = {"L": "A-Za-z", "Lu": "A-Z", "Ll": "a-z", "Lt": "", "Lm": "", "Lo": "", "M": "", "N": "0-9"}
_CLASS = re.compile(r"\\p\{(\w+)\}|\\.|\[|\]|[^\\\[\]]+")


def ascii_pattern(name: str) -> re.Pattern[str] | None:
    """The pattern of ``name`` for text that is all ASCII, in stdlib ``re`` (no `regex` to
    import): each ``\\p{...}`` becomes its ASCII members, and ``re.ASCII``'s ``\\s`` is the
    Unicode ``\\s`` among them (tab to carriage return, and space). None where ``re`` cannot
    run it (possessive quantifiers before Python 3.11). tests/test_engines.py checks that it
    splits every ASCII text as the full pattern does."""
    out, depth = [], 0
    for m in _CLASS.finditer(pattern(name)):
        token = m.group(0)
        if m.group(1) is not None:
            members = _ASCII_MEMBERS[m.group(1)]
            token = members if depth else f"[{members}]"
        elif token == "[":
            depth += 1
        elif token == "]":
            depth -= 1
        out.append(token)
    try:
        return re.compile("".join(out), re.ASCII)
    except re.error:
        return None


def _merged(piece: bytes, rank: Any) -> int:
    """Parts left after merging the lowest-ranked adjacent pair until none is in the table
    (tiktoken's byte-pair merge; ties go to the leftmost pair)."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            r = rank(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best):
                best, at = r, i
        if best is None:
            break
        parts[at : at + 2] = [parts[at] + parts[at + 1]]
    return len(parts)


def valid_text(text: str) -> str:
    """``text`` as tiktoken encodes it: lone surrogates (only Python strings hold them, JSON
    readers refuse them) become U+FFFD, a split pair becomes its character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _checksum(body: Any) -> bytes:
    return zlib.crc32(body).to_bytes(4, "little") + bytes(28)


def _map(path: Path) -> mmap.mmap | None:
    """The table at ``path`` memory-mapped, if it is whole (magic, size, body CRC-32)."""
    try:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    ok = len(mm) > _HEADER and mm[:8] == MAGIC
    if ok:
        with memoryview(mm) as view, view[_HEADER:] as body:
            ok = _checksum(body) == mm[8:40]
    if not ok:
        mm.close()
        return None
    if hasattr(mm, "madvise") and hasattr(mmap, "MADV_RANDOM"):
        mm.madvise(mmap.MADV_RANDOM)
    return mm
