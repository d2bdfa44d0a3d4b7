"""pi's sessions are trees: ``/tree`` goes back to an earlier entry, and the next entry is parented
there. pi builds its request along ``parentId`` from the last entry, so the branch left behind is
not sent (``tests/interop/test_pi_sends.py`` shows it with the real pi): ctxfold's reader names
its messages in a ``Rewind``, and they leave the context. A branch back past a compaction, or onto
a branch left earlier, brings back what the compaction folded, or that branch: the reader gives
pi's context from there whole (``Rewind.to``), and every count after it is that of the session
written straight along pi's path."""

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


COMPACTION = {"type": "compaction", "id": "c1", "parentId": "a2", "timestamp": "2026-01-02T10:00:02.000Z",
              "summary": "The parser is planned.", "firstKeptEntryId": "u2", "tokensBefore": 1200}  # fmt: skip
AGAIN = [_user("u4", "a2", "Back to SECOND."), _answer("a4", "u4", "Ok.")]  # a2: a branch BACK left


def _same_as_straight(branched: Path, straight: Path, ids: list[str | None]) -> None:
    """``branched`` counts, and ends in, the context of the session written along pi's path."""
    t = loader.load(branched)
    assert [m.id for m in current_context(t.entries).messages] == ids
    assert [m.id for m in current_context(loader.load(straight).entries).messages] == ids
    got, want = estimate_file(branched), estimate_file(straight)
    assert got.context_tokens == want.context_tokens and got.warnings == []
    assert got.requests[-1].estimate == want.requests[-1].estimate
    assert validate(str(branched)).ok


def test_a_branch_back_past_a_compaction_brings_back_what_it_folded(tmp_path: Path) -> None:
    path = _write(tmp_path / "past.jsonl", [*FIRST, *SECOND, COMPACTION, *BACK])
    t = loader.load(path)
    (back,) = (e for e in t.entries if isinstance(e, Rewind))
    assert back.to is not None and [m.id for m in back.to] == ["u1", "a1"]  # no compaction on that path
    _same_as_straight(path, _write(tmp_path / "straight.jsonl", [*FIRST, *BACK]), ["u1", "a1", "u3", "a3"])
    written = b"".join(write(t))
    assert b"SECOND" not in written and b"The parser is planned." not in written


def test_going_on_from_a_branch_left_earlier_brings_it_back(tmp_path: Path) -> None:
    path = _write(tmp_path / "again.jsonl", [*FIRST, *SECOND, *BACK, *AGAIN])
    rewinds = [e for e in loader.load(path).entries if isinstance(e, Rewind)]
    assert [(e.ids, e.to is None) for e in rewinds] == [(("u2", "a2"), True), ((), False)]
    straight = _write(tmp_path / "straight.jsonl", [*FIRST, *SECOND, *AGAIN])
    _same_as_straight(path, straight, ["u1", "a1", "u2", "a2", "u4", "a4"])
    written = b"".join(write(loader.load(path)))
    assert b"Do something else." not in written and written.count(b"SECOND") == 2  # u2 and u4, once each


def test_a_branch_back_between_two_compactions_keeps_the_first(tmp_path: Path) -> None:
    """Back to an entry after one compaction and before the next: pi sends the first one's
    summary, what it kept, and what followed it up to that entry."""
    third = [_user("u5", "c1", "Third."), _answer("a5", "u5", "Three.")]
    later = {
        **COMPACTION,
        "id": "c2",
        "parentId": "a5",
        "summary": "Later summary.",
        "firstKeptEntryId": "u5",
    }
    on = [_user("u6", "a5", "From three."), _answer("a6", "u6", "Fine.")]
    path = _write(tmp_path / "two.jsonl", [*FIRST, *SECOND, COMPACTION, *third, later, *on])
    straight = _write(tmp_path / "straight.jsonl", [*FIRST, *SECOND, COMPACTION, *third, *on])
    _same_as_straight(path, straight, [None, "u2", "a2", "u5", "a5", "u6", "a6"])
    (head, *_) = current_context(loader.load(path).entries).messages
    assert head.text == "The parser is planned."


def test_a_branch_back_after_the_state_kept_reads_on_as_a_cold_run(tmp_path: Path) -> None:
    """The count cache's state keeps the tree without its messages: a branch back within the
    context reads on from it; one that needs messages the context let go reads the file again
    from its first line, and the state it keeps serves the next run."""
    for name, before, after, resumed in [
        ("within.jsonl", [*FIRST, *SECOND], [*BACK], True),
        ("past.jsonl", [*FIRST, *SECOND, COMPACTION], [*BACK], False),
        ("again.jsonl", [*FIRST, *SECOND, *BACK], [*AGAIN], False),
    ]:
        path = _write(tmp_path / name, before)
        estimate_incremental(str(path))
        _write(path, [*before, *after])
        trace: dict[str, int] = {}
        warm = estimate_incremental(str(path), trace=trace)
        assert bool(trace["resumed"]) is resumed and trace["kept"], name
        assert estimate_to_dict(warm) == estimate_to_dict(estimate_file(path)), name
        _write(path, [*before, *after, _user("u9", after[-1]["id"], "On.")])
        warm = estimate_incremental(str(path), trace=trace)
        assert trace["resumed"] and estimate_to_dict(warm) == estimate_to_dict(estimate_file(path)), name


def test_validate_checks_the_results_after_a_branch_back(tmp_path: Path) -> None:
    stray = _entry("r1", "a1", {"role": "toolResult", "toolCallId": "call_nowhere", "toolName": "read",
                                "content": [{"type": "text", "text": "x"}], "isError": False, "timestamp": 3})  # fmt: skip
    checked = validate(str(_write(tmp_path / "stray.jsonl", [*FIRST, *SECOND, COMPACTION, stray])))
    assert checked.warnings == [] and {v.line for v in checked.violations} == {7}
