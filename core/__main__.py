"""``python -m ctxfold`` runs the command line."""

from ctxfold.cli.app import main

main()
