"""pi's sessions are trees: ``/tree`` goes back to an earlier entry, and the next entry is parented
there. pi builds its request along ``parentId`` from the last entry, so the branch left behind is
not sent (``tests/interop/test_pi_sends.py`` shows it with the real pi): ctxfold's reader names
its messages in a ``Rewind``, and they leave the context. A branch back past a compaction, or onto
a branch left earlier, is not followed (what the compaction folded, or that branch, would come
back): it is said in the file's warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxfold.formats import loader
from ctxfold.formats.pi.writer import write
from ctxfold.formats.validate import validate
from ctxfold.tokens.estimate import estimate_file, estimate_to_dict
from ctxfold.tokens.incremental import estimate_incremental
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import Rewind

HEADER = {"type": "session", "version": 3, "id": "pi-branches", "timestamp": "2026-01-02T10:00:00.000Z",
          "cwd": "/repo", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}  # fmt: skip
USAGE = {"input": 5, "output": 3, "cacheRead": 900, "cacheWrite": 20, "totalTokens": 928,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}  # fmt: skip


def _entry(uid: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": uid, "parentId": parent, "timestamp": "2026-01-02T10:00:01.000Z",
            "message": message}  # fmt: skip


def _user(uid: str, parent: str | None, text: str) -> dict[str, Any]:
    return _entry(uid, parent, {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})


def _answer(uid: str, parent: str, text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
               "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": USAGE, "stopReason": "stop",
               "timestamp": 2}  # fmt: skip
    return _entry(uid, parent, message)


FIRST = [_user("u1", None, "Plan the parser."), _answer("a1", "u1", "First the lexer.")]
SECOND = [_user("u2", "a1", "Say hi, SECOND " + "words " * 200), _answer("a2", "u2", "Hi there.")]
BACK = [_user("u3", "a1", "Do something else."), _answer("a3", "u3", "Done.")]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in [HEADER, *rows]))
    return path


def test_a_branch_back_leaves_the_turn_after_its_point_out(tmp_path: Path) -> None:
    branched = _write(tmp_path / "branched.jsonl", [*FIRST, *SECOND, *BACK])
    without = _write(tmp_path / "without.jsonl", [*FIRST, *BACK])
    t = loader.load(branched)
    assert [e.ids for e in t.entries if isinstance(e, Rewind)] == [("u2", "a2")]
    assert estimate_file(branched).context_tokens == estimate_file(without).context_tokens
    assert [m.id for m in current_context(t.entries).messages] == ["u1", "a1", "u3", "a3"]
    assert validate(str(branched)).ok
    written = b"".join(write(t))
    assert b"SECOND" not in written and b"Do something else." in written


def test_a_branch_back_past_a_compaction_is_not_followed(tmp_path: Path) -> None:
    compaction = {"type": "compaction", "id": "c1", "parentId": "a2", "timestamp": "2026-01-02T10:00:02.000Z",
                  "summary": "The parser is planned.", "firstKeptEntryId": "u2", "tokensBefore": 1200}  # fmt: skip
    rows = [*FIRST, *SECOND, compaction, *BACK]
    path = _write(tmp_path / "past.jsonl", rows)
    t = loader.load(path)
    assert not any(isinstance(e, Rewind) for e in t.entries)
    said = [w for w in estimate_file(path).warnings if "does not follow" in w]
    assert said == [
        "line 7: the conversation goes on from line 3, before the compaction at line 6: pi sends what came "
        "before it again, which ctxfold does not follow (counts from here on may be off)"
    ]


def test_going_on_from_a_branch_left_earlier_is_said(tmp_path: Path) -> None:
    again = [_user("u4", "a2", "Back to SECOND."), _answer("a4", "u4", "Ok.")]  # a2: left by BACK
    path = _write(tmp_path / "again.jsonl", [*FIRST, *SECOND, *BACK, *again])
    opened = loader.open_transcript(path)
    rewinds = [e.ids for e in opened.entries if isinstance(e, Rewind)]
    assert rewinds == [("u2", "a2")]  # only the first branch back is followed
    assert [w.split(":")[0] for w in opened.warnings if "on a branch left earlier" in w] == ["line 8"]
    followed = _write(tmp_path / "followed.jsonl", [*FIRST, *SECOND, *BACK])
    assert not [w for w in estimate_file(followed).warnings if "does not follow" in w]


def test_a_branch_after_the_state_kept_reads_on_as_a_cold_run(tmp_path: Path) -> None:
    path = _write(tmp_path / "live.jsonl", [*FIRST, *SECOND])
    estimate_incremental(str(path))
    _write(path, [*FIRST, *SECOND, *BACK])
    trace: dict[str, int] = {}
    warm = estimate_incremental(str(path), trace=trace)
    assert trace["resumed"]
    assert estimate_to_dict(warm) == estimate_to_dict(estimate_file(path))


def test_a_branch_not_followed_is_said_after_the_state_kept_too(tmp_path: Path) -> None:
    again = [_user("u4", "a2", "Back to SECOND."), _answer("a4", "u4", "Ok.")]
    more = [_user("u5", "a4", "And on."), _answer("a5", "u5", "On.")]
    path = _write(tmp_path / "live.jsonl", [*FIRST, *SECOND, *BACK, *again])
    first = estimate_incremental(str(path))
    _write(path, [*FIRST, *SECOND, *BACK, *again, *more])
    trace: dict[str, int] = {}
    warm = estimate_incremental(str(path), trace=trace)
    assert trace["resumed"]
    cold = estimate_file(path)
    assert [w for w in cold.warnings if "does not follow" in w] == [
        w for w in first.warnings if "does not follow" in w
    ]
    assert len([w for w in cold.warnings if "does not follow" in w]) == 1
    assert estimate_to_dict(warm) == estimate_to_dict(cold)


def test_validate_still_checks_the_line_a_branch_warning_names(tmp_path: Path) -> None:
    compaction = {"type": "compaction", "id": "c1", "parentId": "a2", "timestamp": "2026-01-02T10:00:02.000Z",
                  "summary": "The parser is planned.", "firstKeptEntryId": "u2", "tokensBefore": 1200}  # fmt: skip
    stray = _entry("r1", "a1", {"role": "toolResult", "toolCallId": "call_nowhere", "toolName": "read",
                                "content": [{"type": "text", "text": "x"}], "isError": False, "timestamp": 3})  # fmt: skip
    checked = validate(str(_write(tmp_path / "stray.jsonl", [*FIRST, *SECOND, compaction, stray])))
    assert [w.split(":")[0] for w in checked.warnings] == ["line 7"]
    assert 7 in [v.line for v in checked.violations]
