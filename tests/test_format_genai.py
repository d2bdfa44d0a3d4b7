"""Google genai reader: counts and spot values on hand-written fixtures, detection, bad lines,
streaming and edge cases.

Every expected number was derived from the raw JSON with throwaway python (the expressions are
next to the numbers, L = [json.loads(l) for l in open(f)]), never by running the reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_formats import Expect, entries, expect_of, other_files, tool_results
from conftest import FIXTURES, detect, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader
from ctxfold.formats.base import Line
from ctxfold.formats.genai import reader as genai
from ctxfold.transcript.model import ApiError, ContextUpdate, MediaPart, Message, ThinkingPart

DIR = FIXTURES / "genai"

# Roles: content.role "model" → assistant; "user" whose parts are all functionResponse → tool.
# adk_events.jsonl: events with content 9, 2 of them partial=true (replaced by the complete event
#   Xk2aQ8 from the same author); of the 7 others: assistant 3, user 2, tool 2
#   parts: functionCall 3, functionResponse 3 (1 with response {"error": ...}, 1 with 1
#   inlineData part), thought 1; usageMetadata on the 3 non-partial model events, last
#   promptTokenCount 1905; 1 event with errorCode/errorMessage (1048590 > 1048576); no request: 0 contexts
# contents.jsonl (snake_case, no ids): Counter(roles) → assistant 4, user 2, tool 2;
#   function_call 4, function_response 4 (1 error), inline_data 1; no usage
# requests.jsonl (4 lines {model, systemInstruction, tools, contents, response}): new contents =
#   contents[len(prev):] minus the repeated model response when prev is a prefix, else all (line 4
#   resets): user text 2 + functionResponse-only 2 (tool); responses 4 (assistant, usage; last
#   promptTokenCount 300); functionCall 2 (in responses), functionResponse 2; same system/tools: 1 context
# stream.jsonl: Content lines 2 (user); 3 chunks sharing responseId s-77 → 1 assistant message,
#   usage of the last chunk (promptTokenCount 9, candidatesTokenCount 17)
CASES = {
    "adk_events.jsonl": Expect(
        user=2, assistant=3, tool=2, system=0, calls=3, results=3, errors=1, usage=3, media=1,
        contexts=0, resets=0, api_errors=1, last_prompt=1905,
    ),
    "contents.jsonl": Expect(
        user=2, assistant=4, tool=2, system=0, calls=4, results=4, errors=1, usage=0, media=1,
        contexts=0, resets=0, api_errors=0, last_prompt=0,
    ),
    "requests.jsonl": Expect(
        user=2, assistant=4, tool=2, system=0, calls=2, results=2, errors=0, usage=4, media=0,
        contexts=1, resets=1, api_errors=0, last_prompt=300,
    ),
    "stream.jsonl": Expect(
        user=2, assistant=1, tool=0, system=0, calls=0, results=0, errors=0, usage=1, media=0,
        contexts=0, resets=0, api_errors=0, last_prompt=9,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts(name: str) -> None:
    opened = loader.open_transcript(DIR / name)
    assert opened.format == "genai"
    assert expect_of(list(opened.entries)) == CASES[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_detected_as_genai(name: str) -> None:
    assert detect(DIR / name) == "genai"


@pytest.mark.parametrize("path", other_files("genai"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_formats_not_claimed(path: Path) -> None:
    assert genai.sniff(sniff_head(path)) == 0


def test_adk_spot_values() -> None:
    es = entries(DIR / "adk_events.jsonl")
    msgs = [e for e in es if isinstance(e, Message)]
    assert msgs[0].timestamp == "2025-10-02T10:30:00.123456Z"  # epoch 1759401000.123456
    assert msgs[0].extra["author"] == "user"
    first = msgs[1]
    assert first.id == "Xk2aQ2" and first.model == "gemini-2.5-flash"
    thought = first.parts[0]
    assert isinstance(thought, ThinkingPart) and thought.signature == "CiQB0e2Kb1"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("adk-11aa", "read_log", {"job": "nightly-export", "lines": 50}),
        ("adk-22bb", "disk_usage", {"mount": "/data"}),
    ]
    u = first.usage
    assert u is not None
    # candidatesTokenCount 62 + thoughtsTokenCount 41
    assert (u.prompt_tokens, u.output_tokens, u.reasoning_tokens, u.final) == (1480, 103, 41, True)
    assert u.fields["prompt_tokens"] == "usageMetadata.promptTokenCount"
    tool = msgs[2]
    assert tool.role == "tool" and tool.extra["role"] == "user"
    results = tool_results(es)
    assert [(r.call_id, r.name, r.is_error) for r in results] == [
        ("adk-11aa", "read_log", False),
        ("adk-22bb", "disk_usage", True),
        ("adk-33cc", "grafana_panel", False),
    ]
    assert results[1].text == "permission denied: /data is not readable by ops_agent"
    assert isinstance(results[2].content[1], MediaPart) and results[2].content[1].byte_size == 70
    final = msgs[5]
    assert final.id == "Xk2aQ8" and final.text.endswith("move the export target.")
    assert final.usage is not None and final.usage.cache_read_tokens == 1536
    err = es[-1]
    assert isinstance(err, ApiError)
    assert (err.prompt_tokens, err.limit, err.id) == (1048590, 1048576, "Yb7cR2")


def test_contents_spot_values() -> None:
    es = entries(DIR / "contents.jsonl")
    calls = [c for e in es if isinstance(e, Message) for c in e.tool_calls]
    assert [c.id for c in calls] == ["list_dir#1", "rename#2", "rename#3", "read_image#4"]
    assert all(c.extra["synthetic_id"] for c in calls)
    results = tool_results(es)
    assert [(r.call_id, r.is_error) for r in results] == [
        ("list_dir#1", False),
        ("rename#2", False),
        ("rename#3", True),
        ("read_image#4", False),
    ]
    assert results[0].text == "a.jpeg\nb.jpeg\nnotes.txt" and results[0].extra["response_key"] == "output"
    mixed = [e for e in es if isinstance(e, Message)][6]
    assert mixed.role == "user" and isinstance(mixed.parts[1], MediaPart)


def test_requests_spot_values() -> None:
    es = entries(DIR / "requests.jsonl")
    ctx = es[0]
    assert isinstance(ctx, ContextUpdate)
    assert ctx.system == ("You are a release assistant.", "Answer in one sentence.")
    assert ctx.model == "gemini-2.5-pro"
    assert ctx.tools is not None and [t.name for t in ctx.tools] == [
        "latest_tag",
        "changelog",
        "googleSearch",
    ]
    kinds = [e.kind if not isinstance(e, Message) else e.role for e in es]
    assert kinds == [
        "context", "user", "assistant", "tool", "assistant", "tool", "assistant", "reset", "user", "assistant",
    ]  # fmt: skip
    replies = [e for e in es if isinstance(e, Message) and e.role == "assistant"]
    assert [m.id for m in replies] == ["r-01", "r-02", "r-03", "r-04"]
    assert replies[0].tool_calls[0].extra["thoughtSignature"] == "Cq0CAdHtim9"
    assert replies[2].usage is not None and replies[2].usage.fields["prompt_tokens"].startswith("response.")
    changelog = tool_results(es)[1]
    assert json.loads(changelog.text) == {"entries": ["genai reader", "faster token counts"], "count": 2}


def test_stream_chunks_merge() -> None:
    es = entries(DIR / "stream.jsonl")
    reply = es[1]
    assert isinstance(reply, Message)
    assert reply.text == "Tokens pile like snow\nthe window slides, the old fall\nsummaries remain"
    assert reply.usage is not None and (reply.usage.prompt_tokens, reply.usage.output_tokens) == (9, 17)


def _feed(lines: list[dict]) -> list:
    reader = genai.Reader()
    out: list = []
    for no, d in enumerate(lines, 1):
        out.extend(reader.feed(Line(no, d, 0)))
    out.extend(reader.finish())
    return out


def test_partials_without_final_are_merged_and_not_final() -> None:
    def ev(text: str, n: int) -> dict:
        return {"id": f"e{n}", "invocation_id": "i", "author": "bot", "partial": True,
                "content": {"role": "model", "parts": [{"text": text}]},
                "usage_metadata": {"prompt_token_count": 50, "candidates_token_count": n}}  # fmt: skip

    out = _feed([ev("Hel", 1), ev("lo", 2)])
    assert len(out) == 1
    assert out[0].text == "Hello" and out[0].id == "e1"
    assert (
        out[0].usage.final is False and out[0].usage.prompt_tokens == 50 and out[0].usage.output_tokens == 2
    )


def test_bad_lines_name_the_line(tmp_path: Path) -> None:
    good = json.dumps({"role": "user", "parts": [{"text": "hi"}]})
    cases = {
        "no parts": {"role": "user", "text": "x"},
        "parts not a list": {"role": "user", "parts": "x"},
        "unknown role": {"role": "wizard", "parts": [{"text": "x"}]},
        "contents not a list": {"model": "gemini-2.5-pro", "contents": "x"},
    }
    for label, bad in cases.items():
        path = tmp_path / "bad.jsonl"
        path.write_text(good + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(LineError) as err:
            list(loader.open_transcript(path, fmt="genai").entries)
        assert err.value.line == 2, label
        assert f"{path}:2" in str(err.value)


def test_streaming_iterator() -> None:
    opened = loader.open_transcript(DIR / "contents.jsonl")
    assert isinstance(opened.entries, Iterator)
    first = next(opened.entries)
    assert isinstance(first, Message) and first.role == "user"
    assert opened.lines_read == 1
