"""A pi response that failed (``stopReason: error``: its stream cut off, a refusal) or that the
user stopped (``aborted``) stays in pi's log, but pi leaves it out of every later request and
runs none of its tool calls (``tests/interop/test_pi_sends.py`` shows it with the real pi). So
ctxfold counts it as nothing, ``validate`` asks no result for its calls, and the carry-on
summary takes none of them as made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REAL

from ctxfold.formats import loader
from ctxfold.formats.validate import validate
from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.digest import digest
from ctxfold.providers.facts import gather
from ctxfold.providers.render import render_messages
from ctxfold.providers.standing import assess
from ctxfold.tokens.estimate import estimate_file

USAGE = {"input": 5, "output": 3, "cacheRead": 900, "cacheWrite": 20, "totalTokens": 928,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}  # fmt: skip


def _entry(n: int, message: dict[str, Any]) -> dict[str, Any]:
    parent = f"m{n - 1}" if n > 1 else None
    return {"type": "message", "id": f"m{n}", "parentId": parent,
            "timestamp": f"2026-01-02T10:00:{n:02d}.000Z", "message": message}  # fmt: skip


def _assistant(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    out = {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
           "model": "claude-sonnet-4-5", "usage": USAGE, "stopReason": stop, "timestamp": 1767348000000}  # fmt: skip
    if stop == "error":
        out["errorMessage"] = "terminated"
    return out


def _session(tmp_path: Path, stop: str | None) -> Path:
    """A user's request, a read and its result, then (with ``stop``) a response that edits
    the file, stopped with that reason."""
    header = {"type": "session", "version": 3, "id": "pi-dropped", "timestamp": "2026-01-02T10:00:00.000Z",
              "cwd": "/repo", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}  # fmt: skip
    read = {"type": "toolCall", "id": "call_read", "name": "read", "arguments": {"path": "src/app.py"}}
    rows = [
        header,
        _entry(
            1, {"role": "user", "content": [{"type": "text", "text": "Tidy src/app.py."}], "timestamp": 1}
        ),
        _entry(2, _assistant([{"type": "text", "text": "Reading it first."}, read], "toolUse")),
        _entry(
            3,
            {
                "role": "toolResult",
                "toolCallId": "call_read",
                "toolName": "read",
                "content": [{"type": "text", "text": "def main():\n    pass\n" * 40}],
                "isError": False,
                "timestamp": 3,
            },
        ),
    ]
    if stop is not None:
        edits = [{"type": "toolCall", "id": f"call_edit{i}", "name": "edit",
                  "arguments": {"path": "src/app.py", "oldText": "pass", "newText": f"return {i}" * 50}}
                 for i in range(3)]  # fmt: skip
        rows.append(
            _entry(4, _assistant([{"type": "text", "text": "Now I'll rewrite it. " * 30}, *edits], stop))
        )
    path = tmp_path / f"{stop}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_it_takes_no_room_in_the_context(tmp_path: Path, stop: str) -> None:
    without, with_it = (estimate_file(_session(tmp_path, s)) for s in (None, stop))
    assert with_it.context_tokens == without.context_tokens
    assert with_it.replay.by_category == without.replay.by_category
    # its call was made and billed; a retry is another request
    assert len(with_it.replay.other_calls) == len(without.replay.other_calls) + 1
    assert with_it.replay.requests[-1].estimate == without.context_tokens


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_its_calls_need_no_result_and_none_counts_as_made(tmp_path: Path, stop: str) -> None:
    path = _session(tmp_path, stop)
    assert validate(str(path)).ok
    messages = loader.load(path).messages
    without = loader.load(_session(tmp_path, None)).messages
    assert gather(messages).files == gather(without).files  # read, never edited
    standing = assess(messages)
    assert standing.pending == []
    if stop == "error":  # as pi goes on: from the read's result, the response never given
        assert (standing.state, standing.reason) == (assess(without).state, assess(without).reason)
    text = digest(SummaryRequest(messages, 2_000))
    assert "edited" not in text and "call_edit" not in text and "return 0" not in text
    prompt = render_messages(messages)  # what a model summarizer reads of the conversation
    assert "[called tool: edit" not in "\n".join(prompt)
    if stop == "error":
        assert prompt == render_messages(without)


@pytest.mark.skipif(
    not (REAL / "pi" / "large-session.jsonl").is_file(), reason="../shared/fixtures-real absent"
)
def test_a_real_pi_session_s_failed_response(tmp_path: Path) -> None:
    """Line 33 of a real pi session is a response whose stream was cut off ("terminated") with
    16 edits in it; pi's next request went on without it."""
    lines = (REAL / "pi" / "large-session.jsonl").read_text().splitlines(keepends=True)
    assert json.loads(lines[32])["message"]["stopReason"] == "error"
    cut, before = tmp_path / "cut.jsonl", tmp_path / "before.jsonl"
    cut.write_text("".join(lines[:33]))
    before.write_text("".join(lines[:32]))
    assert estimate_file(cut).context_tokens == estimate_file(before).context_tokens
    assert validate(str(REAL / "pi" / "large-session.jsonl")).ok
    standing = assess(loader.load(cut).messages)
    assert standing.pending == [] and standing.state == assess(loader.load(before).messages).state
