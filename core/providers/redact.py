"""The redaction that keeps API keys out of every message.

Errors raised by the SDKs may echo request details (a server's 401 body can quote the key it
was sent), so every message built from one goes through :func:`redact` before it reaches a
warning, an exception or a log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"
# Key-shaped tokens a server may quote back even when they are not ours (or are partly masked).
_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-*]{8,}|\bBearer\s+[A-Za-z0-9._\-*]{8,}", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret and anything key-shaped replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return _KEY_LIKE.sub(REDACTED, text)
