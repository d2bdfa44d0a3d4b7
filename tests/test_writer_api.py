"""What every API-format writer must do on every fixture of its format: write a file that is
detected as that format, re-reads to the same messages, errors, resets and context, and obeys
the API's rules (``check``); and the fixtures themselves obey them. Format-specific behaviour
(compaction merges, line shapes) is tested in each ``test_writer_<format>.py``."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from conftest import FIXTURES, detect
from writer_support import assert_compact, body, read_items, same_context, write_file

from ctxfold.formats import loader
from ctxfold.formats.anthropic import writer as anthropic_writer
from ctxfold.formats.genai import writer as genai_writer
from ctxfold.formats.openai_chat import writer as openai_chat_writer
from ctxfold.formats.openai_responses import writer as openai_responses_writer

WRITERS: dict[str, ModuleType] = {
    "openai-chat": openai_chat_writer,
    "openai-responses": openai_responses_writer,
    "anthropic": anthropic_writer,
    "genai": genai_writer,
}
CASES = [(fmt, path) for fmt in WRITERS for path in sorted((FIXTURES / fmt).glob("*.jsonl"))]


@pytest.mark.parametrize(("fmt", "path"), CASES, ids=[f"{f}/{p.name}" for f, p in CASES])
def test_round_trip_is_exact(fmt: str, path: Path, tmp_path: Path) -> None:
    w = WRITERS[fmt]
    t = loader.load(path, fmt=fmt)
    out = write_file(w, t, tmp_path / "out.jsonl")
    assert_compact(out)
    assert detect(out) == fmt
    items = read_items(out, fmt)
    assert w.check(items) == []
    back = loader.materialize([e for _, e in items], fmt)
    # messages (roles, parts, ids, timestamps, usage numbers, model, extra), errors and resets;
    # for genai, ids made up for id-less calls and ADK epoch timestamps come back the same too
    assert body(back.entries) == body(t.entries)
    same_context(t, back)


@pytest.mark.parametrize(("fmt", "path"), CASES, ids=[f"{f}/{p.name}" for f, p in CASES])
def test_fixtures_obey_the_rules(fmt: str, path: Path) -> None:
    assert WRITERS[fmt].check_file(path) == []
