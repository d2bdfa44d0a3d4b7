"""The digest's streamed readings (providers/streamed.py) give what the whole-list functions
give: on the context of every bundled fixture and real session, and on prefixes of it (each
ends somewhere else: mid-turn, after a question, after a deliverable...)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, real_files

from ctxfold.errors import CtxfoldError
from ctxfold.formats.loader import load
from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.digest import digest, digest_of
from ctxfold.providers.facts import recorded_summary
from ctxfold.providers.standing import assess
from ctxfold.providers.streamed import Digesting, Unknowable
from ctxfold.providers.todos import extract_todos
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import Message

FILES = sorted(p for p in FIXTURES.rglob("*.jsonl")) + real_files()


def _context(path: Path) -> list[Message]:
    try:
        t = load(str(path))
    except CtxfoldError:
        pytest.skip(f"{path.name} is not a session file")
    return current_context(t.entries).messages


def _cuts(n: int) -> list[int]:
    """Every prefix of a short context; about 20 spread over a long one, and its last five."""
    if n <= 30:
        return list(range(n + 1))
    return sorted({*range(0, n, max(1, n // 20)), *range(n - 4, n + 1)})


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_streamed_readings_equal_whole_ones(path: Path) -> None:
    messages = _context(path)
    if not messages:
        pytest.skip("empty context")
    seen = 0
    for cut in _cuts(len(messages)):
        part = messages[:cut]
        d = Digesting()
        for m in part:
            d.add(m)
        try:
            got = d.result(recorded_summary(part))
        except Unknowable:
            continue
        assert got.standing == assess(part), f"standing after {cut} messages"
        assert got.todos == extract_todos(part), f"todos after {cut} messages"
        if cut == len(messages) or cut % 4 == 1:  # the digest is costly: on a quarter of them
            request = SummaryRequest(part, 900, source=str(path))
            assert digest_of(request, got) == digest(request), f"digest after {cut} messages"
        seen += 1
    assert seen, "every prefix was unknowable"
