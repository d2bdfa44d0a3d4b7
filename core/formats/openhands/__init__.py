"""OpenHands evaluation output: one instance per line with its event history (read only).

- ``reader``: reads lines into entries
"""

from ctxfold.formats.openhands.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
