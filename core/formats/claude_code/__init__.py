"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

- ``attachments``: attachment lines as the model sees them
- ``check``: the format's own rules, for validate and the writer
- ``parts``: content blocks to parts
- ``reader``: reads lines into entries
- ``writer``: writes a transcript back in this format
"""

from ctxfold.formats.claude_code.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
