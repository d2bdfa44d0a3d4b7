"""The lab itself: a real harness reaches the scripted server, gets the scripted answer, and the
server records what it sent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from interop.harness import run
from interop.server import Reply, ScriptedServer, anthropic_api


def test_claude_code_answers_from_the_script(harness_bin: Callable[[str], Path], lab_home: Path) -> None:
    with ScriptedServer(anthropic_api, [Reply("The lab answers.")]) as srv:
        done = run(
            [harness_bin("claude"), "-p", "Say something."],
            home=lab_home,
            env={"ANTHROPIC_BASE_URL": srv.url, "ANTHROPIC_API_KEY": "lab-key"},
        ).check()
    assert "The lab answers." in done.stdout
    (call,) = srv.model_calls()
    assert "Say something." in call.text and call.body["stream"] is True
