"""pi session reader: counts and spot values on real sessions, edge cases on a handmade v3 file.

Every expected number was derived from the raw JSON with jq (the expressions are next to the
numbers), never by running the reader.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, real, real_files, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader, registry
from ctxfold.formats.pi import reader as pi
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextUpdate,
    Entry,
    MediaPart,
    Message,
    Rewind,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

EDGE = FIXTURES / "pi" / "v3-tree.jsonl"


@dataclass(frozen=True)
class Expect:
    user: int
    assistant: int
    tool: int
    calls: int
    usage: int
    partial: int
    compactions: int
    contexts: int
    thinking: int
    last_prompt: int
    last_model: str
    session: str
    models: tuple[str, ...]


# Derived with `jq -s '<expr>' FILE`, M = map(select(.type=="message")):
#   user        M | map(select(.message.role=="user" or (.message.role=="bashExecution"
#               and (.message.excludeFromContext|not)))) | length
#   assistant   M | map(select(.message.role=="assistant")) | length
#   tool        M | map(select(.message.role=="toolResult")) | length   (= tool results)
#   calls       [.. assistant .message.content[] | select(.type=="toolCall")] | length
#   usage       assistant messages with usage.input+output+cacheRead+cacheWrite > 0
#   partial     those of them with stopReason "aborted" or "error"
#   compactions map(select(.type=="compaction")) | length
#   contexts    map(select(.type=="session" or .type=="model_change" or .type=="thinking_level_change")) | length
#   thinking    [.. assistant .message.content[] | select(.type=="thinking")] | length
#   last_prompt last usage-carrying assistant: .message.usage | .input+.cacheRead+.cacheWrite
#   last_model  last assistant .message.model; session = .[0].id
#   models      [.[] | if .type=="session" or .type=="model_change" then .modelId elif .type=="message"
#               and .message.role=="assistant" then .message.model else empty end]
#               | reduce .[] as $m ([]; if index([$m]) then . else . + [$m] end)   (first-seen order)
CASES = {
    "pi/large-session.jsonl": Expect(
        user=88,
        assistant=453,
        tool=373,
        calls=391,
        usage=439,
        partial=8,
        compactions=0,
        contexts=105,
        thinking=1,
        last_prompt=177604,
        last_model="claude-sonnet-4-5",
        session="d703a1a9-1b7b-4fb1-b512-c9738b1fe617",
        models=("claude-sonnet-4-5", "gpt-5.1-codex"),
    ),
    "pi/before-compaction.jsonl": Expect(
        user=58,  # 55 user + 3 bashExecution (none excluded from context)
        assistant=484,
        tool=448,
        calls=454,
        usage=471,
        partial=6,
        compactions=2,
        contexts=11,
        thinking=49,
        last_prompt=167988,
        last_model="claude-opus-4-5",
        session="ffae836b-9420-4060-ac13-7745215f90ff",
        models=(
            "claude-opus-4-5",
            "claude-3-opus-20240229",
            "claude-opus-4-5-20251101",
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929",
        ),
    ),
}


def _entries(path: Path) -> list[Entry]:
    return list(loader.open_transcript(path, fmt="pi").entries)


def _messages(entries: list[Entry]) -> list[Message]:
    return [e for e in entries if isinstance(e, Message)]


@pytest.mark.parametrize("rel", sorted(CASES), ids=lambda r: Path(r).stem)
def test_real_counts(rel: str) -> None:
    exp = CASES[rel]
    entries = _entries(real(rel))
    msgs = _messages(entries)
    roles = Counter(m.role for m in msgs)
    assert roles == Counter(user=exp.user, assistant=exp.assistant, tool=exp.tool)
    assert sum(len(m.tool_calls) for m in msgs) == exp.calls
    assert sum(len(m.tool_results) for m in msgs) == exp.tool
    usages = [m.usage for m in msgs if m.usage is not None]
    assert len(usages) == exp.usage
    assert sum(not u.final for u in usages) == exp.partial
    assert all(m.role == "assistant" for m in msgs if m.usage is not None)
    assert sum(isinstance(e, CompactionMarker) for e in entries) == exp.compactions
    assert sum(isinstance(e, ContextUpdate) for e in entries) == exp.contexts
    assert sum(isinstance(p, ThinkingPart) for m in msgs for p in m.parts) == exp.thinking
    assert not any(isinstance(e, ApiError) for e in entries)  # no overflow errors in either file


@pytest.mark.parametrize("rel", sorted(CASES), ids=lambda r: Path(r).stem)
def test_real_spot_values(rel: str) -> None:
    exp = CASES[rel]
    t = loader.load(real(rel), fmt="pi")
    assert t.source_format == "pi"
    assert t.session_id == exp.session
    assert t.models == exp.models
    last = [m for m in t.messages if m.usage is not None][-1]
    assert last.usage is not None and last.usage.prompt_tokens == exp.last_prompt
    assert last.usage.fields["prompt_tokens"] == "message.usage.input+cacheRead+cacheWrite"
    assert [m for m in t.messages if m.role == "assistant"][-1].model == exp.last_model


def test_prompt_tokens_match_total_minus_output() -> None:
    """pi's totalTokens (where recorded) is input + cacheRead + cacheWrite + output."""
    path = real("pi/before-compaction.jsonl")
    raw = {}
    with path.open() as f:
        for i, line in enumerate(f):
            d = json.loads(line)
            u = d.get("message", {}).get("usage") if d.get("type") == "message" else None
            if u and "totalTokens" in u and u["totalTokens"]:
                raw[f"#{i}"] = u["totalTokens"] - u["output"]
    got = {m.id: m.usage.prompt_tokens for m in _messages(_entries(path)) if m.usage is not None}
    assert raw and all(got[k] == v for k, v in raw.items() if k in got)


def test_v1_compaction_points_at_first_kept_message() -> None:
    # grep -n '"type":"compaction"' → lines 360 and 629, firstKeptEntryIndex 293 and 551,
    # tokensBefore 175004 and 185014; line 294 (index 293) is the user message
    # "i reviwed what we have, it's good. continue"; line 552 is the user message "can leave it".
    entries = _entries(real("pi/before-compaction.jsonl"))
    marks = [e for e in entries if isinstance(e, CompactionMarker)]
    assert [(m.first_kept_id, m.tokens_before, m.id) for m in marks] == [
        ("#293", 175004, "#359"),
        ("#551", 185014, "#628"),
    ]
    assert (
        marks[0].source == "pi" and marks[0].summary and marks[0].summary.startswith("# Context Checkpoint")
    )
    by_id = {m.id: m for m in _messages(entries)}
    assert by_id["#293"].role == "user" and by_id["#293"].text.startswith("i reviwed what we have")
    assert by_id["#551"].text == "can leave it"


# ------------------------------------------------------------------------------ detection


@pytest.mark.parametrize("rel", sorted(CASES), ids=lambda r: Path(r).stem)
def test_sniff_scores_own_files_high(rel: str) -> None:
    assert pi.sniff(sniff_head(real(rel))) == 100


@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_detect(path: Path) -> None:
    objs = sniff_head(path)
    mine = path.parent.name == "pi"
    assert (pi.sniff(objs) > 0) == mine
    fmt, _ = registry.detect(objs)
    assert (fmt == "pi") == mine


def _other_fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*.jsonl") if p.parent.name != "pi")


@pytest.mark.parametrize("path", _other_fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_sniff_ignores_other_handmade_fixtures(path: Path) -> None:
    objs = sniff_head(path)
    assert pi.sniff(objs) == 0


def test_sniff_headerless_fragment() -> None:
    frag = [{"type": "message", "message": {"role": "toolResult", "toolCallId": "x", "content": []}}]
    assert pi.sniff(frag) == 80
    assert pi.sniff([{"type": "message", "role": "user", "content": "hi"}]) == 0
    assert pi.sniff([]) == 0


# ------------------------------------------------------------------------ handmade v3 file
# v3-tree.jsonl has 20 lines: header; model_change a1; user a2 (text + image); assistant a3
# (thinking, text, 2 tool calls, usage 10/20/100/5); toolResults a4 (text + image) and a5
# (error); bashExecution a6 (exit 2) and a7 (excludeFromContext); thinking_level_change a8;
# compaction a9 (firstKeptEntryId a3); custom_message b1; branch_summary b2; custom b3 and
# label b4 (not context); assistant b5 (overflow error, zero usage); assistant b6 (aborted,
# usage 3/1/1000/0); message with a future role b7; future entry type b8; user b9 (string);
# assistant c1 (529 error, zero usage).


def test_edge_counts() -> None:
    entries = _entries(EDGE)
    msgs = _messages(entries)
    # user: a2, a6, b1, b2, b9; assistant: a3, b5, b6, c1; tool: a4, a5
    assert [m.id for m in msgs if m.role == "user"] == ["a2", "a6", "b1", "b2", "b9"]
    assert [m.id for m in msgs if m.role == "assistant"] == ["a3", "b5", "b6", "c1"]
    assert [m.id for m in msgs if m.role == "tool"] == ["a4", "a5"]
    assert [e.kind for e in entries if not isinstance(e, Message)] == [
        "context",  # session
        "context",  # model_change
        "context",  # thinking_level_change
        "compaction",
        "rewind",  # b2 goes back to a2, before the compaction: pi sends a2 again, then b2
        "api_error",
    ]
    (back,) = (e for e in entries if isinstance(e, Rewind))
    assert back.to is not None and [m.id for m in back.to] == ["a2"]


def test_edge_values() -> None:
    entries = _entries(EDGE)
    by_id = {m.id: m for m in _messages(entries)}
    header, change, level = (e for e in entries if isinstance(e, ContextUpdate))
    assert (header.session_id, header.model, header.extra["cwd"]) == (
        "pi-edge-v3",
        "claude-sonnet-4-5",
        "/repo",
    )
    assert change.model == "claude-opus-4-5" and change.extra["provider"] == "anthropic"
    assert level.model is None and level.extra["thinkingLevel"] == "high"

    user = by_id["a2"]
    assert user.extra["parentId"] == "a1" and user.timestamp == "2026-01-02T10:00:02.000Z"
    img = user.parts[1]
    assert isinstance(img, MediaPart) and img.mime_type == "image/png" and img.data
    assert img.byte_size == len(base64.b64decode(img.data))

    a3 = by_id["a3"]
    thinking, text, c1, c2 = a3.parts
    assert isinstance(thinking, ThinkingPart) and thinking.signature == "sig-1"
    assert isinstance(text, TextPart) and text.text == "Reading two files."
    assert isinstance(c1, ToolCallPart) and (c1.id, c1.name, c1.arguments) == (
        "call_1",
        "read",
        {"path": "a.py"},
    )
    assert isinstance(c2, ToolCallPart) and c2.id == "call_2"
    assert a3.usage is not None
    assert (a3.usage.prompt_tokens, a3.usage.output_tokens) == (115, 20)  # 10 + 100 + 5
    assert (a3.usage.cache_read_tokens, a3.usage.cache_write_tokens, a3.usage.final) == (100, 5, True)
    assert a3.model == "claude-sonnet-4-5" and a3.extra["message"]["stopReason"] == "toolUse"

    ok, err = by_id["a4"].tool_results[0], by_id["a5"].tool_results[0]
    assert (ok.call_id, ok.name, ok.is_error, ok.text) == ("call_1", "read", False, "print('hi')")
    assert isinstance(ok.content[1], MediaPart)
    assert by_id["a4"].extra["message"]["details"] == {"lines": 1}
    assert (err.call_id, err.is_error) == ("call_2", True)

    assert by_id["a6"].text == "Ran `ls`\n```\na.py\n```\n\nCommand exited with code 2"
    assert "a7" not in by_id
    assert by_id["b1"].text == "Remember the tests."
    assert by_id["b2"].text == pi.BRANCH_PREFIX + "Tried reading b.py; it was empty." + pi.BRANCH_SUFFIX
    assert by_id["b9"].parts == (TextPart("plain string content"),)

    (mark,) = (e for e in entries if isinstance(e, CompactionMarker))
    assert (mark.id, mark.first_kept_id, mark.tokens_before, mark.summary) == (
        "a9",
        "a3",
        150000,
        "## Goal\nRead a.py",
    )
    assert mark.extra["details"] == {"readFiles": ["a.py"], "modifiedFiles": []}
    assert mark.first_kept_id in by_id


def test_edge_errors_and_partial_usage() -> None:
    entries = _entries(EDGE)
    by_id = {m.id: m for m in _messages(entries)}
    (api,) = (e for e in entries if isinstance(e, ApiError))
    assert (api.prompt_tokens, api.limit, api.id) == (200819, 200000, "b5")
    assert entries.index(api) == entries.index(by_id["b5"]) + 1
    assert by_id["b5"].usage is None  # all-zero usage is no record
    assert (
        by_id["c1"].usage is None and by_id["c1"].extra["message"]["errorMessage"] == "529 overloaded_error"
    )
    partial = by_id["b6"].usage
    assert partial is not None and (partial.prompt_tokens, partial.final) == (1003, False)
    # the aborted response is marked stopped by the user; the overflow error and the rest are not
    assert [m.id for m in by_id.values() if m.stopped] == ["b6"]


# ----------------------------------------------------------------------- errors, streaming


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ({"type": "message", "timestamp": "t"}, "'message'"),
        ({"type": "message", "message": {"content": "x"}}, "'role'"),
        ({"type": "message", "message": {"role": "toolResult", "content": []}}, "'toolCallId'"),
        ({"message": {"role": "user", "content": "x"}}, "'type'"),
    ],
)
def test_bad_line_names_line(tmp_path: Path, line: dict[str, object], needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    header = {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"}
    path.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(LineError) as info:
        list(loader.open_transcript(path, fmt="pi").entries)
    assert info.value.line == 2 and needle in str(info.value) and str(path) in str(info.value)


def test_skip_invalid_keeps_going(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    rows = [
        {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"},
        {"type": "message"},
        {"type": "message", "message": {"role": "user", "content": "hi"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    opened = loader.open_transcript(path, fmt="pi", skip_invalid=True)
    msgs = [e for e in opened.entries if isinstance(e, Message)]
    assert [m.text for m in msgs] == ["hi"] and [e.line for e in opened.skipped] == [2]


def test_streaming() -> None:
    opened = loader.open_transcript(EDGE, fmt="pi")
    assert opened.format == "pi"
    assert isinstance(opened.entries, Iterator)
    first = next(opened.entries)
    assert isinstance(first, ContextUpdate) and first.session_id == "pi-edge-v3"
    assert opened.lines_read < 20


# ----------------------------------------------- a compaction's cut on an entry that is no message


def _lines(*entries: dict[str, object]) -> list[str]:
    return [json.dumps(e) for e in entries]


def _session_with_cut_on(kind: dict[str, object]) -> list[str]:
    """pi moves a compaction's cut back over the entries before the first kept message that are
    no message (compaction.ts, findCutPoint): firstKeptEntryId names that entry."""
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/r"}
    user = {
        "type": "message",
        "id": "u1",
        "parentId": None,
        "message": {"role": "user", "content": "Read the log"},
    }
    answer = {"role": "assistant", "content": [{"type": "text", "text": "The log says: " + "ok " * 400}]}
    between = {**kind, "id": "x1", "parentId": "u1"}
    kept_user = {
        "type": "message",
        "id": "u2",
        "parentId": "x1",
        "message": {"role": "user", "content": "Go on"},
    }
    kept = {"type": "message", "id": "a2", "parentId": "u2", "message": answer}
    compaction = {
        "type": "compaction",
        "id": "c1",
        "parentId": "a2",
        "summary": "Read the log.",
        "firstKeptEntryId": "x1",
        "tokensBefore": 9000,
    }
    return _lines(header, user, between, kept_user, kept, compaction)


@pytest.mark.parametrize(
    "kind",
    [
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
        {"type": "custom", "customType": "tool_execution_start", "data": {}},
        {"type": "label", "targetId": "u1", "label": "start"},
    ],
    ids=lambda k: str(k["type"]),
)
def test_a_compaction_cut_on_an_entry_that_is_no_message_keeps_what_follows(
    tmp_path: Path, kind: dict[str, object]
) -> None:
    from ctxfold.transcript.context import current_context

    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(_session_with_cut_on(kind)) + "\n")
    ctx = current_context(loader.load(path).entries)
    assert [m.text[:14] for m in ctx.messages] == ["Read the log.", "Go on", "The log says: "]


def test_a_pi_derivative_reads_as_pi_does(tmp_path: Path) -> None:
    """A title line before the header, model_change with one model field (a role other than the
    default does not change the conversation's model), /clear, a sub-agent's system prompt."""
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/r"}
    lines = _lines(
        {"type": "title", "v": 1, "title": "Fix it", "updatedAt": "2026-01-01T00:00:00Z", "pad": "    "},
        header,
        {
            "type": "model_change",
            "id": "m1",
            "parentId": None,
            "model": "openrouter/z-ai/glm-4.6",
            "resolvedModelIsFallback": False,
        },
        {
            "type": "model_change",
            "id": "m2",
            "parentId": "m1",
            "model": "anthropic/claude-haiku-4-5",
            "role": "smol",
        },
        {
            "type": "session_init",
            "id": "i1",
            "parentId": "m2",
            "systemPrompt": ["You are a scout.", "Be brief."],
            "task": "look",
            "tools": ["read"],
        },
        {
            "type": "message",
            "id": "u1",
            "parentId": "i1",
            "message": {"role": "user", "content": "old question"},
        },
        {"type": "reset_boundary", "id": "r1", "parentId": "u1"},
        {"type": "custom", "id": "c1", "parentId": "r1", "customType": "session_exit", "data": {}},
        {
            "type": "custom_message",
            "id": "c2",
            "parentId": "c1",
            "customType": "note",
            "content": "a reminder",
            "display": False,
        },
        {
            "type": "message",
            "id": "u2",
            "parentId": "c2",
            "message": {"role": "user", "content": "new question"},
        },
    )
    path = tmp_path / "omp.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert registry.detect([json.loads(x) for x in lines])[0] == "pi"
    t = loader.load(path)
    assert t.models == ("z-ai/glm-4.6",)  # the default role's model, its provider dropped
    from ctxfold.transcript.context import current_context

    ctx = current_context(t.entries)
    assert ctx.system == ("You are a scout.", "Be brief.")
    assert [m.text for m in ctx.messages] == [
        "a reminder",
        "new question",
    ]  # after /clear; custom is no message


def test_a_real_pi_session_as_a_derivative_writes_it_reads_the_same(tmp_path: Path) -> None:
    """The real pi session with its two compactions, rewritten as a derivative would (tests/
    pi_derived.py): every request counts as in the original, before and after each compaction;
    read as before, the kept messages were lost and the first request after the compaction was
    counted at 1,133 tokens instead of 18,307."""
    from pi_derived import derive

    from ctxfold.tokens.estimate import estimate_file

    src = real("pi/before-compaction.jsonl")
    derived = derive(src, tmp_path / "derived.jsonl")
    original, other = estimate_file(src), estimate_file(derived)
    assert other.model.name == original.model.name
    assert [(q.estimate, q.real) for q in other.requests] == [(q.estimate, q.real) for q in original.requests]
