"""Codex's rollbacks: a ``thread_rolled_back`` event drops the last ``num_turns`` user turns from
what Codex sends (``tests/interop/test_codex_sends.py`` shows it with the three pinned Codex
versions). The reader gives a ``Rewind`` of the messages those turns hold; a native write puts
the event back.

``fixtures/codex/rollback-0169.jsonl`` is a rollout the real Codex 0.169.0 wrote in the lab (two
turns, a rollback of one appended as Codex writes it, a third turn made by resuming it), its
temporary folder renamed ``/tmp/codex-lab``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import FIXTURES

from ctxfold.formats import loader
from ctxfold.formats.claude_code.writer import write as write_claude_code
from ctxfold.formats.codex.writer import write as write_codex
from ctxfold.tokens.estimate import estimate_file
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import CompactionMarker, Message, Rewind

ROLLOUT = FIXTURES / "codex" / "rollback-0169.jsonl"
META = {"id": "0199e000-0000-7000-8000-00000000r011", "timestamp": "2026-11-29T10:00:00.000Z",
        "cwd": "/repo", "originator": "codex_exec", "cli_version": "0.130.0", "model_provider": "lab"}  # fmt: skip


def _line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-11-29T10:00:01.000Z", "type": kind, "payload": payload}


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return _line(
        "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
    )


def _rollout(tmp_path: Path, *rows: dict[str, Any]) -> Path:
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [_line("session_meta", META), *rows]))
    return path


def _rollback(n: int) -> dict[str, Any]:
    return _line("event_msg", {"type": "thread_rolled_back", "num_turns": n})


def _texts(path: Path) -> list[str]:
    return [m.text for m in current_context(loader.load(path).entries).messages]


ENV = _message("user", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>")
TURNS = [
    _message("user", "one"),
    _message("assistant", "ONE"),
    _message("user", "two"),
    _message("assistant", "TWO"),
]


def test_the_lab_rollout_leaves_the_rolled_back_turn_out() -> None:
    t = loader.load(ROLLOUT)
    (rewind,) = [e for e in t.entries if isinstance(e, Rewind)]
    assert rewind.last == 2  # the second question and its answer
    sent = [m.text for m in current_context(t.entries).messages]
    assert "TURN-ONE hello" in sent and "TURN-THREE go" in sent
    assert not any("TURN-TWO" in s or "SECOND-ANSWER" in s for s in sent)


def test_a_native_write_puts_the_rollback_back_and_another_format_leaves_the_turn_out() -> None:
    t = loader.load(ROLLOUT)
    lines = [json.loads(line) for line in b"".join(w + b"\n" for w in write_codex(t)).splitlines()]
    assert sum(d["payload"].get("type") == "thread_rolled_back" for d in lines) == 1
    assert b"TURN-TWO" not in b"".join(write_claude_code(t)) and b"TURN-THREE" in b"".join(
        write_claude_code(t)
    )


def test_the_turns_a_rollback_counts(tmp_path: Path) -> None:
    """The environment Codex puts in is no turn; more turns than there are drops them all, but
    what came before the first."""
    assert _texts(_rollout(tmp_path, ENV, *TURNS, _rollback(1))) == [
        ENV["payload"]["content"][0]["text"],
        "one",
        "ONE",
    ]
    assert _texts(_rollout(tmp_path, ENV, *TURNS, _rollback(5)))[1:] == []
    assert _texts(_rollout(tmp_path, ENV, *TURNS, _rollback(1), _rollback(1)))[1:] == []
    counted = estimate_file(_rollout(tmp_path, *TURNS, _rollback(1), _message("user", "three")))
    alone = estimate_file(_rollout(tmp_path, *TURNS[:2], _message("user", "three")))
    assert counted.context_tokens == alone.context_tokens


def test_a_rollback_reaches_into_what_a_compaction_kept(tmp_path: Path) -> None:
    kept = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one"}]}]
    compacted = _line("compacted", {"message": "", "replacement_history": kept})
    path = _rollout(tmp_path, *TURNS, compacted, _message("user", "two again"), _rollback(2))
    t = loader.load(path)
    assert any(isinstance(e, CompactionMarker) for e in t.entries)
    assert [e.last for e in t.entries if isinstance(e, Rewind)] == [2]
    assert [m for m in current_context(t.entries).messages if isinstance(m, Message)] == []


def test_a_rollback_drops_the_context_updates_codex_put_before_the_turn(tmp_path: Path) -> None:
    """A model switch note before the second turn goes with it (Codex trims such updates); the
    environment before the first turn stays, even when every turn is rolled back."""
    switch = _message("developer", "<model_switch>\\nThe user was previously using another model.")
    rows = [ENV, TURNS[0], TURNS[1], switch, TURNS[2], TURNS[3]]
    env = ENV["payload"]["content"][0]["text"]
    assert _texts(_rollout(tmp_path, *rows, _rollback(1))) == [env, "one", "ONE"]
    assert _texts(_rollout(tmp_path, *rows, _rollback(2))) == [env]
