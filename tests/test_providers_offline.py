"""The offline digest (hand-built and real transcripts), the scripted test double, and the
fallback chain driven by it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import real

from ctxfold.errors import ProviderError
from ctxfold.formats.loader import load
from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.digest import digest
from ctxfold.providers.offline import OfflineSummarizer
from ctxfold.providers.registry import ChainSummarizer, make_summarizer
from ctxfold.providers.render import SECTIONS
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

TOK = get_tokenizer("o200k")
OLD_REQUEST = "Please set up the project. " + "Some long background detail. " * 30
NEWEST = "Now fix the failing parser test and keep the public API unchanged.\nSecond line of the request."
PATCH = (
    "*** Begin Patch\n*** Update File: src/parser.py\n@@\n-x\n+y\n*** Add File: src/new.py\n+z\n*** End Patch"
)


def _res(call_id: str, text: str, error: bool = False) -> Message:
    return Message("user", (ToolResultPart(call_id, (TextPart(text),), is_error=error),))


def _call(call_id: str, name: str, args: Any) -> Message:
    return Message("assistant", (ToolCallPart(call_id, name, args),))


def _session(n_commands: int = 0) -> list[Message]:
    todos = {"todos": [
        {"content": "Reproduce the bug", "status": "completed", "activeForm": "Reproducing"},
        {"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing"},
        {"content": "Run the full suite", "status": "pending", "activeForm": "Running"},
    ]}  # fmt: skip
    filler: list[Message] = []
    for i in range(n_commands):
        filler += [_call(f"f{i}", "Bash", {"command": f"echo step-{i}"}), _res(f"f{i}", f"step-{i}")]
    return [
        Message("user", (TextPart(OLD_REQUEST),)),
        _call("r1", "Read", {"file_path": "src/parser.py"}),
        _res("r1", "def parse(): ...\nclass ParseError(Exception): ...  # not an error: a file's text"),
        *filler,
        _call("p1", "apply_patch", PATCH),
        _res("p1", "Done"),
        _call("w1", "Write", {"file_path": "tests/test_parser.py", "content": "..."}),
        _res("w1", "ok"),
        _call("b1", "Bash", {"command": "pytest -x tests/test_parser.py"}),
        _res(
            "b1", "Exit code 1\nTraceback (most recent call last):\n  File x\nValueError: bad token ')'", True
        ),
        _call("e1", "exec_command", json.dumps({"cmd": "make lint"})),
        _res("e1", "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nclean"),
        _call("t1", "TodoWrite", todos),
        _res("t1", "Todos have been modified successfully"),
        Message("user", (TextPart(NEWEST),)),
        Message("assistant", (TextPart("I will start with the tokenizer in src/parser.py."),)),
    ]


def _digest(messages: list[Message], budget: int = 2000, **kw: Any) -> str:
    return digest(SummaryRequest(messages, budget, **kw))


def test_digest_sections_and_facts() -> None:
    text = _digest(_session(), instructions="keep the API")
    assert [ln[3:] for ln in text.splitlines() if ln.startswith("## ")] == [
        s for s in SECTIONS if "Deliverable" not in s
    ]
    assert f"  {NEWEST.splitlines()[0]}\n  {NEWEST.splitlines()[1]}" in text  # in full
    assert "Please set up the project. […] Some long background detail." in text and OLD_REQUEST not in text
    assert "`src/parser.py` (read, edited)" in text and "`src/new.py` (written)" in text
    assert "`tests/test_parser.py` (written)" in text
    assert "last `pytest -x tests/test_parser.py` → exit 1" in text and "last `make lint` → exit 0" in text
    assert "`pytest -x tests/test_parser.py` → ValueError: bad token ')'" in text and "ParseError" not in text
    todo = "- [completed] Reproduce the bug\n- [in_progress] Fix the parser\n- [pending] Run the full suite"
    assert text.rstrip().endswith(todo)
    assert "I will start with the tokenizer" in text and "Focus requested: keep the API" in text
    assert "Focus requested: keep the API (2 details matching it kept first, verbatim.)" in text
    assert "  - [in_progress] Fix the parser" not in text.split("## Exact Next Steps")[0]
    assert "Fix the parser" in text.split("## Exact Next Steps")[1].split("## Todo List")[0]
    # the newest request's rule has a place of its own, verbatim
    assert (
        "“Now fix the failing parser test and keep the public API unchanged.”"
        in text.split("## User Requests")[0]
    )


def test_digest_drops_the_oldest_detail_first() -> None:
    session = _session()
    reads: list[Message] = []
    for i in range(80):
        reads += [_call(f"f{i}", "Read", {"file_path": f"src/old{i}.py"}), _res(f"f{i}", "x")]
    messages = [session[0], *reads, *session[1:]]
    full = _digest(messages, budget=4000)
    assert "`src/old0.py`" in full and TOK.count(full) <= 4000
    tight = _digest(messages, budget=400)
    assert TOK.count(tight) <= 400
    assert "`src/old0.py`" not in tight
    assert NEWEST.splitlines()[1] in tight and "- [pending] Run the full suite" in tight
    assert "ValueError: bad token" in tight  # the error still standing outranks the files read
    assert "Please set up the project" in tight  # a user request outranks every file and value


@pytest.mark.parametrize("budget", [1, 20, 60, 150])
def test_digest_fits_any_budget(budget: int) -> None:
    assert TOK.count(_digest(_session(n_commands=30), budget=budget)) <= budget


def test_digest_rolls_the_previous_summary_in() -> None:
    previous = "## Key Information\n- DB is Postgres 16\n## Todo List\n- [pending] Ship it"
    text = _digest([Message("user", (TextPart("go on"),))], previous_summary=previous)
    assert "- Earlier (previous summary):\n  - DB is Postgres 16" in text
    assert text.rstrip().endswith("- [pending] Ship it")  # no newer list: the old one carries over
    given = _digest(_session(), todos=[{"step": "From state", "status": "in_progress"}])
    assert given.rstrip().endswith("- [in_progress] From state")  # the caller's state wins


def test_a_rolled_digest_keeps_the_request_until_a_newer_one_arrives() -> None:
    """Folding again with only tool traffic since the last summary: its request is still the
    current one, however small the budget; its lists keep their groups, placeholders vanish."""
    first = _digest(_session())
    work: list[Message] = []
    for i in range(30):
        work += [_call(f"x{i}", "Read", {"file_path": f"src/m{i}.py"}), _res(f"x{i}", "text " * 40)]
    again = _digest(work, budget=300, previous_summary=first)
    state = again.split("## Key Information")[0]
    assert "Now fix the failing parser test" in state and "Continue the current user request" in again
    assert again.count("(no todo list recorded)") == 0  # the old list carried over, never a placeholder
    third = _digest(work[:4], previous_summary=_digest(work[4:8], previous_summary=first))
    files = third.split("- Files touched:\n")[1].split("\n- ")[0]
    assert third.count("- Files touched:") == 1 and "`src/parser.py`" in files and "`src/m0.py`" in files
    newer = _digest([Message("user", (TextPart("Now write the changelog."),))], previous_summary=first)
    assert "Now write the changelog." in newer.split("## Key Information")[0]
    earlier = newer.split("- Earlier user requests, oldest first:")[1]
    assert "Now fix the failing parser test" in earlier  # the old current request, now an earlier one


def test_digest_is_deterministic() -> None:
    assert _digest(_session(40), budget=500) == _digest(_session(40), budget=500)


def test_scripted_double() -> None:
    with OfflineSummarizer(scripted=["one", ProviderError("down"), "three"]) as fake:
        req = SummaryRequest([], 10)
        assert fake(req).text == "one"
        with pytest.raises(ProviderError):
            fake(req)
        assert fake(req).text == "three"
        with pytest.raises(AssertionError, match="only 3 scripted"):
            fake(req)
    assert len(fake.requests) == 4 and fake.requests[0] is req
    with (
        pytest.raises(AssertionError, match="1 of 2 scripted outputs unused"),
        OfflineSummarizer(scripted=["a", "b"]) as f2,
    ):
        f2(req)
    with pytest.raises(KeyError), OfflineSummarizer(scripted=["unused"]):
        raise KeyError("the body's own failure is not masked")


def test_chain_falls_back_with_warnings_and_strict_raises() -> None:
    first, second = OfflineSummarizer(scripted=[ProviderError("anthropic: HTTP 500")]), OfflineSummarizer()
    result = ChainSummarizer([first, second])(SummaryRequest(_session(), 800))
    assert result.provider == "offline" and "## Current State" in result.text
    assert result.warnings == ["summarizer failed: anthropic: HTTP 500; falling back to offline"]
    strict = ChainSummarizer(
        [OfflineSummarizer(scripted=[ProviderError("boom")]), OfflineSummarizer()], strict=True
    )
    with pytest.raises(ProviderError, match="boom"):
        strict(SummaryRequest([], 10))
    last = ChainSummarizer(
        [OfflineSummarizer(scripted=[ProviderError("a")]), OfflineSummarizer(scripted=[ProviderError("b")])]
    )
    with pytest.raises(ProviderError, match=r"b \(after: summarizer failed: a"):
        last(SummaryRequest([], 10))


def test_default_is_offline() -> None:
    chain = make_summarizer()
    assert [type(s).__name__ for s in chain.links] == ["OfflineSummarizer"] and chain.window is None
    assert "## Todo List" in chain(SummaryRequest(_session(), 500)).text


# ------------------------------------------------------------------------ real transcripts


def _raw_claude(path: Path) -> dict[str, Any]:
    """Newest request, last edited file, last error text and last TodoWrite list, read from the
    raw JSON lines (not through ctxfold's reader), main chain only."""
    out: dict[str, Any] = {"request": None, "file": None, "error": None, "todos": None}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(raw) if raw.strip() else {}
        if line.get("isSidechain") or line.get("type") not in ("user", "assistant"):
            continue
        content = line["message"]["content"]
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        if line["type"] == "user" and not (
            line.get("isMeta") or line.get("isCompactSummary") or line.get("origin")
        ):
            text = "\n".join(b["text"] for b in blocks if b.get("type") == "text").strip()
            if text and not text.startswith(("<", "[Request interrupted")):
                out["request"] = text
        for b in blocks:
            if b.get("type") == "tool_result" and b.get("is_error"):
                c = b["content"]
                out["error"] = c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c)
            if b.get("type") == "tool_use" and b["name"] in ("Edit", "Write"):
                out["file"] = b["input"]["file_path"]
            if b.get("type") == "tool_use" and b["name"] == "TodoWrite":
                out["todos"] = [f"- [{t['status']}] {t['content']}" for t in b["input"]["todos"]]
    return out


CLAUDE = ["solsmile-thirdparty-proxy.jsonl", "posthog-impact-dashboard.jsonl", "fundwise.jsonl"]


@pytest.mark.parametrize("name", CLAUDE)
def test_digest_of_real_claude_sessions(name: str) -> None:
    path = real(f"claude-code/{name}")
    raw = _raw_claude(path)
    messages = list(load(path).messages)
    text = _digest(messages, budget=3000)
    assert TOK.count(text) <= 3000
    assert "\n".join(f"  {ln}" if ln.strip() else "" for ln in raw["request"].splitlines()) in text
    assert f"`{raw['file']}`" in text
    # the last failed tool call was fixed by a later one: it is no "error still open"
    open_errors = (
        text.split("- Errors still open:")[1].split("\n- ")[0] if "Errors still open" in text else ""
    )
    assert raw["error"].strip().splitlines()[0][:60] not in open_errors
    if raw["todos"]:
        assert text.rstrip().endswith("\n".join(raw["todos"]))
    assert text == _digest(list(load(path).messages), budget=3000)


def test_real_task_tools_todo_list() -> None:
    # TaskCreate subjects in order and every taskId's last TaskUpdate status ("completed" for
    # all nine), from jq over the raw file's main-chain tool_use inputs.
    subjects = [
        "Setup project + GitHub token check", "Fetch PostHog 90d GitHub data via GraphQL",
        "Filter bots (3-layer) and no-semantic PRs", "Compute Ship pillar", "Compute Lift pillar",
        "Compute Reach pillar", "Compute Steer pillar (with weak-signal flag)", "Build Streamlit dashboard",
        "Deploy to Streamlit Cloud + smoke test",
    ]  # fmt: skip
    text = _digest(list(load(real("claude-code/posthog-impact-dashboard.jsonl")).messages), budget=3000)
    assert text.rstrip().endswith("\n".join(f"- [completed] {s}" for s in subjects))


@pytest.mark.parametrize(
    ("rel", "newest", "file"),
    [  # newest user text and last edited path: jq over the raw lines (message role user / toolCall edit)
        ("pi/large-session.jsonl", "yeah, do it all", "packages/coding-agent/test/test-theme-colors.ts"),
        ("codex/raze.jsonl", "Review this implementation plan for adding multimodal support", None),
        # the task of the last instance, not the tool error the agent caused just before the end
        ("openhands/multi-swe-bench-output.jsonl", "I've uploaded a C code repository", None),
        # Codex code mode: the plan comes from tools.update_plan inside the exec tool's script
        ("codex/edgerunner.jsonl", "help me apply for the agentic engineering grant", None),
    ],
)
def test_digest_of_real_other_sessions(rel: str, newest: str, file: str | None) -> None:
    messages = list(load(real(rel)).messages)
    text = _digest(messages, budget=6000)
    assert TOK.count(text) <= 6000
    assert newest in text.split("## Key Information")[0]
    assert file is None or f"`{file}`" in text
    assert text == _digest(messages, budget=6000)


def test_errors_are_read_from_each_result_even_when_call_ids_repeat() -> None:
    """Local OpenAI-compatible servers number their calls (call_0 in every turn): each result is
    judged by its own exit status, not by that of the last result with the same id."""
    from ctxfold.providers.facts import gather

    def turn(command: str, output: str) -> list[Message]:
        call = ToolCallPart("call_0", "bash", {"command": command})
        result = ToolResultPart("call_0", (TextPart(output),), name="bash")
        return [Message("assistant", (call,)), Message("tool", (result,))]

    msgs = [
        Message("user", (TextPart("build it"),)),
        *turn("make", "make: *** [all] Error 2\nexit code 2"),
        *turn("ls", "Makefile\nexit code 0"),
    ]
    facts = gather(msgs)
    assert list(facts.errors) == ["bash: make: *** [all] Error 2"]
    assert [status for _, _, status in facts.commands] == ["exit 2", "exit 0"]


def test_results_pair_with_their_own_call_in_odd_orders() -> None:
    """A result written before its call still gives the command its status; a reused id does not
    hand a later call's result to an older unanswered command."""
    from ctxfold.providers.facts import gather

    def call(cid: str, name: str, args: dict[str, Any]) -> Message:
        return Message("assistant", (ToolCallPart(cid, name, args),))

    def result(cid: str, text: str, *, error: bool = False) -> Message:
        return Message("tool", (ToolResultPart(cid, (TextPart(text),), is_error=error),))

    early = gather([result("t1", "Exit code 2"), call("t1", "Bash", {"command": "make"})])
    assert [status for _, _, status in early.commands] == ["exit 2"]
    reused = gather(
        [
            call("call_0", "execute_bash", {"command": "make test"}),  # never answered
            Message("user", (TextPart("stop that"),)),
            call("call_0", "str_replace_editor", {"command": "view", "path": "/x"}),
            result("call_0", "ERROR: Invalid path", error=True),
        ]
    )
    assert [status for _, _, status in reused.commands] == ["no result"]


def test_a_code_mode_script_is_read_through_to_the_tools_it_calls() -> None:
    """Codex's code mode: one ``exec`` tool whose JavaScript calls ``tools.update_plan({...})``
    and ``tools.exec_command({...})``; the plan is the todo list, the commands are commands
    (with the script's exit status), a patch held in a variable still names its file."""
    plan = {"plan": [{"step": "Scaffold", "status": "completed"}, {"step": "Ship", "status": "in_progress"}]}
    script = (
        f"const r = await tools.update_plan({json.dumps(plan)});\n"
        'const o = await tools.exec_command({"cmd": "cargo test --workspace"});\n'
        'const patch = "*** Begin Patch\\n*** Update File: src/lib.rs\\n@@\\n-a\\n+b\\n*** End Patch";\n'
        "await tools.apply_patch(patch);"
    )
    messages = [
        Message("user", (TextPart("Build it"),)),
        _call("x1", "exec", script),
        _res("x1", "Process exited with code 0"),
    ]
    text = _digest(messages)
    assert text.rstrip().endswith("- [completed] Scaffold\n- [in_progress] Ship")
    assert "`cargo test --workspace` → exit 0" in text and "const r" not in text
    assert "`src/lib.rs` (edited)" in text


def test_a_real_code_mode_session_keeps_its_plan() -> None:
    text = _digest(list(load(real("codex/edgerunner.jsonl")).messages), budget=4000)
    todo = text.split("## Todo List\n", 1)[1]
    assert todo.startswith("- [completed] Scaffold Rust workspace") and "const " not in text
