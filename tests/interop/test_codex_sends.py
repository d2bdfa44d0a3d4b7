"""What Codex sends after a rollback: a ``thread_rolled_back`` event (the TUI's backtrack, the
app server's ``thread/rollback``) drops the last turns from what Codex sends, though they stay
in the rollout. Each pinned Codex resumes a rollout of two turns and a rollback of one: it sends
the first turn and the new question, not the second turn, and ctxfold counts the context of the
rollout without the second turn and the rollback. With the second turn run on another model,
Codex put a ``<model_switch>`` note before it: the rollback drops that note too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxfold.tokens.estimate import estimate_file
from interop.responses_server import input_items, item_text
from interop.server import Reply
from interop.test_codex import VERSIONS, Codex, lab  # noqa: F401 (the fixture)

SECOND = "TURN-TWO rolled back " + "words " * 300


@pytest.mark.parametrize("switch", [False, True], ids=["same-model", "model-switch"])
@pytest.mark.parametrize("name", VERSIONS)
def test_codex_does_not_send_the_turns_a_rollback_dropped(
    name: str,
    switch: bool,
    lab: Callable[..., Codex],  # noqa: F811
    tmp_path: Path,
) -> None:
    codex = lab(name)
    codex.server.add(Reply("FIRST-ANSWER"), Reply("SECOND-ANSWER"), Reply("THIRD-ANSWER"))
    _, sid = codex.exec("TURN-ONE hello")
    rollout = codex.rollout(sid)
    first = rollout.read_bytes()
    model = ["-m", "gpt-5.1-codex-mini"] if switch else []
    codex.exec("resume", sid, SECOND, *model)
    if switch:
        assert b"<model_switch>" in rollout.read_bytes()[len(first) :]
    last = json.loads(rollout.read_bytes().splitlines()[-1])
    event = {"timestamp": last["timestamp"], "type": "event_msg",
             "payload": {"type": "thread_rolled_back", "num_turns": 1}}  # fmt: skip
    if "ordinal" in last:  # (0.148+ number their lines)
        event = {"timestamp": last["timestamp"], "ordinal": last["ordinal"] + 1, **event}
    with rollout.open("a") as f:
        f.write(json.dumps(event) + "\n")
    rolled = rollout.read_bytes()
    before = len(codex.server.model_calls())
    codex.exec("resume", sid, "TURN-THREE go", *model)
    (request,) = codex.server.model_calls()[before:]
    sent = [item_text(i) for i in input_items(request)]
    assert "TURN-ONE hello" in sent and "TURN-THREE go" in sent
    assert not any("TURN-TWO" in s or "SECOND-ANSWER" in s for s in sent)
    assert sum("<model_switch>" in s for s in sent) == switch  # (the third turn's own, when switched)
    without = tmp_path / "without.jsonl"
    without.write_bytes(first + rollout.read_bytes()[len(rolled) :])
    ours, theirs = estimate_file(rollout), estimate_file(without)
    assert ours.context_tokens == theirs.context_tokens
    assert ours.requests[-1].estimate == theirs.requests[-1].estimate
