"""Turn FILE arguments into transcript paths: files, directories (recursing into *.jsonl, and
into Gemini CLI's saved chats, *.json), ``-``; and read several of them so that one unreadable
file does not cost the others."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ctxfold.cli.errors import DEBUG_VAR, internal_error, with_hint
from ctxfold.errors import InputError, UsageError

T = TypeVar("T")
Failed = list[dict[str, str]]  # [{"path", "error"}]: what a several-file run could not read


def expand(args: list[str]) -> tuple[list[str], Failed]:
    """The paths the arguments name, and the arguments that name none (a missing file, a folder
    without logs). With a single argument, that is the command's error."""
    if not args:
        raise UsageError("no input files given")
    out: list[str] = []
    failed: Failed = []
    for arg in args:
        try:
            out.extend(_paths(arg))
        except InputError as err:
            if len(args) == 1:
                raise
            failed.append({"path": arg, "error": str(err)})
    return out, failed


def _paths(arg: str) -> list[str]:
    if arg == "-":
        return [arg]
    p = Path(arg)
    if p.is_dir():
        found = sorted(f for f in _files(str(p)) if _is_log(Path(f)))
        if not found:
            raise InputError("directory holds no session logs (*.jsonl, or Gemini CLI's *.json chats)", p)
        return found
    if not p.exists():
        raise InputError("no such file", p)
    return [arg]


def _files(root: str) -> list[str]:
    """The files ``Path(root).rglob("*.json*")`` finds, named as it names them (not followed
    into linked folders), by ``os.scandir``: a tenth of the time for a folder of 2,000 logs."""
    found: list[str] = []
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            path = e.name if folder == "." else f"{folder.rstrip('/')}/{e.name}"
            try:
                if e.is_dir():
                    if not e.is_symlink():
                        folders.append(path)
                elif ".json" in e.name and e.is_file():
                    found.append(path)
            except OSError:
                continue
    return found


STATE_SUFFIX = ".ctxfold.json"  # compact's own state files, which sit beside the sessions
CHAT_HEAD = 4096  # a saved chat names its session and project in its first lines


def _is_log(f: Path) -> bool:
    """A JSONL log, or a Gemini CLI saved chat: one JSON document that opens with its
    ``sessionId`` and ``projectHash`` (not ctxfold's state files, nor any other JSON the folder
    holds: package.json, settings, a tool's caches)."""
    if f.suffix == ".jsonl":
        return True
    if f.suffix != ".json" or f.name.endswith(STATE_SUFFIX):
        return False
    try:
        with f.open("rb") as fh:
            head = fh.read(CHAT_HEAD)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"sessionId"' in head and b'"projectHash"' in head


def read_each(expanded: tuple[list[str], Failed], read: Callable[[str], T]) -> tuple[list[T], Failed]:
    """``read`` every path of :func:`expand`. With one path its error is the command's; with
    several (a folder of sessions) a file that cannot be read is set aside as ``{"path",
    "error"}`` and the rest are read: the command then shows what it could and exits 1."""
    paths, failed = expanded[0], list(expanded[1])
    results: list[T] = []
    for path in paths:
        try:
            results.append(read(path))
        except InputError as err:
            if len(paths) == 1 and not failed:
                raise
            failed.append({"path": path, "error": with_hint(err)})  # names the file (and line)
        except Exception as err:  # a bug met on one file must not cost the others
            if (len(paths) == 1 and not failed) or os.environ.get(DEBUG_VAR):
                raise
            failed.append({"path": path, "error": internal_error(err)})
    return results, failed
