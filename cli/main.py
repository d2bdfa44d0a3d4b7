"""The ``ctxfold`` command's entry point: ``statusline`` goes straight to its own module (run
after every message of a Claude Code session, it must start and end fast: no Typer, no Rich, no
teardown); every other command to the Typer application."""

from __future__ import annotations

import contextlib
import os
import sys


def main() -> None:
    if sys.argv[1:] == ["statusline"]:  # with anything else (-h), Typer answers
        from ctxfold.cli.statusline import main as statusline

        code = statusline()
        # run after every message: its line is out and every file it wrote is closed, so the
        # interpreter's teardown of the modules it loaded (10-15 ms) is skipped
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to tell it
                stream.flush()
        os._exit(code)
    from ctxfold.cli.app import main as app

    app()
