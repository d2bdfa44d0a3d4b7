"""Turn FILE arguments into transcript paths: files, directories (recursing into *.jsonl), ``-``."""

from __future__ import annotations

from pathlib import Path

from ctxfold.core.errors import InputError, UsageError


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
