"""Reading a log pauses Python's cycle collector (a speed-up) and leaves it as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxfold.tokens.counting import Counter
from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.session import SessionCounter
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Entry, Message, TextPart

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / "subagent.jsonl"


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(enabled: bool, collector: None) -> None:
    gc.enable() if enabled else gc.disable()
    seen: list[bool] = []

    def entries() -> Iterator[Entry]:
        seen.append(gc.isenabled())
        yield Message(role="user", parts=(TextPart("hello"),))

    SessionCounter(Counter(get_tokenizer("o200k"))).feed(entries())
    assert seen == [False]  # paused while reading
    assert gc.isenabled() is enabled
    estimate_file(SAMPLE)
    assert gc.isenabled() is enabled


def test_the_collector_comes_back_when_reading_fails(collector: None) -> None:
    gc.enable()

    def entries() -> Iterator[Entry]:
        yield Message(role="user", parts=(TextPart("hello"),))
        raise OSError("the disk went away")

    with pytest.raises(OSError):
        SessionCounter(Counter(get_tokenizer("o200k"))).feed(entries())
    assert gc.isenabled()
