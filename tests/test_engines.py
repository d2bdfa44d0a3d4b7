"""Every BPE engine gives tiktoken's counts: on every fixture (bundled and real) and on generated
adversarial text. tiktoken's own ``encode_ordinary`` is the reference throughout."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxfold.errors import TokenizerError
from ctxfold.tokens import encodings, ranktable, tokenizers
from ctxfold.tokens import engines as native
from ctxfold.tokens.countstore import CountStore
from ctxfold.tokens.engines import QuicktokEngine, RsBpeEngine, TiktokenEngine
from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.incremental import estimate_incremental
from ctxfold.tokens.ranktable import RankTable, TooLong
from ctxfold.tokens.tokenizers import BpeTokenizer

quicktok = pytest.importorskip("quicktok", reason="quicktok has no wheel for this platform")
rs_bpe = pytest.importorskip("rs_bpe", reason="rs-bpe has no wheel for this platform")
ENCODINGS = ("o200k_base", "cl100k_base")
NATIVE = ("quicktok", "rs-bpe", "tiktoken")
PYTHON_CHARS_PER_FILE = 60_000  # the Python engine counts small inputs only: a fair sample each


def _reference(encoding: str) -> object:
    return encodings.get_encoding(encoding)


def _engines(encoding: str) -> dict[str, object]:
    qt, why = native.quicktok_encoding(encoding)
    assert qt is not None, why  # installed in a tested version, data as pinned
    rs, why = native.rs_bpe_encoding(encoding)
    assert rs is not None, why  # installed in a tested version, the probe counted as tiktoken does
    return {
        "quicktok": QuicktokEngine(qt, encoding),
        "rs-bpe": RsBpeEngine(rs),
        "tiktoken": TiktokenEngine(encoding),
        "python": RankTable(encoding),
    }


def _fixture_texts(path: Path) -> list[str]:
    """The texts ctxfold tokenizes for ``path`` (recorded from a real estimate), and its raw text."""
    seen: list[str] = []

    class Recording:
        name = "o200k"

        def count(self, text: str) -> int:
            seen.append(text)
            return 0

        def count_batch(self, texts: list[str]) -> list[int]:
            seen.extend(texts)
            return [0] * len(texts)

    real = tokenizers._instances.get("o200k")
    tokenizers._instances["o200k"] = Recording()  # type: ignore[assignment]
    try:
        estimate_file(path, model="gpt-4o")
    finally:
        if real is None:
            tokenizers._instances.pop("o200k")
        else:
            tokenizers._instances["o200k"] = real
    return [*seen, path.read_text(encoding="utf-8", errors="replace")]


def _all_fixture_files() -> list[Path]:
    from conftest import REAL

    real = sorted(REAL.glob("*/*.json*")) if REAL.is_dir() else []
    return sorted(p for p in FIXTURES.rglob("*.json*") if p.is_file()) + real


FILES = _all_fixture_files()


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_every_engine_counts_every_fixture_as_tiktoken(path: Path) -> None:
    try:
        texts = _fixture_texts(path)
    except Exception:  # a fixture of bad input on purpose: its raw text is still text to count
        texts = [path.read_text(encoding="utf-8", errors="replace")]
    for encoding in ENCODINGS:
        ref = _reference(encoding)
        want = [len(ref.encode_ordinary(t)) for t in texts]  # type: ignore[attr-defined]
        engines = _cached_engines(encoding)
        for name in NATIVE:
            assert engines[name].count_batch(texts) == want, (name, encoding)  # type: ignore[attr-defined]
        assert engines["quicktok"].count_batch_released(texts, 2) == want  # type: ignore[attr-defined]
        python = engines["python"]
        budget = PYTHON_CHARS_PER_FILE
        for text, n in zip(texts, want, strict=True):
            if len(text) > budget:
                continue
            budget -= len(text)
            with contextlib.suppress(TooLong):  # a piece too long to merge in Python: counted natively
                assert python.count(text) == n, (encoding, text[:200])  # type: ignore[attr-defined]


def _adversarial(rng: random.Random) -> Iterator[str]:
    """Text built to hit the pattern's and the merge's edge cases."""
    specials = ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|fim_middle|>", "<|im_start|>"]
    bits = [
        " " * 1000,
        "\t \n" * 300,
        "\r\n" * 200 + "x",
        "  \n\n  \n",
        " " * 17 + "a",
        "1" * 2000,
        "1234567890" * 50,
        "３４５６७८९٠١",
        "😀" * 300,
        "👩‍👩‍👧‍👦🏳️‍🌈🇫🇷👍🏽",
        "漢字仮名交じり文" * 80,
        "한국어 텍스트 " * 40,
        "e\u0301\u0302\u0303 a\u20dd",
        "مرحبا بالعالم",
        "\x00\x01\x1f\x7f",
        "\ud800",
        "\udfff",
        "a\ud83d",
        "\ude00b",
        "\ud83d\ude00",  # a pair written as two code points: one emoji to tiktoken
        "\ude00\ud83d",
        "it's He'LL they'VE I'M",
        "x" * 3000,
        "=" * 500,
        '{"a": [1, 2, {"b": null}]}\n' * 30,
        "\u00a0\u2009\u3000 \u200b",
        *specials,
        *(s + s for s in specials),
        "".join(specials),
    ]
    yield from bits
    for _ in range(60):
        yield "".join(rng.choice(bits)[: rng.randint(1, 40)] for _ in range(rng.randint(2, 30)))


ADVERSARIAL = list(_adversarial(random.Random(20)))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_engine_counts_adversarial_text_as_tiktoken(encoding: str) -> None:
    ref = _reference(encoding)
    want = [len(ref.encode_ordinary(t)) for t in ADVERSARIAL]  # type: ignore[attr-defined]
    engines = _cached_engines(encoding)
    for name in NATIVE:
        assert engines[name].count_batch(ADVERSARIAL) == want, name  # type: ignore[attr-defined]
    assert engines["quicktok"].count_batch_released(ADVERSARIAL, 1) == want  # type: ignore[attr-defined]
    python = engines["python"]
    for text, n in zip(ADVERSARIAL, want, strict=True):
        try:
            assert python.count(text) == n, text[:100]  # type: ignore[attr-defined]
        except TooLong:
            assert len(text.encode("utf-8", "replace")) > ranktable.MAX_PIECE  # counted natively
    tok = BpeTokenizer("x", encoding)  # whichever engine it picks, and the switch between them
    assert [tok.count(t) for t in ADVERSARIAL] == want
    assert tok.count_batch(ADVERSARIAL) == want


TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=80)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=6))
@example(["\U000323b0/A"])  # CJK Extension J (Unicode 17): tiktoken's tables do not know it yet
def test_every_engine_agrees_on_any_text(texts: list[str]) -> None:
    text = "".join(texts)
    for encoding in ENCODINGS:
        want = len(_reference(encoding).encode_ordinary(text))  # type: ignore[attr-defined]
        engines = _cached_engines(encoding)
        for name in (*NATIVE, "python"):
            assert engines[name].count(text) == want, name  # type: ignore[attr-defined]


_ASCII_SAMPLE = "aZ1 \n\r\t\x0b\x0c\x1c'sLl/!_\x00~"  # a member of each class and each quirk


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_ascii_pattern_splits_every_ascii_text_as_the_full_one(encoding: str) -> None:
    """The Python engine splits ASCII text with stdlib ``re`` (no `regex` to import): every
    text of one or two ASCII characters, and of up to four from a sample of each kind, is cut
    into the same pieces as by the full pattern."""
    import itertools

    import regex

    fast = ranktable.ascii_pattern(encoding)
    if fast is None:
        pytest.skip("this Python's re has no possessive quantifiers: the full pattern is used")
    full = regex.compile(encodings.pattern(encoding))
    chars = [chr(i) for i in range(128)]
    texts = [*chars, *map("".join, itertools.product(chars, repeat=2))]
    for n in (3, 4):
        texts += map("".join, itertools.product(_ASCII_SAMPLE, repeat=n))
    assert [t for t in texts if fast.findall(t) != full.findall(t)] == []


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(_ASCII_SAMPLE + 'bcdXY09.,-()"{} '), max_size=120))
def test_the_python_engine_counts_ascii_text_as_tiktoken(text: str) -> None:
    for encoding in ENCODINGS:
        want = len(_reference(encoding).encode_ordinary(text))  # type: ignore[attr-defined]
        assert _cached_engines(encoding)["python"].count(text) == want  # type: ignore[attr-defined]


# a non-ASCII member of each general category a pattern class holds, and of others
_OTHERS_SAMPLE = "éÉǅʰ中\u0301\u0903\u20dd١Ⅻ½—→🙂’€"


def test_every_plain_code_point_is_in_the_classes_regex_puts_it_in() -> None:
    """The characters the Python engine puts in a class from this Python's ``unicodedata``
    (``ranktable.plain_classes``), checked against `regex`'s own tables, code point by code
    point: the same ``\\p{...}`` classes, never ``\\s``, never a case form of an ASCII letter."""
    import regex

    from ctxfold.tokens.encodings import NEWER_THAN_TIKTOKEN

    listed = {cp for a, b in NEWER_THAN_TIKTOKEN for cp in range(a, b + 1)}
    plain = {
        c: classes
        for cp in range(0x80, 0x110000)
        if not 0xD800 <= cp < 0xE000 and cp not in listed
        for c in [chr(cp)]
        if (classes := ranktable.plain_classes(c)) is not None
    }
    assert len(plain) > 100_000  # most assigned code points are plain
    text = "".join(plain)
    for cls in ("L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "N"):
        theirs = set(regex.findall(rf"\p{{{cls}}}", text))
        ours = {c for c, classes in plain.items() if cls in classes}
        assert sorted(ours ^ theirs) == [], cls
    assert regex.findall(r"\s", text) == []
    assert regex.findall(r"(?i:[a-z])", text) == []


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_text_with_a_few_plain_others_splits_as_with_the_full_pattern(encoding: str) -> None:
    """Every text of up to three characters from samples of ASCII and of non-ASCII of each
    category is cut by the stdlib pattern for its characters as by the full one."""
    import itertools

    import regex

    if ranktable.ascii_pattern(encoding) is None:
        pytest.skip(f"this Python's re cannot run {encoding}'s pattern (possessive quantifiers: 3.11)")
    full = regex.compile(encodings.pattern(encoding))
    sample = _ASCII_SAMPLE + _OTHERS_SAMPLE
    wrong = []
    made: dict[frozenset[str], Any] = {}  # a pattern per set of characters, as the engine keeps them
    for n in (1, 2, 3):
        for chars in itertools.product(sample, repeat=n):
            text = "".join(chars)
            others = frozenset(c for c in text if c > "\x7f")
            if others not in made:
                made[others] = ranktable.few_others_pattern(encoding, others)
            fast = made[others]
            assert fast is not None
            if fast.findall(text) != full.findall(text):
                wrong.append(text)
    assert wrong == []
    for odd in ("\xa0", "\u2003", "\u017f", "\u212a", "\u0130", "\u0378", "\u0295"):
        assert ranktable.few_others_pattern(encoding, {"é", odd}) is None, repr(odd)


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(_ASCII_SAMPLE + _OTHERS_SAMPLE + 'bcdXY09.,-()"{} \xa0ſ'), max_size=80))
def test_the_python_engine_counts_text_with_a_few_others_as_tiktoken(text: str) -> None:
    """A fresh table each time: the stdlib patterns are used for its first sets of characters."""
    for encoding in ENCODINGS:
        want = len(_reference(encoding).encode_ordinary(text))  # type: ignore[attr-defined]
        table = RankTable(encoding, _cached_engines(encoding)["python"]._path)  # type: ignore[attr-defined]
        assert table.count(text) == want
        stdlib = ranktable.ascii_pattern(encoding) is not None  # not cl100k's before Python 3.11
        assert table._pattern is None or not text.isascii() or not stdlib


_ENGINES: dict[str, dict[str, object]] = {}


def _cached_engines(encoding: str) -> dict[str, object]:
    """Built once per run, inside a test (so the table goes to that test's private cache)."""
    if encoding not in _ENGINES:
        _ENGINES[encoding] = _engines(encoding)
    return _ENGINES[encoding]


def test_the_tokenizer_switches_to_the_native_engine_on_a_large_input() -> None:
    tok = BpeTokenizer("o200k", "o200k_base")
    assert tok.count("a small text") == 3 and tok.engine == "python"
    big = ["word " * 20_000]
    assert tok.count_batch(big) == [len(_reference("o200k_base").encode_ordinary(big[0]))]  # type: ignore[attr-defined]
    assert tok.engine == "quicktok" and tok.count("a small text") == 3


def test_the_engine_suits_the_size_of_the_input() -> None:
    big = ["word " * 20_000]
    want = [len(_reference("o200k_base").encode_ordinary(big[0]))]  # type: ignore[attr-defined]
    tok = BpeTokenizer("o200k", "o200k_base")
    tok.plan(tokenizers.LIGHT_INPUT)  # small: Python first, as without a plan
    assert tok.count("a small text") == 3 and tok.engine == "python"
    tok.plan(1_500_000)  # a typical session: rs-bpe loads faster than quicktok, at once
    assert tok.count("a small text") == 3 and tok.engine == "rs-bpe"
    tok.plan(tokenizers.QUICK_FOLDER)  # a mid-sized file: rs-bpe still costs less
    assert tok.count("a small text") == 3 and tok.engine == "rs-bpe"
    tok.plan(tokenizers.QUICK_INPUT)  # large: quicktok counts faster
    assert tok.count_batch(big) == want and tok.engine == "quicktok"
    folder = BpeTokenizer("o200k", "o200k_base")
    folder.plan(tokenizers.QUICK_FOLDER, folder=True)  # many files at once: quicktok sooner
    assert folder.count_batch(big) == want and folder.engine == "quicktok"
    tok.plan(1_500_000)  # quicktok is loaded now: it serves the smaller input too
    assert tok.count("a small text") == 3 and tok.engine == "quicktok"


def test_a_pinned_engine_ignores_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "quicktok")
    tok = BpeTokenizer("o200k", "o200k_base")
    tok.plan(1_500_000)
    assert tok.count("hello world") == 2 and tok.engine == "quicktok"
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "tiktoken")
    tok = BpeTokenizer("o200k", "o200k_base")
    tok.plan(tokenizers.QUICK_INPUT * 4)
    assert tok.count("hello world") == 2 and tok.engine == "tiktoken"


def test_an_estimate_plans_the_engine_by_the_files_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through estimate_file: a mid-sized log is counted by rs-bpe, to quicktok's counts."""
    lines = (FIXTURES / "claude-code" / "subagent.jsonl").read_bytes().splitlines(keepends=True)
    mid = tmp_path / "mid.jsonl"
    with mid.open("wb") as f:
        while f.tell() <= tokenizers.LIGHT_INPUT:
            f.writelines(lines)
    counts = {}
    for pin in ("", "quicktok"):
        monkeypatch.setenv(tokenizers.ENGINE_VAR, pin)
        monkeypatch.setattr(tokenizers, "_instances", {})  # a fresh process's tokenizers
        counts[pin] = estimate_file(mid).context_tokens
        counts[pin + " engine"] = tokenizers.get_tokenizer("o200k").engine  # type: ignore[attr-defined]
    assert counts[" engine"] == "rs-bpe" and counts["quicktok engine"] == "quicktok"
    assert counts[""] == counts["quicktok"]


def test_a_file_read_on_from_the_count_cache_loads_one_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines read on after the cached prefix plan the engine; the last ones do not plan it
    again as an input of unknown size (which loaded quicktok beside tiktoken: 0.4 s, 80 MB)."""
    lines = (FIXTURES / "claude-code" / "subagent.jsonl").read_bytes().splitlines(keepends=True)
    log = tmp_path / "grown.jsonl"
    with log.open("wb") as f:
        while f.tell() <= tokenizers.LIGHT_INPUT:
            f.writelines(lines)
    store = CountStore(tmp_path / "counts")
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "")
    estimate_incremental(str(log), store=store)
    with log.open("ab") as f:
        while f.tell() <= 3 * tokenizers.LIGHT_INPUT:
            f.writelines(lines)
    loads: list[str] = []
    load = BpeTokenizer._load
    monkeypatch.setattr(BpeTokenizer, "_load", lambda self, want: loads.append(want) or load(self, want))
    monkeypatch.setattr(tokenizers, "_instances", {})  # a fresh process's tokenizers
    trace: dict[str, int] = {}
    grown = estimate_incremental(str(log), store=store, trace=trace)
    assert trace["resumed"] > 0 and loads == ["rs-bpe"]
    monkeypatch.setattr(tokenizers, "_instances", {})
    assert grown.context_tokens == estimate_file(log).context_tokens


def test_quicktok_with_unpinned_data_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned = {k: dict(v) for k, v in native.QUICKTOK_SHA256.items()}
    pinned["o200k_base"]["o200k.vocab"] = "0" * 64
    monkeypatch.setattr(native, "QUICKTOK_SHA256", pinned)
    tok = BpeTokenizer("o200k", "o200k_base")
    assert tok.native().name == "rs-bpe" and "pinned sha256" in tok.note  # the next fastest
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "quicktok")
    with pytest.raises(TokenizerError, match="does not match its pinned sha256"):
        BpeTokenizer("o200k", "o200k_base").native()


def test_quicktok_of_an_untested_version_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quicktok, "__version__", "9.0.0")
    tok, why = native.quicktok_encoding("o200k_base")
    assert tok is None and "9.0.0 is not a version" in why


def test_rs_bpe_of_an_untested_version_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rs_bpe, "__version__", "9.0.0")
    tok, why = native.rs_bpe_encoding("o200k_base")
    assert tok is None and "9.0.0 is not a version" in why


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_probe_counts_are_tiktokens(encoding: str) -> None:
    want = len(_reference(encoding).encode_ordinary(native.PROBE))  # type: ignore[attr-defined]
    assert native.PROBE_COUNTS[encoding] == want


def test_rs_bpe_that_miscounts_the_probe_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(native.PROBE_COUNTS, "o200k_base", native.PROBE_COUNTS["o200k_base"] + 1)
    tok = BpeTokenizer("o200k", "o200k_base")
    tok.plan(1_500_000)
    assert tok.count("hello world") == 2 and tok.engine == "tiktoken"
    assert "where tiktoken counts" in tok.note
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "rs-bpe")
    with pytest.raises(TokenizerError, match="rs-bpe counts"):
        BpeTokenizer("o200k", "o200k_base").native()


def test_a_slower_engine_stands_in_only_for_one_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """rs-bpe refused: a mid-sized input is counted by tiktoken, and a large one that follows
    still loads quicktok; quicktok refused too: tiktoken serves it."""
    monkeypatch.setitem(native.PROBE_COUNTS, "o200k_base", -1)
    tok = BpeTokenizer("o200k", "o200k_base")
    tok.plan(1_500_000)
    assert tok.count("hello world") == 2 and tok.engine == "tiktoken"
    tok.plan(tokenizers.QUICK_INPUT)
    assert tok.count("hello world") == 2 and tok.engine == "quicktok"
    monkeypatch.setattr(native, "QUICKTOK_SHA256", {})
    tok = BpeTokenizer("o200k", "o200k_base")
    tok.plan(tokenizers.QUICK_INPUT)
    assert tok.count("hello world") == 2 and tok.engine == "tiktoken"
    assert "tiktoken counts" in tok.note


def test_engine_can_be_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "tiktoken")
    tok = BpeTokenizer("o200k", "o200k_base")
    assert tok.count("hello world") == 2 and tok.engine == "tiktoken"
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "rs-bpe")
    tok = BpeTokenizer("o200k", "o200k_base")
    tok.plan(tokenizers.QUICK_INPUT * 4)
    assert tok.count("hello world") == 2 and tok.engine == "rs-bpe"
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "rust")
    with pytest.raises(Exception, match="use one of quicktok, rs-bpe, tiktoken, python"):
        BpeTokenizer("o200k", "o200k_base")


def test_quicktok_loads_from_its_own_folder_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Built from the wheel's data folder, never by name (a name lookup may fall back to a user
    data folder and create it): nothing is fetched or written."""
    import quicktok.importer

    def no_user_folder() -> str:
        raise AssertionError("quicktok looked for a user data folder")

    monkeypatch.setattr(quicktok.importer, "data_home", no_user_folder)
    tok, why = native.quicktok_encoding("cl100k_base")
    assert tok is not None, why
    assert tok.encode_ordinary("hello world") == [15339, 1917]
    assert not (Path.home() / ".cache" / "quicktok").exists()


def test_a_damaged_table_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "table.bin"
    RankTable("cl100k_base", path)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF  # one flipped byte in the keys
    path.write_bytes(bytes(data))
    table = RankTable("cl100k_base", path)
    assert table.count("hello world") == 2
    assert path.read_bytes() != bytes(data)


_CONTEXTS = ("{c}/A", "a{c}a", "A{c}", "1{c}1", " {c} x", "{c}{c}")
# Planes 4-13 are unassigned in every Unicode version so far and planes 15-16 are private use,
# so every engine and table classes all of a plane alike: one code point in 31 of each (a block
# newly assigned there is far longer than 31) stands for the rest: 21 s of the suite become 7.
QUIET_PLANES, QUIET_STEP = ((0x40000, 0xE0000), (0xF0000, 0x110000)), 31


def _code_points(listed: set[int]) -> list[int]:
    """Every non-ASCII code point but the surrogates and ``listed``; the quiet planes sampled."""
    ((a, b), (c, d)), step = QUIET_PLANES, QUIET_STEP
    spans = [range(0x80, a), range(a, b, step), range(b, c), range(c, d, step)]
    return [cp for span in spans for cp in span if not 0xD800 <= cp < 0xE000 and cp not in listed]


def _differing(
    counts: dict[str, Callable[[str], int]], reference: Callable[[str], int], cps: list[int], chunk: int
) -> dict[str, list[int]]:
    """The code points among ``cps`` that each of ``counts`` splits otherwise than ``reference``
    in one of the contexts: counted a chunk at a time (each chunk's text built and counted by
    the reference once for all), the chunks that differ halved down to one."""
    line = " ".join(_CONTEXTS)
    out: dict[str, list[int]] = {name: [] for name in counts}
    stack = [(cps[i : i + chunk], tuple(counts)) for i in range(0, len(cps), chunk)]
    while stack:
        part, names = stack.pop()
        text = "\n".join(line.format(c=chr(cp)) for cp in part)
        want = reference(text)
        wrong = tuple(name for name in names if counts[name](text) != want)
        if not wrong:
            continue
        if len(part) == 1:
            for name in wrong:
                out[name].append(part[0])
        else:
            stack += [(part[: len(part) // 2], wrong), (part[len(part) // 2 :], wrong)]
    return {name: sorted(found) for name, found in out.items()}


def test_the_code_points_tiktoken_classes_otherwise_are_all_listed() -> None:
    """quicktok and the `regex` module know a newer Unicode than tiktoken: every code point
    outside ``NEWER_THAN_TIKTOKEN`` is split alike by quicktok (all of them, the quiet planes
    sampled) and the Python engine (a sample: it is slow), and a text holding a listed one gets
    tiktoken's count.
    rs-bpe splits every code point as tiktoken does, the listed ones too."""
    from ctxfold.tokens.encodings import NEWER_THAN_TIKTOKEN, newer_than_tiktoken

    listed = {cp for a, b in NEWER_THAN_TIKTOKEN for cp in range(a, b + 1)}
    others = _code_points(listed)
    encoding = "o200k_base"
    engines = _cached_engines(encoding)
    reference = _reference(encoding).encode_ordinary  # type: ignore[attr-defined]

    def want(text: str) -> int:
        return len(reference(text))

    # texts without a listed code point: each engine counts them itself
    quicktok, rs_bpe, python = (engines[name].count for name in ("quicktok", "rs-bpe", "python"))  # type: ignore[attr-defined]
    assert _differing({"quicktok": quicktok, "rs-bpe": rs_bpe}, want, others, 4096) == {
        "quicktok": [],
        "rs-bpe": [],
    }
    assert _differing({"python": python}, want, others[::97], 512) == {"python": []}
    # rs-bpe classes characters as tiktoken does (it needs no check): the listed ones split alike too
    assert _differing({"rs-bpe": rs_bpe}, want, sorted(listed), 4096) == {"rs-bpe": []}
    for a, b in NEWER_THAN_TIKTOKEN:
        text = "".join(f.format(c=chr(cp)) for cp in (a, b) for f in _CONTEXTS)
        assert newer_than_tiktoken(text)
        assert quicktok(text) == want(text)
        assert engines["quicktok"].count_batch_released([text, "x"]) == [want(text), 1]  # type: ignore[attr-defined]
        assert python(text) == want(text)


@pytest.mark.parametrize("context", ["é🙂→🙂{c}", "{c}" + "🙂" * 3])
def test_the_check_for_newer_code_points_finds_exactly_the_listed_ones(context: str) -> None:
    """The check runs one fast class (the listed BMP ranges and the whole astral plane) and
    looks astral hits up in the list: emoji before or after must not hide a listed code point
    nor make an unlisted one look listed. Every code point (the quiet planes sampled), in each context."""
    from ctxfold.tokens.encodings import NEWER_THAN_TIKTOKEN, newer_than_tiktoken

    listed = {cp for a, b in NEWER_THAN_TIKTOKEN for cp in range(a, b + 1)}
    wrong = [
        hex(cp)
        for cp in _code_points(set())
        if newer_than_tiktoken(context.format(c=chr(cp))) != (cp in listed)
    ]
    assert not wrong


def test_a_run_tiktoken_cannot_split_is_counted_by_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tiktoken's pattern runs out of stack on a million spaces (a tool's blank output): the
    engines ctxfold picks count it, alike, and tiktoken pinned says so in one line."""
    text = " " * 1_000_000
    engines = _cached_engines("o200k_base")
    counts = {name: engines[name].count(text) for name in ("quicktok", "rs-bpe")}  # type: ignore[attr-defined]
    assert counts["quicktok"] == counts["rs-bpe"] > 0
    with pytest.raises(TokenizerError, match="tiktoken cannot split a text of 1,000,000 characters"):
        engines["tiktoken"].count(text)  # type: ignore[attr-defined]
    log = tmp_path / "blank.jsonl"
    log.write_text(f'{{"role": "user", "content": "hi"}}\n{{"role": "assistant", "content": "{text}"}}\n')
    monkeypatch.setenv(tokenizers.ENGINE_VAR, "")
    monkeypatch.setattr(tokenizers, "_instances", {})  # a fresh process's tokenizers
    est = estimate_file(log)  # a mid-sized log: rs-bpe
    assert tokenizers.get_tokenizer("o200k").engine == "rs-bpe"  # type: ignore[attr-defined]
    assert est.replay.by_category["assistant"] >= counts["rs-bpe"]
