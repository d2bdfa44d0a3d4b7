"""pi coding-agent sessions (``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``).

- ``check``: the format's own rules, for validate and the writer
- ``reader``: reads lines into entries
- ``writer``: writes a transcript back in this format
"""

from ctxfold.formats.pi.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
