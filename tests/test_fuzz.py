"""Fuzzing every path a user's file takes: mutated real sessions through estimate, report,
validate and compact (readers, counting, the replay, the writers, the state file). Only a
ctxfold error may come out; anything else is a crash, and a crash is a bug.

Each example takes a session of one format (the bundled fixtures; with ``../shared`` present, the
real sessions too, cut to their first 60 lines) and mutates most of its lines: a key dropped, a
value retyped, nested deep (under and over the cap), a count made huge, negative or non-finite, the
line truncated, a byte flipped, a BOM, a NUL or a lone surrogate put in (a line in four), lines
reordered, duplicated (ids twice) or dropped (orphan tool calls and results). Each file goes
through the commands as it is and with ``--skip-invalid``, so the lines after a bad one are read.

The fast profile runs in the suite; ``python -m pytest -m fuzz --hypothesis-profile=long``
mutates well over 100,000 lines and prints the tally (lines mutated, outcomes) at the end.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, REAL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfold.compaction.run import CompactOptions, compact_file
from ctxfold.engine.calibration import Prior
from ctxfold.engine.now import estimate_session
from ctxfold.engine.replay import replay
from ctxfold.errors import CtxfoldError
from ctxfold.formats.registry import FORMATS
from ctxfold.formats.validate import validate
from ctxfold.providers.offline import OfflineSummarizer

pytestmark = pytest.mark.fuzz

LONG = "long"  # registered in conftest.py, where pytest's --hypothesis-profile can find it
TALLY: Counter[str] = Counter()


def _fast(n: int) -> int:
    """``n`` examples in the suite's profile; the long profile's own count under it."""
    return settings().max_examples if settings._current_profile == LONG else n  # type: ignore[attr-defined]


def _sessions() -> dict[str, list[list[bytes]]]:
    """Per format, the sessions to mutate, as their lines."""
    out: dict[str, list[list[bytes]]] = {}
    for path in sorted(FIXTURES.glob("*/*.json*")):
        if path.suffix in (".jsonl", ".json") and path.parent.name != "real":
            out.setdefault(path.parent.name, []).append(path.read_bytes().splitlines()[:60])
    if REAL.is_dir():
        for path in sorted(REAL.glob("*/*.json*")):
            out.setdefault(path.parent.name, []).append(path.read_bytes().splitlines()[:60])
    return {fmt: [s for s in sessions if s] for fmt, sessions in out.items()}


SESSIONS = _sessions()
NAMES = sorted(fmt for fmt in SESSIONS if SESSIONS[fmt])


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield (*path, k), v
        yield from _leaves(v, (*path, k))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    if value is _DROP:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


_DROP = object()
_NEST = "\x00nest\x00"
VALUES = st.sampled_from(
    [None, True, 0, -7, 2**64, 10**18, 1.5, "", "x" * 3000, [], {}, [1, "a"], {"type": "text"}, _DROP]
)


@st.composite
def mutated_line(draw: st.DrawFn, raw: bytes) -> bytes:
    """One line, mutated as JSON (a leaf changed, dropped or nested) or as bytes."""
    how = draw(st.sampled_from(["value"] * 5 + ["nest", "number", "number", "truncate", "flip", "insert"]))
    if how in ("value", "nest", "number"):
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        leaves = [p for p, _ in _leaves(doc)]
        if not leaves:
            return raw
        path = draw(st.sampled_from(leaves))
        if how == "value":
            _set(doc, path, draw(VALUES))
        elif how == "number":
            _set(doc, path, draw(st.sampled_from([2**64, -1, 1e308, -(10**12), 10**9 + 1])))
        else:
            _set(doc, path, _NEST)
        text = json.dumps(doc).encode()  # not orjson: it refuses 2**64, which a log may hold
        depth = draw(st.sampled_from([20, 127, 129, 300, 1500]))
        return text.replace(json.dumps(_NEST).encode(), b"[" * depth + b"0" + b"]" * depth)
    if how == "truncate":
        return raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
    if how == "flip" and raw:
        i = draw(st.integers(0, len(raw) - 1))
        return raw[:i] + bytes([raw[i] ^ (1 << draw(st.integers(0, 7)))]) + raw[i + 1 :]
    junk = draw(st.sampled_from([b"\xef\xbb\xbf", b"\x00", b'"\\ud800"', b"\xff\xfe", b"\n{", b"}"]))
    i = draw(st.integers(0, len(raw)))
    return raw[:i] + junk + raw[i:]


@st.composite
def mutated_session(draw: st.DrawFn, fmt: str) -> tuple[bytes, int]:
    """A session of ``fmt`` with a line in four mutated, and how many were."""
    lines = list(draw(st.sampled_from(SESSIONS[fmt])))
    mutated = 0
    for i, raw in enumerate(lines):
        if not draw(st.integers(0, 3)):  # a line in four
            lines[i] = draw(mutated_line(raw))
            mutated += 1
    shuffle = draw(st.sampled_from(["none", "none", "swap", "duplicate", "drop"]))
    if len(lines) > 2 and shuffle != "none":
        i = draw(st.integers(0, len(lines) - 2))
        if shuffle == "swap":
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif shuffle == "duplicate":
            lines.insert(i, lines[i])
        else:
            del lines[i]
        mutated += 1
    bom = b"\xef\xbb\xbf" if draw(st.integers(0, 9)) == 0 else b""
    return bom + b"\n".join(lines) + b"\n", mutated


def _every_path(data: bytes, suffix: str) -> str:
    """estimate, report (with the simulation), validate and compact one file; the outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"session{suffix}"
        path.write_bytes(data)
        outcome = []
        for skip in (False, True):  # bad lines fail the file, or are passed over to reach the rest
            try:
                est, _ = estimate_session(str(path), skip_invalid=skip)
                replay(est, calibration="growth", prior=Prior(), simulate=True)
                outcome.append("read")
            except CtxfoldError as err:
                outcome.append(type(err).__name__)
        validate(str(path))
        try:
            out = str(Path(tmp) / "out")
            options = CompactOptions(force=True, out_dir=out, window=8_000, skip_invalid=True)
            r = compact_file(str(path), OfflineSummarizer(), summarizer_window=None, options=options)
            outcome.append(r.status)
        except CtxfoldError as err:
            outcome.append(type(err).__name__)
        assert path.read_bytes() == data  # the input is never modified
        return "/".join(outcome)


@pytest.mark.parametrize("fmt", NAMES)
def test_mutated_sessions_give_ctxfold_errors_only(fmt: str) -> None:
    suffix = ".json" if fmt == "gemini-cli" and any(s[:1] == [b"{"] for s in SESSIONS[fmt]) else ".jsonl"

    @settings(max_examples=_fast(8), deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(mutated_session(fmt))
    def run(case: tuple[bytes, int]) -> None:
        data, mutated = case
        TALLY[f"{fmt} lines mutated"] += mutated
        TALLY[f"outcome {_every_path(data, suffix)}"] += 1

    run()


def test_the_fuzzer_reaches_every_format() -> None:
    assert set(NAMES) >= set(FORMATS)


@pytest.fixture(scope="module", autouse=True)
def _report_tally() -> Iterator[None]:
    yield
    if settings._current_profile == LONG and TALLY:  # type: ignore[attr-defined]
        lines = sum(v for k, v in TALLY.items() if k.endswith("lines mutated"))
        print(f"\nfuzz: {lines:,} lines mutated")
        for key, n in sorted(TALLY.items()):
            print(f"  {key}: {n:,}")


# Crashes the fuzzer found, kept as plain regression tests: (fixture, line index, key path, value).
FOUND = [
    ("ctxfold/coding-session.jsonl", 10, ("parts",), None),  # the native reader let a null list through
    ("pi/v3-tree.jsonl", 2, ("parentId",), []),  # validate hashed a list as an id
]


@pytest.mark.parametrize(("fixture", "index", "path", "value"), FOUND)
def test_what_the_fuzzer_found(fixture: str, index: int, path: tuple[str, ...], value: Any) -> None:
    lines = (FIXTURES / fixture).read_bytes().splitlines()
    doc = orjson.loads(lines[index])
    _set(doc, path, value)
    lines[index] = orjson.dumps(doc)
    outcome = _every_path(b"\n".join(lines) + b"\n", ".jsonl")
    assert "LineError" in outcome or "read" in outcome
