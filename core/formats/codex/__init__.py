"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl``).

- ``check``: the format's own rules, for validate and the writer
- ``items``: items to messages
- ``reader``: reads lines into entries
- ``writer``: writes a transcript back in this format
"""

from ctxfold.formats.codex.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
