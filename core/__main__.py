"""``python -m ctxfold`` runs the command line."""

from ctxfold.cli.main import main

main()
