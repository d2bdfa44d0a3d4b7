"""Cutting long texts where they can be cut: between sections, between sentences.

The last deliverable (a review's findings, a plan, a report) is what the user was reading; a
summary that cuts it mid-sentence loses the part that was being discussed. When it cannot fit,
whole sections go, last first, and the summary names them. An older request too long to quote
keeps its first and last sentences, the two that usually say what and why.
"""

from __future__ import annotations

import itertools
import re

_HEADING = re.compile(r"^(?:#{1,6}\s+\S.*|\*\*[^*\n]{1,80}\*\*:?|[A-Z][^\n]{0,60}:)\s*$")
# a sentence ends at a stop and a space; at a Chinese or Japanese full stop, with no space after it
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")


def sections(text: str) -> list[tuple[str, str]]:
    """``(title, body)`` pairs, split before each heading line outside code fences (a Markdown
    heading, a bold line, a short "Title:" line); with no heading, by paragraph."""
    lines = text.strip().splitlines()
    starts: list[int] = []
    fenced = False
    for n, line in enumerate(lines):
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced and n > 0 and _HEADING.match(line.strip()):
            starts.append(n)
    if not starts:
        paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
        return [(_title(p), p) for p in paragraphs]
    bounds = [0, *starts, len(lines)]
    out = []
    for a, b in itertools.pairwise(bounds):
        body = "\n".join(lines[a:b]).strip()
        if body:
            out.append((_title(body), body))
    return out


def _title(body: str) -> str:
    first = body.strip().splitlines()[0].strip().lstrip("#").strip().strip("*").strip().rstrip(":")
    return first if len(first) <= 60 else first[:57].rstrip() + "…"


def first_and_last(text: str, limit: int) -> str:
    """``text`` whole when within ``limit`` characters, else its first and last sentences (each
    whole; the first alone when both are too long) with the cut marked."""
    text = text.strip()
    if len(text) <= limit:
        return text
    flat = " ".join(text.split())
    parts = [p for p in SENTENCE_END.split(flat) if p]
    if len(parts) < 2:
        return _words(flat, limit)
    head, tail = parts[0], parts[-1]
    if len(head) + len(tail) + 5 <= max(limit, 2 * 80):
        return f"{head} […] {tail}"
    return _words(head, limit) if len(head) > limit else f"{head} […]"


def _words(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary and marked."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut or text[:limit]) + " […]"
