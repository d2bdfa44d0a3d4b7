"""The native engines that count an exact BPE encoding, each to tiktoken's counts.

tiktoken is the reference. rs-bpe loads fastest and counts faster than tiktoken; quicktok
counts fastest and releases the GIL, but takes longest to load. :class:`tokenizers.BpeTokenizer`
picks among them by the size of the input (tests/test_engines.py checks each against tiktoken).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

from ctxfold.tokens.encodings import cannot_split, newer_than_tiktoken, reference_count


class TiktokenEngine:
    """tiktoken (the reference), counting without building token lists.

    Counting needs no token ids: the encoder's buffer output (its byte size / 4) gives the
    count without a Python list per text, when that private call exists and agrees with the
    public encoder. Its encoder holds the GIL, so a second core is used from a second process
    (``tokens/parallel.py``).
    """

    name = "tiktoken"
    releases_gil = False

    def __init__(self, encoding: str) -> None:
        from ctxfold.tokens.encodings import get_encoding

        self._enc = get_encoding(encoding)
        core = getattr(self._enc, "_core_bpe", None)
        to_buffer = getattr(core, "encode_to_tiktoken_buffer", None)
        if to_buffer is not None and _buffer_count_ok(to_buffer, self._enc.encode_ordinary):
            self._count: Callable[[str], int] = lambda text: (
                memoryview(to_buffer(text, _NO_SPECIAL)).nbytes // 4
            )
        else:
            self._count = lambda text: len(self._enc.encode_ordinary(text))

    def count(self, text: str) -> int:
        try:
            try:
                return int(self._count(text))
            except UnicodeEncodeError:  # lone surrogates: replaced, as tiktoken's encode does
                from ctxfold.tokens.ranktable import valid_text

                return int(self._count(valid_text(text)))
        except BaseException as err:
            raise cannot_split(text, err) from None

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        count = self.count
        return [count(t) for t in texts]


_NO_SPECIAL: frozenset[str] = frozenset()


def _buffer_count_ok(to_buffer: Callable[..., Any], encode: Callable[[str], list[int]]) -> bool:
    """Trust the private buffer path only if it agrees with the public encoder."""
    probe = 'hello <|endoftext|> wörld 123 ✓ {"a": [1, 2]}\n\n  x'
    try:
        return bool(memoryview(to_buffer(probe, _NO_SPECIAL)).nbytes // 4 == len(encode(probe)))
    except Exception:
        return False


class QuicktokEngine:
    """quicktok (C++, 3–4× tiktoken's speed on one thread, the same tokens). Its calls release
    the GIL, so a thread can count one batch while the main thread reads the next."""

    name = "quicktok"
    releases_gil = True

    def __init__(self, tokenizer: Any, encoding: str) -> None:
        self._tok = tokenizer
        self.encoding = encoding

    def count(self, text: str) -> int:
        if newer_than_tiktoken(text):
            return reference_count(self.encoding, text)
        try:
            return int(self._tok.count(text))
        except TypeError:  # lone surrogates do not convert: replaced, as tiktoken does
            from ctxfold.tokens.ranktable import valid_text

            return int(self._tok.count(valid_text(text)))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        count = self.count
        return [count(t) for t in texts]

    def count_batch_released(self, texts: Sequence[str], threads: int = 1) -> list[int]:
        """One call for the whole batch, the GIL released throughout (a per-text call would
        queue for the GIL after every text while another thread holds it)."""
        try:
            _, offsets = self._tok.encode_batch(list(texts), threads, False)
        except TypeError:
            from ctxfold.tokens.ranktable import valid_text

            _, offsets = self._tok.encode_batch([valid_text(t) for t in texts], threads, False)
        except ImportError:  # its arrays need numpy: without a working one, text by text
            return self.count_batch(texts)
        bounds = memoryview(offsets).tolist()
        counts = [b - a for a, b in pairwise(bounds)]
        for i, text in enumerate(texts):
            if newer_than_tiktoken(text):
                counts[i] = reference_count(self.encoding, text)
        return counts


# rs-bpe (``rs-bpe`` on PyPI, MIT, Rust): its tables are compiled into the library, so nothing is
# read, written or fetched. Used only in a version the test suite checked against tiktoken
# (every code point, every fixture, adversarial text), and when it counts the probe as tiktoken.
RS_BPE_VERSIONS = ("0.1.",)
PROBE = 'hello <|endoftext|> wörld 123 ✓ {"a": [1, 2]}\n\n  x 漢字 😀 they\'ll   indivisibly'
PROBE_COUNTS = {"o200k_base": 35, "cl100k_base": 36}  # tiktoken's (a test checks them)


class RsBpeEngine:
    """rs-bpe: tiktoken's counts at about 1.6× its speed on one thread, built in 0.05 s against
    tiktoken's 0.16 s. It holds the GIL, as tiktoken does (a second core is used from a second
    process). It splits every code point as tiktoken does, Unicode 17's included."""

    name = "rs-bpe"
    releases_gil = False

    def __init__(self, tokenizer: Any) -> None:
        self._count: Callable[[str], int] = tokenizer.count

    def count(self, text: str) -> int:
        try:
            return int(self._count(text))
        except UnicodeEncodeError:  # lone surrogates: replaced, as tiktoken does
            from ctxfold.tokens.ranktable import valid_text

            return int(self._count(valid_text(text)))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        count = self.count
        return [count(t) for t in texts]


def rs_bpe_encoding(name: str) -> tuple[Any, str]:
    """rs-bpe's tokenizer for ``name``, or None and why it cannot be used (not installed, a
    version not tested here, a count of the probe that is not tiktoken's)."""
    want = PROBE_COUNTS.get(name)
    if want is None:
        return None, f"rs-bpe is not used for {name}"
    try:
        import rs_bpe
        from rs_bpe.bpe import openai
    except ImportError:
        return None, "rs-bpe is not installed"
    version = str(getattr(rs_bpe, "__version__", ""))
    if not version.startswith(RS_BPE_VERSIONS):
        return None, f"rs-bpe {version or '(unknown version)'} is not a version ctxfold was tested with"
    try:
        tok = getattr(openai, name)()
        got = tok.count(PROBE)
    except Exception as err:  # a broken install: another engine stands in
        return None, f"rs-bpe failed to load {name}: {err}"
    if got != want:
        return None, f"rs-bpe counts {got} tokens in the probe text where tiktoken counts {want}"
    return tok, ""
