"""Anthropic Messages API messages, request logs and responses.

- ``blocks``: API content blocks to parts, shared with Claude Code
- ``reader``: reads lines into entries
- ``writer``: writes a transcript back in this format
"""

from ctxfold.formats.anthropic.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
