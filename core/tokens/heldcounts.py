"""The counts of the texts a cached run counted after its kept state, for the next run to reuse.

The count cache keeps a file's state at its last complete line with the reader not told the
end, so the messages a reader still holds there (the last one, which more lines may extend)
are counted again by every run that reads on: after each line Claude Code writes, the
statusline recounted the whole held message (thousands of characters, in the slow Python
engine). So the run keeps, beside the state, the count of each text it counted after it, by a
digest of the text (``blake2b``, 20 bytes), and the next run takes those counts instead of
tokenizing the same text again. The entry is the same file's with the same settings, so the
same text has the same count.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

from ctxfold.hashes import digest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ctxfold.tokens.counting import Counter

KEPT = 512  # texts kept at most: a held message has a few


class HeldCounts:
    """The counter's tokenizer, answering a text counted by the previous run from its count.
    What the counter's helpers look up on the tokenizer (its engines, its plan) is the
    tokenizer's own; text counted by them is not looked up."""

    def __init__(self, tokenizer: Any, known: object) -> None:
        self.inner = tokenizer
        self.known = _valid(known)
        self.recorded: dict[str, int] | None = None  # from ``record()`` on

    @classmethod
    def around(cls, counter: Counter, known: object) -> HeldCounts:
        """Put one around ``counter``'s tokenizer, knowing the counts ``known`` (a header's)."""
        held = cls(counter.tokenizer, known)
        counter.tokenizer = held
        return held

    def record(self) -> None:
        """From now on, keep the count of every text counted (for the next run)."""
        self.recorded = {}

    def count(self, text: str) -> int:
        return self.count_batch([text])[0]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if not self.known and self.recorded is None:  # a cold read, or nothing kept: no digests
            return list(self.inner.count_batch(texts))
        keys = [digest(t.encode("utf-8", "surrogatepass")) for t in texts]
        known = self.known
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in known]
        counted = iter(self.inner.count_batch(missing) if missing else ())
        out = [known[k] if k in known else next(counted) for k in keys]
        recorded = self.recorded
        if recorded is not None:
            for k, n in zip(keys, out, strict=True):
                if len(recorded) < KEPT:
                    recorded[k] = n
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def for_header(recorded: dict[str, int]) -> dict[str, Any]:
    """What the entry's header keeps of ``recorded``: the counts and their CRC-32."""
    return {"counts": recorded, "crc32": _crc(recorded)}


def _valid(known: object) -> dict[str, int]:
    """The counts of ``for_header(...)``'s value ``known``, if they check (a header read back could
    hold anything: a count changed there must not be taken for the text's); else none."""
    if not isinstance(known, dict):
        return {}
    counts = known.get("counts")
    if not isinstance(counts, dict) or len(counts) > KEPT or known.get("crc32") != _crc(counts):
        return {}
    if all(isinstance(k, str) and type(n) is int and n >= 0 for k, n in counts.items()):
        return counts
    return {}


def _crc(counts: dict[str, int]) -> int:
    return zlib.crc32(json.dumps(counts, sort_keys=True).encode())
