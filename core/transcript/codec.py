"""Plain-JSON form of the model: the ctxfold native format and ``--json`` output use it.

Every value becomes an object with ``"type": <kind>`` and its non-default fields; decoding
is the exact inverse, so ``decode(encode(x)) == x`` for every model value.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

from ctxfold.transcript import model as m

KINDS: dict[str, type] = {
    cls.kind: cls
    for cls in (
        m.TextPart,
        m.ThinkingPart,
        m.ToolCallPart,
        m.ToolResultPart,
        m.MediaPart,
        m.OpaquePart,
        m.Usage,
        m.Message,
        m.CompactionMarker,
        m.ApiError,
        m.ToolDef,
        m.ContextUpdate,
        m.ContextReset,
        m.Rewind,
    )
}


# A model field called "type" would clash with the discriminator: in JSON it is "<kind>_type".
def _json_name(kind: str, field_name: str) -> str:
    return f"{kind}_type" if field_name == "type" else field_name


_PARTS = {"text", "thinking", "tool_call", "tool_result", "media", "opaque"}
_ALLOWED: dict[str, set[str]] = {
    "parts": _PARTS,
    "content": {"text", "media", "opaque"},
    "replacement": {"message"},
    "to": {"message"},
    "tools": {"tool_def"},
    "usage": {"usage"},
}

# Fields that hold nested model values, and whether they are tuples of them.
_NESTED: dict[str, bool] = {
    "parts": True,
    "content": True,
    "replacement": True,
    "to": True,
    "tools": True,
    "usage": False,
}


def encode(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": value.kind}
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        if _is_default(f, v):
            continue
        if f.name in _NESTED and v is not None:
            v = [encode(x) for x in v] if _NESTED[f.name] else encode(v)
        elif isinstance(v, tuple):
            v = list(v)
        elif isinstance(v, Mapping):
            v = dict(v)
        out[_json_name(value.kind, f.name)] = v
    return out


def decode(data: Mapping[str, Any]) -> Any:
    """Build a model value from its JSON form. Raises KeyError/TypeError/ValueError on junk;
    the native reader turns those into line errors."""
    if not isinstance(data, Mapping):
        raise TypeError(f"expected an object, got {type(data).__name__}")
    kind = data.get("type")
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown type {kind!r}")
    names = {f.name for f in dataclasses.fields(cls)}
    renamed = {_json_name(cls.kind, n): n for n in names}  # type: ignore[attr-defined]
    data = {renamed.get(k, k): v for k, v in data.items() if k != "type"}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"unknown field(s) for {kind}: {', '.join(sorted(unknown))}")
    kwargs: dict[str, Any] = {}
    nullable = {f.name for f in dataclasses.fields(cls) if f.default is None}
    for key, v in data.items():
        if key in _NESTED and v is None and key not in nullable:
            raise TypeError(f"{key!r} should be {'a list' if _NESTED[key] else 'an object'}, got null")
        if key in _NESTED and v is not None:
            allowed = _ALLOWED[key]
            if _NESTED[key]:
                if not isinstance(v, list):
                    raise TypeError(f"{key!r} should be a list")
                v = tuple(decode(x) for x in v)
            else:
                v = (decode(v),)
            wrong = [x.kind for x in v if x.kind not in allowed]
            if wrong:
                raise ValueError(f"{key!r} cannot hold {wrong[0]!r} (allowed: {', '.join(sorted(allowed))})")
            v = v if _NESTED[key] else v[0]
        elif key in ("system", "ids") and v is not None:  # tuples of strings
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise TypeError(f"{key!r} should be a list of strings")
            v = tuple(v)
        elif key == "parameters" and v is not None and not isinstance(v, Mapping):
            raise TypeError("'parameters' should be an object")
        else:
            _check(cls, key, v)
        kwargs[key] = v
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in kwargs and _required(f)]
    if missing:
        raise ValueError(f"{kind} is missing required field(s): {', '.join(missing)}")
    return cls(**kwargs)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


@functools.cache
def _simple_types(cls: type) -> dict[str, tuple[type, ...]]:
    """For fields typed with plain scalars (``str``, ``int | None``...), the allowed types."""
    out: dict[str, tuple[type, ...]] = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        if typing.get_origin(hint) is typing.Literal:
            args = (str,)
        if all(a in (str, int, bool, type(None)) for a in args):
            out[name] = tuple(args)
    return out


def _check(cls: type, key: str, v: Any) -> None:
    allowed = _simple_types(cls).get(key)
    if allowed is None:
        if key == "extra" and not isinstance(v, Mapping):
            raise TypeError("'extra' should be an object")
        return
    ok = isinstance(v, allowed) and not (isinstance(v, bool) and bool not in allowed)
    if not ok:
        names = " or ".join("null" if a is type(None) else a.__name__ for a in allowed)
        raise TypeError(f"field {key!r} should be {names}, got {type(v).__name__}")
    if key == "role" and v not in ("system", "user", "assistant", "tool"):
        raise ValueError(f"role should be system, user, assistant or tool, got {v!r}")


def _is_default(f: dataclasses.Field[Any], v: Any) -> bool:
    if f.default is not dataclasses.MISSING:
        return bool(v == f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(v == f.default_factory())
    return False
