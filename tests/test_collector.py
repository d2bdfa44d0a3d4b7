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


def test_what_a_read_made_goes_to_the_oldest_generation(collector: None) -> None:
    """The collector's first pass after a read would walk every object the read made (a 200 MB
    session's state: 15 ms); they are moved to the oldest generation instead."""
    from ctxfold.tokens.session import collector_paused

    gc.enable()
    with collector_paused():
        made = [[i] for i in range(1000)]
    young = {id(o) for g in (0, 1) for o in gc.get_objects(generation=g)}
    assert not any(id(x) in young for x in made)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(x) in oldest for x in made)  # still collectable, not frozen
    assert gc.isenabled() and not gc.get_freeze_count()
