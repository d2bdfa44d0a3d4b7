"""What pi sends of a session it resumes: a response that failed (``stopReason: error``, a stream
cut off) or that the user stopped (``aborted``) stays in pi's log but is left out of every later
request, and ctxfold's count of the session leaves it out too.

The pinned pi resumes two copies of one session, one with such a response as its last entry and
one without it; it sends both the same conversation, and ctxfold counts both the same context
(and ``validate`` asks no result for the calls of the one left out). Then a branch: a question
parented back to the first turn's answer, past a second turn, which pi sends no more. Last, pi's
own compaction, and questions parented back past it and then onto the branch that left: pi
sends the path to each, and ctxfold's context is that path (``tests/test_pi_branches.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxfold.formats import loader
from ctxfold.tokens.estimate import estimate_file
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import TextPart, ToolResultPart
from interop.carry import assert_carried_on, compact, messages, texts, tool_ids, validate
from interop.server import Reply, ScriptedServer, anthropic_api
from interop.test_pi import MODEL, NEXT, PROVIDER, Bin, _configure, _pi, _resume, _session

CUT_OFF = "Half of a plan that the stream cut off: first the parser, then the"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _append(path: Path, *rows: dict) -> None:
    with path.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def _entry(parent: str, n: int, message: dict) -> dict:
    return {"type": "message", "id": f"e{n:07x}", "parentId": parent, "timestamp": "2026-11-29T10:00:00.000Z",
            "message": message}  # fmt: skip


def _left_out(last: dict, stop: str) -> dict:
    """A response as pi writes one that failed or was stopped: ``last`` (pi's own last
    response) with other content, its partial usage and its stop reason."""
    message = dict(last["message"])
    content: list[dict] = [{"type": "text", "text": CUT_OFF * 20}]
    if stop == "error":  # a stream cut off after it had begun two calls
        content += [{"type": "toolCall", "id": f"toolu_cut{i}", "name": "bash",
                     "arguments": {"command": f"echo never-run-{i} " + "x" * 400}} for i in range(2)]  # fmt: skip
    message.update(content=content, stopReason=stop)
    if stop == "error":
        message["errorMessage"] = "terminated"
    return message


FIRST = [Reply(tool_calls=[("bash", {"command": "echo one"})]), Reply("Done one.")]


def _first_turn(harness_bin: Bin, home: Path, srv: ScriptedServer) -> Path:
    """A session's first turn (a call, then "Done one."): its file."""
    _configure(home, srv)
    _pi(harness_bin, home, "--model", f"{PROVIDER}/{MODEL}", "-p", "Run echo one.")
    return _session(home)


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_pi_leaves_out_a_response_that_failed_or_was_stopped(
    harness_bin: Bin, lab_home: Path, tmp_path: Path, stop: str
) -> None:
    with ScriptedServer(anthropic_api, [*FIRST, Reply("Next."), Reply("Next.")]) as srv:
        session = _first_turn(harness_bin, lab_home, srv)
        rows = _lines(session)
        last = rows[-1]
        assert last["message"]["role"] == "assistant" and last["message"]["stopReason"] == "stop"
        asked = _entry(last["id"], 1, {"role": "user", "content": [{"type": "text", "text": "Plan the parser."}],
                                       "timestamp": last["message"]["timestamp"] + 1})  # fmt: skip
        _append(session, asked)
        without = tmp_path / "without.jsonl"
        shutil.copyfile(session, without)
        _append(session, _entry(asked["id"], 2, _left_out(last, stop)))
        counted = [estimate_file(p).context_tokens for p in (session, without)]
        sent = []
        for path in (without, session):
            seen = len(srv.requests)
            _pi(harness_bin, lab_home, "--session", str(path), "-p", "Go on.")
            (call,) = [r for r in srv.requests[seen:] if r.model_call]
            sent.append(messages(call))
    assert sent[0] == sent[1]  # pi sent the same conversation, with the response or without it
    assert CUT_OFF not in json.dumps(sent[1]) and "never-run" not in json.dumps(sent[1])
    assert counted[0] == counted[1], counted
    validate(session)  # its calls, never run, need no result


def test_pi_sends_the_branch_of_its_last_entry(harness_bin: Bin, lab_home: Path, tmp_path: Path) -> None:
    """A session whose last question is parented to the first turn's answer (``/tree`` went back
    there) past a second turn: pi sends the first turn and that question, not the second turn,
    and ctxfold counts that context, as it counts the session without the second turn."""
    with ScriptedServer(anthropic_api, [*FIRST, Reply("Hi."), Reply("Next.")]) as srv:
        session = _first_turn(harness_bin, lab_home, srv)
        answer = _lines(session)[-1]
        without = tmp_path / "without.jsonl"
        shutil.copyfile(session, without)
        _pi(harness_bin, lab_home, "--session", str(session), "-p", f"Say hi, {CUT_OFF}.")
        assert len(_lines(session)) > len(_lines(without)) + 1  # the second turn
        back = _entry(answer["id"], 9, {"role": "user", "content": [{"type": "text", "text": "Do something else."}],
                                        "timestamp": answer["message"]["timestamp"] + 1})  # fmt: skip
        for path in (session, without):
            _append(path, back)
        counted = [estimate_file(p).context_tokens for p in (session, without)]
        seen = len(srv.requests)
        _pi(harness_bin, lab_home, "--session", str(session), "-p", "Go on.")
        (call,) = [r for r in srv.requests[seen:] if r.model_call]
    assert CUT_OFF not in json.dumps(messages(call)) and "Done one." in json.dumps(messages(call))
    assert counted[0] == counted[1], counted


def _ours(path: Path) -> list[str]:
    """The texts of ctxfold's context of ``path`` (tool results' included), in order."""
    out = []
    for m in current_context(loader.load(path).entries).messages:
        for p in m.parts:
            if isinstance(p, TextPart):
                out.append(p.text)
            elif isinstance(p, ToolResultPart):
                out.extend(c.text for c in p.content if isinstance(c, TextPart))
    return out


def _sent_after(harness_bin: Bin, home: Path, srv: ScriptedServer, session: Path, prompt: str) -> list[str]:
    """The texts pi sends when it resumes ``session`` with ``prompt`` (the prompt left out)."""
    seen = len(srv.requests)
    _pi(harness_bin, home, "--session", str(session), "-p", prompt)
    (call,) = [r for r in srv.requests[seen:] if r.model_call]
    sent = texts(call)
    assert sent[-1] == prompt
    return sent[:-1]


def _same(sent: list[str], ours: list[str]) -> None:
    """Message for message; pi wraps a compaction's summary in words of its own."""
    assert len(sent) == len(ours), (sent, ours)
    assert all(o == s or (o in s and "<summary>" in s) for s, o in zip(sent, ours, strict=True)), (sent, ours)


def test_pi_sends_the_path_back_past_its_compaction(harness_bin: Bin, lab_home: Path) -> None:
    """pi compacts, and the session goes on; then a question parented to the first turn's answer,
        before the compaction: pi sends the first turn again, without the summary. Then one parented
        to the answer after the compaction, on the branch the first left: pi sends the summary, what
        its compaction kept and that answer again. ctxfold's context is what pi sends each time, and pi
    carries on from ctxfold's compaction of it, without the branch left."""
    nothing = "Nothing to add. " + "Still nothing. " * 150  # more than pi keeps: the first turn is folded
    script = [*FIRST, Reply(nothing, input_tokens=190_000),  # over pi's threshold: it compacts
              Reply("## Goal\nThe lab summary."), Reply("The turn so far: a question."),  # (pi cut it)
              Reply("Three."), Reply("Back."), Reply("Again.")]  # fmt: skip
    with ScriptedServer(anthropic_api, script) as srv:
        session = _first_turn(harness_bin, lab_home, srv)
        answer = _lines(session)[-1]
        _pi(harness_bin, lab_home, "--session", str(session), "-p", "Anything to add?")
        assert any(r["type"] == "compaction" for r in _lines(session))
        sent = _sent_after(harness_bin, lab_home, srv, session, "Third question.")
        assert any("The lab summary." in s for s in sent) and "Done one." not in sent
        _same(sent, _ours(session)[:-2])  # (pi has logged the answer since)
        three = _lines(session)[-1]
        assert three["message"]["content"][0]["text"] == "Three."
        _append(session, _entry(answer["id"], 10, {"role": "user", "content": [{"type": "text", "text": "Before it."}],
                                                   "timestamp": answer["message"]["timestamp"] + 1}))  # fmt: skip
        ours = _ours(session)
        sent = _sent_after(harness_bin, lab_home, srv, session, "Go on.")
        assert "Done one." in sent and not any("The lab summary." in s for s in sent)
        _same(sent, ours)
        _append(session, _entry(three["id"], 11, {"role": "user", "content": [{"type": "text", "text": "After it."}],
                                                  "timestamp": three["message"]["timestamp"] + 1}))  # fmt: skip
        ours = _ours(session)
        sent = _sent_after(harness_bin, lab_home, srv, session, "Once more.")
        assert any("The lab summary." in s for s in sent) and "Before it." not in sent
        _same(sent, ours)
        assert estimate_file(session).warnings == []
        before = srv.model_calls()
        done = compact(session, lab_home)  # and pi carries on from ctxfold's compaction of that path
        after = _resume(harness_bin, lab_home, srv, done)
    assert_carried_on(
        after, done, NEXT, ["Third question.", "Three.", "After it.", "Once more."], tool_ids(before)
    )
    assert not {"Before it.", "Go on."} & set(texts(after[0])) and "Before it." not in done.summary
