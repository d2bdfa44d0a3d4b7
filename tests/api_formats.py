"""Helpers shared by the tests of the API-shaped readers (openai-chat, openai-responses,
anthropic, genai): entry counts, detection on a file's first lines, and every other
format's files to check that a sniffer does not claim them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from conftest import FIXTURES, real_files

from ctxfold.formats import loader
from ctxfold.transcript.model import Entry, MediaPart, Message, OpaquePart, ThinkingPart, ToolResultPart

API_FORMATS = ("openai-chat", "openai-responses", "anthropic", "genai")


@dataclass(frozen=True)
class Expect:
    """What a fixture holds, counted from its raw JSON (see each test module's comments)."""

    user: int
    assistant: int
    tool: int
    system: int
    calls: int
    results: int
    errors: int  # tool results flagged as errors
    usage: int
    media: int  # MediaParts, in messages and inside tool results
    contexts: int
    resets: int
    api_errors: int
    last_prompt: int


def entries(path: Path, fmt: str | None = None) -> list[Entry]:
    return list(loader.open_transcript(path, fmt=fmt).entries)


def counts(items: Iterable[Entry]) -> dict[str, int]:
    c: Counter[str] = Counter()
    for e in items:
        if isinstance(e, Message):
            c[e.role] += 1
            c["calls"] += len(e.tool_calls)
            results = e.tool_results
            c["results"] += len(results)
            c["errors"] += sum(r.is_error for r in results)
            c["usage"] += e.usage is not None
            c["media"] += sum(isinstance(p, MediaPart) for p in e.parts)
            c["media"] += sum(isinstance(p, MediaPart) for r in results for p in r.content)
            c["opaque"] += sum(isinstance(p, OpaquePart) for p in e.parts)
            c["thinking"] += sum(isinstance(p, ThinkingPart) for p in e.parts)
        else:
            c[{"context": "contexts", "reset": "resets", "api_error": "api_errors"}.get(e.kind, e.kind)] += 1
    return {k: v for k, v in c.items() if v}


def expect_of(items: list[Entry]) -> Expect:
    c = counts(items)
    usages = [e.usage for e in items if isinstance(e, Message) and e.usage is not None]
    fields = {k: c.get(k, 0) for k in Expect.__dataclass_fields__ if k != "last_prompt"}
    return Expect(**fields, last_prompt=usages[-1].prompt_tokens if usages else 0)


def other_files(own: str) -> list[Path]:
    """Every repo fixture of another format, and every real transcript."""
    mine = FIXTURES / own
    files = [p for p in sorted(FIXTURES.glob("*/*.jsonl")) if p.parent != mine]
    return files + real_files()


def tool_results(items: Iterable[Entry]) -> list[ToolResultPart]:
    return [r for e in items if isinstance(e, Message) for r in e.tool_results]
