"""The Claude Code reader against the real session logs and a hand-made edge-case file.

Every expected number below was derived from the raw JSON with jq, not by running the reader.
The per-file counts come from (run in ../shared/fixtures-real/claude-code/)::

    jq -s -c 'def side: (.isSidechain == true); {
      user_main:  [.[]|select(.type=="user" and (side|not))]|length,
      user_side:  [.[]|select(.type=="user" and side)]|length,
      asst_main:  [.[]|select(.type=="assistant" and (side|not) and (.isApiErrorMessage|not))|.message.id]|unique|length,
      asst_side:  [.[]|select(.type=="assistant" and side and (.isApiErrorMessage|not))|.message.id]|unique|length,
      usage_main: [.[]|select(.type=="assistant" and (side|not) and .message.model!="<synthetic>")|.message.id]|unique|length,
      usage_side: [.[]|select(.type=="assistant" and side and .message.model!="<synthetic>")|.message.id]|unique|length,
      tool_calls: [.[]|select(.type=="assistant")|.message.content[]|select(.type=="tool_use")|.id]|unique|length,
      tool_results: [.[]|select(.type=="user")|.message.content|arrays|.[]|select(.type=="tool_result")]|length,
      tr_errors:  [... same ...|select(.type=="tool_result" and .is_error==true)]|length,
      images:     [.[]|select(.type=="user")|.message.content|arrays|.[]|select(.type=="image")]|length,
      compactions: [.[]|select(.type=="system" and .subtype=="compact_boundary")]|length,
      api_errors: [.[]|select((.type=="system" and .subtype=="api_error") or .isApiErrorMessage==true)]|length,
      meta:       [.[]|select(.type=="user" and .isMeta==true)]|length,
      attachments: [.[]|select(.type=="attachment" and (side|not) and (.attachment.type|IN(
                   "skill_listing","deferred_tools_delta","mcp_instructions_delta","todo_reminder",
                   "task_reminder","file","compact_file_reference","queued_command",
                   "selected_lines_in_ide","hook_additional_context","environment","model",
                   "agent_listing_delta","total_tokens_reminder","date","remote_session_change")))]|length,
      session:    ([.[]|.sessionId|strings]|first),
      last_usage: ([.[]|select(.type=="assistant" and (side|not) and .message.model!="<synthetic>")]
                   |last|.message.usage|[.input_tokens,.cache_creation_input_tokens,.cache_read_input_tokens,.output_tokens])
    }' FILE

and the usage sums (final usage = the last line of each message.id) from::

    jq -s -c '[.[]|select(.type=="assistant" and (.isSidechain|not) and .message.model!="<synthetic>")]
      | group_by(.message.id) | map(last.message.usage)
      | {prompt: (map(.input_tokens+.cache_creation_input_tokens+.cache_read_input_tokens)|add),
         output: (map(.output_tokens)|add)}' FILE
"""

from __future__ import annotations

import base64
import collections
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, real, real_files, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader, registry
from ctxfold.formats.claude_code import reader as claude_code
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextUpdate,
    Entry,
    MediaPart,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

FMT = "claude-code"


@dataclass(frozen=True)
class Expected:
    user_main: int
    user_side: int
    asst_main: int  # distinct message.id of main-chain assistant lines that are not API-error lines
    asst_side: int
    usage_main: int  # distinct main-chain message.id whose model is not "<synthetic>"
    usage_side: int
    tool_calls: int
    tool_results: int
    tr_errors: int
    images: int
    compactions: int
    api_errors: int
    meta: int
    session: str
    model: str  # `jq -r 'select(.type=="assistant")|.message.model' FILE | uniq -c`, minus "<synthetic>"
    last_usage: tuple[int, int, int, int]  # input, cache_creation, cache_read, output
    prompt_sum: int
    output_sum: int
    attachments: int  # main-chain attachment lines of the types sent as system reminders


# Numbers from the jq programs in the module docstring (see there), one file per row.
EXPECTED = {
    "ccviewer-sample-v1.0.98-sidechains.jsonl": Expected(
        14, 161, 9, 161, 9, 161, 167, 167, 23, 0, 0, 0, 1,
        "fe5e1c67-53e7-4862-81ae-d0e013e3270b", "claude-sonnet-4-20250514",
        (6, 1004, 20542, 10), 168358, 2636, 0,
    ),
    "fundwise.jsonl": Expected(
        86, 0, 71, 0, 71, 0, 83, 83, 4, 0, 0, 0, 0,
        "d4c1bac0-628a-48b6-983e-425faf07a208", "claude-opus-4-7",
        (1, 236, 135291, 2854), 6712470, 55656, 12,
    ),
    "posthog-impact-dashboard.jsonl": Expected(
        224, 0, 184, 0, 184, 0, 133, 133, 6, 0, 1, 0, 0,
        "0c182e15-59de-4856-8a94-00f26880354c", "claude-opus-4-7",
        (6, 181, 89012, 641), 14399140, 107597, 196,
    ),
    "privacy-x402.jsonl": Expected(
        34, 0, 34, 0, 34, 0, 32, 32, 1, 0, 0, 0, 0,
        "4774e917-cdfa-4bd4-bc10-ede8d0d21c8e", "claude-opus-4-7",
        (1, 645, 63871, 992), 1605095, 20645, 8,
    ),
    "raze-short.jsonl": Expected(
        4, 0, 3, 0, 3, 0, 3, 2, 0, 0, 0, 0, 1,
        "dfa38aaf-80e5-499c-a197-76e137fe699b", "claude-opus-4-6",
        (3, 427, 39465, 150), 116085, 607, 0,
    ),
    "scout-images.jsonl": Expected(
        41, 0, 33, 0, 33, 0, 35, 35, 0, 6, 0, 1, 3,
        "0a12da8e-1b6d-4238-b047-37db6677ced6", "claude-sonnet-4-6",
        (1, 715, 123076, 250), 2898823, 52319, 7,
    ),
    "solsmile-thirdparty-proxy.jsonl": Expected(
        129, 0, 87, 0, 86, 0, 118, 117, 13, 0, 0, 3, 3,
        "a4d54b74-9b27-4ac8-97d1-77fe6b06be27", "claude-opus-4-6-thinking",
        (119549, 0, 0, 490), 6430201, 56322, 0,
    ),
}  # fmt: skip


def entries(path: Path | str) -> list[Entry]:
    return list(loader.open_transcript(path, fmt=FMT).entries)


def messages(es: list[Entry]) -> list[Message]:
    return [e for e in es if isinstance(e, Message)]


# ------------------------------------------------------------------------------ real files


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_counts(name: str) -> None:
    exp = EXPECTED[name]
    es = entries(real(f"claude-code/{name}"))
    msgs = messages(es)
    roles = collections.Counter((m.role, m.branch is not None) for m in msgs)
    assert roles[("user", False)] == exp.user_main + exp.attachments
    assert sum("attachment" in m.extra for m in msgs) == exp.attachments
    assert roles[("user", True)] == exp.user_side
    assert roles[("assistant", False)] == exp.asst_main
    assert roles[("assistant", True)] == exp.asst_side
    assert set(m.role for m in msgs) <= {"user", "assistant"}
    assert sum(1 for m in msgs if m.usage and m.branch is None) == exp.usage_main
    assert sum(1 for m in msgs if m.usage and m.branch is not None) == exp.usage_side
    calls = [c for m in msgs for c in m.tool_calls]
    results = [r for m in msgs for r in m.tool_results]
    assert len(calls) == len({c.id for c in calls}) == exp.tool_calls
    assert len(results) == exp.tool_results
    assert sum(r.is_error for r in results) == exp.tr_errors
    assert sum(isinstance(p, MediaPart) for m in msgs for p in m.parts) == exp.images
    assert sum(isinstance(e, CompactionMarker) for e in es) == exp.compactions
    assert sum(isinstance(e, ApiError) for e in es) == exp.api_errors
    assert sum(m.extra.get("isMeta") is True for m in msgs) == exp.meta

    main_usage = [m.usage for m in msgs if m.usage and m.branch is None]
    last = main_usage[-1]
    inp, cw, cr, out = exp.last_usage
    assert (last.prompt_tokens, last.cache_write_tokens, last.cache_read_tokens) == (inp + cw + cr, cw, cr)
    assert last.output_tokens == out
    assert last.model == exp.model and last.final
    assert sum(u.prompt_tokens for u in main_usage) == exp.prompt_sum
    assert sum(u.output_tokens for u in main_usage) == exp.output_sum

    updates = [e for e in es if isinstance(e, ContextUpdate)]
    assert [u.session_id for u in updates if u.session_id] == [exp.session]
    assert [u.model for u in updates if u.model] == [exp.model]
    t = loader.materialize(es, FMT)
    assert t.session_id == exp.session
    assert t.models == (exp.model,)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_structure(name: str) -> None:
    """Each result follows the message holding its call; assistant messages carry usage
    unless synthetic; the original ids stay in extra for a writer."""
    msgs = messages(entries(real(f"claude-code/{name}")))
    seen: dict[str, str] = {}
    for m in msgs:
        for r in m.tool_results:
            assert r.call_id in seen, f"result {r.call_id} before its call"
            assert r.name == seen[r.call_id]
        for c in m.tool_calls:
            seen[c.id] = c.name
        if m.role == "assistant":
            assert (m.usage is None) == (m.model is None)
            assert m.extra["message"]["id"]
            assert "sessionId" in m.extra and "parentUuid" in m.extra
        assert m.id and m.timestamp
    msg_ids = [m.extra["message"]["id"] for m in msgs if m.role == "assistant"]
    assert len(msg_ids) == len(set(msg_ids)), "a response was split into several messages"


def test_parallel_results_written_between_blocks() -> None:
    # posthog lines 28-31 (message msg_01CDMizfcxxwWoCKx6RznKQ6): tool_use ...25ST7n, then the
    # results for ...tn3fm3 and ...25ST7n, then the tool_use ...tn3fm3 (`sed -n 28,31p`).
    msgs = messages(entries(real("claude-code/posthog-impact-dashboard.jsonl")))
    i = next(
        i
        for i, m in enumerate(msgs)
        if m.extra.get("message", {}).get("id") == "msg_01CDMizfcxxwWoCKx6RznKQ6"
    )
    a = msgs[i]
    assert [c.id[-6:] for c in a.tool_calls] == ["25ST7n", "tn3fm3"]
    assert len(a.extra["uuids"]) == 2
    assert a.usage is not None and a.usage.output_tokens == 153
    assert [r.call_id[-6:] for m in msgs[i + 1 : i + 3] for r in m.tool_results] == ["tn3fm3", "25ST7n"]


def test_posthog_compaction() -> None:
    # jq 'select(.subtype=="compact_boundary")|.compactMetadata': trigger auto, preTokens 167766,
    # postTokens 6977; the next user line (line 832) has isCompactSummary=true.
    es = entries(real("claude-code/posthog-impact-dashboard.jsonl"))
    i = next(i for i, e in enumerate(es) if isinstance(e, CompactionMarker))
    marker = es[i]
    assert isinstance(marker, CompactionMarker)
    assert (marker.source, marker.tokens_before, marker.tokens_after, marker.trigger) == (
        "claude-code",
        167766,
        6977,
        "auto",
    )
    assert marker.id == "79efa95d-d863-4e40-ad4c-4582c201a9f3"
    summary = es[i + 1]
    assert isinstance(summary, Message) and summary.role == "user"
    assert summary.extra["isCompactSummary"] is True
    assert summary.text.startswith("This session is being continued from a previous conversation")


def test_scout_images() -> None:
    path = real("claude-code/scout-images.jsonl")
    # Independent: decode every image block of the raw file.
    raw = []
    for text in path.read_text().splitlines():
        d = json.loads(text)
        content = (d.get("message") or {}).get("content")
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "image":
                raw.append((b["source"]["media_type"], len(base64.b64decode(b["source"]["data"]))))
    assert len(raw) == 6
    media = [p for m in messages(entries(path)) for p in m.parts if isinstance(p, MediaPart)]
    assert [(p.mime_type, p.byte_size) for p in media] == raw
    assert all(p.data and p.width is None for p in media)
    errors = [e for e in entries(path) if isinstance(e, ApiError)]
    assert [e.message for e in errors] == ["Invalid authentication credentials"]  # system/api_error line


def test_solsmile_proxy_oddities() -> None:
    # `jq -c 'select(.message.model=="<synthetic>")|[input_line_number,.isApiErrorMessage]'`:
    # line 251 "No response requested." (not an error), lines 349/357/362 API errors.
    es = entries(real("claude-code/solsmile-thirdparty-proxy.jsonl"))
    synthetic = [m for m in messages(es) if m.extra.get("message", {}).get("model") == "<synthetic>"]
    assert [m.text for m in synthetic] == ["No response requested."]
    assert synthetic[0].usage is None and synthetic[0].model is None
    errors = [e for e in es if isinstance(e, ApiError)]
    assert len(errors) == 3 and all(e.message.startswith("API Error: 400") for e in errors)
    assert all(e.prompt_tokens is None for e in errors)
    assert all("requestId" not in m.extra for m in messages(es))  # the proxy writes none


def test_ccviewer_old_layout_sidechains() -> None:
    # Line 1 is {"type":"summary",...}; sidechain lines have isSidechain=true and no agentId.
    msgs = messages(entries(real("claude-code/ccviewer-sample-v1.0.98-sidechains.jsonl")))
    assert {m.branch for m in msgs} == {None, "sidechain"}
    # Line 4-6: msg ...iDkdjvaD written as text (output 3), tool_use, tool_use (output 172).
    first = next(m for m in msgs if m.role == "assistant")
    assert [p.kind for p in first.parts] == ["text", "tool_call", "tool_call"]
    assert first.usage is not None and first.usage.output_tokens == 172


SUBAGENT = FIXTURES / "claude-code" / "subagent.jsonl"


def test_subagent_transcript_is_its_own_main_chain() -> None:
    """Claude Code 2.x writes each sub-agent's conversation to <session>/subagents/agent-<id>.jsonl,
    every line ``isSidechain: true`` with its ``agentId``: read alone, that chain is the main one.
    Real counts from the fixture's usage: 3 + 9,120 + 0 and 5 + 118 + 9,120."""
    from ctxfold.tokens.estimate import estimate_file

    es = entries(SUBAGENT)
    msgs = messages(es)
    assert [m.branch for m in msgs] == [None] * 4
    update = next(e for e in es if isinstance(e, ContextUpdate) and e.session_id)
    assert update.extra == {"agent_id": "a4f1c9e2b7d3"}
    est = estimate_file(SUBAGENT)
    assert [q.real for q in est.requests] == [9_123, 9_243]
    assert est.replay.agent == "a4f1c9e2b7d3" and est.replay.side_requests == 0


def test_subagent_transcript_starting_with_a_system_line(tmp_path: Path) -> None:
    """A compacted sub-agent transcript (ctxfold's own output) starts with its compact_boundary
    line: the agent is recognised there too, before any user or assistant line."""
    from ctxfold.tokens.estimate import estimate_file

    lines = SUBAGENT.read_text().splitlines()
    first = json.loads(lines[0])
    boundary = {
        **{k: v for k, v in first.items() if k != "message"},
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": "auto", "preTokens": 150_000},
        "uuid": "b0",
    }
    path = tmp_path / "agent-a4f1c9e2b7d3.jsonl"
    path.write_text("\n".join([json.dumps(boundary), *lines]) + "\n")
    est = estimate_file(path)
    assert est.replay.agent == "a4f1c9e2b7d3"
    assert [m.branch for m in messages(entries(path))] == [None] * 4


def test_agent_side_chains_inside_a_main_session_stay_side(tmp_path: Path) -> None:
    """The same agent lines after a main-chain start are a side chain of that session."""
    lines = SUBAGENT.read_text().splitlines()
    first = json.loads(lines[0])
    main = {**first, "isSidechain": False, "uuid": "m0", "message": {"role": "user", "content": "hi"}}
    del main["agentId"]
    path = tmp_path / "main.jsonl"
    path.write_text("\n".join([json.dumps(main), *lines]) + "\n")
    assert [m.branch for m in messages(entries(path))] == [None] + ["a4f1c9e2b7d3"] * 4


def test_subagent_transcripts_learn_their_own_profile(tmp_path: Path) -> None:
    """A sub-agent (its own prompt and tools) is its own source in the profile, and shares no
    session key with its parent session although both carry the same session id."""
    from ctxfold.engine.now import learn_from
    from ctxfold.engine.profile import Profiles, key_for, session_key
    from ctxfold.tokens.estimate import estimate_file

    est = estimate_file(SUBAGENT)
    profiles = Profiles(tmp_path / "profile.json")
    learn_from(profiles, est)
    assert list(profiles.profiles) == ["claude-code/subagent|claude-haiku-4"]
    assert key_for("claude-code", "claude-haiku-4-5", None) == "claude-code|claude-haiku-4"
    sid = est.replay.session_id
    assert session_key("x", sid, "a4f1c9e2b7d3") != session_key("x", sid)


def test_raze_truncated() -> None:
    # 3 tool_use blocks, 2 tool_results: the last call (line 24) never got its result.
    msgs = messages(entries(real("claude-code/raze-short.jsonl")))
    last = msgs[-1]
    assert last.role == "assistant" and last.tool_calls
    answered = {r.call_id for m in msgs for r in m.tool_results}
    assert last.tool_calls[-1].id not in answered


# ---------------------------------------------------------------------------- detection


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sniff_own_files(name: str) -> None:
    head = sniff_head(real(f"claude-code/{name}"))
    assert claude_code.sniff(head) >= 90
    assert registry.detect(head)[0] == FMT


def _others() -> list[Path]:
    """Other formats' real files and hand-made fixtures."""
    mine = FIXTURES / "claude-code"
    made = [p for p in sorted(FIXTURES.glob("*/*.jsonl")) if p.parent != mine and "claude" not in p.name]
    return [p for p in real_files() if p.parent.name != "claude-code"] + made


@pytest.mark.parametrize("path", _others(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sniff_other_files(path: Path) -> None:
    head = sniff_head(path)  # skips the deliberately broken lines of other formats' fixtures
    assert claude_code.sniff(head) == 0
    assert registry.detect(head)[0] != FMT


def test_sniff_shapes() -> None:
    assert claude_code.sniff([{"type": "summary", "summary": "x", "leafUuid": "u"}]) == 60
    assert claude_code.sniff([{"type": "user", "message": {"role": "user", "content": "hi"}}]) == 0
    assert claude_code.sniff([{"role": "user", "content": "hi"}, [1, 2], "x"]) == 0
    assert claude_code.sniff([]) == 0


# ---------------------------------------------------------------------- hand-made edge cases

EDGE = FIXTURES / "claude-code" / "edge-cases.jsonl"


def test_edge_cases_sequence() -> None:
    es = entries(EDGE)
    kinds = [e.kind if not isinstance(e, Message) else f"{e.role}:{e.id}" for e in es]
    assert kinds == [
        "context",
        "user:u01",
        "user:u02",
        "context",
        "assistant:u03",  # lines u03 u04 u05 u06 u09 merged (progress and attachment lines between)
        "user:u07",
        "user:u08",  # written before the tool_use line u09 it answers
        "assistant:u11",
        "user:u10",  # written before msg_B's first line: held until its call was seen
        "user:u13",
        "assistant:u14",
        "user:u15",
        "context",
        "assistant:u16",
        "assistant:u17",
        "api_error",
        "api_error",
        "compaction",
        "user:u22",
        "assistant:u23",
    ]
    ctx = [e for e in es if isinstance(e, ContextUpdate)]
    assert [(c.session_id, c.model) for c in ctx] == [
        ("11111111-2222-3333-4444-555555555555", None),
        (None, "claude-sonnet-4-6"),
        (None, "claude-opus-4-7"),  # the sidechain's haiku does not change the main model
    ]


def test_edge_streamed_response() -> None:
    a = next(m for m in messages(entries(EDGE)) if m.id == "u03")
    assert a.parts == (
        ThinkingPart(text="let me look", signature="sigA"),
        ThinkingPart(encrypted="ENCRYPTED", redacted=True),
        TextPart("Listing."),  # repeated on line u06: kept once
        ToolCallPart("toolu_1", "Bash", {"command": "ls"}, extra={"caller": {"type": "direct"}}),
        ToolCallPart("toolu_2", "Read", {"file_path": "b.png"}),
    )
    assert a.extra["uuids"] == ["u03", "u04", "u05", "u06", "u09"]
    assert a.extra["requestId"] == "req_A" and a.extra["message"]["id"] == "msg_A"
    u = a.usage
    assert u is not None  # last line: input 3, cache write 100, cache read 1000, output 120
    assert (u.prompt_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        1103,
        120,
        1000,
        100,
    )
    assert u.model == "claude-sonnet-4-6" and u.fields["prompt_tokens"].startswith(
        "message.usage.input_tokens"
    )


def test_edge_tool_results_and_media() -> None:
    by_id = {m.id: m for m in messages(entries(EDGE))}
    r1 = by_id["u07"].tool_results[0]
    assert (r1.call_id, r1.name, r1.is_error, r1.text) == ("toolu_1", "Bash", False, "a.txt\nb.png")
    assert "toolUseResult" in by_id["u07"].extra
    r2 = by_id["u08"].tool_results[0]
    assert (r2.name, r2.is_error) == ("Read", True)
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    assert r2.content == (
        TextPart("image read"),
        MediaPart("image/png", data=png, byte_size=len(base64.b64decode(png)), extra={"type": "image"}),
    )
    r3 = by_id["u10"].tool_results[0]
    assert r3.name == "ToolSearch" and r3.content == (
        OpaquePart({"type": "tool_reference", "tool_name": "Grep"}, type="tool_reference"),
    )
    doc, url_img, img, text = by_id["u13"].parts
    assert isinstance(doc, MediaPart) and doc.mime_type == "application/pdf"
    assert doc.byte_size == len(base64.b64decode(doc.data or "")) and doc.extra["title"] == "spec"
    assert (
        isinstance(url_img, MediaPart)
        and url_img.url == "https://example.invalid/x.png"
        and url_img.data is None
    )
    assert isinstance(img, MediaPart) and img.byte_size == 70
    assert text == TextPart("what is this?")
    b = by_id["u11"]
    assert [p.type for p in b.parts if isinstance(p, OpaquePart)] == [
        "server_tool_use",
        "web_search_tool_result",
    ]


def test_edge_branches_errors_compaction() -> None:
    es = entries(EDGE)
    by_id = {m.id: m for m in messages(es)}
    assert by_id["u14"].branch == by_id["u15"].branch == "agent-7"
    assert by_id["u14"].usage is not None and by_id["u14"].model == "claude-haiku-4-5"
    assert by_id["u02"].extra["isMeta"] is True
    assert by_id["u17"].usage is None and by_id["u17"].model is None
    assert by_id["u22"].extra["isCompactSummary"] is True
    e1, e2 = [e for e in es if isinstance(e, ApiError)]
    assert (e1.prompt_tokens, e1.limit, e1.id) == (200819, 200000, "u18")
    assert (e2.message, e2.prompt_tokens, e2.id) == ("Overloaded", None, "u19")
    (c,) = [e for e in es if isinstance(e, CompactionMarker)]
    assert (c.tokens_before, c.tokens_after, c.trigger, c.id) == (150000, 5000, "manual", "u21")
    assert c.extra["logicalParentUuid"] == "u19"


def test_edge_duplicate_result_line_not_lost(tmp_path: Path) -> None:
    """A result for a call never seen is held only while responses continue, then emitted."""
    lines = EDGE.read_text().splitlines()[:3]
    orphan = json.loads(lines[1])
    orphan.update(
        uuid="o1", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope"}]}
    )
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([*lines, json.dumps(orphan)]) + "\n")
    ids = [m.id for m in messages(entries(path))]
    assert ids == ["u01", "u02", "o1"]


# ----------------------------------------------------------------------------- attachments


def test_real_attachments_become_reminders() -> None:
    """fundwise lines 4-6 (`sed -n 4,6p`) are attachments: deferred tool names, MCP server
    instructions and the skill list, all before the first assistant line. Each becomes one user
    message holding the logged content, with the raw attachment kept for the writer."""
    path = real("claude-code/fundwise.jsonl")
    raw = [json.loads(x) for x in path.read_text().splitlines()]
    atts = {d["uuid"]: d["attachment"] for d in raw if d.get("type") == "attachment"}
    msgs = messages(entries(path))
    at = {m.id: i for i, m in enumerate(msgs)}
    first_reply = next(i for i, m in enumerate(msgs) if m.role == "assistant")
    early = sorted(a["type"] for u, a in atts.items() if at[u] < first_reply)
    assert early == ["deferred_tools_delta", "mcp_instructions_delta", "skill_listing"]
    for uid, a in atts.items():
        m = msgs[at[uid]]
        assert m.role == "user" and m.extra["attachment"] == a and m.branch is None
        texts = {
            "skill_listing": [a.get("content")],
            "deferred_tools_delta": a.get("addedNames"),
            "mcp_instructions_delta": a.get("addedBlocks"),
        }.get(a["type"], [])
        assert texts is not None and all(t in m.text for t in texts)


def _attachment(uid: str, attachment: dict[str, object]) -> dict[str, object]:
    return {**GOOD, "type": "attachment", "uuid": uid, "attachment": attachment, "message": None}


def test_attachment_renderings(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        GOOD,
        _attachment(
            "a1", {"type": "todo_reminder", "content": [{"content": "ship it", "status": "pending"}]}
        ),
        _attachment(
            "a2", {"type": "file", "filename": "/r/a.py", "content": {"file": {"content": "x = 1\ny = 2"}}}
        ),
        _attachment(
            "a3", {"type": "queued_command", "prompt": "<task-notification>done</task-notification>"}
        ),
        _attachment("a4", {"type": "hook_success", "content": "ok"}),  # not known to reach the model
        _attachment(
            "a6", {"type": "hook_additional_context", "hookEvent": "SessionStart", "content": ["memo"]}
        ),
        _attachment("a5", {"type": "skill_listing"}),  # no content: nothing to send
    )
    msgs = {m.id: m for m in messages(entries(path))}
    assert set(msgs) == {GOOD["uuid"], "a1", "a2", "a3", "a6"}
    assert msgs["a6"].text == "<system-reminder>\nmemo\n</system-reminder>"
    assert "[pending] ship it" in msgs["a1"].text and msgs["a1"].text.startswith("<system-reminder>")
    assert "     1\tx = 1\n     2\ty = 2" in msgs["a2"].text and "/r/a.py" in msgs["a2"].text
    assert msgs["a3"].text == "<task-notification>done</task-notification>"  # the prompt itself


def test_the_reminders_a_session_starts_with_are_sent(tmp_path: Path) -> None:
    """Claude Code 2.1.332 logs where the session runs, the model, the agent types, the token
    budget, the date and the commit attribution as attachments, sent in the first user message:
    each is read with what it logs (the wording around it is Claude Code's, not in the log)."""
    env = {"workingDirectory": "/r", "isGitRepo": True, "isWorktree": False, "platform": "linux",
           "shell": "bash", "osVersion": "Linux 6.1", "additionalWorkingDirectories": ["/data"]}  # fmt: skip
    said = "You are powered by the model named Sonnet 4.5."
    path = _write(
        tmp_path,
        GOOD,
        _attachment("b1", {"type": "environment", "snapshot": env}),
        _attachment("b2", {"type": "model", "identity": {"modelId": "claude-sonnet-4-5"}, "text": said}),
        _attachment(
            "b3",
            {"type": "agent_listing_delta", "addedTypes": ["Explore"], "addedLines": ["- Explore: search"]},
        ),
        _attachment(
            "b4", {"type": "total_tokens_reminder", "text": "<total_tokens>900 tokens left</total_tokens>"}
        ),
        _attachment("b5", {"type": "date", "date": "2026-11-29"}),
        _attachment(
            "b6", {"type": "remote_session_change", "commit": "Co-Authored-By: C", "pr": "Made with C"}
        ),
        _attachment("b7", {"type": "session_context", "context": {}}),  # nothing in it
        _attachment("b8", {"type": "prompt_snapshot", "systemPrompt": ["not sent as a message"]}),
        _attachment("b9", {"type": "agent_listing_delta", "addedLines": []}),  # no change
    )
    msgs = {m.id: m.text for m in messages(entries(path))}
    assert set(msgs) == {GOOD["uuid"], "b1", "b2", "b3", "b4", "b5", "b6"}
    assert all(msgs[k].startswith("<system-reminder>\n") for k in ("b1", "b2", "b3", "b4", "b5", "b6"))
    for value in ("/r", "/data", "yes", "linux", "bash", "Linux 6.1"):
        assert value in msgs["b1"]
    assert said in msgs["b2"] and "- Explore: search" in msgs["b3"] and "900 tokens left" in msgs["b4"]
    assert "2026-11-29" in msgs["b5"] and "Co-Authored-By: C" in msgs["b6"] and "Made with C" in msgs["b6"]


def test_attachment_inside_a_response_does_not_split_it(tmp_path: Path) -> None:
    reply = {**GOOD, "type": "assistant", "uuid": "r1", "message": {"id": "m1", "role": "assistant",
             "model": "claude-opus-4-7", "content": [{"type": "text", "text": "one"}], "usage": {"input_tokens": 9}}}  # fmt: skip
    more = {
        **reply,
        "uuid": "r2",
        "message": {**reply["message"], "content": [{"type": "text", "text": "two"}]},
    }
    queued = _attachment("q1", {"type": "queued_command", "prompt": "and also this"})
    msgs = messages(entries(_write(tmp_path, GOOD, reply, queued, more)))
    assert [(m.role, m.id) for m in msgs] == [("user", GOOD["uuid"]), ("assistant", "r1"), ("user", "q1")]
    assert [p.text for p in msgs[1].parts if isinstance(p, TextPart)] == ["one", "two"]


# ------------------------------------------------------------------------- errors, streaming


def _write(tmp_path: Path, *objs: object) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


GOOD = json.loads(EDGE.read_text().splitlines()[1])  # a valid user line


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ({k: v for k, v in GOOD.items() if k != "type"}, "missing required field 'type'"),
        ({**GOOD, "message": None}, "missing required field 'message'"),
        ({**GOOD, "message": {"role": "user"}}, "missing required field 'content'"),
        ({**GOOD, "message": {"role": "user", "content": 5}}, "field 'content' should be"),
        ({**GOOD, "message": {"role": "user", "content": ["x"]}}, "content block should be an object"),
        (
            {
                **GOOD,
                "type": "assistant",
                "message": {"id": "m", "content": [{"type": "tool_use", "name": "X"}]},
            },
            "missing required field 'id'",
        ),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_bad_line(tmp_path: Path, bad: object, needle: str) -> None:
    path = _write(tmp_path, GOOD, bad, GOOD)
    with pytest.raises(LineError) as info:
        entries(path)
    assert info.value.line == 2 and needle in str(info.value)
    assert f"{path}:2" in str(info.value)
    opened = loader.open_transcript(path, fmt=FMT, skip_invalid=True)
    assert len(messages(list(opened.entries))) == 2
    assert [e.line for e in opened.skipped] == [2]


def test_unknown_line_types_ignored(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD, {"type": "brand-new-kind", "x": 1}, {"type": "system", "subtype": "new"})
    assert len(messages(entries(path))) == 1


def test_streaming() -> None:
    path = real("claude-code/posthog-impact-dashboard.jsonl")
    opened = loader.open_transcript(path, fmt=FMT)
    assert isinstance(opened.entries, Iterator)
    first = next(opened.entries)
    assert isinstance(first, ContextUpdate)
    assert opened.lines_read < 100  # of 1338: entries come out while the file is read
