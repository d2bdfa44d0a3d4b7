"""The native format: documented schema, exact round trip through the codec."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import orjson
import pytest
from conftest import FIXTURES, ROOT, write_jsonl

from ctxfold.formats.loader import load
from ctxfold.formats.native import reader as native
from ctxfold.transcript import codec
from ctxfold.transcript import model as m

SCHEMA = json.loads((ROOT / "core" / "schemas" / "ctxfold-transcript.schema.json").read_text())
SAMPLES = sorted((FIXTURES / "ctxfold").glob("*.jsonl"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_obey_the_schema(path: Path) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for no, line in enumerate(path.read_bytes().splitlines(), 1):
        errors = list(validator.iter_errors(orjson.loads(line)))
        assert not errors, f"{path.name}:{no}: {errors[0].message}"


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_round_trip_is_exact(path: Path, tmp_path: Path) -> None:
    t = load(path)
    assert t.source_format == "ctxfold"
    update = next(e for e in t.entries if isinstance(e, m.ContextUpdate))
    lines = [native.header(update)] + [codec.encode(e) for e in t.entries[1:]]
    again = tmp_path / "again.jsonl"
    write_jsonl(again, lines)
    assert load(again).entries == t.entries
    assert again.read_bytes() == path.read_bytes()


def test_every_kind_round_trips_and_validates() -> None:
    usage = m.Usage(1200, 30, cache_read_tokens=1000, reasoning_tokens=5, model="gpt-5", fields={"p": "x"})
    msg = m.Message(
        "assistant",
        (
            m.TextPart("hi", extra={"cache_control": {"type": "ephemeral"}}),
            m.ThinkingPart("hmm", signature="sig", redacted=False),
            m.ToolCallPart("c1", "run", "ls -la"),
            m.MediaPart("image/png", data="iVBORw0KGgo=", width=1, height=1, byte_size=8),
            m.OpaquePart({"type": "web_search_call", "id": "ws"}, type="web_search_call"),
        ),
        id="a1",
        usage=usage,
        model="gpt-5",
        branch="agent-7",
    )
    result = m.Message("tool", (m.ToolResultPart("c1", (m.TextPart("out"),), name="run", is_error=True),))
    entries = [
        msg,
        result,
        m.CompactionMarker("codex", summary="s", replacement=(result,), tokens_before=9),
        m.ApiError("prompt is too long: 5 tokens > 4 maximum", prompt_tokens=5, limit=4),
        m.ContextUpdate(
            system=("be brief",), tools=(m.ToolDef("run", "Run.", {"type": "object"}),), model="x"
        ),
        m.ContextReset("new session"),
    ]
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for e in entries:
        data = codec.encode(e)
        assert codec.decode(orjson.loads(orjson.dumps(data))) == e
        assert not list(validator.iter_errors(data)), data


def test_a_declared_hidden_prompt_is_counted(tmp_path: Path) -> None:
    """A context entry's extra.harness_tokens declares unlogged per-request text by its size:
    counted with the system prompt, and kept by compaction in the output's context entry."""
    from ctxfold.tokens.estimate import estimate_file

    header = {"type": "header", "format": "ctxfold", "version": 1, "model": "gpt-4o"}
    user = {"type": "message", "role": "user", "parts": [{"type": "text", "text": "Fix the checkout total"}]}
    hidden = {"type": "context", "extra": {"harness_tokens": 5_000}}
    plain = write_jsonl(tmp_path / "a.jsonl", [header, user])
    declared = write_jsonl(tmp_path / "b.jsonl", [header, hidden, user])
    schema = json.loads((ROOT / "core" / "schemas" / "ctxfold-transcript.schema.json").read_text())
    for line in declared.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)
    a, b = estimate_file(plain), estimate_file(declared)
    assert b.context_tokens == a.context_tokens + 5_000
    assert b.replay.by_category["system"] == a.replay.by_category["system"] + 5_000

    from typer.testing import CliRunner

    from ctxfold.cli.app import app

    long = {"type": "message", "role": "user", "parts": [{"type": "text", "text": "lorem ipsum " * 4_000}]}
    reply = {"type": "message", "role": "assistant", "parts": [{"type": "text", "text": "Done."}]}
    big = write_jsonl(tmp_path / "c.jsonl", [header, hidden, long, reply, user])
    result = CliRunner().invoke(
        app, ["compact", str(big), "--force", "--no-profile", "--out-dir", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    out = estimate_file(tmp_path / "out" / "c.compacted.jsonl")
    assert out.replay.harness == 5_000
