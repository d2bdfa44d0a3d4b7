"""Tokenizers: a tiny interface and a registry.

``o200k`` and ``cl100k`` are tiktoken encodings built offline; ``heuristic`` is the seeds'
``len/4`` baseline (UTF-8 bytes / 4, as Go's ``len`` counts), kept so every number can be
compared with what the reference plugin would have said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ctxfold.core.errors import UsageError
from ctxfold.core.names import did_you_mean

BATCH_THREADS = 2  # this is a 2-core tool; more threads only add contention


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


class TiktokenTokenizer:
    def __init__(self, name: str, encoding: str) -> None:
        from ctxfold.core.tokens.encodings import get_encoding

        self.name = name
        self._enc = get_encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if len(texts) < 4:
            return [len(self._enc.encode_ordinary(t)) for t in texts]
        return [len(t) for t in self._enc.encode_ordinary_batch(list(texts), num_threads=BATCH_THREADS)]


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
    if name not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {name!r}{did_you_mean(name, list(TOKENIZERS))}")
    if name not in _instances:
        _instances[name] = TOKENIZERS[name]()
    return _instances[name]
