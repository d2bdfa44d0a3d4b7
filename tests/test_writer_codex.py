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
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, write_jsonl
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

from ctxfold.compaction.run import CompactOptions, compact_file
from ctxfold.errors import LineError
from ctxfold.formats import loader, registry
from ctxfold.formats.codex import resume
from ctxfold.formats.codex import writer as W
from ctxfold.formats.codex.reader import LINE_EXTRA
from ctxfold.formats.jsonl import iter_lines
from ctxfold.providers.offline import OfflineSummarizer
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
    # The tail comes back equal but for its model (Codex records the model per turn in
    # turn_context lines, and after the compaction only the transcript's current model is written)
    # and the bookkeeping newer CLIs write beside an item (the old session's history sequence).
    assert [_no_model(m) for m in ctx[2:]] == [_no_model(m) for m in tail]
    assert not any("metadata" in d for d in rows)
    # A new session (Codex finds sessions by id: the same one would open the original), in the
    # original's layout: numbered lines from 0 when Codex wrote it paginated.
    meta, original = rows[0]["payload"], _raw(path)[0]["payload"]
    assert meta["id"] != original.get("id") and str(uuid.UUID(meta["id"])) == meta["id"]
    assert meta.get("session_id", meta["id"]) == meta["id"] and meta["timestamp"] != original["timestamp"]
    numbered = original.get("history_mode") == "paginated"
    assert [d.get("ordinal") for d in rows] == (list(range(len(rows))) if numbered else [None] * len(rows))
    assert ("world_state" in kinds) is False  # Codex writes a full one after the compaction


def _no_model(m: Message) -> Message:
    usage = dataclasses.replace(m.usage, model=None) if m.usage else None
    extra = {k: v for k, v in m.extra.items() if k != LINE_EXTRA}
    return dataclasses.replace(m, model=None, usage=usage, extra=extra)


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
    if name == "id not a UUID":
        rows[0]["payload"]["id"] = "s1"
        return rows, 1, "no UUID"
    if name == "unknown history_mode":
        rows[0]["payload"]["history_mode"] = "pages"
        return rows, 1, "history_mode 'pages'"
    if name == "world_state shape":
        rows.insert(2, _l("world_state", {"state": {}}))
        return rows, 3, "world_state needs"
    if name == "token_usage_record without usage":
        rows.append(_l("token_usage_record", {"turn_id": "t1"}))
        return rows, 6, "needs a 'usage' object"
    if name == "duplicated entry":
        rows[2]["payload"]["id"] = "msg_1"
        rows.append(_l("response_item", {**_user("hi"), "id": "msg_1"}))
        return rows, 6, "duplicated entry: response item 'msg_1'"
    return _numbered(name)


def _numbered(name: str) -> tuple[list[dict[str, Any]], int, str]:
    """The paginated layout (Codex 0.148+): every line numbered, each one more than the last."""
    rows = _good()
    rows[0]["payload"]["history_mode"] = "paginated"
    for n, d in enumerate(rows):
        d["ordinal"] = n
    if name == "last line not numbered":  # what Codex 0.169 refuses to resume
        del rows[-1]["ordinal"]
        return rows, 5, "'ordinal' missing"
    if name == "ordinal repeated":
        rows[3]["ordinal"] = 2
        return rows, 4, "ordinal 2 repeats or goes back"
    if name == "ordinal goes back":
        rows[4]["ordinal"] = 1
        return rows, 5, "ordinal 1 repeats or goes back"
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
    "id not a UUID",
    "unknown history_mode",
    "world_state shape",
    "token_usage_record without usage",
    "duplicated entry",
    "last line not numbered",
    "ordinal repeated",
    "ordinal goes back",
]


@pytest.mark.parametrize("name", CASES)
def test_check_finds(name: str, tmp_path: Path) -> None:
    rows, line, fragment = _case(name)
    assert_flagged_once(tmp_path, rows, "codex", line, fragment)


@pytest.mark.parametrize("paginated", [False, True])
def test_good_hand_made_file_passes(tmp_path: Path, paginated: bool) -> None:
    rows = [*_good(), _l("compacted", {"message": "s", "replacement_history": [_user("hi"), _call("c2"), _out("c2")]}),
            _l("response_item", _call("c3")), _l("response_item", _out("c3"))]  # fmt: skip
    if paginated:
        rows[0]["payload"]["history_mode"] = "paginated"
        for n, d in enumerate(rows):
            d["ordinal"] = n
    path = tmp_path / "good.jsonl"
    write_jsonl(path, rows)
    assert violations(path, "codex") == []


def test_layout_follows_the_session_meta() -> None:
    """Codex's rule is history_mode; a meta without one is legacy, unless its CLI is one that
    always writes it (0.148 and later: the field was lost, the version decides)."""
    assert W.paginated({"history_mode": "paginated", "cli_version": "0.130.0"})
    assert not W.paginated({"history_mode": "legacy", "cli_version": "0.169.0"})
    assert W.paginated({"cli_version": "0.148.0"}) and W.paginated({"cli_version": "0.169.0-alpha.2"})
    assert not W.paginated({"cli_version": "0.147.0"}) and not W.paginated({"cli_version": "0.0.0"})
    assert not W.paginated({})


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


def test_a_claude_code_session_written_for_codex(tmp_path: Path) -> None:
    """``compact --to codex`` on a Claude Code log: Codex's items only (no Claude Code line
    fields), its tool calls and results paired as Codex pairs them, a new session in the
    project folder the log names."""
    t = loader.load(FIXTURES / "real" / "claude-code-sidechains.jsonl", fmt="claude-code")
    ct, tail = compacted(t, "claude-code", lambda m: m.role == "user" and bool(m.text) and not m.tool_results)
    out = tmp_path / "carried.jsonl"
    rows = [orjson.loads(line) for line in write_file(W, ct, out)]
    assert violations(out, "codex") == []
    text = out.read_text()
    assert not any(f in text for f in ('"parentUuid"', '"isSidechain"', '"sessionId"', '"signature"'))
    meta = rows[0]["payload"]
    assert meta["cwd"] == "/path/to/Demo" and meta["id"] != t.session_id and "model" not in meta
    assert {d["type"] for d in rows} == {"session_meta", "compacted", "response_item", "event_msg"}
    items = [d["payload"] for d in rows if d["type"] == "response_item"]
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    outputs = [i["call_id"] for i in items if i["type"] == "function_call_output"]
    assert calls and calls == [c.id for m in tail for c in m.tool_calls]
    assert sorted(outputs) == sorted(calls)  # parallel calls are answered in the order they finished
    assert "reasoning" not in {i["type"] for i in items}


def test_resume_plan_names_where_codex_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    out = tmp_path / "x.compacted.jsonl"
    sid = "0199f000-0000-7000-8000-000000000042"
    write_jsonl(out, [_l("session_meta", {**META, "id": sid, "timestamp": "2026-03-04T05:06:07.890Z"})])
    carry = resume.plan(Transcript("codex", ()), out, tmp_path / "home")
    local = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc).astimezone()
    day = tmp_path / "home" / ".codex" / "sessions" / f"{local:%Y/%m/%d}"
    assert carry.install_to == day / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
    assert (carry.harness, carry.session_id, carry.command, carry.cwd) == (
        "Codex",
        sid,
        ("codex", "resume", sid),
        "/p",
    )
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "elsewhere"))
    assert resume.store(tmp_path / "home") == tmp_path / "elsewhere" / "sessions"


def test_compact_installs_a_new_session_beside_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    home = tmp_path / "home"
    source = FIXTURES / "codex" / "lab-0169.jsonl"
    before = source.read_bytes()
    options = CompactOptions(home=home, install=True, out_dir=str(tmp_path / "out"), force=True)
    r = compact_file(str(source), OfflineSummarizer(), summarizer_window=None, options=options)
    carry = r.carry_on
    assert carry is not None and carry.installed and carry.install_to is not None
    assert carry.install_to.read_bytes() == r.outputs.compacted.read_bytes() and source.read_bytes() == before
    meta = _raw(carry.install_to)[0]["payload"]
    assert carry.session_id == meta["id"] == meta["session_id"] != _raw(source)[0]["payload"]["id"]
    assert carry.install_to.name.endswith(f"-{meta['id']}.jsonl") and carry.cwd == meta["cwd"]
    assert home / ".codex" / "sessions" in carry.install_to.parents
