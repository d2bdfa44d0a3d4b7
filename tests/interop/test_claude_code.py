"""Claude Code resumes the sessions ctxfold compacts.

Each test runs the pinned Claude Code against the scripted server: turns with a tool call,
``ctxfold compact --install`` on the log Claude Code wrote (the command line as a user types
it), then one more turn resumed with the command compact printed. The request Claude Code then
sends must hold ctxfold's summary and the new turn and none of the folded turns, with tool calls
and results paired; once Claude Code has written that turn, the log still passes ``ctxfold
validate`` and still names the model the session was using (it is not Claude Code's default,
so a resume that lost it would show). Once more on a log Claude Code had compacted itself
(``/compact``), and once from a Codex rollout (``compact --to claude-code``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson

from ctxfold.formats import loader
from interop.carry import Compacted, assert_carried_on, compact, rollout, texts, tool_ids, validate
from interop.harness import Run, project_dir_name, run
from interop.server import Recorded, Reply, ScriptedServer, anthropic_api

MODEL = "claude-sonnet-4-5"  # the session's model; Claude Code 2.1.332's default is another
NEXT = "Carry on: what did the numbers add up to?"
AFTER = [Reply(tool_calls=[("Bash", {"command": "echo carried-on"})]), Reply("Carried on.")]

Bin = Callable[[str], Path]


def _claude(harness_bin: Bin, home: Path, srv: ScriptedServer, *args: str, cwd: Path | None = None) -> Run:
    env = {"ANTHROPIC_BASE_URL": srv.url, "ANTHROPIC_API_KEY": "lab-key"}
    return run([harness_bin("claude"), *args], home=home, env=env, cwd=cwd).check()


def _log(home: Path) -> Path:
    (path,) = (home / ".claude" / "projects" / project_dir_name(home / "project")).glob("*.jsonl")
    return path


def _resume(harness_bin: Bin, home: Path, srv: ScriptedServer, done: Compacted) -> list[Recorded]:
    """The next turn, by the command compact printed; the model calls it made."""
    assert done.command[:2] == ["claude", "--resume"], done.stdout
    seen = len(srv.requests)
    srv.add(*AFTER)
    _claude(harness_bin, home, srv, *done.command[1:], "-p", NEXT, "--allowedTools", "Bash", cwd=done.cwd)
    return [r for r in srv.requests[seen:] if r.model_call]


def _models(log: Path) -> set[str]:
    """The models the log's answers name (Claude Code's own ``<synthetic>`` ones aside)."""
    rows = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    named = {r["message"].get("model") for r in rows if r.get("type") == "assistant"}
    return named - {"<synthetic>"}


def _still_the_session(log: Path, calls: list[Recorded]) -> None:
    """After Claude Code wrote the resumed turn: valid, and the session's model throughout."""
    validate(log)
    assert {c.body["model"] for c in calls} == {MODEL}
    assert _models(log) == {MODEL}
    assert "Carried on." in log.read_text()  # the turn was written to the compacted session


def test_claude_code_resumes_a_session_ctxfold_compacted(harness_bin: Bin, lab_home: Path) -> None:
    first, second = "Count to 3000 with seq.", "Now say something short."
    script = [Reply(tool_calls=[("Bash", {"command": "seq 1 3000"})]), Reply("Counted."), Reply("Short.")]
    with ScriptedServer(anthropic_api, script) as srv:
        _claude(harness_bin, lab_home, srv, "-p", first, "--model", MODEL, "--allowedTools", "Bash")
        _claude(harness_bin, lab_home, srv, "-p", "--continue", second)
        before = srv.model_calls()
        original = _log(lab_home)
        kept = original.read_bytes()
        done = compact(original, lab_home)
        after = _resume(harness_bin, lab_home, srv, done)
    assert done.installed.parent == original.parent and done.installed != original
    assert_carried_on(after, done, NEXT, [first, second, "Counted.", "Short."], tool_ids(before))
    _still_the_session(done.installed, after)
    assert original.read_bytes() == kept  # the original session is left as it was


def test_claude_code_resumes_after_compacting_itself(harness_bin: Bin, lab_home: Path) -> None:
    """``/compact`` first: Claude Code's own summary is among the turns ctxfold folds."""
    first, second = "Count to 3000 with seq.", "Now count from 5001 to 8000."
    script = [
        Reply(tool_calls=[("Bash", {"command": "seq 1 3000"})]),
        Reply("Counted."),
        Reply("<summary>The user had seq count to 3000.</summary>"),  # answers /compact
        Reply(tool_calls=[("Bash", {"command": "seq 5001 8000"})]),
        Reply("Counted again."),
    ]
    with ScriptedServer(anthropic_api, script) as srv:
        _claude(harness_bin, lab_home, srv, "-p", first, "--model", MODEL, "--allowedTools", "Bash")
        _claude(harness_bin, lab_home, srv, "-p", "--continue", "/compact")
        _claude(harness_bin, lab_home, srv, "-p", "--continue", second, "--allowedTools", "Bash")
        before = srv.model_calls()
        own = [t for t in texts(before[-1]) if "The user had seq count to 3000." in t]
        assert own and first not in texts(before[-1])  # Claude Code's compaction took effect
        done = compact(_log(lab_home), lab_home)
        after = _resume(harness_bin, lab_home, srv, done)
    assert_carried_on(after, done, NEXT, [*own, second, "Counted again."], tool_ids(before[-2:]))
    _still_the_session(done.installed, after)


def test_a_codex_session_carries_on_in_claude_code(harness_bin: Bin, lab_home: Path) -> None:
    session = rollout(lab_home)
    codex = loader.load(session)
    folded = [m.text for m in codex.messages if m.text.strip()]
    calls = {c.id for m in codex.messages for c in m.tool_calls}
    done = compact(session, lab_home, "--to", "claude-code")
    assert done.installed.parent.name == project_dir_name(lab_home / "project")
    with ScriptedServer(anthropic_api) as srv:
        after = _resume(harness_bin, lab_home, srv, done)
    assert_carried_on(after, done, NEXT, folded, calls)
    validate(done.installed)
    assert "Carried on." in done.installed.read_text()
