"""OpenHands evaluation-output reader: counts on the real multi-SWE-bench file, edge cases on a
handmade one.

Every expected number was derived from the raw JSON with jq (expressions next to the
numbers), never by running the reader.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, real, real_files, sniff_head

from ctxfold.errors import LineError
from ctxfold.formats import loader, registry
from ctxfold.formats.openhands import reader as openhands
from ctxfold.transcript.model import (
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    MediaPart,
    Message,
    TextPart,
)

EDGE = FIXTURES / "openhands" / "edge-cases.jsonl"
REAL = "openhands/multi-swe-bench-output.jsonl"


def _entries(path: Path) -> list[Entry]:
    return list(loader.open_transcript(path, fmt="openhands").entries)


def _instances(entries: list[Entry]) -> list[list[Entry]]:
    """Entries split at each ContextReset: one list per instance."""
    out: list[list[Entry]] = [[]]
    for e in entries:
        if isinstance(e, ContextReset):
            out.append([])
        else:
            out[-1].append(e)
    return out


# Derived per line with `jq -c '{...}' FILE`:
#   assistant  [.history[] | select(.action and .tool_call_metadata) | .tool_call_metadata.model_response.id]
#              | unique | length  (one message per model response; no agent message actions)
#   usage      the same count; it equals .metrics.token_usages | length (23, 33, 49)
#   calls      sum of choices[0].message.tool_calls | length over those unique responses
#   tool       [.history[] | select(.observation and .tool_call_metadata)] | length
#   user       user "message" actions (1 each) + observations without tool_call_metadata
#              other than "recall" (prompt extensions are off, see the reader): [], ["error"], ["error"]
#   last_prompt .metrics.token_usages | last | .prompt_tokens
#   tools      [.history[] | select(.action=="system") | .args.tools | length] → [4]
EXPECT = [
    # instance_id, assistant, tool, user, calls, last_prompt
    ("ponylang__ponyc-4595", 23, 22, 1, 23, 33459),
    ("ponylang__ponyc-4593", 33, 32, 2, 33, 19391),
    ("ponylang__ponyc-4588", 49, 49, 2, 49, 27127),
]


def test_real_counts() -> None:
    entries = _entries(real(REAL))
    assert sum(isinstance(e, ContextReset) for e in entries) == 2  # 3 lines
    instances = _instances(entries)
    assert len(instances) == len(EXPECT)
    for group, (iid, assistant, tool, user, calls, last_prompt) in zip(instances, EXPECT, strict=True):
        msgs = [e for e in group if isinstance(e, Message)]
        assert Counter(m.role for m in msgs) == Counter(assistant=assistant, tool=tool, user=user), iid
        assert sum(len(m.tool_calls) for m in msgs) == calls
        assert sum(len(m.tool_results) for m in msgs) == tool
        usages = [m.usage for m in msgs if m.usage is not None]
        assert len(usages) == assistant
        assert usages[-1].prompt_tokens == last_prompt
        updates = [e for e in group if isinstance(e, ContextUpdate)]
        assert updates[0].session_id == iid
        assert updates[0].model == "openai/openrouter-llama-4-maverick"
        (system,) = (u for u in updates if u.system is not None)
        assert system.system is not None and system.system[0].startswith("You are OpenHands agent")
        assert system.tools is not None and [t.name for t in system.tools] == [
            "execute_bash",
            "think",
            "finish",
            "str_replace_editor",
        ]


def test_real_spot_values() -> None:
    entries = _entries(real(REAL))
    first = _instances(entries)[0]
    msgs = [e for e in first if isinstance(e, Message)]
    # history[4] (id 5) is the first run action: response gen-1746001974-alxKxkQSJ8j9QsfNTvnX,
    # usage prompt 5920 / completion 128, tool call toolu_01 execute_bash; model meta-llama/llama-4-maverick
    a = next(m for m in msgs if m.role == "assistant")
    assert a.id == "5" and a.extra["response_id"] == "gen-1746001974-alxKxkQSJ8j9QsfNTvnX"
    assert a.usage is not None and (a.usage.prompt_tokens, a.usage.output_tokens) == (5920, 128)
    assert a.model == "meta-llama/llama-4-maverick"
    assert a.usage.fields["prompt_tokens"] == "tool_call_metadata.model_response.usage.prompt_tokens"
    assert [(c.id, c.name) for c in a.tool_calls] == [("toolu_01", "execute_bash")]
    # history[5] (id 6) answers it; extras.metadata.suffix is appended to the content
    r = msgs[msgs.index(a) + 1]
    (res,) = r.tool_results
    assert (r.role, res.call_id, res.name) == ("tool", "toolu_01", "execute_bash")
    assert res.text.startswith("total 300") and res.text.endswith("[The command completed with exit code 0.]")
    # the recall observation (history[3], microagent knowledge "github") is not sent: metadata
    # has no agent_config, and the benchmark harnesses run with prompt extensions off
    assert not any(m.extra.get("observation") == "recall" for m in msgs)
    t = loader.load(real(REAL), fmt="openhands")
    assert t.session_id == "ponylang__ponyc-4588"  # the last instance's
    assert t.models == ("openai/openrouter-llama-4-maverick", "meta-llama/llama-4-maverick")


def test_recall_sent_only_with_prompt_extensions() -> None:
    on, off = _instances(_entries(FIXTURES / "openhands" / "prompt-extensions.jsonl"))
    recalled = [m for m in on if isinstance(m, Message) and m.extra.get("observation") == "recall"]
    assert [m.text for m in recalled] == [
        "Added workspace context\nUse the GITHUB_TOKEN with the GitHub API."
    ]
    assert [m.text for m in off if isinstance(m, Message)] == ["Fix b.c on github"]


# ------------------------------------------------------------------------------ detection


def test_sniff_scores_own_file_high() -> None:
    assert openhands.sniff(sniff_head(real(REAL))) == 95


@pytest.mark.parametrize("path", real_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_detect(path: Path) -> None:
    objs = sniff_head(path)
    mine = path.parent.name == "openhands"
    assert (openhands.sniff(objs) > 0) == mine
    fmt, _ = registry.detect(objs)
    assert (fmt == "openhands") == mine


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("*/*.jsonl")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_sniff_on_handmade_fixtures(path: Path) -> None:
    objs = sniff_head(path)
    assert (openhands.sniff(objs) > 0) == (path.parent.name == "openhands")


# ------------------------------------------------------------------------- handmade file
# edge-cases.jsonl, 2 lines.
#   edge-1: system (1 tool); user message with a data-URI image; recall action (not sent);
#     run (id 3) + read (id 4) from ONE response resp-1 (2 tool calls, usage 1000/50);
#     their observations (ids 5, 6); condensation (id 7); agent_state_changed (id 8, silent);
#     agent message (id 9, no response metadata); finish (id 10) from resp-2 (usage 1200/20)
#   edge-2: user message; an error observation with no tool call; no llm_config


def test_edge_sequence() -> None:
    entries = _entries(EDGE)
    seq = [e.kind if not isinstance(e, Message) else f"{e.role}:{e.id}" for e in entries]
    assert seq == [
        "context",  # instance edge-1
        "context",  # system prompt + tools
        "user:1",
        "assistant:3",  # resp-1, once for both actions
        "tool:5",
        "tool:6",
        "compaction",
        "assistant:9",
        "assistant:10",  # resp-2 (finish)
        "reset",
        "context",  # instance edge-2
        "user:0",
        "user:1",  # error observation
    ]


def test_edge_values() -> None:
    entries = _entries(EDGE)
    edge1, edge2 = _instances(entries)
    by_id = {(e.role, e.id): e for e in edge1 if isinstance(e, Message)}  # ids restart per instance
    first, system, second = (e for e in entries if isinstance(e, ContextUpdate))
    assert (first.session_id, first.model, first.context_window) == ("edge-1", "openai/model-x", 64000)
    assert system.system == ("You are OpenHands agent.",) and system.tools is not None
    assert (second.session_id, second.model) == ("edge-2", None)
    assert second.extra["error"] == "RuntimeError: Agent reached maximum iteration"

    img = by_id[("user", "1")].parts[1]
    assert isinstance(img, MediaPart) and img.mime_type == "image/png" and img.data
    assert img.byte_size == len(base64.b64decode(img.data))

    both = by_id[("assistant", "3")]
    assert [c.id for c in both.tool_calls] == ["call_a", "call_b"] and both.text == "Two things at once."
    assert both.usage is not None and (both.usage.prompt_tokens, both.usage.context_window) == (1000, 64000)
    run = by_id[("tool", "5")].tool_results[0]
    assert (run.call_id, run.text) == ("call_a", "a.c\n[The command completed with exit code 0.]")
    assert by_id[("tool", "6")].tool_results[0].call_id == "call_b"

    (mark,) = (e for e in entries if isinstance(e, CompactionMarker))
    assert (mark.source, mark.summary, mark.extra["forgotten_event_ids"]) == (
        "openhands",
        "Listed files and read a.c.",
        [3, 4],
    )
    assert by_id[("assistant", "9")].usage is None
    fin = by_id[("assistant", "10")]
    assert fin.usage is not None and fin.usage.prompt_tokens == 1200 and fin.tool_calls[0].name == "finish"
    err = [e for e in edge2 if isinstance(e, Message)][-1]
    assert err.role == "user" and err.text == "Parameter 'command' is missing."


# ----------------------------------------------------------------------- errors, streaming


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ({"instance_id": "x"}, "'history'"),
        ({"instance_id": "x", "history": {}}, "'history' should be list"),
        (
            {"instance_id": "x", "history": [{"id": 1, "source": "user"}]},
            "neither 'action' nor 'observation'",
        ),
        ({"instance_id": "x", "history": [7]}, "should be an object"),
    ],
)
def test_bad_line_names_line(tmp_path: Path, line: dict[str, object], needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = EDGE.read_text().splitlines()[1]
    path.write_text(good + "\n" + json.dumps(line) + "\n")
    with pytest.raises(LineError) as info:
        list(loader.open_transcript(path, fmt="openhands").entries)
    assert info.value.line == 2 and needle in str(info.value)


def test_streaming() -> None:
    opened = loader.open_transcript(EDGE, fmt="openhands")
    assert isinstance(opened.entries, Iterator)
    first = next(opened.entries)
    assert isinstance(first, ContextUpdate) and first.session_id == "edge-1"


def _example_tokens(group: list[Entry]) -> list[int]:
    """The unlogged function-calling text each system update of an instance declares."""
    from ctxfold.transcript.model import harness_tokens

    return [n for e in group if isinstance(e, ContextUpdate) and (n := harness_tokens(e))]


def test_function_calling_example_when_not_native() -> None:
    """Without native function calling OpenHands puts a worked example before the first user
    message: declared by ``native_tool_calling: false``, or shown by the converter's numbered
    call ids (toolu_01…) when the setting is null. Its size follows the tools offered."""
    t = openhands.MOCK_FNCALL_TOKENS
    groups = _instances(_entries(FIXTURES / "openhands" / "function-calling.jsonl"))
    assert [_example_tokens(g) for g in groups] == [
        [
            t["system"] + t["example"] + t["execute_bash"] + t["finish"]
        ],  # null, toolu_01: mock ("think" has none)
        [],  # null, a provider's random id: native
        [t["system"] + t["example"] + t["str_replace_editor"] + t["browser"]],  # declared false
        [],  # declared true, whatever the ids
        [t["system"]],  # declared false, but no tool with an example: the calling instructions only
    ]
    first_user = next(m for m in groups[0] if isinstance(m, Message) and m.role == "user")
    assert first_user.parts == (TextPart("Fix the bug in a.c"),)  # counted, not invented as text


def test_function_calling_text_is_a_fixed_part_of_every_request(tmp_path: Path) -> None:
    """The example is counted with the system prompt in every request, so it survives compaction
    (OpenHands wraps whatever user message comes first), and a native instance after a mock one
    drops it, even one whose history has no system event."""
    from ctxfold.tokens.counting import Counter
    from ctxfold.tokens.estimate import estimate_file
    from ctxfold.tokens.tokenizers import get_tokenizer

    t = openhands.MOCK_FNCALL_TOKENS
    lines = (FIXTURES / "openhands" / "function-calling.jsonl").read_text().splitlines()
    no_system = json.loads(lines[1])
    no_system["history"] = no_system["history"][1:]
    lines.append(json.dumps(no_system))
    for keep, extra in (([0], t["system"] + t["example"] + t["execute_bash"] + t["finish"]), ([0, 1], 0)):
        path = tmp_path / f"{len(keep)}.jsonl"
        path.write_text("\n".join(lines[i] for i in keep) + "\n")
        est = estimate_file(path, fmt="openhands")
        assert est.replay.harness == extra
        last = json.loads(lines[keep[-1]])["history"][0]["args"]
        counter = Counter(get_tokenizer(est.model.tokenizer), est.model.provider)
        assert est.replay.by_category["system"] == counter.count_system((last["content"],)) + extra
    # a mock instance, then a native one without a system event: nothing carried over
    path = tmp_path / "carry.jsonl"
    path.write_text(lines[0] + "\n" + lines[-1] + "\n")
    est = estimate_file(path, fmt="openhands")
    assert est.replay.harness == 0
    assert est.requests[-1].fixed < est.requests[0].fixed - 1_000


def test_real_file_was_run_without_native_function_calling() -> None:
    """llama-4-maverick through OpenRouter: native_tool_calling null and every call id numbered
    (jq: [.history[].tool_call_metadata.tool_call_id | select(.)] | all(test("^toolu_[0-9]+$"))
    → true on each line); the tools are execute_bash, think, finish, str_replace_editor."""
    t = openhands.MOCK_FNCALL_TOKENS
    expected = t["system"] + t["example"] + t["execute_bash"] + t["finish"] + t["str_replace_editor"]
    assert expected == 1_808
    assert [_example_tokens(g) for g in _instances(_entries(real(REAL)))] == [[expected]] * 3
