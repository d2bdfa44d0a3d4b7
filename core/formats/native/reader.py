"""ctxfold's own JSONL format: the model's JSON form, one entry per line.

The first line is a header (``{"type": "header", "format": "ctxfold", "version": 1, ...}``)
holding session id, model, window, system prompt(s) and tool definitions. Every later line
is one entry as ``codec.encode`` writes it. Schema: ``core/schemas/ctxfold-transcript.schema.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ctxfold.errors import LineError
from ctxfold.formats.base import Line, need, obj
from ctxfold.transcript import codec
from ctxfold.transcript.model import ContextUpdate, Entry

NAME = "ctxfold"
DESCRIPTION = "ctxfold native JSONL (header line, then one entry per line)"
VERSION = 1

_HEADER_FIELDS = {
    "type",
    "format",
    "version",
    "session_id",
    "model",
    "context_window",
    "system",
    "tools",
    "extra",
}

# Header fields whose wrong type would leak into the model (every one is optional).
_HEADER_TYPES: dict[str, type | tuple[type, ...]] = {
    "session_id": str,
    "model": str,
    "context_window": int,
    "system": (str, list),
    "tools": list,
    "extra": dict,
}


def sniff(objs: Sequence[Any]) -> int:
    first = objs[0] if objs else None
    if isinstance(first, dict) and first.get("type") == "header" and first.get("format") == NAME:
        return 100
    return 0


class Reader:
    def __init__(self) -> None:
        self._seen_header = False

    def feed(self, line: Line) -> Iterable[Entry]:
        d = obj(line)
        if d.get("type") == "header":
            return [self._header(d, line)]
        if not self._seen_header:
            raise LineError("the first line of a ctxfold transcript must be its header", line.no)
        try:
            return [codec.decode(d)]
        except (ValueError, TypeError, KeyError, AttributeError) as err:  # codec on a non-object part
            raise LineError(str(err), line.no) from None

    def _header(self, d: dict[str, Any], line: Line) -> ContextUpdate:
        if self._seen_header:
            raise LineError("a second header line", line.no)
        self._seen_header = True
        if d.get("version") != VERSION:
            raise LineError(
                f"unsupported ctxfold format version {d.get('version')!r} (this is {VERSION})", line.no
            )
        unknown = set(d) - _HEADER_FIELDS
        if unknown:
            raise LineError(f"unknown header field(s): {', '.join(sorted(unknown))}", line.no)
        for key, typ in _HEADER_TYPES.items():
            if d.get(key) is not None:
                need(d, key, line, typ)
        try:
            tools = tuple(codec.decode({"type": "tool_def", **t}) for t in d.get("tools") or ())
            system = d.get("system") or []
            if isinstance(system, str):
                system = [system]
            if not all(isinstance(s, str) for s in system):
                raise TypeError("'system' should be a string or a list of strings")
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise LineError(f"header: {err}", line.no) from None
        return ContextUpdate(
            system=tuple(system),
            tools=tools,
            model=d.get("model"),
            context_window=d.get("context_window"),
            session_id=d.get("session_id"),
            extra=d.get("extra") or {},
        )

    def finish(self) -> Iterable[Entry]:
        return ()


def header(update: ContextUpdate) -> dict[str, Any]:
    """The header line for a transcript whose fixed parts are ``update``."""
    out: dict[str, Any] = {"type": "header", "format": NAME, "version": VERSION}
    if update.session_id:
        out["session_id"] = update.session_id
    if update.model:
        out["model"] = update.model
    if update.context_window:
        out["context_window"] = update.context_window
    if update.system:
        out["system"] = list(update.system)
    if update.tools:
        out["tools"] = [{k: v for k, v in codec.encode(t).items() if k != "type"} for t in update.tools]
    if update.extra:
        out["extra"] = dict(update.extra)
    return out
