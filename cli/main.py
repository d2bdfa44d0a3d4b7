"""The ``ctxfold`` command's entry point: ``statusline`` goes straight to its own module (run
after every message of a Claude Code session, it must start fast: no Typer, no Rich); every
other command to the Typer application. Either ends without the interpreter's teardown."""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import NoReturn


def main() -> None:
    if sys.argv[1:] == ["statusline"]:  # with anything else (-h), Typer answers
        from ctxfold.cli.statusline import main as statusline

        _end(statusline())
    if sys.argv[1:] == ["statusline", "--codex"]:  # Codex's provider: a server, started once
        from ctxfold.cli.codex_statusline import main as codex_statusline

        _end(codex_statusline())
    from ctxfold.classcode import kept_class_code

    try:
        with kept_class_code():  # 40-50 ms of a small command's start: dataclasses compiling
            from ctxfold.cli.app import main as app

            app()
    except SystemExit as done:
        _end(done.code)
    _end(0)


def _end(code: object) -> NoReturn:
    """Exit with ``code`` as ``SystemExit`` would, but without unloading every module a command
    loaded, one by one (15-25 ms: a tenth of a small command). By now all a command wrote is
    written: its files are closed (written whole, then renamed), its helper processes and pools
    shut down; what is left is the buffered output, flushed here."""
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a closed pipe, no stream
            stream.flush()
    os._exit(code)
