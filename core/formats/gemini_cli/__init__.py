"""Gemini CLI sessions (``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.json[l]``).

- ``check``: the format's own rules, for validate and the writer
- ``reader``: reads the saved-chat document and the JSONL event log into entries
- ``records``: message records to messages, as Gemini CLI sends them
- ``writer``: writes a transcript back as a Gemini CLI session
"""

from ctxfold.formats.gemini_cli.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
