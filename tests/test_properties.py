"""Property tests: random and mutated lines fed to every reader; only ctxfold errors may come out."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, REAL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfold.errors import CtxfoldError
from ctxfold.formats import loader
from ctxfold.formats.loader import load
from ctxfold.formats.registry import FORMATS

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(autouse=True)
def _strict_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Readers must reject bad lines with LineError themselves, not lean on the loader's net."""
    monkeypatch.setattr(loader, "STRICT_READERS", True)


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def _seed_lines(fmt: str) -> list[bytes]:
    """Up to 40 real lines of this format: its hand-made fixtures, then its real sessions."""
    lines: list[bytes] = []
    folders = [FIXTURES / fmt, FIXTURES / fmt.replace("-", "_")]
    if fmt == "ctxfold":
        folders = [FIXTURES / "ctxfold"]
    real_dir = {
        "claude-code": "claude-code",
        "codex": "codex",
        "pi": "pi",
        "litellm": "litellm",
        "openhands": "openhands",
    }
    if fmt in real_dir and REAL.is_dir():
        folders.append(REAL / real_dir[fmt])
    for folder in folders:
        for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
            for raw in path.read_bytes().splitlines():
                if raw.strip() and len(raw) < 200_000:
                    lines.append(raw)
                if len(lines) >= 40:
                    return lines
    return lines


SEEDS = {fmt: _seed_lines(fmt) for fmt in FORMATS}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(value: Any, path: tuple[Any, ...], action: str, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if not rest and action == "delete":
            copy.pop(head, None)
        else:
            copy[head] = _mutate(value[head], rest, action, new)
        return copy
    copy_l = list(value)
    if not rest and action == "delete":
        del copy_l[head]
    else:
        copy_l[head] = _mutate(value[head], rest, action, new)
    return copy_l


def _run(fmt: str, lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        for skip in (False, True):
            with contextlib.suppress(CtxfoldError):
                load(path, fmt=fmt, skip_invalid=skip)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@SETTINGS
@given(data=st.data())
def test_mutated_lines(fmt: str, data: st.DataObject) -> None:
    seeds = SEEDS[fmt]
    if not seeds:
        pytest.skip(f"no sample lines for {fmt}")
    lines = list(seeds[: data.draw(st.integers(1, len(seeds)), label="n lines")])
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        kind = data.draw(st.sampled_from(["json", "json", "json", "truncate", "bytes"]), label="kind")
        if kind == "truncate":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
        elif kind == "bytes":
            pos = data.draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + data.draw(st.binary(min_size=1, max_size=4)) + lines[i][pos:]
        else:
            try:
                obj = orjson.loads(lines[i])
            except orjson.JSONDecodeError:
                continue  # an earlier mutation already broke this line
            path = data.draw(st.sampled_from(_paths(obj)), label="path")
            action = data.draw(st.sampled_from(["replace", "delete"]) if path else st.just("replace"))
            new = data.draw(json_values, label="value")
            lines[i] = orjson.dumps(_mutate(obj, path, action, new))
    _run(fmt, lines)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@SETTINGS
@given(objs=st.lists(json_values, min_size=1, max_size=6))
def test_random_lines(fmt: str, objs: list[Any]) -> None:
    _run(fmt, [orjson.dumps(o) for o in objs])


@SETTINGS
@given(
    objs=st.lists(
        st.dictionaries(
            st.sampled_from(["type", "role", "content", "payload", "message", "parts"]),
            json_values,
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_detection_never_crashes(objs: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.jsonl"
        path.write_bytes(b"\n".join(orjson.dumps(o) for o in objs) + b"\n")
        with contextlib.suppress(CtxfoldError):
            load(path)
