"""ctxfold's own JSONL: a header line, then one entry per line; it keeps everything.

- ``reader``: reads lines into entries
- ``writer``: writes a transcript back in this format
"""

from ctxfold.formats.native.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
