"""The real Codex CLI resumes ctxfold's compacted rollouts, current (0.169.0 and 0.171.0,
paginated rollouts with numbered lines) and older (0.130.0, legacy rollouts).

Each loop is what a user does: two turns with Codex (one runs a shell command), ``ctxfold
compact --install`` on the rollout Codex wrote, then ``codex exec resume <new id>``. The request
Codex then sends must hold ctxfold's summary and the new turn and none of the folded turns, with
every tool call answered; Codex must read the file without a parse error (its own log says how
many lines it could not read); after Codex has written its turn, the rollout still validates and
still names the original provider and model; the original rollout is untouched and still resumes.
The same runs on a session Codex had compacted itself (its auto-compaction, fired by the usage
the server reports), and on a Claude Code session carried on in Codex (``--to codex``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from interop.harness import Run, run
from interop.responses_server import input_items, item_text, responses_api
from interop.server import Recorded, Reply, ScriptedServer

MODEL, PROVIDER = "gpt-lab", "lab"
VERSIONS = ["codex", "codex-0130", "codex-0171"]  # harness_bin names: 0.169.0, 0.130.0, 0.171.0
ROOT = Path(__file__).resolve().parents[2]
CLAUDE_SESSION = ROOT / "fixtures" / "real" / "claude-code-sidechains.jsonl"
AUTO_COMPACT = "model_auto_compact_token_limit = 20000\nmodel_context_window = 100000\n"


@dataclass
class Codex:
    """One Codex binary with a private ``CODEX_HOME`` pointed at the scripted server."""

    binary: Path
    home: Path
    server: ScriptedServer
    settings: str = ""

    def __post_init__(self) -> None:
        (self.home / ".codex").mkdir(exist_ok=True)
        (self.home / ".codex" / "config.toml").write_text(
            f'model = "{MODEL}"\nmodel_provider = "{PROVIDER}"\napproval_policy = "never"\n'
            f'sandbox_mode = "danger-full-access"\n{self.settings}\n[model_providers.{PROVIDER}]\n'
            f'name = "{PROVIDER}"\nbase_url = "{self.server.url}/v1"\nenv_key = "LAB_API_KEY"\n'
            'wire_api = "responses"\n'
        )

    @property
    def env(self) -> dict[str, str]:
        # codex_rollout's log says how many lines of a resumed rollout Codex could not parse
        return {
            "CODEX_HOME": str(self.home / ".codex"),
            "LAB_API_KEY": "lab-key",
            "RUST_LOG": "codex_rollout=trace",
        }

    def exec(self, *args: str) -> tuple[Run, str]:
        """``codex exec`` (a turn); the session id Codex says it ran."""
        done = run(
            [self.binary, "exec", "--skip-git-repo-check", *args], home=self.home, env=self.env
        ).check()
        found = re.search(r"session id: ([0-9a-f-]{36})", done.stderr)
        assert found, done.stderr[-2000:]
        return done, found.group(1)

    def rollout(self, session_id: str) -> Path:
        (path,) = (self.home / ".codex" / "sessions").rglob(f"rollout-*-{session_id}.jsonl")
        return path


def ctxfold(home: Path, *args: str) -> Run:
    """The ctxfold command as a user runs it (the installed console script)."""
    script = Path(sys.executable).with_name("ctxfold")
    cmd: list[str | Path] = (
        [script] if script.exists() else [sys.executable, "-c", "from ctxfold.cli.app import main; main()"]
    )
    return run([*cmd, *args], home=home, env={"CODEX_HOME": str(home / ".codex")}, timeout=300)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_text().splitlines() if raw.strip()]


def parse_errors(done: Run) -> list[int]:
    return [int(n) for n in re.findall(r"Resumed rollout with \d+ items.*?parse errors: (\d+)", done.stderr)]


def compact_and_install(codex: Codex, source: Path, *extra: str, out: str = "out") -> dict[str, Any]:
    done = ctxfold(codex.home, "compact", str(source), "--force", "--install", "--json",
                   "--out-dir", str(codex.home / out), *extra).check()  # fmt: skip
    carry: dict[str, Any] = json.loads(done.stdout)["carry_on"]
    assert carry["harness"] == "Codex" and carry["installed"] is True
    assert carry["command"] == ["codex", "resume", carry["session_id"]]
    return carry


def compaction_of(rollout: Path) -> tuple[str, list[str]]:
    """ctxfold's summary and the texts of the items it left in place of the folded turns (the
    summary message, and the continuation message quoting the current request)."""
    (compacted,) = [d["payload"] for d in lines(rollout) if d["type"] == "compacted"]
    return compacted["message"], [item_text(it) for it in compacted["replacement_history"]]


def assert_paired(request: Recorded) -> None:
    """Every tool output in the request answers a call made before it, and every call is answered."""
    calls: list[str] = []
    answered: set[str] = set()
    for it in input_items(request):
        if it.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
            calls.append(it["call_id"])
        elif it.get("type") in ("function_call_output", "custom_tool_call_output"):
            assert it["call_id"] in calls, f"output {it['call_id']} answers no call before it"
            answered.add(it["call_id"])
    assert set(calls) == answered, f"calls without output: {set(calls) - answered}"


def assert_resumed(
    codex: Codex, carry: dict[str, Any], prompt: str, folded: list[str], model: str = MODEL
) -> list[dict[str, Any]]:
    """Resume the installed session with ``prompt`` and check what Codex sent and wrote."""
    installed = Path(carry["install_to"])
    summary, replacement = compaction_of(installed)
    calls_before = len(codex.server.model_calls())
    done, sid = codex.exec("resume", carry["session_id"], prompt)
    assert sid == carry["session_id"], "Codex did not find the compacted session (it started a new one)"
    errors = parse_errors(done)  # Codex reads the rollout more than once
    assert errors and set(errors) == {0}, done.stderr[-3000:]
    (request,) = codex.server.model_calls()[calls_before:]
    texts = [item_text(it) for it in input_items(request)]
    assert any(summary[:300] in t for t in texts), "ctxfold's summary is not in the request"
    at = [i for i, t in enumerate(texts) if t in replacement]
    assert prompt in texts[-1]
    for marker in folded:  # a folded turn may be quoted by ctxfold's messages, and nowhere else
        assert [i for i, t in enumerate(texts) if marker in t and i not in at] == [], marker
    assert_paired(request)
    assert request.body["model"] == model
    # Codex appended its turn: the rollout still validates and names the original provider and model
    check = ctxfold(codex.home, "validate", str(installed))
    assert check.returncode == 0, check.stdout + check.stderr
    rows = lines(installed)
    assert rows[0]["payload"]["id"] == sid
    turn = [d["payload"] for d in rows if d["type"] == "turn_context"][-1]
    assert turn["model"] == model
    assert any(d["type"] == "response_item" and prompt in item_text(d["payload"]) for d in rows)
    return rows


def assert_original_resumes(codex: Codex, sid: str, before: bytes, first_prompt: str) -> None:
    path = codex.rollout(sid)
    assert path.read_bytes() == before, "the original rollout was modified"
    calls_before = len(codex.server.model_calls())
    _, again = codex.exec("resume", sid, "ORIGINAL-STILL-RESUMES")
    assert again == sid
    (request,) = codex.server.model_calls()[calls_before:]
    assert any(first_prompt in item_text(it) for it in input_items(request))


# --------------------------------------------------------------------------------- the loops

FIRST = "TURN-ONE count to 6000 " + "please " * 300
SECOND = "TURN-TWO say ok " + "again " * 300


def _two_turns(codex: Codex, replies: list[Reply]) -> str:
    codex.server.add(*replies)
    _, sid = codex.exec(FIRST)
    _, again = codex.exec("resume", sid, SECOND)
    assert again == sid
    return sid


@pytest.fixture
def lab(harness_bin: Callable[[str], Path], lab_home: Path) -> Iterator[Callable[[str, str], Codex]]:
    with ScriptedServer(responses_api, fallback=Reply("Done.", input_tokens=4000)) as server:
        yield lambda name, settings="": Codex(harness_bin(name), lab_home, server, settings)


@pytest.mark.parametrize("name", VERSIONS)
def test_codex_resumes_a_compacted_session(name: str, lab: Callable[..., Codex]) -> None:
    codex = lab(name)
    sid = _two_turns(codex, [
        Reply(tool_calls=[("exec_command", {"cmd": "seq 1 6000"})]),
        Reply("FIRST-ANSWER the numbers ran to 6000. " + "detail " * 400),
        Reply("SECOND-ANSWER ok. " + "more " * 400),
    ])  # fmt: skip
    original = codex.rollout(sid)
    before = original.read_bytes()
    carry = compact_and_install(codex, original)
    assert carry["session_id"] != sid
    codex.server.add(Reply("THIRD-ANSWER", input_tokens=4000))
    rows = assert_resumed(codex, carry, "TURN-THREE go on", ["TURN-ONE", "5999", "FIRST-ANSWER", "TURN-TWO"])
    assert rows[0]["payload"]["model_provider"] == PROVIDER
    assert ("ordinal" in rows[0]) == (name != "codex-0130")  # 0.169 and 0.171 number lines, 0.130 not
    assert_original_resumes(codex, sid, before, "TURN-ONE")


@pytest.mark.parametrize("name", VERSIONS)
def test_codex_resumes_a_session_it_had_compacted_itself(name: str, lab: Callable[..., Codex]) -> None:
    codex = lab(name, AUTO_COMPACT)
    sid = _two_turns(codex, [
        Reply(tool_calls=[("exec_command", {"cmd": "seq 1 3"})], input_tokens=15_000),
        Reply("FIRST-ANSWER done. " + "detail " * 400, input_tokens=25_000),
        Reply("CODEX-OWN-SUMMARY of the work so far. " + "summary " * 400, input_tokens=26_000),
        Reply("SECOND-ANSWER ok. " + "more " * 400, input_tokens=5_000),
    ])  # fmt: skip
    original = codex.rollout(sid)
    assert [d["type"] for d in lines(original)].count("compacted") == 1, "Codex did not compact"
    # the summary folds every turn; the sliding window keeps the last ones (items Codex wrote after
    # its own compaction, Codex's summary among them) behind ctxfold's summary
    for strategy, folded in (("summary", ["TURN-ONE", "CODEX-OWN-SUMMARY", "TURN-TWO", "SECOND-ANSWER"]),
                             ("sliding-window", ["TURN-ONE"])):  # fmt: skip
        carry = compact_and_install(codex, original, "--strategy", strategy, out=strategy)
        codex.server.add(Reply("THIRD-ANSWER", input_tokens=4000))
        rows = assert_resumed(codex, carry, f"TURN-THREE after {strategy}", folded)
        assert rows[0]["payload"]["model_provider"] == PROVIDER


@pytest.mark.parametrize("name", VERSIONS)
def test_a_claude_code_session_carries_on_in_codex(name: str, lab: Callable[..., Codex]) -> None:
    codex = lab(name)
    # the sliding window keeps the last turns (Claude Code's tool calls) behind the summary
    carry = compact_and_install(codex, CLAUDE_SESSION, "--to", "codex", "--strategy", "sliding-window")
    written = lines(Path(carry["install_to"]))
    assert written[0]["payload"]["cwd"] == "/path/to/Demo" and "ordinal" not in written[0]
    codex.server.add(Reply("CARRIED-ON", input_tokens=4000))
    first_prompt = next(  # the session's first request, folded into the summary
        m["message"]["content"] for m in map(json.loads, CLAUDE_SESSION.read_text().splitlines())
        if m.get("type") == "user" and isinstance(m.get("message", {}).get("content"), str)
    )  # fmt: skip
    assert_resumed(codex, carry, "TURN-CARRY-ON go on in Codex", [first_prompt[:60]])
    kept = [d["payload"]["call_id"] for d in written if d["payload"].get("type") == "function_call"]
    (request,) = codex.server.model_calls()[-1:]
    sent = [it["call_id"] for it in input_items(request) if it.get("type") == "function_call"]
    assert kept and sent == kept  # Claude Code's calls, kept behind the summary, reach the model
