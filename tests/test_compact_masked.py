"""``compact`` with a mask pass first masks the old tool results as it reads the session
(``strategies/masked.py``), so that they are never held: what it writes must be what masking the
context read whole writes, byte for byte, and the masking must pick exactly the results the
strategy picks on the final context, through resets, compactions and side branches."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, real_files
from test_compact_streamed import _compact, _counting

import ctxfold.compaction.read as read_step
import ctxfold.compaction.run as run
from ctxfold.engine.policy import Policy
from ctxfold.strategies.base import StrategyInput
from ctxfold.strategies.mask import MaskObservationsStrategy, Premasked
from ctxfold.strategies.masked import MaskedCount, Masking
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


def _runs_as(monkeypatch: pytest.MonkeyPatch, kind: type = Premasked) -> list[bool]:
    """Whether each read's context came as ``kind``: masked as it was read (:class:`Premasked`),
    or counted and let go, too long to hold (:class:`MaskedCount`)."""
    read_input, seen = read_step.read_input, []

    def reading(*a: Any, **k: Any) -> Any:
        read = read_input(*a, **k)
        seen.append(read.outline is not None and isinstance(read.outline.context.messages, kind))
        return read

    monkeypatch.setattr(run, "read_input", reading)
    return seen


@pytest.mark.parametrize(("strategy", "keep"), [("mask-observations", 0), ("mask-observations+summary", 3)])
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_masking_as_it_reads_writes_what_masking_the_whole_context_writes(
    path: Path, strategy: str, keep: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _runs_as(monkeypatch)
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


@pytest.mark.parametrize(("keep", "window"), [(0, None), (3, None), (0, 3000)])
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_masked_context_counted_not_kept_refuses_or_writes_what_the_whole_read_does(
    path: Path, keep: int, window: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every masked context counted and let go (``CTXFOLD_STREAM_CHARS=0``): a pass over the
    threshold whatever the repairs drop is refused from the count; any other is read again
    whole, and writes what the whole read writes."""
    with monkeypatch.context() as m:
        m.setenv("CTXFOLD_STREAM_CHARS", "0")
        seen = _runs_as(m, MaskedCount)
        got = _compact(
            path, tmp_path / "counted", m, "mask-observations", keep_observations=keep, window=window
        )
    with monkeypatch.context() as m:
        m.setattr(run, "_can_outline", lambda *a: False)
        want = _compact(
            path, tmp_path / "whole", m, "mask-observations", keep_observations=keep, window=window
        )
    counted_refusal = "leaves it at about" in got.get("refused", "")
    assert not counted_refusal or seen == [True]
    about = re.search(r"leaves it at about ([\d,]+) predicted", got.get("refused", ""))
    if about is not None:  # refused from the count, made before re-pairing the tool calls
        exact = re.search(r"leaves it at ([\d,]+) predicted", want.get("refused", ""))
        assert exact is not None, want
        counted, final = (int(m.group(1).replace(",", "")) for m in (about, exact))
        assert abs(counted - final) <= 0.01 * final
        got = {"refused": got["refused"].replace(about.group(0), exact.group(0))}
    assert got == want


def _long_session(path: Path, rounds: int, orphan: int = 0) -> Path:
    """A session that never compacts: each round a request, a call, a long result and a long
    answer (what masking keeps), in ctxfold's own format; then a result of ``orphan`` words
    whose call is not in the session (re-pairing drops it), if any."""
    lines = [{"type": "header", "format": "ctxfold", "version": 1, "session_id": "long", "model": "gpt-4o"}]
    for k in range(rounds):
        words = " ".join(f"w{k}-{j}" for j in range(300))
        lines += [
            {"type": "message", "role": "user", "parts": [{"type": "text", "text": f"step {k}: go on"}]},
            {
                "type": "message",
                "role": "assistant",
                "parts": [
                    {"type": "tool_call", "id": f"c{k}", "name": "run", "arguments": {"cmd": f"make {k}"}}
                ],
            },
            {
                "type": "message",
                "role": "tool",
                "parts": [
                    {
                        "type": "tool_result",
                        "call_id": f"c{k}",
                        "name": "run",
                        "content": [{"type": "text", "text": words}],
                    }
                ],
            },
            {"type": "message", "role": "assistant", "parts": [{"type": "text", "text": words}]},
        ]
    if orphan:
        text = " ".join(f"lost-{j}" for j in range(orphan))
        part = {
            "type": "tool_result",
            "call_id": "gone",
            "name": "run",
            "content": [{"type": "text", "text": text}],
        }
        lines.append({"type": "message", "role": "tool", "parts": [part]})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.mark.parametrize("window", [20_000, 2_000_000])
def test_a_long_masked_context_is_counted_then_refused_or_read_again(
    window: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound, a masked context is counted, not kept. In a window it cannot fit, the
    pass is refused from that count as the whole read refuses it; in one it fits, the session
    is read again and written as the whole read writes it."""
    path = _long_session(tmp_path / "long.jsonl", 60)
    with monkeypatch.context() as m:
        m.setattr(read_step, "MASK_COUNT_CHARS", 40_000)
        seen, rereads = _runs_as(m, MaskedCount), _counting(m, run, "reread")
        got = _compact(path, tmp_path / "counted", m, "mask-observations", keep_observations=2, window=window)
    with monkeypatch.context() as m:
        m.setattr(run, "_can_outline", lambda *a: False)
        want = _compact(path, tmp_path / "whole", m, "mask-observations", keep_observations=2, window=window)
    assert seen == [True]
    if window < 100_000:
        assert "leaves it at about" in got["refused"] and not rereads
        assert got["refused"].replace("at about", "at") == want["refused"]  # nothing to re-pair here
    else:
        assert "files" in got and len(rereads) == 1
        assert got == want


def test_a_counted_context_over_only_by_what_re_pairing_drops_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recent result whose call is not in the context puts the count over the threshold, but
    re-pairing drops it and the rest fits: not refused from the count, read again and written."""
    path = _long_session(tmp_path / "long.jsonl", 60, orphan=60_000)
    options: dict[str, Any] = {"keep_observations": 2, "window": 150_000}
    with monkeypatch.context() as m:
        m.setattr(read_step, "MASK_COUNT_CHARS", 40_000)
        seen, rereads = _runs_as(m, MaskedCount), _counting(m, run, "reread")
        got = _compact(path, tmp_path / "counted", m, "mask-observations", **options)
    with monkeypatch.context() as m:
        m.setattr(run, "_can_outline", lambda *a: False)
        want = _compact(path, tmp_path / "whole", m, "mask-observations", **options)
    assert seen == [True] and len(rereads) == 1
    assert "files" in got and got == want


def test_what_a_claude_code_compaction_kept_is_masked_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code 2.1.332 keeps the newest messages after its summary line; masking as it reads
    masks their results too, and says so (it forgot them, and refused a pass that masked only
    those as one that changed nothing: found by fuzzing)."""
    path = tmp_path / "kept.jsonl"
    rows = [
        json.loads(line) for line in (FIXTURES / "claude-code" / "preserved.jsonl").read_text().splitlines()
    ]
    (result,) = [r for r in rows if r.get("uuid") == "q3"]  # the kept turn's result: made worth masking
    (block,) = result["message"]["content"]
    block["content"] = "row 1,2,3\n" * 3000
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = _compact(path, tmp_path / "out", monkeypatch, "mask-observations", keep_observations=0)
    assert "refused" not in got, got
    written = b"".join(v for k, v in got["files"].items() if k.endswith(".jsonl"))
    placeholders = len(re.findall(rb"output removed by ctxfold", written))
    (note,) = [n for n in got["notes"] if n.startswith("masked ")]
    assert placeholders >= 1 and note.startswith(f"masked {placeholders} of "), (note, placeholders)
