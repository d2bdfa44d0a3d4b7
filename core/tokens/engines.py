"""The native engines that count an exact BPE encoding, each to tiktoken's counts.

tiktoken is the reference. rs-bpe loads fastest and counts faster than tiktoken; quicktok
counts fastest and releases the GIL, but takes longest to load. :class:`tokenizers.BpeTokenizer`
picks among them by the size of the input (tests/test_engines.py checks each against tiktoken).

rs-bpe and quicktok are used only in a version the test suite was run with. quicktok
(``quicktok-v1`` on PyPI, MIT) reads the tables its wheel ships, only when they hash to the
values pinned here, and is built straight from its bundled folder, never through a name lookup
that could fall back to a user data folder. rs-bpe's tables are compiled into the library; it
must count a probe text as tiktoken does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from ctxfold.hashes import sha256
from ctxfold.tokens.encodings import cannot_split, newer_than_tiktoken, reference_count


class _PerText:
    """An engine that counts one text per call (``_raw``). A text with lone surrogates, which
    an engine refuses (``_refused``), is counted with each replaced by U+FFFD, as tiktoken does."""

    _raw: Callable[[str], int]
    _refused: type[Exception] = UnicodeEncodeError

    def count(self, text: str) -> int:
        try:
            return int(self._raw(text))
        except self._refused:
            from ctxfold.tokens.ranktable import valid_text

            return int(self._raw(valid_text(text)))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        count = self.count
        return [count(t) for t in texts]


class TiktokenEngine(_PerText):
    """tiktoken (the reference), counting without building token lists.

    Counting needs no token ids: the encoder's buffer output (its byte size / 4) gives the
    count without a Python list per text, when that private call exists and agrees with the
    public encoder. Its encoder holds the GIL, so a second core is used from a second process
    (``tokens/parallel.py``).
    """

    name = "tiktoken"

    def __init__(self, encoding: str) -> None:
        from ctxfold.tokens.encodings import get_encoding

        self._enc = get_encoding(encoding)
        core = getattr(self._enc, "_core_bpe", None)
        to_buffer = getattr(core, "encode_to_tiktoken_buffer", None)
        if to_buffer is not None and _buffer_count_ok(to_buffer, self._enc.encode_ordinary):
            self._raw = lambda text: memoryview(to_buffer(text, _NO_SPECIAL)).nbytes // 4
        else:
            self._raw = lambda text: len(self._enc.encode_ordinary(text))

    def count(self, text: str) -> int:
        try:
            return super().count(text)
        except BaseException as err:
            failure = cannot_split(text, err)
            if failure is None:
                raise
            raise failure from None


_NO_SPECIAL: frozenset[str] = frozenset()


def _buffer_count_ok(to_buffer: Callable[..., Any], encode: Callable[[str], list[int]]) -> bool:
    """Trust the private buffer path only if it agrees with the public encoder."""
    probe = 'hello <|endoftext|> wörld 123 ✓ {"a": [1, 2]}\n\n  x'
    try:
        return bool(memoryview(to_buffer(probe, _NO_SPECIAL)).nbytes // 4 == len(encode(probe)))
    except Exception:
        return False


class QuicktokEngine(_PerText):
    """quicktok (C++, 3–4× tiktoken's speed on one thread, the same tokens). Its calls release
    the GIL, so a thread can count one batch while the main thread reads the next."""

    name = "quicktok"
    _refused = TypeError  # lone surrogates do not convert

    def __init__(self, tokenizer: Any, encoding: str) -> None:
        self._tok = tokenizer
        self._raw = tokenizer.count
        self.encoding = encoding

    def count(self, text: str) -> int:
        if newer_than_tiktoken(text):
            return reference_count(self.encoding, text)
        return super().count(text)

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


class RsBpeEngine(_PerText):
    """rs-bpe: tiktoken's counts at about 1.6× its speed on one thread, built in 0.05 s against
    tiktoken's 0.19 s. It holds the GIL, as tiktoken does (a second core is used from a second
    process). It splits every code point as tiktoken does, Unicode 17's included."""

    name = "rs-bpe"

    def __init__(self, tokenizer: Any) -> None:
        self._raw = tokenizer.count


def rs_bpe_encoding(name: str) -> tuple[Any, str]:
    """rs-bpe's tokenizer for ``name``, or None and why it cannot be used (not installed, a
    version not tested here, a count of the probe that is not tiktoken's)."""
    want = PROBE_COUNTS.get(name)
    if want is None:
        return None, f"rs-bpe is not used for {name}"
    rs_bpe, why = _tested("rs_bpe", "rs-bpe", RS_BPE_VERSIONS)
    if rs_bpe is None:
        return None, why
    try:
        from rs_bpe.bpe import openai

        tok = getattr(openai, name)()
        got = tok.count(PROBE)
    except Exception as err:  # a broken install: another engine stands in
        return None, f"rs-bpe failed to load {name}: {err}"
    if got != want:
        return None, f"rs-bpe counts {got} tokens in the probe text where tiktoken counts {want}"
    return tok, ""


# quicktok's bundled data, per encoding: the files it reads, with their sha256 (quicktok-v1 0.4.0).
QUICKTOK_VERSIONS = ("0.4.",)
QUICKTOK_SHA256 = {
    "o200k_base": {
        "o200k.vocab": "6b17521f79788c7ace48fc75f6edde125637a90b0018427e68f28d051b2ac1fe",
        "o200k.special": "95837e70aa1f68042293be2fb62ad5d748e7834940bf041299281ffa3addba3b",
        "uniclass_o200k.bin": "8dd93d0b36e25eecc2ac43f4bc99f56fbd360fb01bb144778152fa75a6518d6d",
    },
    "cl100k_base": {
        "cl100k.vocab": "4a945d497c213acde921bc8d69bc8dad9c603ea97c50c014e04ad0fadc09eecb",
        "cl100k.special": "ea2619b96af0aca009c6e1045b5819448449c5c7779f3d32f98e8f29821a5d19",
        "uniclass.bin": "6039f6f7bd056c0d211d02a907a8ed8f3317bb719fc495b9093f9cccca948809",
    },
}


def quicktok_encoding(name: str) -> tuple[Any, str]:
    """quicktok's tokenizer for ``name``, or None and why it cannot be used (not installed, a
    version not tested here, data that does not hash to the pinned values)."""
    pinned = QUICKTOK_SHA256.get(name)
    if pinned is None:
        return None, f"no quicktok data pinned for {name}"
    quicktok, why = _tested("quicktok", "quicktok", QUICKTOK_VERSIONS)
    if quicktok is None:
        return None, why
    folder = Path(quicktok.__file__).parent / "data"
    for file, digest in pinned.items():
        try:
            actual = sha256((folder / file).read_bytes()).hexdigest()
        except OSError as err:
            return None, f"quicktok data {file}: {err.strerror or err}"
        if actual != digest:
            return None, f"quicktok data {file} does not match its pinned sha256"
    try:
        return quicktok.Tokenizer(name, str(folder)), ""
    except Exception as err:  # a broken install: the reference engine stands in
        return None, f"quicktok failed to load {name}: {err}"


def _tested(module: str, label: str, versions: tuple[str, ...]) -> tuple[Any, str]:
    """The installed ``module``, or None and why it is not used (absent, or a version the test
    suite did not check against tiktoken)."""
    import importlib

    try:
        found = importlib.import_module(module)
    except ImportError:
        return None, f"{label} is not installed"
    version = str(getattr(found, "__version__", ""))
    if not version.startswith(versions):
        return None, f"{label} {version or '(unknown version)'} is not a version ctxfold was tested with"
    return found, ""
