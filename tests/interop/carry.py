"""Carrying a session on in a real harness: ``ctxfold compact --install`` run as a user runs it,
the command it prints, and what the harness sent once resumed from it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import FIXTURES, REAL

from ctxfold.formats import loader
from interop.server import Recorded


@dataclass(frozen=True)
class Compacted:
    """What ``compact`` printed: the command to carry on with (run in ``cwd``), where it
    installed the compacted session, and the summary it wrote (from its state file)."""

    command: list[str]
    cwd: Path
    installed: Path
    summary: str
    stdout: str


def _printed(stdout: str, label: str) -> str:
    found = [line[len(label) + 2 :].strip() for line in stdout.splitlines() if line.startswith(f"  {label}")]
    assert len(found) == 1, f"compact printed no single {label!r} line:\n{stdout}"
    return found[0]


def compact(session: Path, home: Path, *options: str) -> Compacted:
    """``ctxfold compact SESSION --force --install [options]`` in the project folder with HOME at
    ``home``, as a user types it (``--force``: a lab session is small, the window large)."""
    env = {**os.environ, "HOME": str(home), "COLUMNS": "2000", "NO_COLOR": "1"}
    for var in ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"):
        env.pop(var, None)
    done = subprocess.run(
        [sys.executable, "-m", "ctxfold", "compact", str(session), "--force", "--install", *options],
        cwd=home / "project",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"ctxfold compact exited {done.returncode}: {done.stderr}"
    cd, _, command = _printed(done.stdout, "carry on").partition(" && ")
    assert cd.startswith("cd "), done.stdout
    installed = Path(_printed(done.stdout, "installed").rsplit(" (session ", 1)[0])
    state = Path(_printed(done.stdout, "state"))
    state = state if state.is_absolute() else home / "project" / state
    summary = json.loads(state.read_text())["summary"]
    return Compacted(shlex.split(command), Path(shlex.split(cd)[1]), installed, summary, done.stdout)


def rollout(home: Path) -> Path:
    """A real Codex rollout (a user's, from ../shared; without it the one the real Codex 0.169.0
    wrote in the lab) as if recorded in the lab's project folder: its ``cwd`` fields name that
    folder, which the carried-on session runs in."""
    real = REAL / "codex" / "fundwise.jsonl"
    source = real if real.is_file() else FIXTURES / "codex" / "lab-0169.jsonl"
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    for r in rows:
        payload = r.get("payload")
        if (
            r.get("type") in ("session_meta", "turn_context")
            and isinstance(payload, dict)
            and "cwd" in payload
        ):
            payload["cwd"] = str(home / "project")
    path = home / "rollout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def validate(path: Path) -> str:
    """``ctxfold validate PATH``: its report, asserting it found nothing wrong."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxfold", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "2000", "NO_COLOR": "1"},
    )
    assert done.returncode == 0 and ": ok (" in done.stdout, done.stdout + done.stderr
    return done.stdout


# ------------------------------------------------------------------------ what a request held


def messages(call: Recorded) -> list[tuple[str, list[dict[str, Any]]]]:
    """The request's messages as (role, content blocks); a plain string is one text block."""
    out = []
    for m in call.body["messages"]:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        out.append((m["role"], blocks))
    return out


def texts(call: Recorded) -> list[str]:
    """Every text block of the request (tool results' text included)."""
    out = []
    for _, blocks in messages(call):
        for b in blocks:
            if b.get("type") == "text":
                out.append(b["text"])
            elif b.get("type") == "tool_result":
                inner = b.get("content")
                out.extend([inner] if isinstance(inner, str) else [c.get("text", "") for c in inner or []])
    return out


def tool_ids(calls: Iterable[Recorded]) -> set[str]:
    """The ids of every tool call the requests carry."""
    return {
        b["id"] for c in calls for _, blocks in messages(c) for b in blocks if b.get("type") == "tool_use"
    }


def _turns(call: Recorded) -> list[tuple[str, list[dict[str, Any]]]]:
    """The request's turns as the Messages API reads them: consecutive messages of one role are
    one turn (parallel calls may come as one assistant message each); Claude Code's mid-way
    system messages are left out."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for role, blocks in messages(call):
        if role == "system":
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, list(blocks)))
    return turns


def assert_paired(call: Recorded) -> None:
    """Each tool call is answered by the message right after its turn, and each result answers
    a call of the turn right before it (the Messages API refuses anything else)."""
    turns = list(_turns(call))
    for i, (_, blocks) in enumerate(turns):
        calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        before = {b["id"] for b in turns[i - 1][1] if b.get("type") == "tool_use"} if i else set()
        assert set(results) <= before, f"tool results {results} answer no call of the turn before"
        if calls and i + 1 < len(turns):
            after = {b.get("tool_use_id") for b in turns[i + 1][1] if b.get("type") == "tool_result"}
            assert set(calls) == after, (
                f"tool calls {calls} are not answered right after: {[(r, [(b.get('type'), b.get('id') or b.get('tool_use_id')) for b in bl]) for r, bl in turns]}"
            )


def assert_carried_on(
    calls: list[Recorded], done: Compacted, prompt: str, folded: Iterable[str], folded_calls: set[str]
) -> None:
    """The resumed harness's requests hold ctxfold's summary and the new turn, and none of the
    folded turns: no block is one of their texts (the summary may quote them, inside itself),
    and none of their tool calls is there; tool calls and results stay paired."""
    assert calls, "the harness made no model call after resuming"
    held = texts(calls[0])
    assert any(done.summary.strip() in t for t in held), "the summary is not in the resumed request"
    assert "Where things stand:" in done.summary, "the summary does not say where things stand"
    assert prompt in [t.strip() for t in held], "the new turn is not in the resumed request"
    assert folded_calls, "the turns before compacting made no tool call"
    # what the compacted session keeps verbatim after its summary (the step under way) is not folded
    compacted = loader.load(done.installed)
    kept = {m.text.strip() for m in compacted.messages if m.text.strip()}
    folded_calls = folded_calls - {c.id for m in compacted.messages for c in m.tool_calls}
    gone = {t.strip() for t in folded} - kept
    for call in calls:
        back = gone & {t.strip() for t in texts(call)}
        assert not back, f"a folded turn is back: {back}"
        assert not folded_calls & tool_ids([call]), "a folded tool call is back"
        assert_paired(call)
