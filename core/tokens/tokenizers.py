"""Tokenizers: a tiny interface and a registry.

``o200k`` and ``cl100k`` are tiktoken encodings built offline; ``heuristic`` is the seeds'
``len/4`` baseline (UTF-8 bytes / 4, as Go's ``len`` counts), kept so every number can be
compared with what the reference plugin would have said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ctxfold.core.errors import UsageError
from ctxfold.core.names import did_you_mean

BATCH_THREADS = 2  # this is a 2-core tool; more threads only add contention


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


class TiktokenTokenizer:
    """tiktoken counts, two threads at a time.

    tiktoken's ``encode_ordinary_batch`` builds a thread pool and a future per text on every
    call and returns every token list; on this 2-core machine that measured slower than one
    thread (bench/estimate.py). Counting needs no token lists: each half of a batch (split by
    characters) is counted in its own thread, the Rust encoder releasing the GIL, through the
    encoder's buffer output when available (its byte size / 4 = the token count).
    """

    def __init__(self, name: str, encoding: str) -> None:
        from ctxfold.core.tokens.encodings import get_encoding

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
        total = sum(len(t) for t in texts)
        if total < PARALLEL_MIN_CHARS or len(texts) < 2:
            return [self._count(t) for t in texts]
        half, acc = len(texts), 0
        for i, t in enumerate(texts):
            acc += len(t)
            if acc >= total // 2:
                half = i + 1
                break
        second = _pool().submit(lambda: [self._count(t) for t in texts[half:]])
        first = [self._count(t) for t in texts[:half]]
        return first + second.result()


PARALLEL_MIN_CHARS = 100_000
_NO_SPECIAL: frozenset[str] = frozenset()
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=BATCH_THREADS - 1, thread_name_prefix="ctxfold-tok")
    return _POOL


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
    if name not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {name!r}{did_you_mean(name, list(TOKENIZERS))}")
    if name not in _instances:
        _instances[name] = TOKENIZERS[name]()
    return _instances[name]
