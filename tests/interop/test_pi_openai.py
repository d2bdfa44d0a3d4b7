"""pi over the OpenAI Chat Completions API (its ``openai-completions`` provider kind): the chat
server of the lab answers from its script, and a session pi wrote that way is compacted and
carried on, the resumed request holding ctxfold's summary and the new turn, no folded turn."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from interop.carry import compact, validate
from interop.harness import run
from interop.server import Reply, ScriptedServer, chat_api

MODEL = "gpt-lab"
NEXT = "Carry on: which line came last?"


def _configure(home: Path, url: str) -> None:
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    model = {"id": MODEL, "contextWindow": 128_000, "maxTokens": 4096}
    lab = {"baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "lab-key", "models": [model]}
    (agent / "models.json").write_text(json.dumps({"providers": {"lab": lab}}))
    settings = {"enableInstallTelemetry": False, "defaultProvider": "lab", "defaultModel": MODEL}
    (agent / "settings.json").write_text(json.dumps(settings))


def test_pi_over_chat_completions_carries_on(harness_bin: Callable[[str], Path], lab_home: Path) -> None:
    first, second = "List the numbers 1 to 2000 with seq.", "Say something short."
    script = [Reply(tool_calls=[("bash", {"command": "seq 1 2000"})]), Reply("Listed."), Reply("Short.")]
    pi = [harness_bin("pi")]
    with ScriptedServer(chat_api, script) as srv:
        _configure(lab_home, srv.url)
        run([*pi, "-p", first], home=lab_home, env={"PI_OFFLINE": "1"}).check()
        run([*pi, "-c", "-p", second], home=lab_home, env={"PI_OFFLINE": "1"}).check()
        before = srv.model_calls()
        assert before[1].body["messages"][-1]["role"] == "tool"  # the call's result went back
        (session,) = (lab_home / ".pi" / "agent" / "sessions").glob("*/*.jsonl")
        done = compact(session, lab_home)
        seen = len(srv.requests)
        srv.add(Reply("Carried on."))
        run(
            [*pi, *done.command[1:], "-p", NEXT], home=lab_home, env={"PI_OFFLINE": "1"}, cwd=done.cwd
        ).check()
        after = [r for r in srv.requests[seen:] if r.model_call]
    (call,) = after
    sent = call.text
    assert done.summary.strip()[:200] in sent.replace("\\n", "\n") and NEXT in sent
    assert "seq 1 2000" not in json.dumps([m for m in call.body["messages"] if m["role"] != "user"])
    assert call.body["model"] == MODEL
    validate(done.installed)
    assert "Carried on." in done.installed.read_text()
