"""Codex CLI rollout reader: counts and spot values on real rollouts, edge cases on a handmade file.

Every expected number below was derived from the raw JSON with throwaway python one-liners
(shown next to the numbers), never by running the reader.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, REAL, real, real_files, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader, registry
from ctxfold.formats.base import Line
from ctxfold.formats.codex import reader as codex
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

EDGE = FIXTURES / "codex" / "edge-cases.jsonl"


@dataclass(frozen=True)
class Expect:
    user: int
    system: int
    assistant: int
    tool: int
    calls: int
    results: int
    usage: int
    opaque: int
    contexts: int
    last_prompt: int
    final_total: int
    window: int
    session: str
    models: tuple[str, ...]
    first_usage: tuple[
        str, int, int, int, int
    ]  # carrier call_id/item type, prompt, cache read, out, reasoning


# How the numbers were derived (L = [json.loads(l) for l in open(f)], R = response_item payloads):
#   user/system     Counter(p["role"] for p in R if p["type"] == "message"); system = developer + system
#   assistant       R items of type reasoning, function_call, custom_tool_call, web_search_call or
#                   message/assistant (any other non-message, non-*_output type would count too)
#   tool/results    R items of type function_call_output + custom_tool_call_output
#   calls           R items of type function_call + custom_tool_call
#   usage           event_msg token_count with info != null whose info.total_token_usage differs from
#                   the previous such event's; minus the new ones with no assistant-side item since
#                   the previous new one or with a user/developer message, turn_context, session_meta
#                   or compacted line after that item (dropped): 0 dropped in all four files
#   opaque          R items of type web_search_call
#   contexts        1 (session_meta) + number of turn_context lines + 1 (first model_context_window)
#   last_prompt     last new token_count's info.last_token_usage.input_tokens; window its model_context_window
#   final_total     last new token_count's info.total_token_usage.total_tokens, which equals
#                   sum(last_token_usage.input_tokens + output_tokens) over the new token_counts
#   first_usage     the first new token_count's last_token_usage, and the last assistant-side
#                   response_item before it (walking back over *_output items)
#   session/models  L[0]["payload"]["id"]; [p["model"] for turn_context payloads], first-seen order
CASES = {
    "codex/edgerunner.jsonl": Expect(
        user=7,
        system=7,
        assistant=389,  # 182 reasoning + 153 custom_tool_call + 18 function_call + 36 message/assistant
        tool=170,  # 152 custom_tool_call_output + 18 function_call_output
        calls=171,
        results=170,
        usage=173,  # 175 token_count, 173 with new totals
        opaque=0,
        contexts=9,  # session_meta + 5 turn_context + 1 window + 2 world_state
        last_prompt=296324,
        final_total=35877289,
        window=353400,
        session="019f4ce9-5831-7e71-ab0a-24a9d7358aab",
        models=("gpt-5.6-sol", "gpt-5.6-luna"),
        first_usage=("call_UZKUyTF5KFRtKCgmWb5QumB9", 22727, 11008, 299, 101),
    ),
    "codex/fundwise.jsonl": Expect(
        user=2,
        system=1,
        assistant=11,  # 4 reasoning + 5 function_call + 2 message/assistant
        tool=4,
        calls=5,  # the last call (line 32) has no output: the file ends
        results=4,
        usage=4,  # 5 token_count, one with info null
        opaque=0,
        contexts=3,
        last_prompt=44241,
        final_total=172559,
        window=258400,
        session="019df370-6a11-7552-b639-f3069ba86732",
        models=("gpt-5.5",),
        first_usage=("call_YUww8Trq6iPOgU8bcI1uS1jD", 40274, 6528, 233, 114),
    ),
    "codex/raze.jsonl": Expect(
        user=2,
        system=2,
        assistant=63,  # 19 reasoning + 38 function_call + 6 message/assistant
        tool=38,
        calls=38,
        results=38,
        usage=18,  # 36 token_count: 1 info null, 17 repeat the previous totals
        opaque=0,
        contexts=3,
        last_prompt=101627,
        final_total=1276492,
        window=258400,
        session="019ce299-7e70-7a13-9314-042ed6725303",
        models=("gpt-5.4",),
        first_usage=("call_wxG2lrapTzhFBTVpky0vmMLA", 11851, 0, 493, 249),
    ),
    "codex/rivo-multiturn.jsonl": Expect(
        user=6,
        system=1,
        assistant=61,  # 15 reasoning + 27 function_call + 2 custom_tool_call + 4 web_search_call + 13 message
        tool=23,  # 21 function_call_output + 2 custom_tool_call_output (6 shell calls never answered)
        calls=29,
        results=23,
        usage=13,  # 18 token_count: 1 info null, 4 repeat the previous totals
        opaque=4,
        contexts=7,
        last_prompt=59898,
        final_total=583784,
        window=258400,
        session="019de7fa-55ca-7c71-8bc1-db36480b3ecc",
        models=("gpt-5.5",),
        first_usage=("message", 19345, 11648, 265, 36),
    ),
}


def _entries(path: Path) -> list[Entry]:
    return list(loader.open_transcript(path, fmt="codex").entries)


def _counts(entries: list[Entry]) -> Counter[str]:
    c: Counter[str] = Counter()
    for e in entries:
        if isinstance(e, Message):
            c[e.role] += 1
            c["calls"] += len(e.tool_calls)
            c["results"] += len(e.tool_results)
            c["opaque"] += sum(isinstance(p, OpaquePart) for p in e.parts)
            c["usage"] += e.usage is not None
        else:
            c[e.kind] += 1
    return c


@pytest.mark.parametrize("rel", sorted(CASES), ids=lambda r: Path(r).stem)
def test_real_counts(rel: str) -> None:
    want = CASES[rel]
    entries = _entries(real(rel))
    c = _counts(entries)
    got = {k: c[k] for k in ("user", "system", "assistant", "tool", "calls", "results", "usage", "opaque")}
    assert got == {k: getattr(want, k) for k in got}
    assert c["context"] == want.contexts
    assert c["compaction"] == 0
    assert c["api_error"] == 0


@pytest.mark.parametrize("rel", sorted(CASES), ids=lambda r: Path(r).stem)
def test_real_spot_values(rel: str) -> None:
    want = CASES[rel]
    entries = _entries(real(rel))
    t = loader.materialize(entries, "codex")
    assert t.session_id == want.session
    assert t.models == want.models
    assert t.context_window == want.window
    assert len(t.system) == 1 and t.system[0].startswith("You are Codex")
    carriers = [m for m in t.messages if m.usage]
    assert all(m.role == "assistant" for m in carriers)
    last = carriers[-1].usage
    assert last is not None
    assert last.prompt_tokens == want.last_prompt
    assert last.context_window == want.window
    assert last.model == want.models[-1]
    assert last.fields["prompt_tokens"] == "payload.info.last_token_usage.input_tokens"
    assert sum(m.usage.prompt_tokens + m.usage.output_tokens for m in carriers if m.usage) == want.final_total
    first = carriers[0]
    u = first.usage
    assert u is not None
    key, prompt, cached, out, reasoning = want.first_usage
    label = first.tool_calls[-1].id if first.tool_calls else "message"
    assert (label, u.prompt_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (
        key,
        prompt,
        cached,
        out,
        reasoning,
    )


@pytest.mark.parametrize("rel", sorted(CASES), ids=lambda r: Path(r).stem)
def test_real_developer_messages_keep_their_role(rel: str) -> None:
    systems = [m for m in _entries(real(rel)) if isinstance(m, Message) and m.role == "system"]
    assert systems and all(m.extra.get("role") == "developer" for m in systems)


def test_tool_results_named_and_ordered_after_calls() -> None:
    entries = _entries(real("codex/edgerunner.jsonl"))
    seen: dict[str, str] = {}
    for m in entries:
        if isinstance(m, Message):
            for c in m.tool_calls:
                seen[c.id] = c.name
            for r in m.tool_results:
                assert r.call_id in seen and r.name == seen[r.call_id]
    # code-mode "exec" is a free-form (custom) tool: its input stays a string
    exec_call = next(c for m in entries if isinstance(m, Message) for c in m.tool_calls if c.name == "exec")
    assert isinstance(exec_call.arguments, str) and exec_call.extra == {"type": "custom_tool_call"}
    wait_call = next(c for m in entries if isinstance(m, Message) for c in m.tool_calls if c.name == "wait")
    assert wait_call.arguments == {"cell_id": "1", "yield_time_ms": 30000, "max_tokens": 20000}


# ------------------------------------------------------------------------------- detection


@pytest.mark.parametrize("rel", sorted(CASES), ids=lambda r: Path(r).stem)
def test_sniff_scores_own_files_high(rel: str) -> None:
    assert codex.sniff(sniff_head(real(rel))) == 100


@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_detect(path: Path) -> None:
    objs = sniff_head(path)
    mine = path.parent.name == "codex"
    assert (codex.sniff(objs) > 0) == mine
    fmt, score = registry.detect(objs)
    assert (fmt == "codex") == mine
    if mine:
        assert score == 100


def _other_fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*.jsonl") if p.parent.name != "codex")


@pytest.mark.parametrize("path", _other_fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_sniff_ignores_other_handmade_fixtures(path: Path) -> None:
    objs = sniff_head(path)
    assert codex.sniff(objs) == 0


def test_detect_handmade_fixture() -> None:
    assert codex.sniff(sniff_head(EDGE)) == 100
    assert codex.sniff([{"type": "event_msg", "payload": {"type": "token_count", "info": None}}]) == 90
    assert codex.sniff([{"type": "message", "role": "user", "content": "hi"}]) == 0
    assert codex.sniff([]) == 0


# ------------------------------------------------------------------------------- edge cases


def _edge() -> list[Entry]:
    return _entries(EDGE)


def test_edge_counts() -> None:
    # By hand from fixtures/codex/edge-cases.jsonl (29 lines, comments in the generator):
    # user: lines 5, 23; system: line 4 (developer); assistant: 8, 9, 13, 15, 17, 18, 29;
    # tool: 10, 14, 16; usage: lines 11 and 19 (12 repeats 11's totals; 24 is dropped because
    # no assistant item came after the last usage: 1 drop); compaction: 21; api errors: 25, 26
    # (27 is not an overflow); contexts: session_meta 1, turn_context 2 and 22, window 272000
    # from task_started (3) and 300000 from line 19, the world_state of line 28.
    c = _counts(_edge())
    assert {k: c[k] for k in ("user", "system", "assistant", "tool", "usage", "calls", "results")} == {
        "user": 2,
        "system": 1,
        "assistant": 7,
        "tool": 3,
        "usage": 2,
        "calls": 3,
        "results": 3,
    }
    assert (c["compaction"], c["api_error"], c["context"], c["opaque"]) == (1, 2, 6, 1)


def test_edge_dropped_usage_is_counted() -> None:
    reader = codex.Reader()
    with EDGE.open("rb") as f:
        for no, raw in enumerate(f, 1):
            list(reader.feed(Line(no, json.loads(raw), len(raw))))
    list(reader.finish())
    assert reader.dropped_usage == 1  # line 24


def test_edge_values() -> None:
    entries = _edge()
    msgs = [e for e in entries if isinstance(e, Message)]
    meta = entries[0]
    assert isinstance(meta, ContextUpdate)
    assert (
        meta.system == ("You are a test system prompt.",)
        and meta.session_id == "0199e000-0000-7000-8000-0000000000e1"
    )
    assert meta.extra["cli_version"] == "0.40.0" and meta.extra["model_provider"] == "openai"

    user = msgs[1]
    assert user.timestamp == "2025-09-01T10:00:04.000Z"
    image = user.parts[1]
    assert isinstance(image, MediaPart)
    assert (image.mime_type, image.data, image.byte_size) == ("image/png", "iVBORw0KGgo=", 8)

    thinking = msgs[2].parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.text, thinking.encrypted, msgs[2].id) == ("First.\n\nSecond.", "gAAAA-enc-1", "rs_1")

    bad_args = msgs[3]
    assert bad_args.tool_calls[0].arguments == "{not json"
    u = bad_args.usage
    assert u is not None
    assert (u.prompt_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (1000, 200, 50, 10)
    assert (u.model, u.context_window) == ("gpt-5-codex", 272000)
    shot = msgs[4].tool_results[0]
    assert shot.name == "shell" and isinstance(shot.content[1], MediaPart)

    patch = msgs[5].tool_calls[0]
    assert patch.name == "apply_patch" and patch.arguments.startswith("*** Begin Patch")
    assert msgs[6].tool_results[0].text.startswith("Success.")
    shell = msgs[7].tool_calls[0]
    assert isinstance(shell, ToolCallPart) and shell.arguments == {"type": "exec", "command": ["ls", "-la"]}
    failed = msgs[8].tool_results[0]
    assert (failed.name, failed.is_error, failed.text) == ("local_shell", True, "boom")
    web = msgs[9].parts[0]
    assert isinstance(web, OpaquePart) and web.type == "web_search_call" and web.data["id"] == "ws_1"
    done = msgs[10]
    assert done.text == "Done." and done.usage is not None and done.usage.context_window == 300000
    assert done.parts[0] == TextPart("Done.", extra={"type": "output_text", "annotations": []})

    last = msgs[-1]
    assert last.usage is None and last.model == "gpt-5" and last.extra["content"][0]["text"] == "raw thoughts"


def test_edge_compaction_and_errors() -> None:
    entries = _edge()
    marker = next(e for e in entries if isinstance(e, CompactionMarker))
    assert marker.source == "codex" and marker.summary == "<summary of the work so far>"
    assert marker.replacement is not None
    assert [m.role for m in marker.replacement] == ["user", "assistant"]
    assert marker.replacement[1].text == "<summary of the work so far>"
    errors = [e for e in entries if isinstance(e, ApiError)]
    assert (errors[0].prompt_tokens, errors[0].limit) == (None, None)
    assert errors[0].extra["codex_error_info"] == "context_window_exceeded"
    assert (errors[1].prompt_tokens, errors[1].limit) == (300500, 300000)
    updates = [e for e in entries if isinstance(e, ContextUpdate)]
    assert [u.model for u in updates if u.model] == ["gpt-5-codex", "gpt-5"]
    assert [u.context_window for u in updates if u.context_window] == [272000, 300000]
    assert updates[1].extra["effort"] == "high"


def test_edge_order_usage_before_tool_output() -> None:
    """The usage-carrying call comes before its output, as in the file."""
    kinds = [(e.role, e.usage is not None) for e in _edge() if isinstance(e, Message)]
    assert kinds[3:5] == [("assistant", True), ("tool", False)]


# ------------------------------------------------------------------------------- errors, streaming


def _write(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return path


META = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s1"}}


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"timestamp": "t", "payload": {"type": "message"}}, "type"),
        ({"timestamp": "t", "type": "response_item"}, "payload"),
        (
            {"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", "name": "x"}},
            "call_id",
        ),
        (
            {"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user"}},
            "content",
        ),
        ({"timestamp": "t", "type": "event_msg", "payload": {"message": "hi"}}, "type"),
        ({"timestamp": "t", "type": "session_meta", "payload": {"cwd": "/"}}, "id"),
    ],
)
def test_bad_line_names_line(tmp_path: Path, bad: dict[str, object], field: str) -> None:
    ok = {
        "timestamp": "t",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": []},
    }
    path = _write(tmp_path, [META, ok, bad])
    with pytest.raises(LineError) as info:
        list(loader.open_transcript(path, fmt="codex").entries)
    assert info.value.line == 3
    assert f"{path}:3" in str(info.value) and repr(field) in str(info.value)


def test_unknown_line_and_item_types_are_tolerated(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            META,
            {"timestamp": "t", "type": "future_line", "payload": {"x": 1}},
            {"timestamp": "t", "type": "response_item", "payload": {"type": "future_item", "x": 1}},
        ],
    )
    entries = list(loader.open_transcript(path, fmt="codex").entries)
    assert isinstance(entries[-1], Message) and entries[-1].parts == (
        OpaquePart({"type": "future_item", "x": 1}, "future_item"),
    )


def test_streaming() -> None:
    path = real("codex/edgerunner.jsonl") if REAL.is_dir() else EDGE
    opened = loader.open_transcript(path, fmt="codex")
    assert opened.format == "codex"
    assert isinstance(opened.entries, Iterator)
    first = next(opened.entries)
    assert isinstance(first, ContextUpdate)
    total = sum(1 for _ in path.open("rb"))
    assert opened.lines_read < total  # not read to the end to produce the first entry


# ------------------------------------------- rollouts the real Codex 0.169 and 0.130 wrote

# fixtures/codex/lab-*.jsonl: two turns (one runs `seq 1 3`), then Codex's own compaction before
# the second, against the harness lab's scripted server (which reported the usage: 15,000, 25,000,
# 26,000 for the compaction request, then 5,000 input tokens; 12 output tokens each).
LAB = {v: FIXTURES / "codex" / f"lab-{v}.jsonl" for v in ("0169", "0130")}


def _raw_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(raw) for raw in path.read_text().splitlines()]


def test_usage_comes_from_token_usage_records() -> None:
    """0.153+: one token_usage_record per response; the token_count events repeat the totals
    (and after the compaction say the window with a zero count), and add no usage."""
    rows = _raw_lines(LAB["0169"])
    records = [r["payload"]["usage"] for r in rows if r["type"] == "token_usage_record"]  # type: ignore[index]
    msgs = [m for m in _entries(LAB["0169"]) if isinstance(m, Message) and m.usage is not None]
    assert (
        [(m.usage.prompt_tokens, m.usage.output_tokens) for m in msgs if m.usage]
        == [(r["input_tokens"], r["output_tokens"]) for r in records]
        == [(15_000, 12), (25_000, 12), (26_000, 12), (5_000, 12)]
    )
    first = msgs[0]
    assert first.usage is not None and "cache_write_tokens" in first.usage.fields
    assert first.usage.fields["prompt_tokens"] == "payload.usage.input_tokens"
    assert first.tool_calls and first.extra[codex.RECORD]["response_id"] == "resp_lab000001"


def test_legacy_usage_comes_from_token_count() -> None:
    msgs = [m for m in _entries(LAB["0130"]) if isinstance(m, Message) and m.usage is not None]
    assert [m.usage.prompt_tokens for m in msgs if m.usage] == [
        15_000,
        25_000,
        5_000,
    ]  # the compaction's is on no item
    assert all(m.usage and "cache_write_tokens" not in m.usage.fields for m in msgs)


def test_world_state_and_item_metadata_are_kept() -> None:
    entries = _entries(LAB["0169"])
    states = [
        e.extra[codex.WORLD_STATE]
        for e in entries
        if isinstance(e, ContextUpdate) and codex.WORLD_STATE in e.extra
    ]
    assert [s["full"] for s in states] == [True, True]  # at the start and after the compaction
    rows = _raw_lines(LAB["0169"])
    with_meta = [r for r in rows if "metadata" in r]
    kept = [
        m.extra[codex.LINE_EXTRA] for m in entries if isinstance(m, Message) and codex.LINE_EXTRA in m.extra
    ]
    assert kept == [{"metadata": r["metadata"]} for r in with_meta] and kept
