"""A replay joined to another's made from a blank state is the replay of the whole stream.

A stream with everything the replay keeps (a system prompt and tools, server tools, a side
chain, a refused request that states its size, recorded compactions, a reset, windows and
models that change) is cut before each of its user messages; the part after the cut is
replayed from a blank state, joined to the first part's replay, and the whole replay then goes on
with the last entries: every field must be the one-pass replay's.
"""

from __future__ import annotations

from typing import Any

from ctxfold import (
    ApiError,
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Message,
    OpaquePart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    Usage,
)
from ctxfold.tokens.counting import Counter
from ctxfold.tokens.replay_join import join, joinable
from ctxfold.tokens.session import SessionCounter
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Entry


def _turn(i: int) -> list[Entry]:
    ts = f"2026-11-27T10:{i:02d}:00Z"
    search = OpaquePart({"type": "web_search_call", "query": f"q{i}"}, type="web_search_call")
    call = ToolCallPart(f"c{i}", "bash", {"command": f"ls {i}"})
    out: list[Entry] = [
        Message("user", (TextPart(f"question {i}: " + "why " * (10 + i)),), id=f"u{i}", timestamp=ts),
        Message(
            "assistant",
            (TextPart("Looking."), call, search),
            id=f"a{i}",
            model="claude-sonnet-4-5",
            usage=Usage(1000 + 100 * i, 7, cache_read_tokens=900),
            timestamp=ts,
            extra={"version": "2.1.0", "requestId": f"req{i}", "cwd": "/work"},
        ),
        Message("user", (ToolResultPart(f"c{i}", (TextPart("out " * (20 + i)),), name="bash"),), id=f"r{i}"),
        Message("assistant", (TextPart("Thinking it over."),), id=f"t{i}"),  # the response goes on
        Message("assistant", (TextPart(f"Answer {i}."),), id=f"b{i}", usage=Usage(1200 + 100 * i, 9)),
        Message("assistant", (TextPart("side work"),), branch="agent-1", usage=Usage(300, 4), timestamp=ts),
    ]
    if i == 3:
        out.append(ApiError("prompt is too long: 250000 tokens > 200000 maximum", 250_000, 200_000))
    if i == 5:
        out += [
            CompactionMarker("test", tokens_before=5000, tokens_after=800),
            ContextUpdate(model="claude-opus-4-1"),
        ]
    if i == 8:
        out.append(ContextReset())
    if i == 9:
        out.append(ContextUpdate(context_window=100_000, session_id="s2"))
    return out


def stream() -> list[Entry]:
    start = ContextUpdate(
        system=("You are a careful agent.",),
        tools=(ToolDef("bash", "Run a shell command", {"type": "object"}),),
        session_id="s1",
        extra={"cli_version": "0.9.1", "timestamp": "2026-11-27T09:59:00Z"},
    )
    return [start, *(e for i in range(12) for e in _turn(i))]


def counter() -> Counter:
    return Counter(get_tokenizer("o200k"), "anthropic")


def everything(sc: SessionCounter) -> dict[str, Any]:
    r, ctx = sc.state, sc.state.context
    rows = [list(ctx.totals), [list(c) for c in ctx.cats], list(ctx.roles), ctx.ids, ctx.largest(10)]
    return {"replay": {k: v for k, v in vars(r).items() if k != "context"}, "rows": rows}


def test_every_cut_before_a_user_message_joins_into_the_one_pass_replay() -> None:
    entries = stream()
    whole = SessionCounter(counter())
    whole.feed(entries)
    want = everything(whole)
    cuts = [
        k for k, e in enumerate(entries) if isinstance(e, Message) and e.role == "user" and e.branch is None
    ]
    refused = 0
    for k, n in ((k, n) for k in cuts for n in (1, 4, 17)):
        rest = min(len(entries), k + n)  # the joined replay goes on with the entries after these
        first, tail = SessionCounter(counter()), SessionCounter(counter())
        first.feed(entries[:k], finish=False)
        tail.feed(entries[k:rest], finish=False)
        snap = tail.snapshot()
        assert joinable(snap)
        joined = join(first.snapshot(), snap)
        if not first.state.facts.done:  # (what the log says of its harness: after a response)
            assert joined is None
            refused += 1
            continue
        assert joined is not None
        first.go_on_from(joined)
        first.feed(entries[rest:])
        assert everything(first) == want, f"cut before entry {k}, {n} entries after it"
    assert len(cuts) > 20 and refused == 3  # the cut before the first response, three times


def test_a_part_that_sets_its_own_system_prompt_is_not_joined() -> None:
    tail = SessionCounter(counter())
    tail.feed([ContextUpdate(system=("Another prompt.",)), *_turn(0)], finish=False)
    assert not joinable(tail.snapshot())
    held = SessionCounter(counter())
    held.feed([*_turn(0), CompactionMarker("test", summary="What happened so far.")], finish=False)
    assert not joinable(held.snapshot())
    assert join(held.snapshot(), tail.snapshot()) is None  # the first part holds one


def test_a_first_part_before_the_first_response_is_not_joined() -> None:
    """What the log says of its harness is read up to its first response: a part after the cut
    would read its own up to its own, which may say more."""
    entries = stream()
    first, tail = SessionCounter(counter()), SessionCounter(counter())
    first.feed(entries[:2], finish=False)
    tail.feed(entries[2:], finish=False)
    assert not first.state.facts.done and tail.state.facts.done
    assert join(first.snapshot(), tail.snapshot()) is None
