"""pi resumes the sessions ctxfold compacts.

Each test runs the pinned pi against the scripted server (a ``lab`` provider speaking the
Anthropic Messages API): turns with a tool call, ``ctxfold compact --install`` on the session pi
wrote (the command line as a user types it), then one more turn resumed with the command compact
printed. The request pi then sends must hold ctxfold's summary and the new turn and none of the
folded turns, with tool calls and results paired; once pi has written that turn, the session
still passes ``ctxfold validate`` (pi appends no second copy of it) and still names the provider
and model the session was using (not pi's default, so a resume that lost them would show). Once
more on a session pi had compacted itself, and from a Codex rollout and a Claude Code log
(``compact --to pi``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import orjson

from ctxfold.formats import loader
from interop.carry import Compacted, assert_carried_on, compact, rollout, texts, tool_ids, validate
from interop.harness import Run, project_dir_name, run
from interop.server import Recorded, Reply, ScriptedServer, anthropic_api

PROVIDER, MODEL = "lab", "claude-haiku-4-5"  # the session's; pi's default is lab/claude-sonnet-4-5
NEXT = "Carry on: what did the numbers add up to?"
AFTER = [Reply(tool_calls=[("bash", {"command": "echo carried-on"})]), Reply("Carried on.")]

Bin = Callable[[str], Path]


def _configure(home: Path, srv: ScriptedServer) -> None:
    """pi's provider and model settings: the lab provider at the scripted server, two models;
    compaction keeps little of the recent turns (a lab session is small)."""
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    models = [{"id": m, "contextWindow": 200_000, "maxTokens": 8192} for m in ("claude-sonnet-4-5", MODEL)]
    lab = {"baseUrl": srv.url, "api": "anthropic-messages", "apiKey": "lab-key", "models": models}
    (agent / "models.json").write_text(json.dumps({"providers": {PROVIDER: lab}}))
    settings = {"enableInstallTelemetry": False, "defaultProvider": PROVIDER,
                "defaultModel": "claude-sonnet-4-5", "compaction": {"keepRecentTokens": 200}}  # fmt: skip
    (agent / "settings.json").write_text(json.dumps(settings))


def _pi(harness_bin: Bin, home: Path, *args: str, cwd: Path | None = None) -> Run:
    return run([harness_bin("pi"), *args], home=home, env={"PI_OFFLINE": "1"}, cwd=cwd).check()


def _session(home: Path) -> Path:
    (path,) = (home / ".pi" / "agent" / "sessions").glob("*/*.jsonl")
    return path


def _resume(harness_bin: Bin, home: Path, srv: ScriptedServer, done: Compacted) -> list[Recorded]:
    """The next turn, by the command compact printed; the model calls it made."""
    assert done.command[:2] == ["pi", "--session"], done.stdout
    seen = len(srv.requests)
    srv.add(*AFTER)
    _pi(harness_bin, home, *done.command[1:], "-p", NEXT, cwd=done.cwd)
    return [r for r in srv.requests[seen:] if r.model_call]


def _named(session: Path) -> set[tuple[str, str]]:
    """(provider, model) of every model_change and assistant message: what pi restores from."""
    out = set()
    for row in map(orjson.loads, session.read_bytes().splitlines()):
        if row.get("type") == "model_change":
            out.add((row["provider"], row["modelId"]))
        elif row.get("type") == "message" and row["message"]["role"] == "assistant":
            out.add((row["message"]["provider"], row["message"]["model"]))
    return out


def _still_the_session(session: Path, calls: list[Recorded]) -> None:
    validate(session)  # one header, unique ids: pi appended only the new turn
    assert {c.body["model"] for c in calls} == {MODEL}  # pi -p falls back to its default silently
    assert _named(session) == {(PROVIDER, MODEL)}
    assert "Carried on." in session.read_text()


def test_pi_resumes_a_session_ctxfold_compacted(harness_bin: Bin, lab_home: Path) -> None:
    first, second = "Count to 3000 with seq.", "Now say something short."
    script = [Reply(tool_calls=[("bash", {"command": "seq 1 3000"})]), Reply("Counted."), Reply("Short.")]
    with ScriptedServer(anthropic_api, script) as srv:
        _configure(lab_home, srv)
        _pi(harness_bin, lab_home, "--model", f"{PROVIDER}/{MODEL}", "-p", first)
        _pi(harness_bin, lab_home, "-c", "-p", second)
        before = srv.model_calls()
        original = _session(lab_home)
        kept = original.read_bytes()
        done = compact(original, lab_home)
        after = _resume(harness_bin, lab_home, srv, done)
    assert done.installed.parent == original.parent and done.installed.name.endswith(
        f"_{done.command[2]}.jsonl"
    )
    assert_carried_on(after, done, NEXT, [first, second, "Counted.", "Short."], tool_ids(before))
    _still_the_session(done.installed, after)
    assert original.read_bytes() == kept


def test_pi_resumes_after_compacting_itself(harness_bin: Bin, lab_home: Path) -> None:
    """pi compacts on its own when a reply reports a context near the window: its summary is
    among the turns ctxfold folds."""
    first, second, third = "Count to 3000 with seq.", "Anything to add?", "Now count from 5001 to 8000."
    script = [
        Reply(tool_calls=[("bash", {"command": "seq 1 3000"})]),
        Reply("Counted."),
        Reply("Nothing.", input_tokens=190_000),  # over pi's threshold: it compacts after this turn
        Reply("## Goal\nThe user had seq count to 3000."),  # pi's summary request
        Reply(tool_calls=[("bash", {"command": "seq 5001 8000"})]),
        Reply("Counted again."),
    ]
    with ScriptedServer(anthropic_api, script) as srv:
        _configure(lab_home, srv)
        _pi(harness_bin, lab_home, "--model", f"{PROVIDER}/{MODEL}", "-p", first)
        _pi(harness_bin, lab_home, "-c", "-p", second)
        _pi(harness_bin, lab_home, "-c", "-p", third)
        before = srv.model_calls()
        own = [t for t in texts(before[-1]) if "The user had seq count to 3000." in t]
        assert own and first not in texts(before[-1])  # pi's compaction took effect
        done = compact(_session(lab_home), lab_home)
        after = _resume(harness_bin, lab_home, srv, done)
    assert_carried_on(after, done, NEXT, [*own, third, "Counted again."], tool_ids(before[-2:]))
    _still_the_session(done.installed, after)


def _carried_elsewhere(harness_bin: Bin, home: Path, source: Path) -> tuple[Compacted, list[Recorded]]:
    folded_from = loader.load(source)
    folded = [m.text for m in folded_from.messages if m.text.strip()]
    calls = {c.id for m in folded_from.messages for c in m.tool_calls}
    done = compact(source, home, "--to", "pi")
    with ScriptedServer(anthropic_api) as srv:
        _configure(home, srv)
        after = _resume(harness_bin, home, srv, done)
    assert_carried_on(after, done, NEXT, folded, calls)
    validate(done.installed)
    assert "Carried on." in done.installed.read_text()
    return done, after


def test_a_codex_session_carries_on_in_pi(harness_bin: Bin, lab_home: Path) -> None:
    """The session names Codex's model, whose provider pi knows as openai; with no key for it
    here, pi answers with its default model."""
    done, after = _carried_elsewhere(harness_bin, lab_home, rollout(lab_home))
    codex = loader.load(rollout(lab_home))
    assert ("openai", codex.models[-1]) in _named(done.installed)
    assert {c.body["model"] for c in after} == {"claude-sonnet-4-5"}


def test_a_claude_code_session_carries_on_in_pi(harness_bin: Bin, lab_home: Path) -> None:
    script = [Reply(tool_calls=[("Bash", {"command": "seq 1 3000"})]), Reply("Counted.")]
    with ScriptedServer(anthropic_api, script) as srv:
        env = {"ANTHROPIC_BASE_URL": srv.url, "ANTHROPIC_API_KEY": "lab-key"}
        claude = [harness_bin("claude"), "-p", "Count to 3000 with seq.", "--model", MODEL]
        run([*claude, "--allowedTools", "Bash"], home=lab_home, env=env).check()
    (log,) = (lab_home / ".claude" / "projects" / project_dir_name(lab_home / "project")).glob("*.jsonl")
    done, _ = _carried_elsewhere(harness_bin, lab_home, log)
    assert done.cwd == lab_home / "project"
    assert ("anthropic", MODEL) in _named(done.installed)


def test_a_gemini_cli_session_carries_on_in_pi(harness_bin: Bin, lab_home: Path) -> None:
    """A real Gemini CLI saved chat (bundled, MIT) names no working folder: pi's session is placed
    in the one compact runs in."""
    chat = Path(__file__).parents[2] / "fixtures" / "real" / "gemini-cli-pomodoro-timer.json"
    source = lab_home / "project" / "gemini-session.json"
    source.write_bytes(chat.read_bytes())
    done, _ = _carried_elsewhere(harness_bin, lab_home, source)
    assert ("google", loader.load(source).models[-1]) in _named(done.installed)
