"""Claude Code 2.1.332 records the system prompt and tools of its requests in its log
(``api-request-shape``, once per distinct pair; with ``api-request`` and ``api-request-blob``
lines for the messages). ctxfold counts them from there instead of adding the measured prompt of
the version (``tokens/harnesses/claude-code.json``): a user's own tools, system prompt
additions and agents are in them. What the log still leaves out is measured too
(``unlogged_with_records``). ``tests/interop/test_claude_code_sends.py`` checks it against what
the real Claude Code sends.

``fixtures/claude-code/request-records.jsonl`` is hand-made in 2.1.332's line shapes: a short
system prompt and two tools (and a deferred one), a sub-agent's records, and the same records
again after a resume. Its usage is ctxfold's estimate of each request plus 355 tokens (what a
log with records leaves out, measured). The fixture-wide tests read it too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import FIXTURES

from ctxfold.engine.now import prior_for
from ctxfold.formats import loader
from ctxfold.formats.claude_code.lines import adds_nothing
from ctxfold.tokens.estimate import estimate_file
from ctxfold.tokens.harness_prompts import table
from ctxfold.transcript.model import ContextUpdate

LOG = FIXTURES / "claude-code" / "request-records.jsonl"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LOG.read_text().splitlines()]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(version: str) -> dict[str, Any]:
    t = table("claude-code")
    assert t is not None
    return next(r for r in t["versions"] if r["version"] == version)


def test_the_records_of_the_main_chain_give_its_system_prompt_and_tools_once() -> None:
    shape = next(r["shape"] for r in _rows() if r["type"] == "api-request-shape")
    updates = [e for e in loader.load(LOG).entries if isinstance(e, ContextUpdate) and e.tools is not None]
    assert len(updates) == 1  # (a sub-agent's records, and the same records again, change nothing)
    (u,) = updates
    assert list(u.system or ()) == [b["text"] for b in shape["system"]]
    assert [t.name for t in u.tools or ()] == ["Bash", "Read"]  # the deferred tool is not loaded
    assert u.tools[0].parameters == shape["tools"][0]["input_schema"]  # type: ignore[index]


def test_they_are_counted_as_the_request_that_sent_them_is(tmp_path: Path) -> None:
    """The same system prompt and tools, in the Anthropic request Claude Code sent, count the same."""
    shape = next(r["shape"] for r in _rows() if r["type"] == "api-request-shape")
    tools = [t for t in shape["tools"] if not t.get("defer_loading")]
    body = {"model": "claude-sonnet-4-6", "max_tokens": 32000, "system": shape["system"], "tools": tools,
            "messages": [{"role": "user", "content": "Find where the checkout total is computed."}]}  # fmt: skip
    request = tmp_path / "request.jsonl"
    request.write_text(json.dumps(body) + "\n")
    sent = estimate_file(request, fmt="anthropic").replay.by_category
    ours = estimate_file(LOG).replay.by_category
    assert (ours["system"], ours["tools"]) == (sent["system"], sent["tools"])
    assert ours["tools"] > 0 and ours["system"] > 0


def test_the_measured_prompt_is_not_added_only_what_the_log_still_leaves_out(tmp_path: Path) -> None:
    est = estimate_file(LOG)
    hp = est.harness_prompt
    assert hp is not None and hp.records and hp.variant == "default"
    assert hp.tokens == _row("2.1.332")["tokens"]["o200k"]["unlogged_with_records"]
    without = _write(tmp_path / "without.jsonl", [r for r in _rows() if r["type"] != "api-request-shape"])
    bare = estimate_file(without)
    assert bare.harness_prompt is not None and not bare.harness_prompt.records
    assert bare.harness_prompt.tokens == _row("2.1.332")["tokens"]["o200k"]["unlogged"]
    assert bare.replay.by_category["tools"] == 0
    # before any real count, each is predicted with what it leaves out added
    assert prior_for(est, None).overhead < prior_for(bare, None).overhead
    assert hp.family != bare.harness_prompt.family  # learned apart


def test_a_version_measured_without_records_adds_nothing(tmp_path: Path) -> None:
    rows = _rows()
    for r in rows:
        if r.get("version") == "2.1.332":
            r["version"] = "2.0.14"
    older = estimate_file(_write(tmp_path / "older.jsonl", rows))
    assert older.harness_prompt is not None and older.harness_prompt.records
    assert "unlogged_with_records" not in _row(older.harness_prompt.version)["tokens"]["o200k"]
    assert older.harness_prompt.tokens == 0


def test_a_record_line_changes_the_status_line() -> None:
    """The statusline passes over lines that change nothing (``lines.adds_nothing``)."""
    raw = {r["type"]: json.dumps(r).encode() for r in _rows()}
    assert not adds_nothing(raw["api-request-shape"])
    assert adds_nothing(raw["api-request"]) and adds_nothing(raw["api-request-blob"])


def test_records_that_start_after_the_first_response_still_replace_the_measured_prompt(
    tmp_path: Path,
) -> None:
    """A session an older version began and 2.1.332 resumed: its prompt is counted from the
    records, and the measured one is not added on top."""
    rows = _rows()
    first = next(i for i, r in enumerate(rows) if r["type"] == "api-request-shape")
    shape = rows.pop(first)
    rows.insert(next(i for i, r in enumerate(rows) if r.get("uuid") == "b1"), shape)
    late = estimate_file(_write(tmp_path / "late.jsonl", rows))
    assert late.harness_prompt is not None and late.harness_prompt.records
    assert late.replay.by_category["tools"] > 0


def test_the_records_tell_whether_tools_were_searched_for(tmp_path: Path) -> None:
    """Whether Claude Code used its tool search (some tools loaded only when searched for) picks
    the measured variant, instead of the guess from the responses' request ids."""
    rows = _rows()
    for r in rows:
        if r["type"] == "assistant":
            r["requestId"] = "proxy-1"  # no Anthropic request id: a gateway, or the lab
    guessed = estimate_file(_write(tmp_path / "proxied.jsonl", rows)).harness_prompt
    assert guessed is not None and guessed.variant == "default"  # the records show tool search
    for r in rows:
        if r["type"] == "api-request-shape":
            r["shape"] = {
                **r["shape"],
                "tools": [t for t in r["shape"]["tools"] if not t.get("defer_loading")],
            }
    every = estimate_file(_write(tmp_path / "every-tool.jsonl", rows)).harness_prompt
    assert every is not None and every.variant == "no-tool-search"
    assert (
        every.tokens
        == _row("2.1.332")["variants"]["no-tool-search"]["tokens"]["o200k"]["unlogged_with_records"]
    )


def test_records_of_another_shape_are_read_as_none(tmp_path: Path) -> None:
    """A record whose system prompt or tools is not a list (a later version's, a damaged line)
    gives none: the line is bookkeeping, not a line to stop at."""
    rows = _rows()
    for r in rows:
        if r["type"] == "api-request-shape":
            r["shape"] = {**r["shape"], "tools": 5, "system": "text"}
    est = estimate_file(_write(tmp_path / "odd.jsonl", rows))
    assert est.replay.by_category["tools"] == 0 and est.replay.by_category["system"] == 0
