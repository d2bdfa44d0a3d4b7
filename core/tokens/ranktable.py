"""Small inputs without loading a native tokenizer: a memory-mapped rank table and BPE in Python.

Loading a native BPE engine costs a third of a second (its tables are built in memory at
start), more than a small session takes to read and count. The same ranks, written once to the
user's cache folder as an open-addressing hash table and memory-mapped, cost nothing to open;
Python then splits the text with the encoding's own pattern and merges byte pairs by rank as
tiktoken does, which is exact but slow (about 1 M characters a second), so the tokenizer counts
small inputs here and hands large ones, and any piece too long for a quadratic merge, to the
native engine (``tokenizers.BpeTokenizer``). Text that is all ASCII (most of a session's lines)
is split by the same pattern cut to ASCII, in stdlib ``re``: importing and compiling it in the
``regex`` module would cost a statusline 20-45 ms. So is text with a few plain non-ASCII
characters (dashes, arrows, accented letters), each added to the classes it belongs to.

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
from collections.abc import Iterable, Sequence
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
        self._few: dict[frozenset[str], re.Pattern[str] | None] = {}  # by a text's non-ASCII characters
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
        if self._ascii is not None:
            if text.isascii():
                return self._ascii.findall(text)
            few = self._few_others(text) if self._pattern is None else None
            if few is not None:
                return few.findall(text)
        if self._pattern is None:
            import regex  # 15-25 ms with the compile: a statusline's new line is mostly ASCII

            self._pattern = regex.compile(pattern(self.name))
        return self._pattern.findall(valid_text(text))

    def _few_others(self, text: str) -> re.Pattern[str] | None:
        """The stdlib pattern for ``text``'s few non-ASCII characters, while they are of a few
        sets: past ``FEW_PATTERNS``, `regex` is imported and splits the rest."""
        others = frozenset(c for c in set(text) if c > "\x7f")
        if others in self._few:
            return self._few[others]
        if len(self._few) >= FEW_PATTERNS or len(others) > FEW_OTHERS:
            return None
        found = self._few[others] = few_others_pattern(self.name, others)
        return found

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


def ascii_pattern(name: str, others: dict[str, str] | None = None) -> re.Pattern[str] | None:
    """The pattern of ``name`` for text that is all ASCII, in stdlib ``re`` (no `regex` to
    import): each ``\\p{...}`` becomes its ASCII members, and ``re.ASCII``'s ``\\s`` is the
    Unicode ``\\s`` among them (tab to carriage return, and space). ``others``: more members
    by class, for a text that holds those characters too (:func:`few_others_pattern`). None
    where ``re`` cannot run it (possessive quantifiers before Python 3.11).
    tests/test_engines.py checks that it splits every ASCII text as the full pattern does."""
    out, depth = [], 0
    for m in _CLASS.finditer(pattern(name)):
        token = m.group(0)
        if m.group(1) is not None:
            members = _ASCII_MEMBERS[m.group(1)] + (others or {}).get(m.group(1), "")
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


# The classes of the patterns each general category is a member of (\p{L} holds Lu, ...).
_IN_CLASSES = {
    **{cat: ("L", cat) for cat in ("Lu", "Ll", "Lt", "Lm", "Lo")},
    **dict.fromkeys(("Mn", "Mc", "Me"), ("M",)),
    **dict.fromkeys(("Nd", "Nl", "No"), ("N",)),
}
# Unicode's White_Space beyond ASCII (unchanged since Unicode 6.3), which \s matches
_WHITE_SPACE = "\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_ASCII_LETTER = re.compile("[A-Za-z]")
# The Unicode versions of Python 3.10 to 3.13, each checked against `regex`'s classes code point
# by code point: they agree but for U+0295, a lowercase letter until Unicode 16 made it "other".
_CHECKED_UNICODE = ("13.0.0", "14.0.0", "15.0.0", "15.1.0")
_RECLASSED = "\u0295"
FEW_OTHERS = 64  # distinct non-ASCII characters a text may hold to be split without `regex`
FEW_PATTERNS = 16  # sets of them compiled (about 1 ms each) before `regex` is worth importing


def few_others_pattern(name: str, others: Iterable[str]) -> re.Pattern[str] | None:
    """The pattern of ``name`` in stdlib ``re`` for a text whose non-ASCII characters are
    ``others`` (a few): each is put in the classes its general category makes it a member of,
    or None when one is not plain (:func:`plain_classes`). Most of a session's text that is
    not all ASCII has a few dashes, arrows or accented letters: it is split without importing
    `regex` (20-45 ms, a fifth of a statusline's run). tests/test_engines.py checks every code
    point's classes against `regex`'s and the splits of mixed texts."""
    members: dict[str, list[str]] = {}
    for c in others:
        classes = plain_classes(c)
        if classes is None:
            return None
        for cls in classes:
            members.setdefault(cls, []).append(re.escape(c))
    return ascii_pattern(name, {cls: "".join(sorted(chars)) for cls, chars in members.items()})


def plain_classes(c: str) -> tuple[str, ...] | None:
    """The pattern classes non-ASCII ``c`` is a member of, by this Python's ``unicodedata``;
    None when ``re.ASCII`` cannot split it as `regex` does: tables of a Unicode version not
    checked, a character they class otherwise than `regex` or do not assign, a surrogate, a
    space (``re.ASCII``'s ``\\s`` would miss it), or one whose case forms hold an ASCII letter
    (the contractions' ``(?i:'s|...)`` would match it in `regex`)."""
    import unicodedata

    if unicodedata.unidata_version not in _CHECKED_UNICODE or c in _RECLASSED:
        return None
    cat = unicodedata.category(c)
    if cat in ("Cn", "Cs") or c in _WHITE_SPACE or c.isspace():
        return None
    if _ASCII_LETTER.search(c.lower() + c.upper() + c.casefold()):
        return None
    return _IN_CLASSES.get(cat, ())


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
