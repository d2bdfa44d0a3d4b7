"""The compiled dataclass code the statusline keeps between runs (``classcode.py``): classes made
from kept code behave as freshly compiled ones, a damaged file is never trusted, and nothing
changes ``dataclasses`` outside the block that asks for it."""

from __future__ import annotations

import dataclasses
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from test_statusline import LAUNCH, payload

from ctxfold import classcode
from ctxfold.classcode import _Kept, code_file, kept_class_code


def _classes() -> dict[str, Any]:
    """A frozen slotted class, a plain one with defaults, and one with a field named ``self``."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    @dataclasses.dataclass(order=True)
    class Box:
        size: int
        items: list[str] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass
    class Odd:
        self: str
        other: int = 1

    return {"Point": Point, "Box": Box, "Odd": Odd}


def _behaviour(made: dict[str, Any]) -> list[Any]:
    Point, Box, Odd = made["Point"], made["Box"], made["Odd"]
    p = Point(1, tags=("a",))
    try:
        p.x = 5  # type: ignore[misc]
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    a, b = Box(2), Box(3, ["x"])
    a.items.append("y")
    return [
        repr(p), p == Point(1, 0, ("a",)), hash(p) == hash(Point(1, 0, ("a",))), frozen,
        repr(a), a < b, Box(2).items, repr(Odd("me")), [f.name for f in dataclasses.fields(Point)],
    ]  # fmt: skip


def test_classes_made_from_kept_code_behave_as_compiled_ones(tmp_path: Path) -> None:
    fresh = _behaviour(_classes())
    path = tmp_path / "code.marshal"
    first = _Kept(path)
    dataclasses.exec = first.exec  # type: ignore[attr-defined]
    try:
        made = _classes()
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
    assert first.added > 0
    first.save()
    assert _behaviour(made) == fresh

    again = _Kept(path)
    assert set(again.code) == set(first.code)
    dataclasses.exec = again.exec  # type: ignore[attr-defined]
    try:
        made = _classes()
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
    assert again.added == 0  # every method came from the file
    assert _behaviour(made) == fresh


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00garbage\xff" * 10,
        marshal.dumps({"a": 1})[:-3],  # cut short
        marshal.dumps(["not", "a", "dict"]),
        "placeholder",  # a dict whose values are not code: filled in below
    ],
)
def test_a_damaged_file_is_never_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CTXFOLD_NO_CACHE", raising=False)
    fresh = _behaviour(_classes())
    path = code_file()
    if data == "placeholder":  # the right sources, each with something other than code
        kept = _Kept(tmp_path / "probe.marshal")
        dataclasses.exec = kept.exec  # type: ignore[attr-defined]
        try:
            _classes()
        finally:
            del dataclasses.exec  # type: ignore[attr-defined]
        data = marshal.dumps(dict.fromkeys(kept.code, "print('not run')"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    with kept_class_code():
        made = _classes()
    assert _behaviour(made) == fresh
    rewritten = marshal.loads(path.read_bytes())
    assert isinstance(rewritten, dict) and rewritten
    assert all(type(v).__name__ == "code" for v in rewritten.values())


def test_nothing_is_left_patched_nor_kept_when_asked_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CTXFOLD_NO_CACHE", raising=False)
    with pytest.raises(RuntimeError), kept_class_code():
        assert hasattr(dataclasses, "exec")
        raise RuntimeError("a failed measure")
    assert not hasattr(dataclasses, "exec")
    assert not code_file().exists()  # no class was made in it: nothing to keep
    monkeypatch.setenv("CTXFOLD_NO_CACHE", "1")
    with kept_class_code():
        assert not hasattr(dataclasses, "exec")
        _classes()
    assert not code_file().exists()
    monkeypatch.delenv("CTXFOLD_NO_CACHE")
    with kept_class_code():
        _classes()
    assert code_file().is_file()


def test_the_kept_file_is_capped_at_what_a_run_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classcode, "LIMIT", 3)
    path = tmp_path / "code.marshal"
    old = {f"def old{i}(): pass": compile("pass", "<string>", "exec") for i in range(5)}
    path.write_bytes(marshal.dumps(old))
    kept = _Kept(path)
    dataclasses.exec = kept.exec  # type: ignore[attr-defined]
    try:
        _classes()
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
    kept.save()
    assert set(marshal.loads(path.read_bytes())) == kept.used


def test_the_statusline_keeps_the_code_and_draws_the_same_line(tmp_path: Path) -> None:
    """Run as Claude Code runs it: the first run writes the file, the next ones read it, and
    every run's line is the one a run with nothing kept draws."""
    log = tmp_path / "session.jsonl"
    source = FIXTURES / "real" / "claude-code-sidechains.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache), "NO_COLOR": "1"}

    def line(**more: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", LAUNCH, "statusline"], input=payload(log).encode(), capture_output=True,
            env={**_base_env(), **env, **more}, check=True, timeout=60,
        )  # fmt: skip
        assert proc.stderr == b""
        return proc.stdout.decode().strip()

    drawn = [line()]
    kept = list(cache.glob("ctxfold/class-code-*.marshal"))
    assert len(kept) == 1
    stamp = kept[0].stat().st_mtime_ns
    for raw in lines[len(lines) // 2 : len(lines) // 2 + 3]:
        with log.open("ab") as f:
            f.write(raw)
        drawn.append(line())
        assert drawn[-1] == line(CTXFOLD_NO_CACHE="1")
    assert kept[0].stat().st_mtime_ns == stamp  # nothing new to compile: not written again
    assert all(d.startswith(tuple("0123456789")) for d in drawn), drawn
    assert not hasattr(dataclasses, "exec")


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("CTXFOLD_NO_CACHE", "XDG_CACHE_HOME")}


def test_a_library_import_leaves_dataclasses_alone() -> None:
    code = (
        "import dataclasses, ctxfold, json; from ctxfold.tokens.estimate import estimate_file; "
        "from ctxfold.engine.now import predict_now; print(json.dumps(hasattr(dataclasses, 'exec')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) is False


def test_every_command_keeps_the_code_and_answers_alike(tmp_path: Path) -> None:
    """The ``ctxfold`` command's other commands opt in too: the first run writes the file, the
    next one reads it, and both print what a run that keeps nothing prints."""
    cache = tmp_path / "cache"
    args = ["estimate", str(FIXTURES / "real" / "claude-code-sidechains.jsonl"), "--json"]

    def out(**more: str) -> Any:
        proc = subprocess.run(
            [sys.executable, "-c", LAUNCH, *args], capture_output=True, text=True,
            env={**_base_env(), "XDG_CACHE_HOME": str(cache), **more}, check=True, timeout=120,
        )  # fmt: skip
        return json.loads(proc.stdout)

    first = out()
    (kept,) = cache.glob("ctxfold/class-code-*.marshal")
    stamp = kept.stat().st_mtime_ns
    assert out() == first == out(CTXFOLD_NO_CACHE="1")
    assert kept.stat().st_mtime_ns == stamp


def test_a_cache_folder_that_cannot_be_found_only_costs_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    def nowhere() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("CTXFOLD_NO_CACHE", raising=False)
    monkeypatch.setattr(classcode, "code_file", nowhere)
    with kept_class_code():
        assert not hasattr(dataclasses, "exec")
        assert _behaviour(_classes()) == _behaviour(_classes())
