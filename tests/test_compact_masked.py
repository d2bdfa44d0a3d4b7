"""``compact`` with a mask pass first masks the old tool results as it reads the session
(``strategies/masked.py``), so that they are never held: what it writes must be what masking the
context read whole writes, byte for byte, and the masking must pick exactly the results the
strategy picks on the final context, through resets, compactions and side branches."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, real_files
from test_compact_streamed import _compact

import ctxfold.compaction.read as read_step
import ctxfold.compaction.run as run
from ctxfold.engine.policy import Policy
from ctxfold.strategies.base import StrategyInput
from ctxfold.strategies.mask import MaskObservationsStrategy, Premasked
from ctxfold.strategies.masked import Masking
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.context import Building, current_context
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextReset,
    Entry,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

FILES = sorted(FIXTURES.rglob("*.jsonl")) + real_files()


def _premasked_runs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each read's context came masked as it was read."""
    read_input, seen = read_step.read_input, []

    def reading(*a: Any, **k: Any) -> Any:
        read = read_input(*a, **k)
        seen.append(read.outline is not None and isinstance(read.outline.context.messages, Premasked))
        return read

    monkeypatch.setattr(run, "read_input", reading)
    return seen


@pytest.mark.parametrize(("strategy", "keep"), [("mask-observations", 0), ("mask-observations+summary", 3)])
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_masking_as_it_reads_writes_what_masking_the_whole_context_writes(
    path: Path, strategy: str, keep: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _premasked_runs(monkeypatch)
    got = _compact(path, tmp_path / "as-read", monkeypatch, strategy, keep_observations=keep)
    assert seen[:1] == [True], "the context was not masked as it was read"
    monkeypatch.setattr(run, "_can_outline", lambda *a: False)
    assert got == _compact(path, tmp_path / "whole", monkeypatch, strategy, keep_observations=keep)


def _result(call: str, text: str) -> Message:
    return Message("tool", (ToolResultPart(call, (TextPart(text),), name="shell"),), id=f"r-{call}")


def _call(call: str) -> Message:
    return Message("assistant", (ToolCallPart(call, "shell", {"cmd": "ls"}),), id=f"c-{call}")


def _session(draw: random.Random) -> list[Entry]:
    """Calls and results (some messages with two), side-branch results, resets and both kinds
    of recorded compaction, in a random order."""
    entries: list[Entry] = []
    ids: list[str] = []
    for k in range(draw.randint(5, 60)):
        roll = draw.random()
        body = "output line\n" * draw.choice([1, 5, 80, 400])
        if roll < 0.55:
            entries += [_call(f"{k}"), _result(f"{k}", body)]
            ids.append(f"c-{k}")
        elif roll < 0.65:
            two = (ToolResultPart(f"{k}a", (TextPart(body),)), ToolResultPart(f"{k}b", (TextPart(body * 2),)))
            entries.append(Message("tool", two, id=f"r-{k}"))
        elif roll < 0.72:
            entries.append(Message("tool", (ToolResultPart(f"{k}", (TextPart(body),)),), branch="side"))
        elif roll < 0.77:
            entries.append(ContextReset())
        elif roll < 0.84:
            kept = draw.choice(ids) if ids else None
            entries.append(CompactionMarker(source="pi", summary="so far", first_kept_id=kept))
        elif roll < 0.90:
            replacement = (Message("user", (TextPart("summary"),)), _call(f"x{k}"), _result(f"x{k}", body))
            entries.append(CompactionMarker(source="codex", replacement=replacement))
        else:
            entries.append(Message("user", (TextPart(f"next step {k}"),)))
    return entries


@pytest.mark.parametrize("seed", range(60))
def test_masking_as_it_reads_picks_the_results_the_strategy_picks(seed: int) -> None:
    draw = random.Random(seed)
    entries = _session(draw)
    keep = draw.choice([0, 1, 2, 5])
    counter = Counter(get_tokenizer("o200k"), "openai")
    masking, building = Masking(keep), Building()
    masking.counter = counter if seed % 3 else None  # the counter may come after the first entries
    for i, e in enumerate(entries):
        if i == 3:
            masking.counter = counter
        for ready in masking.push(e):
            building.add(ready)
            if isinstance(ready, (CompactionMarker, ContextReset)):
                masking.retain(building.ctx.messages)
    for ready in masking.flush():
        building.add(ready)
        if isinstance(ready, (CompactionMarker, ContextReset)):
            masking.retain(building.ctx.messages)
    premasked = masking.context(building.ctx.messages)
    assert isinstance(premasked, Premasked)

    whole = current_context(entries).messages
    inp = StrategyInput(
        messages=whole,
        counter=counter,
        policy=Policy(100_000, 10_000, "test"),
        predict=lambda m: 0,
        summarizer=None,  # type: ignore[arg-type]
        summarizer_window=0,
        budget_tokens=0,
        keep_observations=keep,
    )
    want = MaskObservationsStrategy().apply(inp)
    got = MaskObservationsStrategy().apply(replace(inp, messages=premasked))
    assert list(premasked) == want.messages
    assert premasked.unmasked == sum(c.total for c in counter.count_messages(whole))
    assert (got.masked, got.notes) == (want.masked, want.notes)
