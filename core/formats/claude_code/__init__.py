"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

- ``attachments``: attachment lines as the model sees them
- ``check``: the format's own rules, for validate and the writer
- ``lines``: which lines are the conversation and which are bookkeeping
- ``parts``: content blocks to parts
- ``reader``: reads lines into entries
- ``writer``: writes a transcript back in this format

The reader is imported on first use of the names below, so that ``lines`` loads alone (the
statusline's check of appended lines).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (the statusline loads ``lines``)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ctxfold.formats.claude_code import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
