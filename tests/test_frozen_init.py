"""The model's frozen dataclasses get ``fast_init`` (transcript/frozen.py): the same parameters,
defaults, factories, checks and frozenness as the ``__init__`` dataclasses writes."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

import ctxfold.transcript.model as model
from ctxfold.formats.loader import open_transcript
from ctxfold.transcript.frozen import fast_init
from ctxfold.transcript.model import CountError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLASSES = [
    c
    for c in vars(model).values()
    if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == model.__name__
]


def _value(f: dataclasses.Field[Any]) -> Any:
    """A value of the field's type, distinct per field (a count for a count)."""
    kind = str(f.type)
    if kind.startswith("int"):
        return 7
    if kind.startswith(("tuple", "Sequence", "list")):
        return ()
    return f"value of {f.name}"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_fields_defaults_and_factories_are_those_of_the_dataclass(cls: type) -> None:
    fields = dataclasses.fields(cls)
    sig = inspect.signature(cls)
    assert list(sig.parameters) == [f.name for f in fields]
    required = {f.name: _value(f) for f in fields if f.default is f.default_factory is dataclasses.MISSING}
    a, b = cls(**required), cls(**required)
    for f in fields:
        got = getattr(a, f.name)
        if f.name in required:
            assert got is required[f.name]
        elif f.default is not dataclasses.MISSING:
            assert got == f.default
        else:
            assert got == f.default_factory() and got is not getattr(b, f.name)  # a fresh one each
    given = {f.name: _value(f) for f in fields}
    positional = cls(*given.values())
    assert all(getattr(positional, k) is v for k, v in given.items())
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(a, fields[0].name, None)


def test_the_checks_after_init_still_run() -> None:
    with pytest.raises(CountError):
        model.Usage(prompt_tokens=-1)
    with pytest.raises(CountError):
        model.CompactionMarker("claude-code", tokens_before=True)


def test_every_entry_of_every_fixture_is_rebuilt_equal() -> None:
    seen: set[str] = set()

    def walk(value: Any) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            copy = dataclasses.replace(value)  # every field through __init__, by keyword
            assert copy == value and type(copy) is type(value)
            assert all(getattr(copy, f.name) is getattr(value, f.name) for f in dataclasses.fields(value))
            seen.add(type(value).__name__)
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, (tuple, list)):
            for v in value:
                walk(v)

    for path in sorted(FIXTURES.rglob("*.json*")):
        try:
            entries = list(open_transcript(path).entries)
        except Exception:  # not a transcript (a state file, a profile): nothing to rebuild
            continue
        walk(entries)
    assert {"Message", "TextPart", "ToolCallPart", "ToolResultPart", "Usage"} <= seen


def test_a_class_it_cannot_handle_is_refused() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordOnly:
        a: int

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class FieldNamedSelf:
        self: int

    for cls in (Mutable, KeywordOnly, NoSlots, FieldNamedSelf):
        with pytest.raises(TypeError):
            fast_init(cls)
