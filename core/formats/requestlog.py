"""Helpers for logs whose every line repeats the whole request (LiteLLM, OpenAI or Anthropic
request lines): emit only the messages that are new since the previous request, and mark a
reset when a request does not extend the previous one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ctxfold.hashes import blake2b


def _key(message: Any) -> bytes:
    try:
        return orjson.dumps(message, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return repr(message).encode()


class PrefixTracker:
    """Remembers the previous request's messages (as hashes) to find what a new one adds."""

    def __init__(self) -> None:
        # digests, not hash(): the reader's state is resumed by another process (the count cache),
        # where Python's hashes of the same bytes differ
        self._prev: list[bytes] = []
        self._responded = False

    def new_start(self, messages: Sequence[Any]) -> tuple[int, bool]:
        """Index of the first new message, and whether the history was reset (not a prefix).

        When the previous line's response was emitted (``responded()``), the assistant message
        that repeats it at the start of the new part is skipped: it is already in the transcript.
        """
        keys = [blake2b(_key(m), digest_size=16).digest() for m in messages]
        n = len(self._prev)
        extends = n > 0 and len(keys) >= n and keys[:n] == self._prev
        start = n if extends else 0
        if extends and self._responded and start < len(messages) and _role(messages[start]) == "assistant":
            start += 1
        reset = n > 0 and not extends
        self._prev = keys
        self._responded = False
        return start, reset

    def responded(self) -> None:
        self._responded = True


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, Mapping) else None
