"""The pi writer: round trips (version 1 files come back as version 3, as pi migrates them), a
compacted session written the way pi records its own compaction, and the check rules.

"pi can resume from it" is checked structurally (pi itself cannot run here): the file passes
``ctxfold validate`` (session header first, unique ids, every ``parentId`` an earlier entry so pi's
walk back from the last entry reaches the header, compaction entries with a summary, a
``tokensBefore`` and a ``firstKeptEntryId`` on the path before them), every entry has a key set
that pi's own version 3 entries have (fixtures/pi/v3-tree.jsonl and pi's SessionEntry types), and
the context pi would build (summary, kept entries, entries after) is the compacted context. Real
pi logs hold tool calls the user interrupted (pi answers them itself when it builds a request):
a round trip reproduces those and breaks no other rule.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, write_jsonl
from tool_log_writing import (
    REQUEST,
    SUMMARY,
    TOKENS_BEFORE,
    assert_compact,
    assert_flagged_once,
    compacted,
    files,
    foreign,
    ids,
    parts_of,
    same_violations,
    violations,
    write_file,
)

from ctxfold.errors import LineError
from ctxfold.formats import loader, registry
from ctxfold.formats.jsonl import iter_lines
from ctxfold.formats.pi import writer as W
from ctxfold.transcript.context import current_context, live
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Entry, Message, Transcript

FILES = files("pi")
# Entry keys pi itself writes (version 3), per entry type.
ENTRY_KEYS = {
    "message": {"type", "id", "parentId", "timestamp", "message"},
    "model_change": {"type", "id", "parentId", "timestamp", "provider", "modelId"},
    "thinking_level_change": {"type", "id", "parentId", "timestamp", "thinkingLevel"},
    "compaction": {"type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore", "details",
                   "fromHook"},
    "branch_summary": {"type", "id", "parentId", "timestamp", "fromId", "summary", "details", "fromHook"},
    "custom_message": {"type", "id", "parentId", "timestamp", "customType", "content", "details", "display"},
}  # fmt: skip


def _rows(path: Path) -> list[dict[str, Any]]:
    return [line.data for line in iter_lines(path) if not isinstance(line, LineError)]


def _strip(e: Entry) -> Entry:
    """Without what the writer rebuilds: ids (version 1 had none), parentId, the v1 pointer."""
    if isinstance(e, (Message, CompactionMarker)):
        drop = {"parentId", "firstKeptEntryIndex"}
        e = dataclasses.replace(e, id=None, extra={k: v for k, v in e.extra.items() if k not in drop})
    if isinstance(e, CompactionMarker):
        e = dataclasses.replace(e, first_kept_id=None)
    return e


def _assert_chain(rows: list[dict[str, Any]]) -> None:
    assert rows[0]["type"] == "session" and rows[0]["version"] == 3
    prev = None
    for d in rows[1:]:
        assert d["parentId"] == prev and isinstance(d["id"], str) and d["id"]
        assert set(d) <= ENTRY_KEYS[d["type"]], d["type"]
        prev = d["id"]
    assert len({d["id"] for d in rows[1:]}) == len(rows) - 1


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_round_trip(path: Path, tmp_path: Path) -> None:
    t = loader.load(path, fmt="pi")
    out = tmp_path / "out.jsonl"
    lines = write_file(W, t, out)
    assert_compact(lines)
    same_violations(out, path, "pi")
    rows = [orjson.loads(line) for line in lines]
    assert registry.detect(rows[:25])[0] == "pi"
    _assert_chain(rows)
    t2 = loader.load(out, fmt="pi")

    # (the conversation pi goes on with: a branch left behind is not written)
    body, body2 = ([e for e in live(x.entries) if not isinstance(e, ContextUpdate)] for x in (t, t2))
    assert [_strip(e) for e in body] == [_strip(e) for e in body2]
    # Real ids are kept; version 1 entries (read as "#<index>") get fresh ones.
    assert all(a.id == b.id for a, b in zip(body, body2, strict=True) if a.id and not a.id.startswith("#"))
    # A compaction still points at the same entry it kept first.
    position = {e.id: i for i, e in enumerate(body)}
    position2 = {e.id: i for i, e in enumerate(body2)}
    for a, b in zip(body, body2, strict=True):
        if isinstance(a, CompactionMarker) and a.first_kept_id in position:
            assert position2[b.first_kept_id] == position[a.first_kept_id]
    # Header and settings entries come back; only the version and the linkage change.
    cus, cus2 = ([e for e in x.entries if isinstance(e, ContextUpdate)] for x in (t, t2))
    link = {"version", "id", "parentId"}
    assert [
        dataclasses.replace(c, extra={k: v for k, v in c.extra.items() if k not in link}) for c in cus
    ] == [dataclasses.replace(c, extra={k: v for k, v in c.extra.items() if k not in link}) for c in cus2]


def _is_prompt(m: Message) -> bool:
    return m.role == "user" and "message" in m.extra and not m.extra["message"].get("role")


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_compacted(path: Path, tmp_path: Path) -> None:
    t = loader.load(path, fmt="pi")
    ct, tail = compacted(t, "pi", _is_prompt)
    out = tmp_path / "compacted.jsonl"
    lines = write_file(W, ct, out)
    assert_compact(lines)
    assert violations(out, "pi") == []
    rows = [orjson.loads(line) for line in lines]
    assert registry.detect(rows[:25])[0] == "pi"
    _assert_chain(rows)

    # pi's layout: the kept entries (continuation, then the tail), then the compaction entry
    # naming the first of them. ctxfold's own summary message is not written: pi wraps the
    # summary from the compaction entry itself.
    comp = rows[-1]
    assert (
        comp["type"] == "compaction" and comp["summary"] == SUMMARY and comp["tokensBefore"] == TOKENS_BEFORE
    )
    first = next(d for d in rows[1:] if d["id"] == comp["firstKeptEntryId"])
    assert REQUEST in first["message"]["content"][0]["text"]
    assert not any("[Previous conversation summary]" in line.decode() for line in lines)

    t2 = loader.load(out, fmt="pi")
    ctx = current_context(t2.entries).messages
    assert ctx[0].text == SUMMARY and REQUEST in ctx[1].text
    assert [_strip(m) for m in ctx[2:]] == [_strip(m) for m in tail]


def test_the_v3_fixture_keeps_its_ids(tmp_path: Path) -> None:
    path = FIXTURES / "pi" / "v3-tree.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, loader.load(path, fmt="pi"), tmp_path / "o.jsonl")]
    # What pi goes on with, in one chain, keeps its ids: the settings entries, then a2 (b2 goes
    # back to it, before the compaction a9, which with a3-a7 and b1 is off pi's path), b2, and
    # what follows (not extension state, labels, unknown roles or types).
    assert [d["id"] for d in rows[1:]] == ["a1", "a8", "a2", "b2", "b5", "b6", "b9", "c1"]
    before = tmp_path / "before-branch.jsonl"  # up to b1: the compaction is on the path
    before.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:11]))
    rows = [orjson.loads(line) for line in write_file(W, loader.load(before, fmt="pi"), tmp_path / "b.jsonl")]
    assert [d["id"] for d in rows[1:]] == [
        "a1",
        "a2",
        "a3",
        "a4",
        "a5",
        "a6",
        "a8",
        "a9",
        "b1",
    ]  # not a7 ("!!")
    comp = next(d for d in rows if d["type"] == "compaction")
    assert comp["firstKeptEntryId"] == "a3" and comp["details"] == {
        "readFiles": ["a.py"],
        "modifiedFiles": [],
    }


def test_write_streams() -> None:
    assert inspect.isgenerator(W.write(Transcript("pi", ())))


# ------------------------------------------------------------------------------ check rules

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/p"}


def _msg(eid: str, parent: str | None, role: str = "user", **message: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": "hi"}], "timestamp": 1}
    if role == "assistant":
        body.update(
            api="anthropic-messages", provider="anthropic", model="claude-opus-4-5", stopReason="stop"
        )
    body.update(message)
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01Z",
        "message": body,
    }


def _good() -> list[dict[str, Any]]:
    call = [{"type": "toolCall", "id": "t1", "name": "read", "arguments": {}}]
    return [
        dict(HEADER),
        _msg("e1", None),
        _msg("e2", "e1", "assistant", content=call),
        _msg("e3", "e2", "toolResult", toolCallId="t1", toolName="read", isError=False),
    ]


def _compaction(eid: str, parent: str, **kw: Any) -> dict[str, Any]:
    d = {"type": "compaction", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:02Z",
         "summary": "s", "firstKeptEntryId": "e2", "tokensBefore": 10}  # fmt: skip
    d.update(kw)
    return d


def _case(name: str) -> tuple[list[dict[str, Any]], int, str]:
    rows = _good()
    if name == "header":
        rows[0] = {"type": "session", "id": "s1"}
        return rows, 1, "session header"
    if name == "not first":
        return rows[1:], 1, "starts with its session header"
    if name == "entry id":
        del rows[2]["id"]
        return rows, 3, "string id"
    if name == "duplicate id":
        rows[2]["id"] = "e1"
        return rows, 3, "duplicate entry id"
    if name == "missing parent":
        rows[2]["parentId"] = "zz"
        return rows, 3, "names no earlier entry"
    if name == "orphan tool result":
        rows[3]["message"]["toolCallId"] = "t9"
        return rows, 4, "answers no toolCall"
    if name == "first kept off the path":
        return [*rows, _compaction("c1", "e3", firstKeptEntryId="nope")], 5, "not an entry on the path"
    if name == "compaction summary":
        return [*rows, _compaction("c1", "e3", summary=None)], 5, "string 'summary'"
    if name == "compaction tokens":
        return [*rows, _compaction("c1", "e3", tokensBefore="many")], 5, "tokensBefore"
    if name == "header too long":
        rows[0]["cwd"] = "/p" * 300
        return rows, 1, "pi -c reads the first 512"
    if name == "second header":
        return [*rows, dict(HEADER)], 5, "second session header"
    if name == "no answer":
        return [rows[0], rows[1]], 1, "no assistant message"
    if name == "provider":
        del rows[2]["message"]["provider"]
        return rows, 3, "string 'provider' and 'model'"
    if name == "model change":
        return (
            [*rows, {"type": "model_change", "id": "m", "parentId": "e3", "modelId": "x"}],
            5,
            "model_change",
        )
    if name == "v1 first kept index":
        v1 = [{k: v for k, v in d.items() if k not in ("id", "parentId", "version")} for d in rows]
        comp = {
            k: v for k, v in _compaction("c", "x").items() if k not in ("id", "parentId", "firstKeptEntryId")
        }
        return [*v1, {**comp, "firstKeptEntryIndex": 7}], 5, "firstKeptEntryIndex"
    raise AssertionError(name)


CASES = [
    "header",
    "not first",
    "entry id",
    "duplicate id",
    "missing parent",
    "orphan tool result",
    "first kept off the path",
    "compaction summary",
    "compaction tokens",
    "v1 first kept index",
    "header too long",
    "second header",
    "no answer",
    "provider",
    "model change",
]


@pytest.mark.parametrize("name", CASES)
def test_check_finds(name: str, tmp_path: Path) -> None:
    rows, line, fragment = _case(name)
    assert_flagged_once(tmp_path, rows, "pi", line, fragment)


def test_good_hand_made_file_passes(tmp_path: Path) -> None:
    rows = [*_good(), _compaction("c1", "e3"), _msg("e4", "c1")]
    path = tmp_path / "good.jsonl"
    write_jsonl(path, rows)
    assert violations(path, "pi") == []


@pytest.mark.parametrize("tool_role", ["tool", "user"])
def test_foreign_transcript(tool_role: str, tmp_path: Path) -> None:
    """Messages pi did not write get pi's message fields; a tool result (also one held in an
    Anthropic-style user message) becomes a toolResult message named after its tool."""
    t = foreign(tool_role)
    out = tmp_path / "f.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, t, out)]
    assert violations(out, "pi") == []
    _assert_chain(rows)
    t2 = loader.load(out, fmt="pi")
    assert parts_of(t2) == parts_of(foreign("tool"))
    result = next(m for m in t2.messages if m.role == "tool").tool_results[0]
    assert result.name == "Read"
    asked = next(m for m in t2.messages if m.usage is not None)
    assert (asked.usage.prompt_tokens, asked.model) == (1200, "claude-x")


# ------------------------------------------------------------------ what pi needs to resume it


def _summary_only(t: Transcript, fmt: str) -> Transcript:
    """What the summary strategy hands the writer: no verbatim tail, so no answer at all."""
    ct, tail = compacted(t, fmt, lambda m: m.role == "user")
    return dataclasses.replace(ct, entries=ct.entries[: len(ct.entries) - len(tail)])


def _restores(rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(provider, model) of every model_change and assistant message: what pi restores from."""
    named = {(d["provider"], d["modelId"]) for d in rows if d["type"] == "model_change"}
    return named | {
        (d["message"]["provider"], d["message"]["model"])
        for d in rows
        if d["type"] == "message" and d["message"]["role"] == "assistant"
    }


def test_a_session_left_without_an_answer_gets_one_before_its_compaction(tmp_path: Path) -> None:
    """pi treats a file with no assistant message as never written, and appends every entry
    again with its first reply; the one written stands before the compaction, off the context
    pi builds, and names the session's provider and model (the newest answer's: pi restores
    the model from it)."""
    source = FIXTURES / "pi" / "v3-tree.jsonl"
    out = tmp_path / "c.jsonl"
    rows = [
        orjson.loads(line) for line in write_file(W, _summary_only(loader.load(source, fmt="pi"), "pi"), out)
    ]
    assert violations(out, "pi") == []
    _assert_chain(rows)
    kinds = [(d["type"], d.get("message", {}).get("role")) for d in rows[1:]]
    assert kinds == [("message", "assistant"), ("message", "user"), ("compaction", None)]
    assert _restores(rows) == {("anthropic", "claude-sonnet-4-5")}
    assert rows[-1]["firstKeptEntryId"] == rows[2]["id"]  # the stand-in is not kept
    ctx = current_context(loader.load(out, fmt="pi").entries).messages
    assert [m.role for m in ctx] == ["user", "user"] and ctx[0].text == SUMMARY and REQUEST in ctx[1].text
    head = rows[0]
    assert head["parentSession"] == str(source.resolve()) and head["cwd"] == "/repo"
    assert head["timestamp"] > "2026-01-02T10:00:00.000Z" and len(orjson.dumps(head)) <= 512


def test_a_header_too_long_for_pi_c_keeps_pi_own_fields(tmp_path: Path) -> None:
    """``pi -c`` reads 512 bytes to tell a session file: a longer header would hide it."""
    t = loader.load(FIXTURES / "pi" / "v3-tree.jsonl", fmt="pi")
    head = next(e for e in t.entries if isinstance(e, ContextUpdate))
    big = dataclasses.replace(head, extra={**head.extra, "note": "x" * 600})
    t = dataclasses.replace(t, entries=tuple(big if e is head else e for e in t.entries))
    out = tmp_path / "o.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, t, out)]
    assert set(rows[0]) == {"type", "version", "id", "timestamp", "cwd"} and violations(out, "pi") == []


@pytest.mark.parametrize(
    ("source", "provider", "cwd"),
    [
        ("real/claude-code-sidechains.jsonl", ("anthropic", "anthropic-messages"), "/path/to/Demo"),
        ("codex/compacted-tools.jsonl", ("openai", "openai-responses"), "/work/app"),
    ],
)
def test_another_harness_session_carries_over(
    source: str, provider: tuple[str, str], cwd: str, tmp_path: Path
) -> None:
    """``compact --to pi``: none of the other format's fields in pi's entries, pi's own usage
    shape, the provider pi knows the model's family by, and the session's directory."""
    t = loader.load(FIXTURES / source)
    ct, _ = compacted(t, t.source_format, lambda m: m.role == "user" and not m.tool_results)
    out = tmp_path / "f.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, ct, out)]
    assert violations(out, "pi") == []
    _assert_chain(rows)
    assert rows[0]["cwd"] == cwd and set(rows[0]) == {"type", "version", "id", "timestamp", "cwd"}
    answers = [d["message"] for d in rows if d["type"] == "message" and d["message"]["role"] == "assistant"]
    assert answers and {(a["provider"], a["api"]) for a in answers} == {provider}
    assert all(
        set(a) == {"role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"}
        for a in answers
    )
    assert all(
        set(a["usage"]) == {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
        for a in answers
    )
    blocks = [b for d in rows if d["type"] == "message" for b in d["message"].get("content", [])]
    assert {b["type"] for b in blocks} <= {"text", "thinking", "toolCall", "image"}
