"""Gemini CLI writer: a session written back as it was, and a compacted one, in the input's shape,
checked against the raw records; and where ``compact`` tells Gemini CLI to find it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REAL

import ctxfold
from ctxfold.compaction.run import CompactOptions, compact_file
from ctxfold.formats.gemini_cli.resume import plan
from ctxfold.formats.gemini_cli.writer import ACK, write
from ctxfold.formats.loader import load
from ctxfold.formats.validate import validate
from ctxfold.providers.facts import SUMMARY_OPEN
from ctxfold.providers.offline import OfflineSummarizer
from ctxfold.transcript.context import current_context

LIVE = FIXTURES / "gemini-cli" / "tool-calls-resumed.jsonl"
COMPRESSED = FIXTURES / "gemini-cli" / "compressed.jsonl"
POMODORO = FIXTURES / "real" / "gemini-cli-pomodoro-timer.json"
DOCS = sorted((REAL / "gemini-cli").glob("*.json")) if (REAL / "gemini-cli").is_dir() else [POMODORO]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_a_document_is_written_back_record_for_record(path: Path, tmp_path: Path) -> None:
    (line,) = list(write(load(path)))
    doc, back = json.loads(path.read_text()), json.loads(line)
    assert {k: v for k, v in back.items() if k != "messages"} == {
        k: v for k, v in doc.items() if k != "messages"
    }
    sent = [r for r in doc["messages"] if r["type"] in ("user", "gemini")]  # info lines are shown, not sent
    assert back["messages"] == sent


def test_an_event_log_is_written_back_as_the_list_gemini_cli_loads(tmp_path: Path) -> None:
    out = tmp_path / "back.jsonl"
    out.write_bytes(b"\n".join(write(load(LIVE))) + b"\n")
    head, *records = [json.loads(x) for x in out.read_text().splitlines()]
    headers = [d for d in map(json.loads, LIVE.read_text().splitlines()) if "projectHash" in d]
    assert len(headers) == 2  # the resume wrote its own into the same file: the later one holds
    assert head == {**headers[-1], "lastUpdated": head["lastUpdated"]}
    assert validate(str(out)).ok
    now = current_context(load(LIVE).entries).messages  # what Gemini CLI would load and send
    assert [(m.role, m.text) for m in load(out).messages] == [(m.role, m.text) for m in now]
    assert len(records) == len({r["id"] for r in records})


def _compacted(src: Path, tmp: Path, strategy: str, monkeypatch: pytest.MonkeyPatch, **opts: Any) -> Any:
    monkeypatch.setattr("ctxfold.compaction.run.MIN_SHRINK", -100.0)  # small files: the shape is tested
    with OfflineSummarizer(scripted=["THE-SUMMARY of the work so far."]) as summarizer:
        return compact_file(
            str(src),
            summarizer,
            summarizer_window=None,
            options=CompactOptions(strategy=strategy, force=True, out_dir=str(tmp / "out"), home=tmp, **opts),
        )


def test_a_compacted_document_is_one_line_and_a_new_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _compacted(POMODORO, tmp_path, "summary", monkeypatch)
    raw = r.outputs.compacted.read_bytes()
    assert raw.count(b"\n") == 1  # a JSON document, and a JSONL file whose one line holds it all
    doc, orig = json.loads(raw), json.loads(POMODORO.read_text())
    assert doc["sessionId"] != orig["sessionId"] and doc["projectHash"] == orig["projectHash"]
    assert doc["startTime"] > orig["startTime"]
    summary, ack = doc["messages"][:2]
    assert summary["type"] == "user" and summary["content"][0]["text"].startswith(SUMMARY_OPEN)
    assert "THE-SUMMARY" in summary["content"][0]["text"]
    assert ack == {**ack, "type": "gemini", "content": ACK, "model": "gemini-2.5-pro"}
    assert validate(str(r.outputs.compacted)).ok
    back = load(r.outputs.compacted)
    assert back.session_id == doc["sessionId"] and back.models == ("gemini-2.5-pro",)
    assert r.carry_on.command == ("gemini", "--session-file", str(r.outputs.compacted))  # no project known


def test_a_compacted_event_log_holds_tool_calls_as_gemini_clis_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _compacted(LIVE, tmp_path, "sliding-window", monkeypatch)
    head, *records = [json.loads(x) for x in r.outputs.compacted.read_text().splitlines()]
    assert head["sessionId"] != json.loads(LIVE.read_text().splitlines()[0])["sessionId"]
    assert not any("toolCalls" in rec for rec in records)  # a resume would send each result twice
    calls = [p["functionCall"]["id"] for rec in records if isinstance(rec["content"], list)
             for p in rec["content"] if "functionCall" in p]  # fmt: skip
    answers = [p["functionResponse"]["id"] for rec in records if isinstance(rec["content"], list)
               for p in rec["content"] if "functionResponse" in p]  # fmt: skip
    assert calls and calls == answers
    assert validate(str(r.outputs.compacted)).ok
    assert all(rec.get("model") == "gemini-2.5-flash" for rec in records if rec["type"] == "gemini")


def test_gemini_clis_compressed_session_compacts_and_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = _compacted(COMPRESSED, tmp_path, "summary", monkeypatch)
    t = ctxfold.read(r.outputs.compacted)
    assert not any("<state_snapshot>" in m.text for m in t.messages[1:])
    assert validate(str(r.outputs.compacted)).ok


def test_compact_plans_the_resume_in_the_sessions_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    project = "/work/demo"
    chats = home / ".gemini" / "tmp" / "demo" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(project)
    src = chats / LIVE.name
    src.write_bytes(LIVE.read_bytes())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("ctxfold.compaction.run.MIN_SHRINK", -100.0)
    with OfflineSummarizer(scripted=["S"]) as summarizer:
        r = compact_file(
            str(src), summarizer, summarizer_window=None,
            options=CompactOptions(force=True, home=home, install=True),
        )  # fmt: skip
    carry = r.carry_on
    assert r.outputs.compacted.parent.resolve() == tmp_path / "ctxfold-out"  # not among Gemini CLI's sessions
    assert carry.command == ("gemini", "--resume", carry.session_id) and carry.cwd == project
    assert carry.install_to.parent == chats and carry.installed
    assert carry.install_to.name.endswith(f"-{carry.session_id[:8]}.compacted.jsonl")
    assert sorted(p.name for p in chats.iterdir()) == sorted([LIVE.name, carry.install_to.name])


def test_the_project_is_found_by_its_hash_when_the_session_is_elsewhere(tmp_path: Path) -> None:
    project = "/work/demo"
    digest = hashlib.sha256(project.encode()).hexdigest()
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps({"projects": {project: "demo"}}))
    written = tmp_path / "x.jsonl"
    header = {"sessionId": "12345678-aaaa-bbbb-cccc-dddddddddddd", "projectHash": digest}
    written.write_text(json.dumps(header) + "\n")
    carry = plan(load(LIVE), written, tmp_path)
    assert carry.cwd == project and carry.install_to.parent == tmp_path / ".gemini" / "tmp" / "demo" / "chats"


def test_another_harness_session_written_for_gemini_cli_names_its_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = FIXTURES / "real" / "claude-code-sidechains.jsonl"
    cwd = next(json.loads(x)["cwd"] for x in src.read_text().splitlines() if '"cwd"' in x)
    r = _compacted(src, tmp_path, "summary", monkeypatch, to="gemini-cli")
    head = json.loads(r.outputs.compacted.read_text().splitlines()[0])
    assert head["projectHash"] == hashlib.sha256(cwd.encode()).hexdigest()
    assert validate(str(r.outputs.compacted)).ok and load(r.outputs.compacted).source_format == "gemini-cli"
