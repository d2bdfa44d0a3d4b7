"""What a Claude Code log leaves behind when it forks: a line parented past what was read since
its parent (a rewind, a resumed session's "Continue from where you left off.", a retried
response) drops the response being read and leaves out, by a ``Rewind``, the messages read
after that parent, as Claude Code, resuming along ``parentUuid``, never sends them again
(``tests/interop/test_claude_code_sends.py`` shows it with the real harness). Lines written
ahead of their parent, and ``system`` lines parented oddly, leave everything as it was.

``fixtures/claude-code/rewind.jsonl`` is hand-made in Claude Code 2.1's line shapes: a turn, a
second turn rewound (the next question parented to the first answer), a call left behind by a
crash ("Continue from where you left off."), and a last turn. Its usage is ctxfold's estimate of
each request plus 17,000 tokens (a steady unlogged prompt), as the rewound turns are not sent.
The fixture-wide tests (writers, streamed compaction, the count cache, two-process reads) read
it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from conftest import FIXTURES, real, real_files

from ctxfold.formats import loader
from ctxfold.formats.claude_code.writer import write
from ctxfold.formats.validate import validate
from ctxfold.tokens.estimate import estimate_file, estimate_to_dict
from ctxfold.tokens.incremental import estimate_incremental
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import Rewind

BASE = {
    "isSidechain": False,
    "sessionId": "s1",
    "timestamp": "2026-11-29T10:00:00Z",
    "version": "2.1.79",
    "cwd": "/work/app",
    "userType": "external",
    "gitBranch": "main",
}


def _user(uid: str, parent: str | None, content: Any) -> dict[str, Any]:
    return {
        **BASE,
        "type": "user",
        "uuid": uid,
        "parentUuid": parent,
        "message": {"role": "user", "content": content},
    }


def _assistant(uid: str, parent: str | None, mid: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    message = {
        "id": mid,
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(blocks),
        "usage": {"input_tokens": 100, "output_tokens": 5},
    }
    return {**BASE, "type": "assistant", "uuid": uid, "parentUuid": parent, "message": message}


def _call(cid: str) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": cid,
        "name": "Bash",
        "input": {"command": "npx next build " + "x " * 400},
    }


def _result(uid: str, parent: str, cid: str) -> dict[str, Any]:
    return _user(uid, parent, [{"type": "tool_result", "tool_use_id": cid, "content": "built " * 300}])


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _dropped(path: Path) -> list[str | None]:
    return [m.id for m in loader.load(path, fmt="claude-code").messages if m.dropped]


START = [_user("u1", None, "Build the frontend."), _assistant("a1", "u1", "m1", _text("On it."))]


def test_a_response_left_behind_and_its_result_take_no_room(tmp_path: Path) -> None:
    """A call whose result came, then a question parented to the line before the call: both
    are dropped, the context is the one without them, and they are not written back."""
    left = [_assistant("a2", "a1", "m2", _call("toolu_left")), _result("r2", "a2", "toolu_left")]
    after = [
        _user("u3", "a1", "Continue from where you left off."),
        _assistant("a3", "u3", "m3", _text("Done.")),
    ]
    forked = _write(tmp_path / "forked.jsonl", [*START, *left, *after])
    without = _write(tmp_path / "without.jsonl", [*START, *after])
    assert _dropped(forked) == ["a2", "r2"]
    assert estimate_file(forked).context_tokens == estimate_file(without).context_tokens
    assert validate(str(forked)).ok

    written = b"".join(write(loader.load(forked, fmt="claude-code")))
    assert b"toolu_left" not in written and b"Continue from where" in written


def test_a_retried_response_leaves_the_first_try_behind(tmp_path: Path) -> None:
    """A second response parented where the first was: the first is dropped, its call still
    billed (both are calls; the first's usage is another call's)."""
    rows = [*START, _user("u2", "a1", "Go."), _assistant("a2", "u2", "m2", _call("c2"))]
    rows.append(_assistant("a3", "u2", "m3", _text("Built.")))
    path = _write(tmp_path / "retry.jsonl", rows)
    assert _dropped(path) == ["a2"]
    est = estimate_file(path)
    assert len(est.requests) == 3 and est.requests[2].estimate == est.requests[1].estimate


def test_lines_written_ahead_of_their_parent_fork_nothing(tmp_path: Path) -> None:
    """Claude Code writes a parallel call's result before the call's own line, and the next
    response is parented to that result (the shape of ``fundwise.jsonl`` line 227): no fork."""
    rows = [
        *START,
        _user("u2", "a1", "Go."),
        _result("r3", "a3", "c3"),  # ahead of a3
        _assistant("a2", "u2", "m2", _call("c2")),
        _result("r2", "a2", "c2"),
        _assistant("a3", "r2", "m2", _call("c3")),
        _assistant("a4", "r3", "m4", _text("Both done.")),
    ]
    assert _dropped(_write(tmp_path / "ahead.jsonl", rows)) == []


def test_a_system_lines_parent_forks_nothing(tmp_path: Path) -> None:
    """A ``system`` line parented before the last response, and the user's next question
    parented to it (``scout-images.jsonl`` line 62): the real counts show the response was sent."""
    rows = [*START, _user("u2", "a1", "Go."), _assistant("a2", "u2", "m2", _text("Checked."))]
    rows.append(
        {**BASE, "type": "system", "subtype": "api_error", "uuid": "s1", "parentUuid": "u2", "error": {}}
    )
    rows.append(_user("u3", "s1", "And now?"))
    assert _dropped(_write(tmp_path / "system.jsonl", rows)) == []


def test_the_real_logs_leave_one_response_behind() -> None:
    """``solsmile-thirdparty-proxy.jsonl`` line 250 ("Continue from where you left off.") is
    parented to line 245, past the Bash call of line 246 (``jq -c 'select(.uuid=="5fa1ef44-...")
    |.parentUuid'``): the one response left behind in the real logs. Its log now passes
    ``validate`` (the call had no result), and counts as the log without that line does."""
    path = real("claude-code/solsmile-thirdparty-proxy.jsonl")
    dropped = {p.name: _dropped(p) for p in real_files("claude-code")}
    assert dropped.pop(path.name) == ["7bc87a0d-a8d9-4db3-ae93-f648bb6236ed"]
    assert not any(dropped.values()), dropped
    assert validate(str(path)).ok


def test_the_real_log_counts_as_without_the_response_left_behind(tmp_path: Path) -> None:
    path = real("claude-code/solsmile-thirdparty-proxy.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    assert b"7bc87a0d-a8d9-4db3-ae93-f648bb6236ed" in lines[245]
    without = tmp_path / "without.jsonl"
    without.write_bytes(b"".join(lines[:245] + lines[246:]))
    ours, theirs = estimate_file(path), estimate_file(without)
    assert ours.context_tokens == theirs.context_tokens
    # one request more: the call that made the response left behind (it was billed)
    assert len(ours.requests) == len(theirs.requests) + 1


def test_a_rewind_drops_the_response_being_read_and_leaves_out_what_came_before_it(tmp_path: Path) -> None:
    """A question parented further back than the response being read: that response is dropped
    as it is built, and the question before it, given already, is left out by a rewind."""
    rows = [*START, _user("u2", "a1", "Go."), _assistant("a2", "u2", "m2", _text("Gone."))]
    rows.append(_user("u3", "a1", "Something else."))
    t = loader.load(_write(tmp_path / "rewind.jsonl", rows), fmt="claude-code")
    assert [m.id for m in t.messages if m.dropped] == ["a2"]
    assert [e.ids for e in t.entries if isinstance(e, Rewind)] == [("u2",)]
    assert [m.id for m in current_context(t.entries).messages if not m.dropped] == ["u1", "a1", "u3"]


def test_a_fork_after_the_state_kept_reads_on_as_a_cold_run(tmp_path: Path) -> None:
    """The count cache kept the state with the response still being read; the line that leaves
    it behind is appended: read on from there, the result is the cold run's."""

    left = [_user("u2", "a1", "Go."), _assistant("a2", "u2", "m2", _call("c2"))]
    after = [
        _user("u3", "u2", "Continue from where you left off."),
        _assistant("a3", "u3", "m3", _text("Ok.")),
    ]
    path = _write(tmp_path / "live.jsonl", [*START, *left])
    first = estimate_incremental(str(path))
    _write(path, [*START, *left, *after])
    trace: dict[str, int] = {}
    warm = estimate_incremental(str(path), trace=trace)
    assert trace["resumed"] and _dropped(path) == ["a2"]
    assert estimate_to_dict(warm) == estimate_to_dict(estimate_file(path))
    assert warm.context_tokens < first.context_tokens - 300  # (the call's 400 words gone)


def _attachment(uid: str, parent: str) -> dict[str, Any]:
    reminder = {
        "type": "todo_reminder",
        "content": [{"content": "ship it", "status": "pending"}],
        "itemCount": 1,
    }
    return {**BASE, "type": "attachment", "uuid": uid, "parentUuid": parent, "attachment": reminder}


# the shape ``claude --resume ID --resume-session-at A1 -p ...`` writes (tests/interop): a second
# turn (question, reminder, answer), then a third question parented to the first turn's answer
TURN2 = [
    _user("u2", "a1", "Say hi, SECOND-TURN " + "words " * 300),
    _attachment("t2", "u2"),
    _assistant("a2", "t2", "m2", _text("Hi there, second turn.")),
]
TURN3 = [_user("u3", "a1", "Do something else."), _assistant("a3", "u3", "m3", _text("Third answer."))]


def test_a_rewind_leaves_the_turns_after_its_point_out(tmp_path: Path) -> None:
    """The third question goes back to the first answer: the second turn is left out of the
    context and of every later request, as a log without it counts them; the requests before
    it are as they were, and the compacted log and the current context hold none of it."""

    forked = _write(tmp_path / "forked.jsonl", [*START, *TURN2, *TURN3])
    without = _write(tmp_path / "without.jsonl", [*START, *TURN3])
    t = loader.load(forked, fmt="claude-code")
    assert [e.ids for e in t.entries if isinstance(e, Rewind)] == [("u2", "t2")]
    assert _dropped(forked) == ["a2"]
    ours, theirs = estimate_file(forked), estimate_file(without)
    assert ours.context_tokens == theirs.context_tokens
    assert [r.estimate for r in ours.requests] == [
        *(r.estimate for r in estimate_file(_write(tmp_path / "before.jsonl", [*START, *TURN2])).requests),
        theirs.requests[-1].estimate,
    ]
    assert validate(str(forked)).ok
    assert "SECOND-TURN" not in str([m.text for m in current_context(t.entries).messages])

    assert b"SECOND-TURN" not in b"".join(write(t))


def test_a_rewind_after_the_state_kept_reads_on_as_a_cold_run(tmp_path: Path) -> None:

    path = _write(tmp_path / "live.jsonl", [*START, *TURN2])
    estimate_incremental(str(path))
    _write(path, [*START, *TURN2, *TURN3])
    trace: dict[str, int] = {}
    warm = estimate_incremental(str(path), trace=trace)
    assert trace["resumed"]
    assert estimate_to_dict(warm) == estimate_to_dict(estimate_file(path))
    assert warm.context_tokens == estimate_file(_write(tmp_path / "w.jsonl", [*START, *TURN3])).context_tokens


def test_the_rewind_fixture() -> None:

    t = loader.load(FIXTURES / "claude-code" / "rewind.jsonl")
    assert [e.ids for e in t.entries if isinstance(e, Rewind)] == [("c1", "c2", "c3", "c4")]
    assert [m.id for m in t.messages if m.dropped] == ["c5", "d2"]
    sent = [m.id for m in current_context(t.entries).messages if not m.dropped]
    assert sent == ["b1", "b2", "b4", "b5", "d1", "e1", "e2", "e3", "e4"]


def test_a_rewind_to_a_system_line_leaves_what_followed_it_out(tmp_path: Path) -> None:
    """In the terminal a turn ends with a ``turn_duration`` line, which the next question is
    parented to: a rewind to the end of the first turn parents the new question to that line."""
    ended = {
        **BASE,
        "type": "system",
        "subtype": "turn_duration",
        "uuid": "s1",
        "parentUuid": "a1",
        "durationMs": 900,
    }
    second = [{**TURN2[0], "parentUuid": "s1"}, *TURN2[1:]]
    third = [{**TURN3[0], "parentUuid": "s1"}, *TURN3[1:]]
    forked = _write(tmp_path / "forked.jsonl", [*START, ended, *second, *third])
    without = _write(tmp_path / "without.jsonl", [*START, ended, *third])
    t = loader.load(forked, fmt="claude-code")
    assert [e.ids for e in t.entries if isinstance(e, Rewind)] == [("u2", "t2")]
    assert estimate_file(forked).context_tokens == estimate_file(without).context_tokens


def test_a_call_a_rewind_left_behind_needs_no_result(tmp_path: Path) -> None:
    """A response with a call, given already (an API error followed it), then a question
    parented back past it: the call never needs its result."""
    error = {**BASE, "type": "system", "subtype": "api_error", "uuid": "s2", "parentUuid": "a2", "error": {}}
    rows = [*START, _user("u2", "a1", "Build it."), _assistant("a2", "u2", "m2", _call("toolu_open")), error]
    rows.append(_user("u3", "a1", "Something else."))
    path = _write(tmp_path / "open.jsonl", rows)
    t = loader.load(path, fmt="claude-code")
    assert [e.ids for e in t.entries if isinstance(e, Rewind)] == [("u2", "a2")]
    assert validate(str(path)).ok
