"""Bounded input: a line nested deeper than the cap, or a token count that is negative, not a
whole number or beyond any real count, is one bad line naming the file and line, in every
command; never a traceback.

Before the cap and the count check, these mutations of the bundled fixtures crashed ctxfold in
15 places (measured on the code before this change, 257 crashes in 2,572 runs): deep nesting in
``tokens/counting._json``, ``openai_common.tooldef_from_openai``, ``anthropic_blocks.tooldef``,
``requestlog._key``, ``genai_parts.tooldefs`` and ``part_of``, ``openhands._entries`` and
``_event``, ``tokens/media.image_tokens``, ``api_writing.dumps`` (orjson's 255 levels when
writing); absurd numbers in ``engine/budget.fit_budget`` (float infinity) and
``engine/cost.add`` (int too large for a float).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.errors import LineError
from ctxfold.formats.jsonl import MAX_DEPTH, iter_lines, too_deep
from ctxfold.transcript.model import MAX_COUNT, CountError, Usage

runner = CliRunner()
USAGE_KEYS = {
    "input_tokens",
    "prompt_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "total_tokens",
    "completion_tokens",
    "promptTokenCount",
    "candidatesTokenCount",
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "cached_input_tokens",
    "model_context_window",
    "contextWindow",
    "context_window",
}
_NEST = "@@nest@@"


def _leaves(o: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
    for k, v in items:
        yield (*path, k), v
        yield from _leaves(v, (*path, k))


def _with(line: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    new = json.loads(json.dumps(line))
    at = new
    for p in path[:-1]:
        at = at[p]
    at[path[-1]] = value
    return new


def _cases() -> Iterator[tuple[str, str, str]]:
    """(id, fixture, mutated text): per fixture, the first string values nested 200 and 1,000
    deep, and the first usage numbers set to 2**64, 1e308 and -5."""
    for fixture in sorted(FIXTURES.glob("*/*.jsonl")):
        lines = fixture.read_text().splitlines()
        nested = numbers = 0
        for i, raw in enumerate(lines):
            line = json.loads(raw)
            for path, value in _leaves(line):
                key = path[-1]
                if isinstance(value, str) and key not in ("type", "role", "id") and nested < 2:
                    nested += 1
                    for depth in (200, 1000):
                        text = json.dumps(_with(line, path, _NEST))
                        text = text.replace(f'"{_NEST}"', "[" * depth + '"x"' + "]" * depth)
                        yield (
                            f"{fixture.parent.name}/{fixture.stem}:{i + 1}:nest{depth}",
                            str(fixture),
                            _replace(lines, i, text),
                        )
                if key in USAGE_KEYS and isinstance(value, (int, float)) and numbers < 2:
                    numbers += 1
                    for bad in (2**64, 1e308, -5):
                        text = json.dumps(_with(line, path, bad))
                        yield (
                            f"{fixture.parent.name}/{fixture.stem}:{i + 1}:{key}={bad:g}",
                            str(fixture),
                            _replace(lines, i, text),
                        )


def _replace(lines: list[str], i: int, text: str) -> str:
    return "\n".join([*lines[:i], text, *lines[i + 1 :]]) + "\n"


CASES = list(_cases())


@pytest.mark.parametrize(("case", "source", "text"), CASES, ids=[c[0] for c in CASES])
def test_every_command_gives_one_line_or_reads_it(case: str, source: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / Path(source).name
    path.write_text(text)
    for command in (
        ["estimate", str(path), "--no-profile"],
        ["report", str(path), "--no-profile", "--simulate-compaction", "--window", "20000"],
        ["validate", str(path)],
        ["compact", str(path), "--force", "--no-profile", "--out-dir", str(tmp_path / "out")],
    ):
        r = runner.invoke(app, command, catch_exceptions=True)
        assert r.exception is None or isinstance(r.exception, SystemExit), (command, r.exception)
        assert "Traceback" not in r.output and "internal error" not in r.stderr, r.stderr
        if r.exit_code == 1 and r.stderr.startswith("ctxfold: error:"):
            assert r.stderr.count("\n") == 1 and str(path) in r.stderr, r.stderr
    assert Path(source).read_text() != text  # the mutation changed the file; the source is untouched


def test_the_cases_reach_every_kind() -> None:
    kinds = {c[0].rsplit(":", 1)[1].split("=")[0] for c in CASES}
    assert {"nest200", "nest1000", "input_tokens", "prompt_tokens"} <= kinds and len(CASES) > 100


def test_depth_is_measured_without_recursion() -> None:
    value: Any = "x"
    for _ in range(100_000):  # far beyond any recursion limit
        value = [value]
    assert too_deep(value) and not too_deep([[["x"]]]) and too_deep([[["x"]]], limit=2)
    assert not too_deep(json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH))


def _nested(depth: int, opener: str) -> str:
    """A line ``depth`` levels deep, each level opened by one of ``opener``'s characters in turn."""
    head = tail = ""
    for i in range(depth):
        o = opener[i % len(opener)]
        head += '{"k":' if o == "{" else "["
        tail = ("}" if o == "{" else "]") + tail
    return head + "1" + tail


@pytest.mark.parametrize("opener", ["[", "{", "{[", "[{{"])
def test_the_cap_is_exact_through_the_line_reader(tmp_path: Path, opener: str) -> None:
    filler = '{"text": "' + "[{" * 300 + '"}'  # openers inside a string nest nothing
    lines = [_nested(MAX_DEPTH, opener), _nested(MAX_DEPTH + 1, opener), filler]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    first, second, third = iter_lines(path)
    assert not isinstance(first, LineError) and not isinstance(third, LineError)
    assert isinstance(second, LineError) and second.line == 2
    assert f"nested deeper than {MAX_DEPTH} levels" in str(second)


@pytest.mark.parametrize("bad", [-1, MAX_COUNT + 1, 2**64, 1.5, float("inf"), float("nan"), True, "12"])
def test_a_count_out_of_range_is_refused_where_every_reader_passes(bad: Any) -> None:
    with pytest.raises(CountError):
        Usage(prompt_tokens=bad)
    assert Usage(prompt_tokens=1200.0).prompt_tokens == 1200.0  # a writer that prints floats
