"""Google genai / Gemini Contents, ADK events, generateContent requests and responses.

- ``parts``: content blocks to parts
- ``reader``: reads lines into entries
- ``writer``: writes a transcript back in this format
"""

from ctxfold.formats.genai.reader import DESCRIPTION, NAME, Reader, sniff

__all__ = ["DESCRIPTION", "NAME", "Reader", "sniff"]
