"""Turn FILE arguments into transcript paths: files, directories (recursing into *.jsonl), ``-``;
and read several of them so that one unreadable file does not cost the others."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ctxfold.core.errors import InputError, UsageError

T = TypeVar("T")


def expand(args: list[str]) -> list[str]:
    if not args:
        raise UsageError("no input files given")
    out: list[str] = []
    for arg in args:
        if arg == "-":
            out.append(arg)
            continue
        p = Path(arg)
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*.jsonl") if f.is_file())
            if not found:
                raise InputError("directory holds no *.jsonl files", p)
            out.extend(found)
        elif p.exists():
            out.append(arg)
        else:
            raise InputError("no such file", p)
    return out


def read_each(paths: list[str], read: Callable[[str], T]) -> tuple[list[T], list[dict[str, str]]]:
    """``read`` every path. With one path its error is the command's; with several (a folder of
    sessions) a file that cannot be read is set aside as ``{"path", "error"}`` and the rest are
    read: the command then shows what it could and exits 1."""
    results: list[T] = []
    failed: list[dict[str, str]] = []
    for path in paths:
        try:
            results.append(read(path))
        except InputError as err:
            if len(paths) == 1:
                raise
            failed.append({"path": path, "error": str(err)})  # names the file (and line)
    return results, failed
