"""The Claude Code writer: round trips, a compacted log written the way Claude Code records its
own compaction, and ``check``/``check_file`` on hand-made bad logs.

"Claude Code can resume from it" is checked structurally (Claude Code itself cannot run here):
the written file passes ``ctxfold validate`` (the generic rules plus the ones ``claude --resume``
relies on: one sessionId, unique uuids, the ``parentUuid`` walk from the newest line reaching the
root or a ``compact_boundary`` with no missing link, the per-line fields every real line has; a
round trip breaks exactly the generic rules its original breaks), every line's key set is one
the original log itself uses for that line type, and the compaction lines carry the same keys
as the real ``compact_boundary`` / ``isCompactSummary`` pair in posthog-impact-dashboard.jsonl
(Claude Code 2.1.112).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, real, write_jsonl
from tool_log_writing import (
    REQUEST,
    SUMMARY,
    TOKENS_AFTER,
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
from ctxfold.formats.claude_code import writer as W
from ctxfold.formats.jsonl import iter_lines
from ctxfold.formats.origin import last_model
from ctxfold.transcript.context import current_context, live
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

FILES = files("claude-code", "real/claude-code-sidechains.jsonl")
# Linkage the writer rebuilds (fresh uuids), and the reader's list of merged line uuids.
LINKS = {"parentUuid", "logicalParentUuid", "sourceToolAssistantUUID", "uuids"}


def _raw(path: Path) -> list[dict[str, Any]]:
    return [line.data for line in iter_lines(path) if not isinstance(line, LineError)]


def _strip(e: Any) -> Any:
    return dataclasses.replace(e, id=None, extra={k: v for k, v in e.extra.items() if k not in LINKS})


def _unkept(e: Any, renamed: dict[str | None, str | None]) -> Any:
    """A compaction with its first kept message renamed, and without the uuids of what it kept."""
    if not isinstance(e, CompactionMarker):
        return e
    meta = e.extra.get("compactMetadata")
    extra = dict(e.extra)
    if isinstance(meta, dict):
        extra["compactMetadata"] = {
            k: v for k, v in meta.items() if k not in ("preservedSegment", "preservedMessages")
        }
    first = renamed.get(e.first_kept_id, e.first_kept_id)
    return dataclasses.replace(e, first_kept_id=first, extra=extra)


def _main(t: Transcript) -> list[Message]:
    """The messages written: the main chain's, but those the chain left behind (a response
    dropped, the messages a rewind leaves out)."""
    return [e for e in live(t.entries) if isinstance(e, Message) and e.branch is None and not e.dropped]


def _shapes(rows: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(d.get("type"), d.get("subtype"), frozenset(d)) for d in rows if d.get("type") != "last-prompt"}


def _assert_linear(rows: list[dict[str, Any]]) -> None:
    """One chain: each line's parent is the line before it, a boundary starts over (null)."""
    prev = None
    for d in rows:
        if "uuid" not in d:
            continue
        uuid.UUID(d["uuid"], version=4)
        if d.get("subtype") == "compact_boundary":
            assert d["parentUuid"] is None and d["logicalParentUuid"] == prev
        else:
            assert d["parentUuid"] == prev
        prev = d["uuid"]


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_round_trip(path: Path, tmp_path: Path) -> None:
    t = loader.load(path, fmt="claude-code")
    out = tmp_path / "out.jsonl"
    lines = write_file(W, t, out)
    assert_compact(lines)
    same_violations(out, path, "claude-code")
    rows = [orjson.loads(line) for line in lines]
    assert registry.detect(rows[:25])[0] == "claude-code"
    t2 = loader.load(out, fmt="claude-code")

    # Side chains are not written, nor a response left behind; the main chain comes back equal
    # but for its fresh uuids.
    main, back = _main(t), t2.messages
    assert [_strip(m) for m in main] == [_strip(m) for m in back]
    new_ids = [m.id for m in back]
    assert len(set(new_ids)) == len(new_ids) and not set(new_ids) & {m.id for m in t.messages}
    for m in back:  # one line per content block, merged back on message.id
        if m.role == "assistant":
            assert len(m.extra.get("uuids", [m.id])) == max(len(m.parts), 1)
    others = [
        e for e in t.entries if isinstance(e, (ApiError, CompactionMarker)) and not e.extra.get("isSidechain")
    ]
    # what a Claude Code compaction kept is named by the new lines' uuids (the first kept message's
    # id is the new one's), and so is the summary line after it
    renamed = {m.id: b.id for m, b in zip(main, back, strict=True)}
    assert [_unkept(_strip(e), renamed) for e in others] == [
        _unkept(_strip(e), {}) for e in t2.entries if isinstance(e, (ApiError, CompactionMarker))
    ]
    assert {t2.session_id} == {d["sessionId"] for d in rows} == {t.session_id}

    _assert_linear(rows)
    # system reminders go back to attachment lines, not user lines
    sent = [m.extra["attachment"] for m in main if "attachment" in m.extra]
    assert [d["attachment"] for d in rows if d.get("type") == "attachment"] == sent
    # sourceToolAssistantUUID now names the new line holding the tool_use it answers.
    line_of = {d["uuid"]: d for d in rows if "uuid" in d}
    for d in rows:
        if "sourceToolAssistantUUID" in d:
            call = line_of[d["sourceToolAssistantUUID"]]["message"]["content"][0]
            assert call["type"] == "tool_use"
            assert call["id"] in {b["tool_use_id"] for b in d["message"]["content"]}
    # Every line has a shape Claude Code itself wrote in this log.
    assert _shapes(rows) <= _shapes(_raw(path))


def _is_prompt(m: Message) -> bool:
    return m.role == "user" and not m.tool_results and not m.extra.get("isCompactSummary")


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_compacted(path: Path, tmp_path: Path) -> None:
    t = loader.load(path, fmt="claude-code")
    ct, tail = compacted(t, "claude-code", _is_prompt)
    tail = [m for m in tail if not m.dropped]  # (a response left behind is not written)
    out = tmp_path / "compacted.jsonl"
    lines = write_file(W, ct, out)
    assert_compact(lines)
    assert violations(out, "claude-code") == []
    rows = [orjson.loads(line) for line in lines]
    assert registry.detect(rows[:25])[0] == "claude-code"
    _assert_linear(rows)

    # The way Claude Code records it: boundary (history cut), then the summary user line.
    boundary, summary, cont = rows[0], rows[1], rows[2]
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None and boundary["content"] == "Conversation compacted"
    assert boundary["compactMetadata"] == {
        "trigger": "auto",
        "preTokens": TOKENS_BEFORE,
        "postTokens": TOKENS_AFTER,
    }
    assert summary["type"] == "user" and summary["parentUuid"] == boundary["uuid"]
    assert summary["isCompactSummary"] is True and summary["isVisibleInTranscriptOnly"] is True
    assert SUMMARY in summary["message"]["content"] and REQUEST in cont["message"]["content"]
    assert "ctxfold" not in summary and "ctxfold" not in cont  # no foreign keys in Claude Code's lines
    assert {d["sessionId"] for d in rows} == {t.session_id}
    if rows[-1]["type"] == "last-prompt":  # Claude Code 2.x ends a session with the leaf it resumes from
        assert rows[-1]["leafUuid"] == rows[-2]["uuid"] and rows[-1]["sessionId"] == t.session_id

    t2 = loader.load(out, fmt="claude-code")
    marker = next(e for e in t2.entries if isinstance(e, CompactionMarker))
    assert (marker.tokens_before, marker.tokens_after, marker.trigger) == (
        TOKENS_BEFORE,
        TOKENS_AFTER,
        "auto",
    )
    ctx = current_context(t2.entries).messages
    assert ctx[0].extra["isCompactSummary"] is True and SUMMARY in ctx[0].text
    assert REQUEST in ctx[1].text
    kept = ctx[2:]
    if (tail[-1] if tail else ctx[1]).role != "assistant":
        # a log ending on the user's turn ends with an answer naming the model to resume with
        *kept, holder = kept
        assert holder.text == W.NO_RESPONSE and holder.model == last_model(t)
        assert holder.usage is None or holder.usage.prompt_tokens == 0  # no request behind it
    assert [_strip(m) for m in kept] == [_strip(m) for m in tail]


def test_compaction_lines_have_the_real_shape(tmp_path: Path) -> None:
    """Our boundary and summary lines carry the keys of the real pair Claude Code 2.1.112 wrote
    (minus promptId, which ties a line to a typed prompt, and durationMs-style metadata)."""
    path = real("claude-code/posthog-impact-dashboard.jsonl")
    raw = _raw(path)
    at = next(i for i, d in enumerate(raw) if d.get("subtype") == "compact_boundary")
    real_boundary, real_summary = raw[at], raw[at + 1]
    t = loader.load(path, fmt="claude-code")
    ct, _ = compacted(t, "claude-code", _is_prompt)
    rows = [orjson.loads(line) for line in write_file(W, ct, tmp_path / "c.jsonl")]
    assert set(rows[0]) == set(real_boundary)
    assert set(rows[0]["compactMetadata"]) <= set(real_boundary["compactMetadata"])
    assert set(rows[1]) == set(real_summary) - {"promptId"}
    assert set(rows[1]["message"]) == set(real_summary["message"]) == {"role", "content"}


def test_write_streams() -> None:
    t = Transcript("claude-code", ())
    assert inspect.isgenerator(W.write(t))


# ------------------------------------------------------------------------------ check rules

SID = "11111111-2222-3333-4444-555555555555"


def _line(uid: str, parent: str | None, kind: str = "user", **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/p",
                         "sessionId": SID, "version": "2.1.112", "gitBranch": "main", "type": kind,
                         "uuid": uid, "timestamp": "2026-01-01T00:00:00.000Z"}  # fmt: skip
    if kind == "user":
        d["message"] = {"role": "user", "content": "hi"}
    elif kind == "assistant":
        d["requestId"] = f"req_{uid}"
        d["message"] = {"model": "claude-x", "id": f"msg_{uid}", "type": "message", "role": "assistant",
                        "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    d.update(kw)
    return d


def _good() -> list[dict[str, Any]]:
    return [
        _line("a1", None),
        _line("a2", "a1", "assistant"),
        _line("a3", "a2"),
        _line("a4", "a3", "assistant"),
    ]


def _tool_turn() -> list[dict[str, Any]]:
    rows = _good()
    rows[3]["message"]["content"] = [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]
    rows.append(_line("a5", "a4", message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "x"}]}))  # fmt: skip
    return rows


def _boundary(uid: str, meta: Any = None, parent: str | None = None) -> dict[str, Any]:
    meta = {"trigger": "auto", "preTokens": 10} if meta is None else meta
    return _line(uid, parent, "system", subtype="compact_boundary", content="Conversation compacted",
                 logicalParentUuid="a4", compactMetadata=meta)  # fmt: skip


def _case(name: str) -> tuple[list[dict[str, Any]], int, str]:
    rows = _good()
    if name == "missing parent":
        rows[2]["parentUuid"] = "zz"
        return rows, 3, "is not in the file"
    if name == "duplicate uuid":
        rows[3]["uuid"] = "a2"
        return rows, 4, "duplicate uuid"
    if name == "second root":
        rows[2]["parentUuid"] = None
        return rows, 3, "second root"
    if name == "missing field":
        del rows[1]["cwd"]
        return rows, 2, "'cwd'"
    if name == "second session":
        rows[2]["sessionId"] = "other"
        return rows, 3, "second sessionId"
    if name == "starts with assistant":
        rows = rows[1:]
        rows[0]["parentUuid"] = None
        return rows, 2, "starts with an assistant"  # the reader yields it when line 2 ends the response
    if name == "orphan tool result":
        return _tool_turn(), 5, "answers no tool_use"
    if name == "tool id":
        rows = _tool_turn()
        rows[3]["message"]["content"][0]["id"] = "call_1|fc_2"
        return rows[:4], 4, "Messages API takes"
    if name == "boundary with parent":
        return (
            [*rows, _boundary("b1", parent="a4"), _line("s1", "b1", isCompactSummary=True)],
            5,
            "parentUuid null",
        )
    if name == "boundary metadata":
        return (
            [*rows, _boundary("b1", meta={"preTokens": 10}), _line("s1", "b1", isCompactSummary=True)],
            5,
            "trigger",
        )
    if name == "boundary without summary":
        return [*rows, _boundary("b1"), _line("s1", "b1")], 6, "isCompactSummary"
    raise AssertionError(name)


CASES = [
    "missing parent",
    "duplicate uuid",
    "second root",
    "missing field",
    "second session",
    "starts with assistant",
    "orphan tool result",
    "tool id",
    "boundary with parent",
    "boundary metadata",
    "boundary without summary",
]


@pytest.mark.parametrize("name", CASES)
def test_check_finds(name: str, tmp_path: Path) -> None:
    rows, line, fragment = _case(name)
    assert_flagged_once(tmp_path, rows, "claude-code", line, fragment)


def test_good_hand_made_file_passes(tmp_path: Path) -> None:
    path = tmp_path / "good.jsonl"
    rows = [
        *_good(),
        _boundary("b1"),
        _line("s1", "b1", isCompactSummary=True),
        _line("a5", "s1", "assistant"),
    ]
    write_jsonl(path, rows)
    assert violations(path, "claude-code") == []


def test_check_on_entries() -> None:
    """``check`` alone, on entries with their lines (what ``ctxfold validate`` passes)."""
    user = Message("user", (), extra={})
    items = [(1, Message("assistant", ())), (2, CompactionMarker("claude-code")), (3, user)]
    assert W.check(items) == [
        (1, "the conversation starts with an assistant message, not a user message"),
        (3, "compact_boundary is not followed by an isCompactSummary user line"),
    ]


def test_foreign_transcript(tmp_path: Path) -> None:
    """Messages Claude Code did not write get its envelope: a generated message.id shared by the
    block lines, and ``<synthetic>`` with zero usage for an answer no request produced."""
    t = foreign("user")
    out = tmp_path / "f.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, t, out)]
    assert violations(out, "claude-code") == []
    assert {d["cwd"] for d in rows if "cwd" in d} == {os.getcwd()}
    t2 = loader.load(out, fmt="claude-code")
    assert parts_of(t2) == parts_of(t)
    asked, done = (m for m in t2.messages if m.role == "assistant")
    assert asked.usage is not None and (asked.usage.prompt_tokens, asked.usage.cache_read_tokens) == (
        1200,
        1000,
    )
    assert asked.model == "claude-x" and len(asked.extra["uuids"]) == 3
    assert done.usage is None and done.extra["message"]["model"] == "<synthetic>"
    assert t2.session_id == t.session_id


# ----------------------------------------------------- what Claude Code needs to resume with it

# What Claude Code writes on a conversation line and in an answer's message (v2.1.x).
LINE_KEYS = {"parentUuid", "isSidechain", "userType", "cwd", "version", "gitBranch", "sessionId", "type",
             "message", "uuid", "timestamp", "logicalParentUuid", "subtype", "content", "isMeta", "level",
             "compactMetadata", "isVisibleInTranscriptOnly", "isCompactSummary"}  # fmt: skip
ANSWER_KEYS = {"model", "id", "type", "role", "content", "stop_reason", "stop_sequence", "usage"}


def _summary_only(t: Transcript, fmt: str) -> Transcript:
    ct, tail = compacted(t, fmt, _is_prompt)
    return dataclasses.replace(ct, entries=ct.entries[: len(ct.entries) - len(tail)])


def test_a_log_left_on_the_user_turn_ends_with_an_answer_naming_the_model(tmp_path: Path) -> None:
    """Claude Code resumes with the model of the newest answer on the chain (its default when
    there is none) and, finding the user's turn unanswered, adds "No response requested." itself:
    the compacted log ends with that answer, naming the session's model."""
    t = loader.load(FIXTURES / "real" / "claude-code-sidechains.jsonl", fmt="claude-code")
    out = tmp_path / "c.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, _summary_only(t, "claude-code"), out)]
    assert violations(out, "claude-code") == []
    _assert_linear(rows)
    answer = rows[-1] if rows[-1]["type"] == "assistant" else rows[-2]
    assert answer["type"] == "assistant" and answer["parentUuid"] == rows[2]["uuid"]
    assert answer["message"]["model"] == "claude-sonnet-4-20250514"
    assert answer["message"]["content"] == [{"type": "text", "text": "No response requested."}]
    ctx = current_context(loader.load(out, fmt="claude-code").entries).messages
    assert [m.role for m in ctx] == ["user", "user", "assistant"]
    assert ctx[2].usage is None or ctx[2].usage.prompt_tokens == 0  # no request behind it


@pytest.mark.parametrize(
    ("source", "cwd", "models"),
    [
        ("pi/v3-tree.jsonl", "/repo", {"claude-sonnet-4-5"}),
        ("codex/compacted-tools.jsonl", "/work/app", set()),
    ],
)
def test_another_harness_session_carries_over(
    source: str, cwd: str, models: set[str], tmp_path: Path
) -> None:
    """``compact --to claude-code``: no field of the other format on Claude Code's lines (a pi
    usage record would not be Claude Code's), the session's directory, thinking kept only when a
    Claude model signed it, and an answer naming the model only when it is a Claude model."""
    t = loader.load(FIXTURES / source)
    ct, _ = compacted(t, t.source_format, lambda m: m.role == "user" and not m.tool_results)
    out = tmp_path / "f.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, ct, out)]
    assert violations(out, "claude-code") == []
    _assert_linear(rows)
    lines = [d for d in rows if "uuid" in d]
    assert {d["cwd"] for d in lines} == {cwd} and all(set(d) <= LINE_KEYS for d in lines)
    answers = [d["message"] for d in lines if d["type"] == "assistant"]
    assert all(set(a) <= ANSWER_KEYS and "input_tokens" in a["usage"] for a in answers)
    kinds = {
        b["type"]
        for d in lines
        if isinstance(d.get("message", {}).get("content"), list)
        for b in d["message"]["content"]
    }
    assert kinds <= {"text", "thinking", "tool_use", "tool_result", "image"}
    thinking = [b for a in answers for b in a["content"] if b["type"] == "thinking"]
    assert all(b.get("signature") for b in thinking)
    assert {a["model"] for a in answers} - {
        "<synthetic>"
    } == models  # never a model Claude Code cannot ask for


def test_tool_ids_another_api_made_are_ones_the_messages_api_takes(tmp_path: Path) -> None:
    call = ToolCallPart("call_1|fc_2", "Read", {"path": "a.py"})
    result = ToolResultPart("call_1|fc_2", (TextPart("print(1)"),), name="Read")
    t = Transcript(
        "openai-responses",
        (
            Message("user", (TextPart("read a.py"),)),
            Message("assistant", (call,)),
            Message("tool", (result,)),
        ),
    )
    out = tmp_path / "t.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, t, out)]
    blocks = [
        b
        for d in rows
        if "message" in d and isinstance(d["message"]["content"], list)
        for b in d["message"]["content"]
    ]
    assert [b.get("id") or b.get("tool_use_id") for b in blocks if b["type"] != "text"] == ["call_1_fc_2"] * 2
    assert violations(out, "claude-code") == []
