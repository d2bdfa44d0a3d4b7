"""Shared by the Claude Code, Codex and pi writer tests: which files to round-trip, writing a
transcript to disk, and building the compacted transcript the engine would hand a writer."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
from conftest import FIXTURES, real_files

from ctxfold.formats.validate import validate
from ctxfold.strategies.summary import continuation_message, summary_message
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextUpdate,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    Usage,
)

SUMMARY = "Goal: ship the dashboard.\n\nDone: data fetch, scoring.\nNext: deploy."
REQUEST = "deploy it"
TOKENS_BEFORE, TOKENS_AFTER = 167_766, 6_977


def files(fmt: str, *repo_files: str) -> list[Path]:
    """Every real log of ``fmt`` (../shared) plus the repository's own fixtures for it."""
    real = [p for p in real_files() if p.parent.name == fmt]
    own = sorted((FIXTURES / fmt).glob("*.jsonl")) + [FIXTURES / f for f in repo_files]
    return real + [p for p in own if not p.name.startswith("bad-")]


def ids(paths: Iterable[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in paths]


def write_file(mod: ModuleType, t: Transcript, path: Path) -> list[bytes]:
    lines = list(mod.write(t))
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return lines


def assert_compact(lines: Iterable[bytes]) -> None:
    """orjson output is compact: re-dumping a parsed line gives the same bytes."""
    for line in lines:
        assert b"\n" not in line
        assert orjson.dumps(orjson.loads(line)) == line


def compacted(
    t: Transcript, fmt: str, is_prompt: Callable[[Message], bool]
) -> tuple[Transcript, list[Message]]:
    """ContextUpdate + ctxfold marker + summary + continuation + a verbatim tail starting at the
    second-to-last prompt (a clean tool-call boundary: every result in it answers a call in it)."""
    main = [m for m in t.messages if m.branch is None]
    starts = [i for i, m in enumerate(main) if is_prompt(m)]
    tail = main[starts[-2] if len(starts) > 1 else starts[-1] :]
    cu = ContextUpdate(
        system=t.system,
        tools=t.tools,
        model=t.models[-1] if t.models else None,
        context_window=t.context_window,
        session_id=t.session_id,
    )
    marker = CompactionMarker(
        source="ctxfold",
        summary=SUMMARY,
        tokens_before=TOKENS_BEFORE,
        tokens_after=TOKENS_AFTER,
        trigger="auto",
    )
    entries = (cu, marker, summary_message(SUMMARY), continuation_message(REQUEST), *tail)
    return Transcript(fmt, entries, session_id=t.session_id, extra={"original": t}), tail


def foreign(tool_role: str) -> Transcript:
    """A transcript no tool wrote (as if converted from an API log): no format fields in ``extra``."""
    call = ToolCallPart("toolu_1", "Read", {"path": "a.py"})
    result = ToolResultPart("toolu_1", (TextPart("print(1)"),), name="Read")
    return Transcript(
        "anthropic",
        (
            ContextUpdate(
                system=("Be brief.",), model="claude-x", session_id="0f0f0f0f-0000-4000-8000-000000000001"
            ),
            Message("user", (TextPart("read a.py"),), timestamp="2026-01-01T00:00:01.000Z"),
            Message(
                "assistant",
                (ThinkingPart("plan", signature="sig"), TextPart("Reading."), call),
                usage=Usage(1200, 30, cache_read_tokens=1000),
                model="claude-x",
            ),
            Message(tool_role, (result,)),
            Message("assistant", (TextPart("Done."),)),
        ),
        session_id="0f0f0f0f-0000-4000-8000-000000000001",
    )


def parts_of(t: Transcript) -> list[tuple[str, Any]]:
    """Every message part with its role, in order (how a format splits messages aside)."""
    return [(m.role, p) for m in t.messages for p in m.parts]


def violations(path: Path, fmt: str) -> list[tuple[int, str]]:
    """What ``ctxfold validate`` reports: the generic rules plus the writer's check and check_file."""
    return [(v.line, v.message) for v in validate(str(path), fmt).violations]


def assert_flagged_once(tmp_path: Path, rows: list[Any], fmt: str, line: int, fragment: str) -> None:
    """A hand-made bad file: exactly one violation mentions ``fragment``, on ``line``."""
    from conftest import write_jsonl

    found = violations(write_jsonl(tmp_path / "bad.jsonl", rows), fmt)
    assert [n for n, msg in found if fragment in msg] == [line], found


def same_violations(out: Path, original: Path, fmt: str) -> None:
    """A round trip is faithful: the output breaks exactly the rules the original breaks (real
    logs hold tool calls left unanswered when the user interrupted; the tools tolerate them),
    line numbers aside, and the writer's own format rules not at all."""

    def norm(found: list[tuple[int, str]]) -> list[str]:
        return sorted(re.sub(r"\(line \d+\)|at line \d+", "", msg) for _, msg in found)

    assert norm(violations(out, fmt)) == norm(violations(original, fmt))
    mod = importlib.import_module(f"ctxfold.formats.{fmt.replace('-', '_')}.writer")
    assert mod.check_file(out) == []
