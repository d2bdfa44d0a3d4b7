"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl``).

- ``check``: the format's own rules, for validate and the writer
- ``emit``: messages to items (the writer's half of ``items``)
- ``items``: items to messages
- ``reader``: reads lines into entries
- ``resume``: where Codex looks for a session, and the command that resumes it
- ``writer``: writes a transcript back in this format (legacy or paginated layout)
"""

from ctxfold.formats.codex.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
