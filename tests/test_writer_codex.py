"""The Codex writer: round trips, a compacted rollout written the way Codex records its own
compaction (a ``compacted`` line with ``replacement_history``), and the check rules.

"Codex can resume from it" is checked structurally (Codex itself cannot run here): the file
passes ``ctxfold validate`` (session_meta first with the fields Codex's deserializer needs, every line
``{timestamp, type, payload}``, tool outputs answering calls in the history Codex rebuilds,
``replacement_history`` self-contained), every payload has a key set the original rollout itself
uses for that item type, and the history Codex would rebuild (newest ``replacement_history`` +
the response items after it) is the compacted context.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import write_jsonl
from tool_log_writing import (
    REQUEST,
    SUMMARY,
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
from ctxfold.formats.codex import writer as W
from ctxfold.formats.jsonl import iter_lines
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextUpdate,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

FILES = files("codex")


def _raw(path: Path) -> list[dict[str, Any]]:
    return [line.data for line in iter_lines(path) if not isinstance(line, LineError)]


def _shapes(rows: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    out: set[tuple[Any, ...]] = set()
    for d in rows:
        p = d["payload"]
        if d["type"] in ("response_item", "compacted"):
            out.add((d["type"], p.get("type"), frozenset(p)))
        out.add(("line", frozenset(d)))
    return out


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_round_trip(path: Path, tmp_path: Path) -> None:
    t = loader.load(path, fmt="codex")
    out = tmp_path / "out.jsonl"
    lines = write_file(W, t, out)
    assert_compact(lines)
    same_violations(out, path, "codex")
    rows = [orjson.loads(line) for line in lines]
    assert registry.detect(rows[:25])[0] == "codex"
    t2 = loader.load(out, fmt="codex")

    # Messages (ids, parts, usage with its context window, model), markers and errors: all equal.
    assert [e for e in t2.entries if not isinstance(e, ContextUpdate)] == [
        e for e in t.entries if not isinstance(e, ContextUpdate)
    ]
    # session_meta and turn_context come back whole. The window came from task_started events,
    # which are not written (UI events); it comes back from the token_count lines instead.
    cus, cus2 = ([e for e in x.entries if isinstance(e, ContextUpdate)] for x in (t, t2))
    assert [c for c in cus if c.extra] == [c for c in cus2 if c.extra]
    assert {c.context_window for c in cus} == {c.context_window for c in cus2}
    assert (t2.session_id, t2.system, t2.models) == (t.session_id, t.system, t.models)
    assert _shapes(rows) <= _shapes(_raw(path))


def _is_prompt(m: Message) -> bool:
    return m.role == "user"


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_compacted(path: Path, tmp_path: Path) -> None:
    t = loader.load(path, fmt="codex")
    ct, tail = compacted(t, "codex", _is_prompt)
    out = tmp_path / "compacted.jsonl"
    lines = write_file(W, ct, out)
    assert_compact(lines)
    assert violations(out, "codex") == []
    rows = [orjson.loads(line) for line in lines]
    assert registry.detect(rows[:25])[0] == "codex"
    kinds = [d["type"] for d in rows]
    at = kinds.index("compacted")
    assert kinds[0] == "session_meta" and kinds.count("compacted") == 1
    # No turn_context after the compaction: Codex then re-injects its initial context next turn.
    assert "turn_context" not in kinds[at:]
    payload = rows[at]["payload"]
    assert payload["message"] == SUMMARY
    history = payload["replacement_history"]
    assert [(h["type"], h["role"]) for h in history] == [("message", "user"), ("message", "user")]
    assert SUMMARY in history[0]["content"][0]["text"] and REQUEST in history[1]["content"][0]["text"]

    t2 = loader.load(out, fmt="codex")
    marker = next(e for e in t2.entries if isinstance(e, CompactionMarker))
    assert marker.summary == SUMMARY and marker.replacement is not None
    assert [m.extra.get("ctxfold") for m in marker.replacement] == [None, None]  # Codex's own fields only
    ctx = current_context(t2.entries).messages
    assert SUMMARY in ctx[0].text and REQUEST in ctx[1].text
    # The tail comes back equal but for its model: Codex records the model per turn in
    # turn_context lines, and after the compaction only the transcript's current model is written.
    assert [_no_model(m) for m in ctx[2:]] == [_no_model(m) for m in tail]


def _no_model(m: Message) -> Message:
    usage = dataclasses.replace(m.usage, model=None) if m.usage else None
    return dataclasses.replace(m, model=None, usage=usage)


def test_write_streams() -> None:
    assert inspect.isgenerator(W.write(Transcript("codex", ())))


# ------------------------------------------------------------------------------ check rules

META = {
    "id": "019a0000-0000-7000-8000-000000000001",
    "timestamp": "2026-01-01T00:00:00Z",
    "cwd": "/p",
    "originator": "codex_cli_rs",
    "cli_version": "0.1",
}


def _l(kind: str, payload: dict[str, Any], ts: Any = "2026-01-01T00:00:01Z") -> dict[str, Any]:
    d: dict[str, Any] = {"timestamp": ts, "type": kind, "payload": dict(payload)}
    if ts is None:
        del d["timestamp"]
    return d


def _call(call_id: str, args: Any = "{}") -> dict[str, Any]:
    return {"type": "function_call", "name": "shell", "arguments": args, "call_id": call_id}


def _out(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _good() -> list[dict[str, Any]]:
    return [
        _l("session_meta", META),
        _l("turn_context", {"cwd": "/p", "approval_policy": "never", "model": "gpt-5"}),
        _l("response_item", _user("hi")),
        _l("response_item", _call("c1")),
        _l("response_item", _out("c1")),
    ]


def _case(name: str) -> tuple[list[dict[str, Any]], int, str]:
    rows = _good()
    if name == "session_meta not first":
        return rows[1:], 1, "starts with its session_meta"
    if name == "session_meta field":
        del rows[0]["payload"]["cwd"]
        return rows, 1, "'cwd'"
    if name == "line timestamp":
        rows[2] = _l("response_item", _user("hi"), ts=None)
        return rows, 3, "'timestamp'"
    if name == "turn_context model":
        del rows[1]["payload"]["model"]
        return rows, 2, "'model'"
    if name == "arguments not a string":
        rows[3] = _l("response_item", _call("c1", {"cmd": "ls"}))
        return rows, 4, "arguments should be a JSON string"
    if name == "output without call":
        rows[4] = _l("response_item", _out("c9"))
        return rows, 5, "answers no call in the history"
    if name == "output of a call before the compaction":
        rows.insert(4, _l("compacted", {"message": "s", "replacement_history": [_user("hi")]}))
        return rows, 6, "answers no call in the history"
    if name == "replacement output without call":
        rows.append(_l("compacted", {"message": "s", "replacement_history": [_user("hi"), _out("c7")]}))
        return rows, 6, "replacement_history output 'c7'"
    if name == "compacted message":
        rows.append(_l("compacted", {"replacement_history": []}))
        return rows, 6, "string 'message'"
    raise AssertionError(name)


CASES = [
    "session_meta not first",
    "session_meta field",
    "line timestamp",
    "turn_context model",
    "arguments not a string",
    "output without call",
    "output of a call before the compaction",
    "replacement output without call",
    "compacted message",
]


@pytest.mark.parametrize("name", CASES)
def test_check_finds(name: str, tmp_path: Path) -> None:
    rows, line, fragment = _case(name)
    assert_flagged_once(tmp_path, rows, "codex", line, fragment)


def test_good_hand_made_file_passes(tmp_path: Path) -> None:
    rows = [*_good(), _l("compacted", {"message": "s", "replacement_history": [_user("hi"), _call("c2"), _out("c2")]}),
            _l("response_item", _call("c3")), _l("response_item", _out("c3"))]  # fmt: skip
    path = tmp_path / "good.jsonl"
    write_jsonl(path, rows)
    assert violations(path, "codex") == []


def test_item_shapes() -> None:
    """Items for messages the reader never saw (ctxfold's own) take Codex's plain shapes."""
    assert W.item(Message("user", (TextPart("x"),), extra={"ctxfold": "summary"})) == _user("x")
    assert W.item(Message("system", (TextPart("rules"),))) == {
        "type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]
    }  # fmt: skip
    assert W.item(Message("assistant", (ToolCallPart("c1", "shell", {"cmd": ["ls"]}),))) == {
        "type": "function_call", "name": "shell", "arguments": '{"cmd":["ls"]}', "call_id": "c1"
    }  # fmt: skip
    result = ToolResultPart("c1", (TextPart("boom"),), is_error=True, extra={"output": {"success": False}})
    assert W.item(Message("tool", (result,)))["output"] == {"content": "boom", "success": False}


def test_foreign_transcript(tmp_path: Path) -> None:
    """Another harness's transcript: its instructions become the history's first (developer)
    message, not Codex's base instructions; its reasoning goes (an Anthropic signature is no
    OpenAI encrypted_content); no model or turn_context of that harness is written (Codex uses
    its own on resume); the legacy layout, which every Codex reads. A message holding several
    outputs is split into Codex's one-item-per-output shape; the usage goes to the last item of
    the response."""
    t = foreign("tool")
    out = tmp_path / "f.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, t, out)]
    assert violations(out, "codex") == []
    assert [d["type"] for d in rows if d["type"] != "response_item"] == ["session_meta", "event_msg"]
    meta = rows[0]["payload"]
    assert "history_mode" not in meta and "base_instructions" not in meta and "model" not in meta
    assert not any("ordinal" in d for d in rows)
    assert [(d["payload"]["type"], d["payload"].get("role")) for d in rows if d["type"] == "response_item"] == [
        ("message", "developer"), ("message", "user"), ("message", "assistant"), ("function_call", None),
        ("function_call_output", None), ("message", "assistant"),
    ]  # fmt: skip
    t2 = loader.load(out, fmt="codex")
    without_thinking = [(r, p) for r, p in parts_of(t) if not isinstance(p, ThinkingPart)]
    assert parts_of(t2) == [("system", TextPart("Be brief.")), *without_thinking]
    with_usage = [m for m in t2.messages if m.usage is not None]
    assert len(with_usage) == 1 and isinstance(with_usage[0].parts[0], ToolCallPart)
    assert with_usage[0].usage.prompt_tokens == 1200
    assert t2.system == () and t2.session_id == meta["id"]
