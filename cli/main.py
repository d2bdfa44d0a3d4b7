"""The ``ctxfold`` command's entry point: ``statusline`` goes straight to its own module (run
after every message of a Claude Code session, it must start fast: no Typer, no Rich); every
other command to the Typer application."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["statusline"]:  # with anything else (-h), Typer answers
        from ctxfold.cli.statusline import main as statusline

        raise SystemExit(statusline())
    from ctxfold.cli.app import main as app

    app()
