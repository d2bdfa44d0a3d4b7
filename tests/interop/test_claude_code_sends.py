"""What Claude Code sends of a log that forks: it rebuilds the conversation it resumes along
``parentUuid`` from the newest line, so a branch left behind is not sent again.

The pinned Claude Code resumes two copies of one log: in one, a user line is followed by a
response with a tool call and then by "Continue from where you left off." parented to that user
line, skipping the response (the shape Claude Code writes when a session is resumed from an
earlier point, as in a real log of ``../shared``); in the other, the skipped response is not
there. Claude Code sends both the same conversation, and ctxfold counts both the same context:
the response left behind takes no room (``tests/test_claude_code_forks.py``). Then a rewind:
``--resume-session-at`` goes back past a whole turn, which Claude Code sends no more, and which
ctxfold leaves out of every request after it. Last, Claude Code's own compaction, which keeps the
newest messages verbatim after its summary: ``/compact`` (it keeps the last answer) and a rewind
to that answer, and the automatic compaction (it keeps the call in flight and its result):
ctxfold counts the conversation Claude Code sends after each
(``tests/test_claude_code_preserved.py``).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from ctxfold.formats import loader
from ctxfold.tokens.estimate import estimate_file
from ctxfold.transcript.context import Building
from ctxfold.transcript.model import TextPart, ToolCallPart, ToolResultPart
from interop.carry import messages
from interop.server import Reply, ScriptedServer, anthropic_api
from interop.test_claude_code import MODEL, Bin, _claude, _log

LEFT = "never-run-on-the-branch-left-behind"


def _line(base: dict, parent: str, kind: str, message: dict, **more: str) -> dict:
    return {**base, "parentUuid": parent, "type": kind, "uuid": str(uuid.uuid4()), "message": message, **more}


def _fork(log: Path) -> tuple[dict, dict, dict]:
    """A request, a response with a tool call, and "Continue from where you left off." parented
    to the request: the response is the branch left behind."""
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    last = [r for r in rows if r.get("type") in ("user", "assistant")][-1]
    keys = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "timestamp")
    base = {k: last[k] for k in keys if k in last}
    asked = _line(base, last["uuid"], "user", {"role": "user", "content": "Build it."})
    call = {
        "type": "tool_use",
        "id": "toolu_left1",
        "name": "Bash",
        "input": {"command": f"echo {LEFT} " + "x" * 3000},
    }
    answer = {**last["message"], "id": "msg_left1", "content": [call], "stop_reason": "tool_use"}
    response = _line(base, asked["uuid"], "assistant", answer, requestId="req_left1")
    again = _line(
        base, asked["uuid"], "user", {"role": "user", "content": "Continue from where you left off."}
    )
    return asked, response, again


FIRST = [Reply(tool_calls=[("Bash", {"command": "seq 1 3"})]), Reply("Counted.")]


def _first_turn(harness_bin: Bin, home: Path, srv: ScriptedServer) -> Path:
    """A session's first turn (a call, then "Counted."): its log."""
    _claude(harness_bin, home, srv, "-p", "Count to 3 with seq.", "--model", MODEL, "--allowedTools", "Bash")
    return _log(home)


def test_claude_code_does_not_send_a_branch_left_behind(
    harness_bin: Bin, lab_home: Path, tmp_path: Path
) -> None:
    with ScriptedServer(anthropic_api, [*FIRST, Reply("Next."), Reply("Next.")]) as srv:
        log = _first_turn(harness_bin, lab_home, srv)
        asked, response, again = _fork(log)
        without = tmp_path / "without.jsonl"
        shutil.copyfile(log, without)
        for path, added in ((log, (asked, response, again)), (without, (asked, again))):
            with path.open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in added)
        counted = [estimate_file(p).context_tokens for p in (log, without)]
        sent = []
        kept = log.read_bytes()
        for body in (without.read_bytes(), kept):  # Claude Code resumes the log in its project folder
            log.write_bytes(body)
            seen = len(srv.requests)
            _claude(harness_bin, lab_home, srv, "-p", "--continue", "Go on.")
            first = next(r for r in srv.requests[seen:] if r.model_call)
            sent.append(messages(first))
    assert LEFT not in json.dumps(sent[1])  # the branch left behind is not sent
    assert sent[0] == sent[1]  # the same conversation, with the branch or without it
    assert counted[0] == counted[1]


def test_claude_code_does_not_send_the_turns_a_rewind_went_back_past(
    harness_bin: Bin, lab_home: Path, tmp_path: Path
) -> None:
    """``claude --resume ID --resume-session-at ANSWER -p ...`` (what ``/rewind`` does in the
    terminal) goes back to the first turn's answer: the new question is parented to it, and the
    second turn, still in the log, is sent neither with it nor on the next resume. ctxfold counts
    the context of the log without the second turn, for every request after the rewind."""
    script = [*FIRST, Reply("Hi there, second turn."), Reply("Third answer."), Reply("Fourth.")]
    with ScriptedServer(anthropic_api, script) as srv:
        log = _first_turn(harness_bin, lab_home, srv)
        _claude(harness_bin, lab_home, srv, "-p", "--continue", f"Say hi, {LEFT}.", "--model", MODEL)
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        answer = next(r for r in rows if r.get("type") == "assistant" and "Counted." in json.dumps(r))
        seen = len(srv.requests)
        rewind = ["--resume", answer["sessionId"], "--resume-session-at", answer["uuid"]]
        _claude(harness_bin, lab_home, srv, "-p", *rewind, "Do something else.", "--model", MODEL)
        _claude(harness_bin, lab_home, srv, "-p", "--continue", "And now?", "--model", MODEL)
        sent = [r for r in srv.requests[seen:] if r.model_call]
    assert len(sent) == 2 and not any(LEFT in json.dumps(messages(r)) for r in sent)
    assert "Counted." in json.dumps(messages(sent[0]))
    # the same log without the second turn's lines
    second = {i for i, r in enumerate(rows) if i > rows.index(answer) and r.get("uuid")}
    full = log.read_text().splitlines(keepends=True)
    without = tmp_path / "without.jsonl"
    without.write_text("".join(line for i, line in enumerate(full) if i not in second))
    ours, theirs = estimate_file(log), estimate_file(without)
    assert ours.context_tokens == theirs.context_tokens
    assert [r.estimate for r in ours.requests[-2:]] == [r.estimate for r in theirs.requests[-2:]]


def _said(sent: list[list[object]]) -> list[tuple[object, str]]:
    """The conversation in a request Claude Code sent: its texts (its system reminders aside),
    tool calls and results (by call id)."""
    out = []
    for role, content in sent:
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for b in blocks:  # type: ignore[union-attr]
            if b.get("type") == "text" and not b["text"].startswith("<system-reminder>"):
                out.append((role, b["text"].strip()))  # (it sends the /compact command's line with a newline)
            elif b.get("type") in ("tool_use", "tool_result"):
                out.append((role, f"{b['type']} {b.get('id') or b.get('tool_use_id')}"))
    return sorted(out)


def _counted(log: Path, answer: str) -> list[tuple[object, str]]:
    """The same of ctxfold's context of the request that ``answer`` answered."""
    building = Building()
    for e in loader.load(log).entries:
        if getattr(e, "role", None) == "assistant" and answer in e.text:  # type: ignore[union-attr]
            break
        building.add(e)
    out = []
    for m in building.ctx.messages:
        if m.dropped or "attachment" in m.extra:
            continue
        for p in m.parts:
            if isinstance(p, TextPart):
                out.append((m.role, p.text.strip()))
            elif isinstance(p, (ToolCallPart, ToolResultPart)):
                kind, call = ("tool_use", p.id) if isinstance(p, ToolCallPart) else ("tool_result", p.call_id)
                out.append((m.role, f"{kind} {call}"))
    return sorted(out)


def test_claude_code_sends_what_its_compaction_kept(harness_bin: Bin, lab_home: Path) -> None:
    """``/compact`` keeps the first turn's answer ("Counted.") verbatim: the next turn sends the
    summary, that answer and the command's lines; a rewind to that answer (parented to a line
    before the boundary) sends the summary, the answer and the new question. ctxfold's context of
    each request holds the same conversation."""
    script = [*FIRST, Reply("<summary>The count was made.</summary>"), Reply("After the compaction."),
              Reply("Went back.")]  # fmt: skip
    with ScriptedServer(anthropic_api, script) as srv:
        log = _first_turn(harness_bin, lab_home, srv)
        _claude(harness_bin, lab_home, srv, "-p", "--continue", "/compact", "--model", MODEL)
        seen = len(srv.requests)
        _claude(harness_bin, lab_home, srv, "-p", "--continue", "And now?", "--model", MODEL)
        after = next(r for r in srv.requests[seen:] if r.model_call)
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        kept = next(r for r in rows if r.get("type") == "assistant" and "Counted." in json.dumps(r))
        seen = len(srv.requests)
        back = ["--resume", kept["sessionId"], "--resume-session-at", kept["uuid"]]
        _claude(harness_bin, lab_home, srv, "-p", *back, "Go back.", "--model", MODEL)
        rewound = next(r for r in srv.requests[seen:] if r.model_call)
    assert ("assistant", "Counted.") in _said(messages(after))
    assert _counted(log, "After the compaction.") == _said(messages(after))
    assert not any("And now?" in text for _, text in _said(messages(rewound)))
    assert _counted(log, "Went back.") == _said(messages(rewound))


def test_claude_code_sends_what_its_automatic_compaction_kept(harness_bin: Bin, lab_home: Path) -> None:
    """A response that reports 190,000 tokens on a 200k model: Claude Code compacts by itself
    before its next request, keeping the call in flight and its result verbatim after the
    summary. ctxfold's context of that request holds the same conversation."""
    steps = [
        Reply(tool_calls=[("Bash", {"command": f"echo step {i}"})], input_tokens=1_000 + 10 * i)
        for i in range(3)
    ]
    big = Reply(tool_calls=[("Bash", {"command": "echo last"})], input_tokens=190_000)
    script = [
        *steps,
        big,
        Reply("<summary>Three steps ran.</summary>"),
        Reply("All steps ran.", input_tokens=5_000),
    ]
    with ScriptedServer(anthropic_api, script) as srv:
        args = ["-p", "Run the steps.", "--model", "claude-sonnet-4-6", "--allowedTools", "Bash"]
        _claude(harness_bin, lab_home, srv, *args)
        log = _log(lab_home)
        last = [r for r in srv.requests if r.model_call][-1]
    assert '"compact_boundary"' in log.read_text() and '"preservedSegment"' in log.read_text()
    said = _said(messages(last))
    assert [kind for kind, text in said if text.startswith("tool_")] == [
        "assistant",
        "user",
    ]  # the last call, kept
    assert _counted(log, "All steps ran.") == said


def _sent_parts(body: dict[str, Any], work: Path) -> dict[str, int]:
    """ctxfold's count of a request Claude Code sent (the Anthropic request, as the server got
    it): its system prompt, its tools and the whole request."""
    request = work / "request.jsonl"
    fields = ("model", "system", "tools", "messages", "max_tokens")
    request.write_text(json.dumps({k: body[k] for k in fields}) + "\n")
    est = estimate_file(request, fmt="anthropic")
    return {**est.replay.by_category, "request": est.context_tokens}


def test_claude_code_records_the_system_prompt_and_tools_it_sends(
    harness_bin: Bin, lab_home: Path, tmp_path: Path
) -> None:
    """With a system prompt of the user's own (``--append-system-prompt``), which no measured
    table knows: the log records the system prompt and tools sent, ctxfold counts them as the
    request counts them, and its prediction of the first request from the log is the request
    sent (within 2 %)."""
    rule = "House rule: every price is an integer number of cents, never a float. " * 120
    with ScriptedServer(anthropic_api, [Reply("Noted.")]) as srv:
        _claude(harness_bin, lab_home, srv, "-p", "Say hi.", "--model", MODEL, "--append-system-prompt", rule)
        log = _log(lab_home)
        (body,) = [r.body for r in srv.requests if r.model_call]
    sent = _sent_parts(body, tmp_path)
    est = estimate_file(log)
    ours = est.replay.by_category
    assert est.harness_prompt is not None and est.harness_prompt.records
    assert rule.strip()[:70] in "".join(est.replay.system)
    # the request also carries a billing header block and a deferred tool's placeholder: 66 tokens
    assert abs(ours["system"] + ours["tools"] - sent["system"] - sent["tools"]) <= 100
    predicted = est.requests[0].estimate + est.harness_prompt.tokens
    assert abs(predicted - sent["request"]) <= 0.02 * sent["request"] + 20, (predicted, sent)
