"""Gemini CLI reader: the saved-chat document of older versions (three real chats) and the JSONL
event log of current ones (files the real Gemini CLI 0.61.0 wrote, and handmade edge cases).

Expected values are read straight off the raw JSON in each test, never off the reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REAL, write_jsonl
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.errors import LineError
from ctxfold.formats import registry
from ctxfold.formats.jsonl import iter_lines
from ctxfold.formats.loader import load
from ctxfold.formats.validate import validate
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Message, ThinkingPart, ToolResultPart

FMT = "gemini-cli"
LIVE = FIXTURES / "gemini-cli" / "tool-calls-resumed.jsonl"
COMPRESSED = FIXTURES / "gemini-cli" / "compressed.jsonl"
POMODORO = FIXTURES / "real" / "gemini-cli-pomodoro-timer.json"
DOCS = sorted((REAL / "gemini-cli").glob("*.json")) if (REAL / "gemini-cli").is_dir() else [POMODORO]
runner = CliRunner()


def _sent(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] in ("user", "gemini")]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_a_saved_chat_document_reads_record_by_record(path: Path) -> None:
    doc = json.loads(path.read_text())
    t = load(path)
    assert t.source_format == FMT and t.session_id == doc["sessionId"]
    by_id = {m.id: m for m in t.messages}
    gemini = [r for r in doc["messages"] if r["type"] == "gemini"]
    for r in gemini:
        m = by_id[r["id"]]
        tokens = r.get("tokens") or {}
        if tokens.get("input"):
            assert m.usage is not None and m.usage.prompt_tokens == tokens["input"]  # cached included
            assert m.usage.cache_read_tokens == tokens["cached"]
            assert m.usage.output_tokens == tokens["output"] + tokens["thoughts"]
        else:
            assert m.usage is None
        assert [c.id for c in m.tool_calls] == [c["id"] for c in r.get("toolCalls", [])]
        assert len([p for p in m.parts if isinstance(p, ThinkingPart)]) == len(r.get("thoughts") or [])
        assert m.model == r["model"]
    results = [p for m in t.messages for p in m.tool_results]
    calls = [c for r in gemini for c in r.get("toolCalls", []) if c.get("result") is not None]
    assert len(results) == len(calls)
    users = [r for r in doc["messages"] if r["type"] == "user"]
    assert [m.id for m in t.messages if m.role == "user"] == [r["id"] for r in users]
    assert not any(r["id"] in by_id for r in doc["messages"] if r["type"] == "info")  # shown, not sent
    assert set(t.models) == {r["model"] for r in gemini}


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_report_predicts_the_real_chats_within_a_few_percent(path: Path) -> None:
    r = runner.invoke(app, ["report", str(path), "--json", "--no-profile"])
    assert r.exit_code == 0, r.stderr
    summary = json.loads(r.stdout)["files"][0]["summary"]
    gemini = [m for m in json.loads(path.read_text())["messages"] if (m.get("tokens") or {}).get("input")]
    assert summary["requests_with_real"] == len(gemini)
    assert summary["p90_error_pct"] < 3.0, summary


def test_the_event_log_replays_as_gemini_cli_loads_it() -> None:
    lines = [json.loads(x) for x in LIVE.read_text().splitlines()]
    records = [d for d in lines if isinstance(d.get("id"), str)]
    t = load(LIVE)
    # a reply appended again under its id (tool calls, then results) is read once, last copy
    g = next(r for r in records if r["type"] == "gemini" and r.get("toolCalls"))
    copies = [r for r in records if r["id"] == g["id"]]
    assert len(copies) >= 2 and "toolCalls" not in copies[0]
    first = next(m for m in t.entries if isinstance(m, Message) and m.id == g["id"])
    assert [c.id for c in first.tool_calls] == [c["id"] for c in copies[-1]["toolCalls"]]
    # before the resume, each result is read once though the file holds it twice (toolCalls and a
    # user record); the resume's rebuilt list, which sends both, is a marker carrying both
    marker_at = next(i for i, e in enumerate(t.entries) if isinstance(e, CompactionMarker))
    before = [p for e in t.entries[:marker_at] if isinstance(e, Message) for p in e.tool_results]
    assert sorted(p.call_id for p in before) == sorted({p.call_id for p in before})
    marker = t.entries[marker_at]
    assert isinstance(marker, CompactionMarker) and marker.source == FMT and marker.trigger == "resume"
    again = [p.call_id for m in marker.replacement or () for p in m.tool_results]
    assert len(again) == 2 * len(set(again)) > 0
    # every message sent before the resume stays in order in the rebuilt list
    assert [m.text for m in t.entries[:marker_at] if isinstance(m, Message) and m.role == "user"][1:] == [
        m.text for m in marker.replacement or () if m.role == "user"
    ][1:]
    assert t.session_id == lines[0]["sessionId"]
    assert t.messages[0].extra.get("gemini_context") and t.messages[0].text.startswith("<session_context>")


def test_gemini_clis_own_compression_is_a_marker_with_its_summary() -> None:
    t = load(COMPRESSED)
    (marker,) = [e for e in t.entries if isinstance(e, CompactionMarker)]
    assert marker.trigger == "compress" and "<state_snapshot>" in (marker.summary or "")
    replaced = marker.replacement or ()
    assert replaced[1].text == marker.summary and replaced[2].role == "assistant"
    after = t.entries[t.entries.index(marker) + 1 :]
    assert any(isinstance(e, Message) and e.tool_results for e in after)  # answers a call it replaced
    assert validate(str(COMPRESSED)).ok


def _header(sid: str = "11111111-2222-3333-4444-555555555555") -> dict[str, Any]:
    return {"sessionId": sid, "projectHash": "ab" * 32, "startTime": "2026-01-01T00:00:00.000Z",
            "lastUpdated": "2026-01-01T00:00:00.000Z", "kind": "main"}  # fmt: skip


def _user(i: str, text: Any) -> dict[str, Any]:
    return {"id": i, "timestamp": "2026-01-01T00:00:01.000Z", "type": "user", "content": text}


def _gemini(i: str, text: str, prompt: int = 100, **more: Any) -> dict[str, Any]:
    tokens = {"input": prompt, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": prompt + 5}
    return {"id": i, "timestamp": "2026-01-01T00:00:02.000Z", "type": "gemini", "content": text,
            "thoughts": [], "tokens": tokens, "model": "gemini-2.5-pro", **more}  # fmt: skip


def test_rewind_and_a_second_header_in_the_same_file(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            _header(),
            _user("u1", [{"text": "one"}]),
            _gemini("g1", "first", 100),
            {"$set": {"lastUpdated": "2026-01-01T00:00:03.000Z"}},
            _user("u2", "two"),
            _gemini("g2", "second", 120),
            {"$rewindTo": "u2"},
            _user("u3", "/help"),  # a command: not sent
            {"id": "i1", "timestamp": "t", "type": "info", "content": "Help shown"},
            _user("u4", "three"),
            _gemini("g4", "third", 130),
            # a resume within the same minute: a new header and list in the same file
            _header(),
            {"$set": {"messages": [_user("ctx", "<session_context>\nenv\n</session_context>")]}},
            {"$set": {"sessionId": _header()["sessionId"]}},
            {
                "$set": {
                    "messages": [
                        _user("u1", "one"),
                        _gemini("g1", "first"),
                        _user("u4", "three"),
                        _gemini("g4", "third"),
                    ],
                    "summary": "A title",
                }
            },
            _user("u5", "four"),
            _gemini("g5", "fourth", 140),
        ],
    )
    t = load(path)
    kinds = [(e.kind, getattr(e, "id", None) or getattr(e, "trigger", None)) for e in t.entries]
    assert kinds[:6] == [("context", None), ("message", "u1"), ("message", "g1"), ("message", "u2"),
                         ("message", "g2"), ("compaction", "rewind")]  # fmt: skip
    marker = t.entries[5]
    assert isinstance(marker, CompactionMarker) and [m.id for m in marker.replacement or ()] == ["u1", "g1"]
    # the resume's list extends what was sent (same texts, a string for a part list): no marker
    assert [e.id for e in t.entries[6:] if isinstance(e, Message)] == ["u4", "g4", "u5", "g5"]
    assert [e.usage.prompt_tokens for e in t.messages if e.usage] == [100, 120, 130, 140]
    last = t.entries[-1]
    assert isinstance(last, ContextUpdate) and last.extra["update"]["summary"] == "A title"


def test_results_without_their_own_record_and_an_id_less_call(tmp_path: Path) -> None:
    call = {"id": "c1", "name": "read_file", "args": {"file_path": "a"}, "status": "success",
            "result": "plain text"}  # fmt: skip
    synced = {"functionCall": {"name": "glob", "args": {}}}
    answer = {"functionResponse": {"id": "glob_9", "name": "glob", "response": {"output": "a"}}}
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [_header(), _user("u1", "go"), _gemini("g1", "", toolCalls=[call]),
         {**_gemini("g2", ""), "content": [synced]}, _user("r2", [answer]), _gemini("g3", "done")],
    )  # fmt: skip
    t = load(path)
    tool = [m for m in t.messages if m.role == "tool"]
    assert [(m.tool_results[0].call_id, m.tool_results[0].text) for m in tool] == [
        ("c1", "plain text"),
        ("glob_9", "a"),
    ]
    g2 = next(m for m in t.messages if m.id == "g2")
    assert [c.id for c in g2.tool_calls] == ["glob_9"]  # paired by name, as Gemini CLI pairs it
    assert validate(str(path)).ok


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ({"$set": 5}, "'$set' should be an object"),
        ({"$set": {"messages": {}}}, "'$set.messages' should be an array"),
        ({"$set": {"messages": [{"id": "x"}]}}, "$set.messages[0]: missing required field 'type'"),
        ({"id": "x", "type": "gemini", "content": "", "toolCalls": [{"id": 3}]}, "string id and name"),
        ({"hello": "world"}, "not a Gemini CLI session line"),
    ],
)
def test_bad_lines_are_named(tmp_path: Path, line: dict[str, Any], problem: str) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [_header(), _user("u1", "hi"), line, _gemini("g", "ok")])
    with pytest.raises(LineError, match=r"s\.jsonl:3: ") as err:
        load(path, fmt=FMT)
    assert problem in str(err.value)


def test_a_broken_document_is_named_at_its_line(tmp_path: Path) -> None:
    text = json.dumps({**_header(), "messages": [_user("u1", "hi"), _gemini("g", "ok")]}, indent=2)
    lines = text.splitlines()
    broken_at = next(i for i, x in enumerate(lines) if '"type": "gemini"' in x)
    lines[broken_at] = lines[broken_at].rstrip(",")  # a missing comma
    (tmp_path / "chat.json").write_text("\n".join(lines) + "\n")
    r = runner.invoke(app, ["estimate", str(tmp_path / "chat.json")])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert f"chat.json:{broken_at + 2}: not a valid JSON document" in r.stderr, r.stderr
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    r = runner.invoke(app, ["estimate", str(tmp_path / "cut.json")])
    assert r.exit_code == 1 and "truncated JSON document" in r.stderr


def test_a_broken_first_jsonl_line_is_still_reported_as_a_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"sessionId": "a", \n' + json.dumps(_user("u1", "hi")) + "\n")
    items = list(iter_lines(path))
    assert isinstance(items[0], LineError) and items[0].line == 1 and "not valid JSON" in items[0].reason
    assert [i.no for i in items[1:] if not isinstance(i, LineError)] == [2]  # and read on


def test_detection_tells_both_shapes_from_the_others() -> None:
    assert registry.detect([json.loads(POMODORO.read_text())])[0] == FMT
    head = [json.loads(x) for x in LIVE.read_text().splitlines()[:25]]
    assert registry.detect(head) == (FMT, 100)
    assert registry.detect(head[1:])[0] == FMT  # no header: its $set and record lines say so
    assert registry.detect([{"role": "user", "parts": [{"text": "hi"}]}])[0] == "genai"


def test_a_tool_result_list_keeps_its_parts(tmp_path: Path) -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    call = {"id": "c1", "name": "read_file", "args": {}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "img"}}},
                       image]}  # fmt: skip
    path = write_jsonl(
        tmp_path / "s.jsonl", [_header(), _user("u", "look"), _gemini("g", "", toolCalls=[call])]
    )
    (tool,) = [m for m in load(path).messages if m.role == "tool"]
    assert isinstance(tool.parts[0], ToolResultPart) and tool.parts[1].kind == "media"


def test_a_cancelled_request_is_a_stop_by_the_user_and_written_back(tmp_path: Path) -> None:
    """Gemini CLI shows "Request cancelled." when the user presses Esc, and saves it as an info
    record (never sent): the message before it is marked stopped, so a summary says the user
    stopped the work (not that the request waits for an answer); a request cancelled while its
    tool calls ran marks the turn. The writer puts the notice back after the message."""
    from ctxfold.formats.gemini_cli.writer import write
    from ctxfold.providers.standing import IN_PROGRESS, STOPPED, assess

    cancelled = {
        "id": "i1",
        "timestamp": "2026-01-01T00:00:03.000Z",
        "type": "info",
        "content": "Request cancelled.",
    }
    other = {
        "id": "i2",
        "timestamp": "2026-01-01T00:00:03.000Z",
        "type": "info",
        "content": "Memory refreshed.",
    }
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "npm test"}, "status": "cancelled"}
    request = [_header(), _user("u1", "Add a dark mode"), _gemini("g1", "Done: dark mode is in."),
               _user("u2", "Now rewrite the build in Rust"), cancelled]  # fmt: skip
    turn = [_header(), _user("u1", "Run the tests"), _gemini("g1", "", toolCalls=[call]), cancelled]
    shown = [_header(), _user("u1", "Add a dark mode"), _gemini("g1", "Done."), _user("u2", "Go on"), other]
    for name, lines, marked, state in (
        ("request", request, ["u2"], STOPPED),
        ("turn", turn, ["g1"], STOPPED),
        ("shown", shown, [], IN_PROGRESS),
    ):
        path = write_jsonl(tmp_path / f"{name}.jsonl", lines)
        t = load(path)
        assert [m.id for m in t.messages if m.stopped] == marked, name
        assert assess(t.messages).state == state, name
        written = tmp_path / f"{name}-written.jsonl"
        written.write_bytes(b"\n".join(write(t)) + b"\n")
        notices = [r for r in map(json.loads, written.read_text().splitlines()) if r.get("type") == "info"]
        assert [r["content"] for r in notices] == ["Request cancelled."] * len(marked), name
        again = load(written)
        assert [m.id for m in again.messages if m.stopped] == marked, name
        assert [m.text for m in again.messages] == [m.text for m in t.messages], name
        assert validate(str(written)).ok, name
