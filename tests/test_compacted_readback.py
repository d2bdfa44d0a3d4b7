"""A compacted output read back: the context compact said it left.

ctxfold's own compaction records the summary on its marker and writes it as the user message
after it: the session counter counts it once, as that message; a marker whose summary no
message repeats (pi, OpenHands) still puts it at the head of the context.
"""

from __future__ import annotations

import pytest

from ctxfold.core.tokens.counting import Counter
from ctxfold.core.tokens.session import SessionCounter
from ctxfold.core.tokens.tokenizers import get_tokenizer
from ctxfold.core.transcript.model import CompactionMarker, ContextUpdate, Message, TextPart


def _replay(entries: list) -> int:
    counter = Counter(get_tokenizer("o200k"), "openai")
    return SessionCounter(counter).feed(entries).context_total


SUMMARY = "## Current State\nThe parser is fixed; the suite passes."


def test_a_summary_the_next_message_holds_is_counted_once() -> None:
    """ctxfold's own compaction: the marker records the summary, the message after it is the
    summary the model reads."""
    said = Message("user", (TextPart(f"[Previous conversation summary]\n{SUMMARY}\n[End]"),))
    nxt = Message("user", (TextPart("Carry on."),))
    head = [ContextUpdate(system=("sys",)), Message("user", (TextPart("old " * 50),))]
    marker = CompactionMarker("ctxfold", summary=SUMMARY)
    assert _replay([*head, marker, said, nxt]) == _replay([ContextUpdate(system=("sys",)), said, nxt])


@pytest.mark.parametrize("after", ["message", "nothing"])
def test_a_summary_no_message_repeats_still_heads_the_context(after: str) -> None:
    """pi's and OpenHands' compactions: the marker's summary is the only copy."""
    summary = Message("user", (TextPart(SUMMARY),))
    nxt = [Message("user", (TextPart("Carry on."),))] if after == "message" else []
    marker = CompactionMarker("openhands", summary=SUMMARY)
    got = _replay([ContextUpdate(system=("sys",)), Message("user", (TextPart("old " * 50),)), marker, *nxt])
    assert got == _replay([ContextUpdate(system=("sys",)), summary, *nxt])
