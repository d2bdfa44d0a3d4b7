"""Tokenizers: a tiny interface and a registry.

``o200k`` and ``cl100k`` are OpenAI's BPE encodings, built offline and counted exactly by the
fastest engine at hand (:class:`BpeTokenizer`); ``heuristic`` is the ``len/4`` baseline of the
ContextGuard reference design (UTF-8 bytes / 4, as Go's ``len`` counts), kept so every number
can be compared with what the reference plugin would have said.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ctxfold.errors import CtxfoldError, TokenizerError, UsageError
from ctxfold.names import did_you_mean
from ctxfold.tokens.ranktable import TooLong

if TYPE_CHECKING:
    from typing import TypeAlias

    from ctxfold.tokens.engines import QuicktokEngine, RsBpeEngine, TiktokenEngine

    Engine: TypeAlias = QuicktokEngine | RsBpeEngine | TiktokenEngine

ENGINE_VAR = "CTXFOLD_BPE"  # pin the engine (benchmarks, bug reports)
ENGINES = ("quicktok", "rs-bpe", "tiktoken", "python")
SPEED = ("tiktoken", "rs-bpe", "quicktok")  # the native engines, slowest to fastest counter
# Characters the Python engine may count in one process before a native engine is loaded: past
# this, loading rs-bpe (0.05 s) costs less than going on in Python (about 1 M characters/s).
LIGHT_CHARS = 60_000
LIGHT_BATCH = 50_000  # a batch this large means a large input: the native engine at once
# An input of known size (``plan``) up to this many bytes may start in Python (LIGHT_CHARS still
# caps it); a larger one loads a native engine at once instead of spending the budget first.
# `estimate` wall, Python against rs-bpe pinned (medians of 7): Claude Code 63 KB 0.181/0.219 s,
# 123 KB 0.244/0.222, 255 KB 0.228/0.226; Codex 125 KB 0.226/0.226.
LIGHT_INPUT = 96 * 1024
# From this many bytes of one file quicktok's speed pays back its longer load (0.48 s, against
# 0.05 s for rs-bpe). `estimate` wall, rs-bpe against quicktok pinned (rs-bpe with two helper
# processes from parallel.MIN_BYTES, medians of 2-3): Claude Code 20 MB 0.51/0.98 s, 50 MB
# 0.90/1.34, 100 MB 1.51/1.95, 200 MB 2.55/2.65; Codex 20 MB 0.68/1.04, 50 MB 1.25/1.39, 100 MB
# 1.98/1.94, 200 MB 3.54/2.84. Claude Code's logs are bound by their parse, Codex's by counting.
QUICK_INPUT = 100_000_000
# ... unless the text it holds to count, projected from its first megabytes
# (``parallel.DECIDE_BYTES``), is less than this: the load then costs more than quicktok saves
# (a Claude Code log's text is about a fifth of its bytes, most of the rest JSON around it; a
# Codex log's about half). `estimate` wall, quicktok against rs-bpe pinned (alternated, medians
# of 5-6; the text to count in brackets): Claude Code 100 MB 4.07/3.15 s (22 M characters),
# 200 MB 6.15/5.84 (44 M); Codex 100 MB 3.99/3.96 (53 M), 200 MB 6.86/8.16 (107 M). With
# helpers only (``tokens/parallel.py``).
QUICK_CHARS = 55_000_000
# A folder's files are counted in worker processes at once (the engine loaded before the fork).
# `report --brief` of folders of small logs, rs-bpe against quicktok pinned (medians of 3, 2 for
# the 2,000): 300 logs of 30 MB in all 0.85/1.12 s, 450 of 45 MB 1.15/1.35, 700 of 71 MB
# 1.69/1.72, 2,000 of 186 MB 3.91/3.42: they cross near 70 MB.
QUICK_FOLDER = 70_000_000


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


class BpeTokenizer:
    """An exact BPE encoding (``o200k_base``, ``cl100k_base``) with the engine that pays off.

    Every engine gives tiktoken's counts (tests/test_engines.py checks each against it). Small
    inputs are counted in Python from a memory-mapped table (nothing to load); a larger one
    loads a native engine, once per process: rs-bpe for a mid-sized input (it loads fastest),
    quicktok for one large in bytes and in text to count (it counts fastest), each when
    installed in a version tested here; tiktoken when neither can be had. ``CTXFOLD_BPE`` pins
    one engine.
    """

    def __init__(self, name: str, encoding: str) -> None:
        self.name = name
        self.encoding = encoding
        self._native: Engine | None = None
        self._light: Any = None
        self._light_left = LIGHT_CHARS
        self._light_off = False  # the input being read is too large to start in Python
        self._lock = threading.Lock()
        self.note = ""  # why a faster engine is not used, when one is not
        self._refused: set[str] = set()  # engines that could not be loaded here
        choice = os.environ.get(ENGINE_VAR, "").strip().lower()
        if choice and choice not in ENGINES:
            raise UsageError(f"{ENGINE_VAR}={choice!r}: use one of {', '.join(ENGINES)}")
        self._choice = choice
        # the native engine for the input being read (``plan``); pinned Python: the one for
        # the pieces too long to merge in Python
        self._want = {"": "quicktok", "python": "rs-bpe"}.get(choice, choice)
        self._light_tried = choice not in ("", "python")  # the Python engine is opened on first use
        if choice == "python":
            self._light_left = 1 << 62  # pinned: Python counts everything it can merge

    @property
    def engine(self) -> str:
        """The engine that counted last (``python`` until a large input loads a native one)."""
        if self._native is not None:
            return self._native.name
        return "python" if self._light is not None else "none yet"

    def plan(self, size: int, *, folder: bool = False, chars: int | None = None) -> None:
        """The input about to be read holds ``size`` bytes (0: unknown; ``folder``: the total
        of many files counted at once), and ``chars`` characters to count when they can be
        projected: it picks the engine that costs least for it, loading included. An engine
        already loaded stays in use unless a large input wants quicktok; ``CTXFOLD_BPE``
        overrides the choice."""
        if self._choice:
            return
        small = 0 < size < (QUICK_FOLDER if folder else QUICK_INPUT)
        self._want = "rs-bpe" if small or (chars is not None and chars < QUICK_CHARS) else "quicktok"
        self._light_off = size > LIGHT_INPUT

    def by_text(self, size: int) -> bool:
        """Whether the engine for an input of ``size`` bytes turns on the text it holds to
        count (``plan``'s ``chars``): a large input's, unless an engine is pinned or quicktok
        is loaded already (any input keeps it)."""
        loaded = self._native.name if self._native is not None else None
        return not self._choice and size >= QUICK_INPUT and loaded != "quicktok"

    def _small(self) -> Any:
        """The Python engine, when it may still count (opened on first use), else None."""
        if self._native is not None or self._light_off:
            return None
        if not self._light_tried:
            self._light_tried = True
            self._light = _light_engine(self.encoding, required=self._choice == "python")
        return self._light

    def native(self) -> Engine:
        """The native engine for the input being read, loaded on first use (before forking
        workers, so they share it)."""
        engine = self._native
        if engine is not None and self._serves(engine):
            return engine
        with self._lock:
            engine = self._native
            if engine is None or not self._serves(engine):
                engine = self._native = self._load(self._want)
            return engine

    def _serves(self, engine: Engine) -> bool:
        """Whether the loaded engine counts the input being read: one that counts slower than
        the engine it wants does not, unless each faster one up to it could not be loaded."""
        have, want = SPEED.index(engine.name), SPEED.index(self._want)
        return all(name in self._refused for name in SPEED[have + 1 : want + 1])

    def _load(self, want: str) -> Engine:
        """``want``, else the next engine slower than it; a pinned one that cannot be loaded
        is an error, not a silent fallback."""
        from ctxfold.tokens import engines

        for name in SPEED[SPEED.index(want) :: -1]:
            if name == "tiktoken":
                return engines.TiktokenEngine(self.encoding)
            if name in self._refused:
                continue
            if name == "quicktok":
                tok, why = engines.quicktok_encoding(self.encoding)
                if tok is not None:
                    return engines.QuicktokEngine(tok, self.encoding)
            else:
                tok, why = engines.rs_bpe_encoding(self.encoding)
                if tok is not None:
                    return engines.RsBpeEngine(tok)
            if self._choice == name:
                raise TokenizerError(f"{ENGINE_VAR}={name}: {why}")
            self.note = why
            self._refused.add(name)
        raise AssertionError("tiktoken is always last")

    def count(self, text: str) -> int:
        light = self._small() if len(text) <= self._light_left else None
        if light is not None:
            try:
                n: int = light.count(text)
            except TooLong:  # a piece too long to merge in Python: counted natively
                pass
            else:
                self._light_left -= len(text)
                return n
        return self.native().count(text)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        size = sum(map(len, texts)) if self._native is None else LIGHT_CHARS + 1
        light = self._small() if size <= min(LIGHT_BATCH, self._light_left) else None
        if light is not None:
            try:
                counts: list[int] = light.count_batch(texts)
            except TooLong:
                pass
            else:
                self._light_left -= size
                return counts
        return self.native().count_batch(texts)

    def released(self) -> Callable[[Sequence[str], int], list[int]] | None:
        """A batch count that releases the GIL (to run in a thread), if the engine has one."""
        engine = self.native()
        released: Callable[[Sequence[str], int], list[int]] | None = getattr(
            engine, "count_batch_released", None
        )
        return released


def _light_engine(encoding: str, *, required: bool) -> Any:
    """The Python engine over the memory-mapped table, or None when it cannot be had (no
    writable cache folder for its first build, no ``regex`` module): the native one stands in."""
    from ctxfold.tokens.ranktable import RankTable

    try:
        return RankTable(encoding)
    except (OSError, ImportError, CtxfoldError) as err:
        if required:
            raise TokenizerError(f"{ENGINE_VAR}=python: {err}") from None
        return None


class HeuristicTokenizer:
    """The reference design's ``len(text) / 4`` on UTF-8 bytes."""

    name = "heuristic"

    def count(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass")) // 4

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


TOKENIZERS: dict[str, Callable[[], Tokenizer]] = {
    "o200k": lambda: BpeTokenizer("o200k", "o200k_base"),
    "cl100k": lambda: BpeTokenizer("cl100k", "cl100k_base"),
    "heuristic": HeuristicTokenizer,
}

_instances: dict[str, Tokenizer] = {}


def get_tokenizer(name: str) -> Tokenizer:
    """The tokenizer ``name`` (built once, offline: no engine ever downloads anything).

    >>> ctxfold.get_tokenizer("o200k").count("Keep the conversation inside the window.")
    7
    """
    if name not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {name!r}{did_you_mean(name, list(TOKENIZERS))}")
    if name not in _instances:
        _instances[name] = TOKENIZERS[name]()
    return _instances[name]
