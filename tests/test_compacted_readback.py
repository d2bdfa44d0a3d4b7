"""A compacted output read back: the same model, and the context compact said it left.

For every format whose compacted output the API writers or the native writer produce
(openai-chat, openai-responses, genai, ctxfold, and OpenHands, written as native), on the
bundled fixtures and the real sessions: ``estimate`` of the output names the model, provider,
tokenizer and window that ``estimate`` of the source named, and counts the context at
``compact``'s ``estimate_after``. A session too small for a pass to shrink it by 10 % is
refused by compact and skipped here.

Tolerance: none, except for a message the writer joins into its neighbour. The genai writer
makes ctxfold's summary and continuation one Content with the user message after them (no
same-role neighbours), so the output holds fewer messages than compact counted: each join
saves one message's framing and may move one token where the two texts meet. The allowance
is (framing + 1) tokens per message joined: 0 wherever the output keeps compact's messages.
"""

from __future__ import annotations

import base64
import io
import shutil
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, real_files, write_jsonl
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.tokens.counting import FRAMING, Counter
from ctxfold.tokens.estimate import FileEstimate, estimate_file
from ctxfold.tokens.session import SessionCounter
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Message, TextPart

runner = CliRunner()
FORMATS = ("openai-chat", "openai-responses", "genai", "ctxfold", "openhands")
SOURCES = [p for f in FORMATS for p in (*sorted((FIXTURES / f).glob("*.jsonl")), *real_files(f))]


def compact(src: Path, out: Path, *args: str) -> dict:
    r = runner.invoke(
        app, ["compact", str(src), "--force", "--no-profile", "--json", "--out-dir", str(out), *args]
    )
    if r.exit_code == 1 and ("10% reduction" in r.stderr or "cannot fit" in r.stderr):
        pytest.skip(f"compact refuses this session: {r.stderr.strip()}")
    assert r.exit_code == 0, r.stderr
    doc = orjson.loads(r.stdout)
    assert doc["status"] == "compacted", doc
    return doc


def assert_reads_back(src: FileEstimate, back: FileEstimate, doc: dict) -> None:
    m, b = src.model, back.model
    assert (b.name, b.provider, b.tokenizer, b.window) == (m.name, m.provider, m.tokenizer, m.window)
    if m.window_source == "recorded in the log":
        assert b.window_source == m.window_source
    joined = abs(doc["messages_after"] - len(back.replay.context))
    tolerance = joined * (FRAMING.get(b.provider, FRAMING["other"]).per_message + 1)
    assert abs(back.context_tokens - doc["estimate_after"]) <= tolerance, (
        back.context_tokens,
        doc["estimate_after"],
        tolerance,
    )


@pytest.mark.parametrize("strategy", ["summary", "sliding-window"])
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_compacted_output_reads_back_as_compact_counted_it(tmp_path: Path, path: Path, strategy: str) -> None:
    src = tmp_path / path.name
    shutil.copyfile(path, src)
    doc = compact(src, tmp_path / "out", "--strategy", strategy)
    before, back = estimate_file(src), estimate_file(doc["outputs"]["compacted"])
    # a session naming its model twice (OpenHands' route on the request, the provider's name on
    # the responses) is written with the one estimate settled on
    assert_reads_back(before, back, doc)


def _png(w: int, h: int) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), (200, 30, 30)).save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-4-32k"])
@pytest.mark.parametrize("strategy", ["summary", "sliding-window"])
def test_a_model_named_only_by_usage_survives_compaction(tmp_path: Path, model: str, strategy: str) -> None:
    """A chat log whose model is only on its responses' usage: the kept messages lose their
    usage, so the output names the model on its request line. The image in a tool result is
    then counted by OpenAI's rule on both sides (85 + 170 a tile; with no model named, the
    generic rule counted the 1×1 image as 1 token)."""
    rows: list[dict] = [{"role": "system", "content": "You are an agent."}]
    for i in range(6):
        rows += [
            {"role": "user", "content": f"Take a screenshot of page {i} and describe it in detail. " * 3},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
                ],
                "usage": {"prompt_tokens": 1000 + 900 * i, "completion_tokens": 20},
                "model": model,
            },
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": [
                    {"type": "text", "text": f"page {i}"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_png(1, 1)}"}},
                ],
            },
            {
                "role": "assistant",
                "content": f"Page {i} is red. " * 20,
                "usage": {"prompt_tokens": 1400 + 900 * i, "completion_tokens": 60},
                "model": model,
            },
        ]
    src = write_jsonl(tmp_path / "chat.jsonl", rows)
    doc = compact(src, tmp_path / "out", "--strategy", strategy)
    before, back = estimate_file(src), estimate_file(doc["outputs"]["compacted"])
    assert (before.model.name, before.model.provider) == (model, "openai")
    assert_reads_back(before, back, doc)
    if strategy == "sliding-window":
        assert back.replay.by_category["media"] >= 255  # 85 + 170 for one tile, not 1


def _replay(entries: list) -> int:
    counter = Counter(get_tokenizer("o200k"), "openai")
    return SessionCounter(counter).feed(entries).context_total


SUMMARY = "## Current State\nThe parser is fixed; the suite passes."


def test_a_summary_the_next_message_holds_is_counted_once() -> None:
    """ctxfold's own compaction: the marker records the summary, the message after it is the
    summary the model reads."""
    said = Message("user", (TextPart(f"[Previous conversation summary]\n{SUMMARY}\n[End]"),))
    nxt = Message("user", (TextPart("Carry on."),))
    head = [ContextUpdate(system=("sys",)), Message("user", (TextPart("old " * 50),))]
    marker = CompactionMarker("ctxfold", summary=SUMMARY)
    assert _replay([*head, marker, said, nxt]) == _replay([ContextUpdate(system=("sys",)), said, nxt])


@pytest.mark.parametrize("after", ["message", "nothing"])
def test_a_summary_no_message_repeats_still_heads_the_context(after: str) -> None:
    """pi's and OpenHands' compactions: the marker's summary is the only copy."""
    summary = Message("user", (TextPart(SUMMARY),))
    nxt = [Message("user", (TextPart("Carry on."),))] if after == "message" else []
    marker = CompactionMarker("openhands", summary=SUMMARY)
    got = _replay([ContextUpdate(system=("sys",)), Message("user", (TextPart("old " * 50),)), marker, *nxt])
    assert got == _replay([ContextUpdate(system=("sys",)), summary, *nxt])
