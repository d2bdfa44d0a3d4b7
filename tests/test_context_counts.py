"""The context's counts by column (``tokens/context_counts.py``) answer what a list of
``MessageCount`` answers: the largest messages, sums, the last turn, ids, through compactions that
keep recent messages, through rewinds that drop messages from the middle, and through the count
cache's pickling."""

from __future__ import annotations

import heapq
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfold.tokens import context_counts
from ctxfold.tokens.context_counts import LARGEST, ROLES, ContextCounts
from ctxfold.tokens.counting import CATEGORIES, MessageCount
from ctxfold.tokens.countstore import dumps, unpickle

_counts = st.builds(
    lambda role, cats, ident: MessageCount(
        role=role,
        total=sum(cats.values()),
        by_category=cats,
        id=ident,
        preview=f"{role} {sum(cats.values())} {ident}",
    ),
    st.sampled_from([*ROLES, "developer", "critic"]),  # roles past ROLES: a message built by hand
    st.dictionaries(st.sampled_from(CATEGORIES), st.integers(0, 3), max_size=2),
    st.sampled_from([None, "a", "b", "c", "d"]),
)
# an append, a compaction (keeping from the first message with an id, or nothing), a rewind
# (dropping the messages with some ids), a round trip
_steps = st.lists(
    st.one_of(
        _counts.map(lambda mc: ("append", mc)),
        st.tuples(st.just("compact"), st.sampled_from([None, "a", "b", "c", "d"]), _counts),
        st.tuples(st.just("drop"), st.sets(st.sampled_from(["a", "b", "c", "d"]), max_size=2)),
        st.just(("pickle",)),
    ),
    max_size=120,
)


def _compare(ctx: ContextCounts, model: list[MessageCount]) -> None:
    """(On a copy: looking lets go of previews, and the test must also meet what was not looked at.)"""
    ctx = ctx.suffix(0)
    assert len(ctx) == len(model)
    for n in sorted({1, 2, context_counts.LARGEST}):
        want = heapq.nlargest(n, enumerate(model), key=lambda im: im[1].total)
        got = ctx.largest(n)
        if ctx.rewound:  # the right rows; a preview let go before the rewind shows as none
            assert [g[:3] for g in got] == [(i, mc.role, mc.total) for i, mc in want]
            assert all(g[3] in ("", mc.preview) for g, (_, mc) in zip(got, want, strict=True))
            continue
        assert got == [(i, mc.role, mc.total, mc.preview) for i, mc in want]
    # and only those that may still be: after ``largest`` looked, none with LARGEST larger after it
    totals = [mc.total for mc in model]
    shown = {i for i, t in enumerate(totals) if sum(u > t for u in totals[i + 1 :]) < context_counts.LARGEST}
    assert set(ctx.previews) == shown or ctx.rewound
    assert ctx.sums() == {c: sum(mc.by_category.get(c, 0) for mc in model) for c in CATEGORIES}
    assert list(ctx.names()) == [(mc.role, mc.id) for mc in model]
    last = model[-1] if model else None
    assert ctx.ends_with_user_turn() == (
        last is not None and last.role == "user" and not last.by_category.get("tool_results")
    )


@settings(max_examples=400, deadline=None)
@given(_steps, st.sampled_from([1, 2, 7, 4096]), st.sampled_from([2, 3, LARGEST]))
def test_the_columns_answer_as_a_list_of_counts_does(steps: list[tuple], every: int, largest: int) -> None:
    """(With fewer largest messages known and small totals, ties and pruning come often.)"""
    with (
        mock.patch.object(context_counts, "PRUNE_EVERY", every),
        mock.patch.object(context_counts, "LARGEST", largest),
    ):
        ctx, model = ContextCounts(), []
        for step in steps:
            if step[0] == "append":
                ctx.append(step[1])
                model.append(step[1])
            elif step[0] == "compact":  # as ``SessionCounter._compaction`` does
                _, first_kept, summary = step
                start = ctx.index(first_kept) if first_kept is not None else None
                kept = ctx.suffix(start) if start is not None else None
                ids = [mc.id for mc in model]
                found = first_kept is not None and first_kept in ids
                assert start == (ids.index(first_kept) if found else None)
                if kept is not None:  # a context of its own, kept and read back
                    _compare(unpickle(dumps(ctx.suffix(start))), model[start:])
                ctx = ContextCounts()
                ctx.append(summary)
                if kept:
                    ctx.extend(kept)
                model = [summary, *(model[start:] if start is not None else [])]
            elif step[0] == "drop":  # as ``SessionCounter._rewind`` does
                gone = ctx.drop(step[1])
                kept_model = [mc for mc in model if mc.id not in step[1]]
                assert gone == {
                    c: sum(mc.by_category.get(c, 0) for mc in model if mc.id in step[1]) for c in CATEGORIES
                }
                model = kept_model
            else:
                ctx = unpickle(dumps(ctx))  # as the count cache keeps it, and reads it back
            _compare(ctx, model)


def test_only_the_previews_that_may_still_be_shown_are_kept() -> None:
    """Growing totals: each message has larger ones after it, so only the last LARGEST keep a
    preview; shrinking totals: none has, so all do."""
    with mock.patch.object(context_counts, "PRUNE_EVERY", 64):
        growing, shrinking = ContextCounts(), ContextCounts()
        for i in range(1000):
            growing.append(MessageCount("tool", total=i, by_category={"tool_results": i}, preview=str(i)))
            shrinking.append(MessageCount("tool", total=1000 - i, by_category={"tool_results": 1}))
        assert len(growing.previews) < 64 + LARGEST and len(shrinking.previews) == 1000
        assert len(unpickle(dumps(growing)).previews) == LARGEST


def test_a_kept_context_that_does_not_add_up_is_refused() -> None:
    ctx = ContextCounts()
    ctx.append(MessageCount("user", total=3, by_category={"user": 3}, id="x"))
    state = ctx.__getstate__()
    state["ids"] = []
    broken = ContextCounts.__new__(ContextCounts)
    with pytest.raises(ValueError, match="do not add up"):
        broken.__setstate__(state)
    with pytest.raises(ValueError, match="largest"):
        ctx.largest(LARGEST + 1)
