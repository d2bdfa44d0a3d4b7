"""Summaries an agent can carry on from: where things stand, the user's own words and rules,
the last deliverable, exact values, the errors that matter, the step under way; on hand-built
conversations and on the hand labels of the real and bundled sessions (tests/carryon_labels.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from carryon_labels import HELD_OUT, LABELS
from conftest import REAL, ROOT

from ctxfold.compaction.guard import ContextGuard
from ctxfold.formats.loader import load
from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.carry import extract, facts_block
from ctxfold.providers.deliverable import first_and_last, sections
from ctxfold.providers.digest import digest
from ctxfold.providers.facts import gather
from ctxfold.providers.harness import user_words
from ctxfold.providers.rules import standing_rules
from ctxfold.providers.shellfiles import shell_files
from ctxfold.providers.standing import DONE, IN_PROGRESS, STOPPED, WAITING, Standing, assess
from ctxfold.providers.streamed import Digesting
from ctxfold.strategies.summary import continuation_message, continued_request
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart

TOK = get_tokenizer("o200k")


def _user(text: str, **extra: Any) -> Message:
    return Message("user", (TextPart(text),), extra=extra)


def _said(text: str, **extra: Any) -> Message:
    return Message("assistant", (TextPart(text),), extra=extra)


def _call(cid: str, name: str, args: Any, text: str = "") -> Message:
    parts: tuple[Any, ...] = (
        (TextPart(text), ToolCallPart(cid, name, args)) if text else (ToolCallPart(cid, name, args),)
    )
    return Message("assistant", parts)


def _result(cid: str, text: str, error: bool = False) -> Message:
    return Message("tool", (ToolResultPart(cid, (TextPart(text),), is_error=error),))


def _streamed(messages: list[Message]) -> Standing:
    """Where things stand, read one message at a time (what a long session's compaction reads)."""
    streamed = Digesting()
    for m in messages:
        streamed.add(m)
    return streamed.assessing.result()


# ------------------------------------------------------------------ where things stand


def test_a_question_or_options_mean_waiting_and_are_quoted() -> None:
    st = assess(
        [_user("Fix the login bug"), _said("Fixed it.\n\nWant me to (a) add a test or (b) ship it now?")]
    )
    assert st.state == WAITING and st.question and "(a) add a test or (b) ship it now?" in st.question
    approval = assess(
        [
            _user("Plan the migration"),
            _said("Here is the plan: 1. dump 2. load.\n\nPlease confirm before I start."),
        ]
    )
    assert approval.state == WAITING


def test_a_report_is_done_and_a_courtesy_closer_asks_nothing() -> None:
    st = assess(
        [
            _user("Rename the module"),
            _said("Renamed `a.py` to `b.py` and updated 4 imports. Let me know if you need anything else!"),
        ]
    )
    assert st.state == DONE and st.question is None


def test_in_progress_when_a_call_has_no_result_or_the_agent_stopped_before_its_step() -> None:
    assert assess([_user("Run the tests"), _call("c1", "Bash", {"command": "pytest"})]).state == IN_PROGRESS
    acting = [_user("Run the tests"), _call("c1", "Bash", {"command": "pytest"}), _result("c1", "1 failed")]
    assert assess(acting).state == IN_PROGRESS
    stopped = assess(
        [_user("Build it"), _said("The build failed on a missing export. Let me check the index file")]
    )
    assert stopped.state == IN_PROGRESS
    assert (
        assess([_said("Done."), _user("Now deploy it")]).state == IN_PROGRESS
    )  # the request has no answer yet
    # Codex marks what it says between tool calls as commentary: never the turn's answer
    note = (
        "I exported the proof file to D:/r/session.jsonl. That is useful only if the form asks for it. " * 3
    )
    codex = [_user("Fill in the grant form"), _said(note, phase="commentary")]
    assert assess(codex).state == IN_PROGRESS and assess(codex).deliverable is None
    answered = assess([*codex, _said(note, phase="final_answer")])
    assert answered.state == DONE and answered.deliverable is not None
    assert _streamed(codex) == assess(codex)
    head = digest(SummaryRequest(codex, 2000, continues=True))  # a sliding window's head: not a deliverable
    assert "- The assistant's last words before the messages kept verbatim:\n  I exported" in head
    assert "## Last Deliverable" not in head
    begun = [_user("Fetch the PRs, then the issues"), _said("PRs done — 8738 total. Now fetching issues.")]
    assert assess(begun).state == IN_PROGRESS  # a step it has begun (a real Claude Code session)
    assert assess([*begun[:1], _said("All fetched. Now that both are in, nothing is left.")]).state == DONE


def test_a_short_answer_to_the_assistants_question_keeps_the_question() -> None:
    """A "yes please" means nothing to the next agent without the offer it accepts (seen in a
    held-out Claude Code session that ends on it)."""
    offer = "Found it at `~/.claude/projects/x.jsonl`.\n\nWant me to copy it into the repo and commit it?"
    messages = [_user("Where is the session file?"), _said(offer), _user("yes please")]
    st = assess(messages)
    assert st.state == IN_PROGRESS and st.answers == "Want me to copy it into the repo and commit it?"
    assert _streamed(messages) == st
    text = digest(SummaryRequest(messages, 2000))
    state = text.split("## User Rules")[0].split("## User Requests")[0]
    assert "answers the assistant's question:\n  Want me to copy it into the repo and commit it?" in state
    note = continuation_message("yes please", st)
    assert (
        "It answers the assistant's question: `Want me to copy it into the repo and commit it?`" in note.text
    )
    assert continued_request(note) == "yes please"
    new_task = "No. Instead, rewrite the random generator so that it draws from a seeded PRNG " * 3
    assert assess([*messages[:2], _user(new_task)]).answers is None  # a request of its own


def test_harness_text_after_the_last_message_changes_nothing() -> None:
    reminder = _user(
        "<system-reminder>The task tools haven't been used recently.</system-reminder>",
        attachment={"type": "x"},
    )
    synthetic = _said("No response requested.", message={"model": "<synthetic>"})
    st = assess(
        [
            _user("Summarize the log"),
            _said("The log shows 3 restarts, all after the 02:00 cron job."),
            reminder,
            synthetic,
        ]
    )
    assert st.state == DONE and st.reply and st.reply[1].startswith("The log shows")


def test_the_users_words_not_the_harness() -> None:
    notification = _user(
        "<task-notification>\n<task-id>b1</task-id>\n<summary>done</summary>\n</task-notification>",
        origin={"kind": "task"},
    )
    custom = _user(
        "The user asked to refactor the parser (summary made by an extension).", customType="prompt-summary"
    )
    command = _user(
        "<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n<command-args>create TODO app by Next.js</command-args>"
    )
    builtin = _user("<command-name>/model</command-name>\n<command-args>claude-opus-4-6</command-args>")
    ide = _user("<ide_opened_file>The user opened a.py</ide_opened_file>\ndeploy it now")
    gemini_init = _user(  # what Gemini CLI's /init sends, as a user message
        "\nYou are an AI agent that brings the power of Gemini directly into the terminal. Your task is to "
        "analyze the current directory and generate a comprehensive GEMINI.md file"
    )
    pi_skill = _user(  # what pi sends for "/skill:graphify ./docs"
        '<skill name="graphify" location="/home/u/.pi/agent/skills/graphify/SKILL.md">\nReferences are '
        "relative to /home/u/.pi/agent/skills/graphify.\n\n# /graphify\n\n- Never invent an edge.\n</skill>"
        "\n\n./docs"
    )
    plan_exit = _user(
        "User has manually exited Plan Mode. Switching to Default mode (edits will require confirmation)."
    )
    approved = _user(
        "Plan approved. Switching to Default mode (edits will require confirmation)."
    )  # the user's act
    said = [
        user_words(m)
        for m in (notification, custom, command, builtin, ide, gemini_init, pi_skill, plan_exit, approved)
    ]
    assert said == [
        None, None, "/orchestrator create TODO app by Next.js", None, "deploy it now", None, "/skill:graphify\n\n./docs",
        None, "Plan approved. Switching to Default mode (edits will require confirmation).",
    ]  # fmt: skip


# ------------------------------------------------------------------------- rules


def test_standing_rules_are_kept_verbatim() -> None:
    said = [
        "Add the endpoint. Always run the linter before committing.",
        "Use pnpm, not npm. Reply in German from now on.",
        "What does this function do?",
        'Roast it. "What must I fix before submitting?"',  # a question, quoted: not a rule
        "i dont see it doing any work yet. I don't think we need a Dockerfile.",  # reports, not rules
        "In a.ts, useTools() is defined but never invoked.",
        "IMPORTANT LIMITS\n\nIMPORTANT:\n- do NOT start the dev server",  # headings, then a rule
        "Don't touch the migrations folder.",
        "ALWAYS VISIBLE:\n- the footer",  # a heading
        # what only describes: a "don't" after its own subject, a "without" in a negated phrase
        "Fix events not updating without a server restart. New events do not appear on /events.",
        "If it fails do not retry. The buttons don't need a border. I don't want a modal.",
        "Commit it without co-author trailers.",
    ]
    assert standing_rules(said) == [
        "Always run the linter before committing.",
        "Use pnpm, not npm.",
        "Reply in German from now on.",
        "do NOT start the dev server",
        "Don't touch the migrations folder.",
        "If it fails do not retry.",
        "The buttons don't need a border.",
        "I don't want a modal.",
        "Commit it without co-author trailers.",
    ]


def test_rules_in_other_languages_are_kept_too() -> None:
    said = [
        "Bot 排除不要只靠「已知名單」。特别好，分别处理。",  # 别 in 特别 and 分别 is no "don't"
        "テストは必ず実行してください。",
        "이 파일은 수정하지 마세요.",
        "Nunca hagas push a main. Gracias.",
        "Ne touche pas aux migrations.",
        "Bitte niemals direkt auf main pushen.",
        "Jangan ubah file konfigurasi. Terima kasih.",
    ]
    assert standing_rules(said) == [
        "Bot 排除不要只靠「已知名單」。",
        "テストは必ず実行してください。",
        "이 파일은 수정하지 마세요.",
        "Nunca hagas push a main.",
        "Ne touche pas aux migrations.",
        "Bitte niemals direkt auf main pushen.",
        "Jangan ubah file konfigurasi.",
    ]


def test_a_rule_wrapped_over_lines_is_quoted_whole() -> None:
    said = [
        "> Pick up FW-005. Use the API key or documented\n  > optional x402, do not invent secrets,\n"
        "  > then update the docs.\n- Never push to main.\n- Run the tests."
    ]
    assert standing_rules(said) == [
        "Use the API key or documented optional x402, do not invent secrets, then update the docs.",
        "Never push to main.",
    ]


def test_a_rule_given_while_rejecting_a_tool_call_is_kept() -> None:
    rejected = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
        "edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
        "never edit generated files, change the template instead"
    )
    messages = [
        _user("Fix the header"),
        _call("e1", "Edit", {"file_path": "gen/h.py"}),
        _result("e1", rejected, error=True),
    ]
    facts = gather(messages)
    assert "never edit generated files, change the template instead" in standing_rules(
        t for _, t in facts.said
    )
    assert facts.open_errors == []  # the user's no is not an error to fix
    text = digest(SummaryRequest(messages, 2000))
    assert "“never edit generated files, change the template instead”" in text.split("## User Requests")[0]


# -------------------------------------------------------------- files and errors


def test_files_read_and_changed_through_shell_commands() -> None:
    assert shell_files("nl -ba src/x.py | sed -n '248,300p'") == [("src/x.py", "read", (248, 300))]
    assert shell_files("cat > notes.md <<'EOF'\nhi\nEOF") == [("notes.md", "written", None)]
    assert shell_files("sed -i 's/a/b/' src/y.ts && rg -n foo src/z.py") == [
        ("src/y.ts", "edited", None), ("src/z.py", "read", None),
    ]  # fmt: skip
    reads = [m for k in range(38) for m in (
        _call(f"r{k}", "exec_command", json.dumps({"cmd": f"sed -n '{k * 10 + 1},{k * 10 + 10}p' core/x.py"})),
        _result(f"r{k}", "Process exited with code 0\nOutput:\nline"),
    )]  # fmt: skip
    patch = _call(
        "p",
        "exec_command",
        {
            "cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: core/y.py\n@@\n-a\n+b\n*** End Patch\nEOF"
        },
    )
    text = digest(SummaryRequest([_user("Review core/x.py"), *reads, patch, _result("p", "Done")], 3000))
    assert "`core/x.py` (read ×38, lines 1–380)" in text and "`core/y.py` (edited)" in text
    assert text.count("`core/x.py` (") == 1  # one line, not 38


def test_only_errors_that_still_stand_are_errors() -> None:
    messages = [
        _user("Make the suite pass"),
        _call("s", "Bash", {"command": "rg -n TODO_MARKER src"}),
        _result("s", "Exit code 1"),  # a search that found nothing
        _call("t1", "Bash", {"command": "pytest -q"}),
        _result("t1", "E   AssertionError: 2 != 3\n1 failed, 4 passed\nExit code 1", error=True),
        _call("t2", "Bash", {"command": "pytest -q"}),
        _result("t2", "5 passed\nExit code 0"),  # fixed by a later run
        _call("b", "Bash", {"command": "npm run build"}),
        _result("b", "src/a.ts(3,1): error TS2304: Cannot find name 'foo'.\nExit code 2", error=True),
    ]
    facts = gather(messages)
    assert [(what, line) for _, what, line in facts.open_errors] == [
        ("npm run build", "src/a.ts(3,1): error TS2304: Cannot find name 'foo'.")
    ]
    assert facts.settled == 2
    text = digest(SummaryRequest(messages, 2000))
    assert (
        "Resolve the open error first: `npm run build` → src/a.ts(3,1): error TS2304: Cannot find name 'foo'."
        in text
    )
    assert "AssertionError" not in text.split("## Exact Next Steps")[1]


def _gemini_run(cid: str, output: str, code: int, pgid: int = 595950) -> Message:
    """A result of Gemini CLI's shell tool, labelled as its 0.x versions label one."""
    return _result(cid, f"Output: {output}\nExit Code: {code}\nProcess Group PGID: {pgid}")


def test_gemini_cli_shell_labels_are_not_the_error() -> None:
    """The error is what the command printed, not the run's process group; and one run with
    ``python`` settled by the same run with ``python3`` (as in a real Gemini CLI session)."""
    labelled = [
        _user("Reproduce the bug"),
        _call("a", "run_shell_command", {"command": "python test_ipv6.py"}),
        _gemini_run("a", "/usr/bin/bash: line 1: python: command not found", 127),
    ]
    facts = gather(labelled)
    assert [(what, line) for _, what, line in facts.open_errors] == [
        ("python test_ipv6.py", "/usr/bin/bash: line 1: python: command not found")
    ]
    older = "Command: make\nDirectory: (root)\nStdout: (none)\nStderr: make: *** No rule to make target\n"
    older += "Error: (none)\nExit Code: 2\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 7"
    facts = gather(
        [_user("Build it"), _call("m", "run_shell_command", {"command": "make"}), _result("m", older)]
    )
    assert [line for _, _, line in facts.open_errors] == ["make: *** No rule to make target"]
    rerun = [
        *labelled,
        _call("b", "run_shell_command", {"command": "python3 test_ipv6.py"}),
        _gemini_run("b", "Test passed", 0),
    ]
    facts = gather(rerun)
    assert facts.open_errors == [] and facts.settled == 1


def test_a_file_written_by_the_shell_is_not_reading() -> None:
    messages = [_user("Check the regex")]
    for k, cmd in enumerate(["cat src/a.py", "cat << 'EOF' > probe.py\nimport re\nEOF", "echo ok 2>&1"]):
        messages += [_call(f"c{k}", "Bash", {"command": cmd}), _result(f"c{k}", "ok\nExit code 0")]
    text = digest(SummaryRequest(messages, 3000))
    assert "reading and searching: 1 run; last `cat src/a.py`" in text
    assert "writing files: 1 run; last `cat << 'EOF' > probe.py import re EOF`" in text
    assert "other commands: 1 run; last `echo ok 2>&1`" in text


def test_failures_that_leave_nothing_to_do_are_not_open() -> None:
    """An edit with nothing to change, a run the user stopped, a call turned down, a tool the
    harness does not have or arguments it does not take, a call its policy refused."""
    no_op = (
        "A secondary check by an LLM determined that no changes were necessary to fulfill the instruction."
    )
    messages = [
        _user("Add a progress bar"),
        _call("e", "replace", {"file_path": "script.js", "old_string": "a", "new_string": "b"}),
        _result("e", no_op, error=True),
        _call("s", "bash", {"command": "sleep 5"}),
        _result("s", "Command aborted", error=True),
        _call("q", "goal_question", {}),
        _result("q", "Tool goal_question not found", error=True),
        _call("p", "edit", {"path": "a.md", "oldText": "x", "newText": "x"}),
        _result("p", "No changes made to a.md. The replacement produced identical content.", error=True),
        _call("w", "WebFetch", {"url": "https://example.com"}),
        _result(
            "w", "The user doesn't want to proceed with this tool use. The tool use was rejected.", error=True
        ),
        _call("v", "EnterPlanMode", {"x": 1}),
        _result("v", "<tool_use_error>InputValidationError: EnterPlanMode failed", error=True),
        _call("g", "replace", {"file_path": "b.tsx", "old_string": "a", "new_string": "b"}),
        _result(
            "g",
            "Tool execution denied by policy. You are in Plan Mode and cannot modify source code.",
            error=True,
        ),
        _call("c", "replace", {"file_path": "c.tsx", "old_string": "a", "new_string": "b"}),
        _result("c", "[Operation Cancelled] Reason: Operation cancelled", error=True),
        _call("r", "Read", {"file_path": "logo.svg"}),
        _result(
            "r",
            "File content (403.3KB) exceeds maximum allowed size (256KB). Use offset and limit",
            error=True,
        ),
        _call("t", "bash", {"command": "npm test"}),
        _result("t", "FAIL src/a.test.ts\nExit code 1", error=True),
    ]
    facts = gather(messages)
    assert [what for _, what, _ in facts.open_errors] == ["npm test"] and facts.settled == 9
    # the words count only at the head of the result: a log that quotes them is still a failure
    quoted = "FAIL src/b.test.ts\n" + "x\n" * 400 + "no changes were necessary\nExit code 1"
    facts = gather(
        [_user("Test"), _call("u", "bash", {"command": "npm test"}), _result("u", quoted, error=True)]
    )
    assert len(facts.open_errors) == 1


def test_commands_the_user_ran_in_the_shell_mode_are_named() -> None:
    """Claude Code's `!open index.html` and pi's `!ls` are no requests, but what the user did
    (a held-out session ends on one): listed once each, as last run, and kept on a second pass."""
    pi_ls = {"message": {"role": "bashExecution", "command": "ls", "exitCode": 0, "cancelled": False}}
    messages = [
        _user("Build the timer"),
        _said("Done: index.html, style.css and script.js are in place, and the timer runs. " * 4),
        _user("<bash-input>open index.html</bash-input>"),
        _user("<bash-stdout></bash-stdout><bash-stderr></bash-stderr>"),
        _user("Ran `ls`\n```\nindex.html\n```", **pi_ls),
        _user("<bash-input>open index.html</bash-input>"),
    ]
    assert [user_words(m) for m in messages[2:]] == [None, None, None, None]
    text = digest(SummaryRequest(messages, 2000))
    typed = "- Commands the user ran in the harness's shell mode:\n  - `ls` → exit 0\n  - `open index.html` → ok\n"
    assert typed in text
    assert typed in digest(SummaryRequest([_user("And a pause button")], 2000, previous_summary=text))


def test_one_error_tried_three_ways_is_open_once() -> None:
    cd = "/bin/sh: 1: cd: can't cd to /w/build/build_release\nExit code 2"
    messages = [_user("Build it")]
    for k, cmd in enumerate(["make", "rm -rf build && make", "cmake . && make"]):
        messages += [_call(f"m{k}", "bash", {"command": cmd}), _result(f"m{k}", cd, error=True)]
    assert [what for _, what, _ in gather(messages).open_errors] == ["cmake . && make"]


# ----------------------------------------------------------- the last deliverable


REVIEW = "\n\n".join(
    [
        "**Findings**\n" + " ".join(f"Finding {k} is a full sentence about the code." for k in range(40)),
        "**Answers**\n" + " ".join(f"Answer {k} is a full sentence too." for k in range(40)),
        "**Recommended Shape**\nKeep the content field as text. Store media references separately.",
    ]
)


def test_the_last_deliverable_is_whole_or_loses_whole_sections_named() -> None:
    messages = [_user("Review this plan"), _said(REVIEW)]
    roomy = digest(SummaryRequest(messages, 3000))
    body = roomy.split("## Last Deliverable (verbatim)\n")[1].split("\n## ")[0]
    assert "\n".join(ln[2:] for ln in body.strip("\n").splitlines()) == REVIEW  # whole, verbatim
    tight = digest(SummaryRequest(messages, 700))
    assert TOK.count(tight) <= 700
    assert "Finding 39 is a full sentence about the code." in tight  # the first section whole
    assert "Sections left out for room: “Answers” was not kept here." in tight  # named, and never half kept
    assert "Answer 0" not in tight
    assert [t for t, _ in sections(REVIEW)] == ["Findings", "Answers", "Recommended Shape"]


def _notice(task: str, body: str) -> Message:
    return _user(f"<task-notification>\n<task-id>{task}</task-id>\n{body}\n</task-notification>")


def test_background_tasks_still_running_are_named_and_waiting_on_one_is_work_under_way() -> None:
    """A resumed session is a new process that gets no notice of the old one's background tasks
    (Claude Code's run_in_background and Monitor): an agent told only "done" would wait for ever."""
    started = "Command running in background with ID: b1. Output is being written to: /tmp/t/b1.output"
    messages = [
        _user("Fetch the PRs and the issues, then build the report"),
        _call("c1", "Bash", {"command": "python fetch.py", "run_in_background": True}),
        _result("c1", started),
        _call("c2", "Bash", {"command": "npm run dev", "run_in_background": True}),
        _result(
            "c2", "Command running in background with ID: b2. Output is being written to: /tmp/t/b2.output"
        ),
        _call("c3", "BashOutput", {"bash_id": "b2"}),
        _result("c3", "<status>failed</status>\n\n<stderr>port in use</stderr>"),  # a poll ends b2
        _call("c4", "Monitor", {"command": "tail -f log | grep DONE"}),
        _result("c4", "Monitor started (task m1, timeout 900000ms). You will be notified on each event."),
        _call("c5", "TaskStop", {"task_id": "m1"}),
        _result("c5", '{"message":"Successfully stopped task: m1"}'),
        _notice(
            "m0", '<summary>Monitor event: "Nightly sync"</summary>\n<event>page 3</event>'
        ),  # began earlier
        _said("Waiting."),
    ]
    st = assess(messages)
    assert st.state == IN_PROGRESS and st.reason == "the assistant is waiting on a background task it started"
    assert st.running == [
        "`python fetch.py` (task b1; output in `/tmp/t/b1.output`)",
        '"Nightly sync" (task m0)',
    ]
    assert _streamed(messages) == st
    text = digest(SummaryRequest(messages, 2000))
    assert "- Still running in the background when the log ends" in text
    assert "  - `python fetch.py` (task b1; output in `/tmp/t/b1.output`)" in text
    prompt = facts_block(extract(SummaryRequest(messages, 2000)), 4000)  # what a summarizer model is told
    assert "Still running in the background when the log ends" in prompt and "(task m0)" in prompt
    note = continuation_message("Fetch the PRs and the issues, then build the report", st)
    assert "this session gets none of its notices, so read its output" in note.text
    assert continued_request(note) == "Fetch the PRs and the issues, then build the report"
    ended = [
        *messages[:-1],
        _notice("b1", "<status>completed</status>"),
        _notice("m0", "<status>killed</status>"),
    ]
    assert assess([*ended, _said("Waiting.")]).running == []
    assert assess([*ended, _said("Waiting.")]).state == DONE  # nothing left to wait on
    assert assess([*messages[:-1], _said("Waiting for your go-ahead.")]).state == WAITING  # on the user
    progress = _said("Chunk 9 done (6518 total). 4 chunks of PRs left, then issues.")  # counts what is left
    assert assess([*messages[:-1], progress]).state == IN_PROGRESS
    assert assess([*ended, progress]).state == DONE  # with no task running, a report like any other


def test_a_session_the_user_stopped_mid_answer_is_stopped_not_done() -> None:
    """The user pressed Esc (Claude Code's note after it, pi's aborted response): the next agent
    waits for their word, as the harness's own model does, rather than finish the stopped work or
    call it delivered (a real pi session: a cut-off "Excellent! The new architecture" read as done)."""
    cut = Message("assistant", (TextPart("Excellent! The new architecture"),), stopped=True)  # pi's reader
    pi = [_user("Refactor the TUI onto AgentSession"), cut]
    claude = [_user("Run the migration"), _call("c1", "Bash", {"command": "make migrate"})]
    claude += [
        _result("c1", "Interrupted by user", error=True),
        _user("[Request interrupted by user for tool use]"),
    ]
    codex = [
        _user("Run the suite"),
        Message("system", (TextPart("<turn_aborted>\nThe previous turn was interrupted"),)),
    ]
    for messages in (pi, claude, codex, [*pi, _result("x", "aborted")]):
        st = assess(messages)
        assert st.state == STOPPED and st.deliverable is None
        assert _streamed(messages) == st
    text = digest(SummaryRequest(pi, 2000))
    assert "**Where things stand: stopped by the user.**" in text
    assert "The assistant's last words before the user stopped it:\n  Excellent! The new architecture" in text
    assert "wait for their next message, which says how to go on" in text
    note = continuation_message("Refactor the TUI onto AgentSession", assess(pi))
    assert "was stopped by the user before the assistant finished. Do not resume it on your own" in note.text
    assert continued_request(note) == "Refactor the TUI onto AgentSession"
    assert assess([*pi, _user("ok go on, but keep the old file")]).state == IN_PROGRESS  # their word came
    call = ToolCallPart("b1", "bash", {"command": "npm run build"})
    stopped_call = Message("assistant", (call,), stopped=True)
    text = digest(SummaryRequest([pi[0], stopped_call], 2000))
    assert "- Tool calls it did not make: `npm run build`." in text


def test_a_deliverable_before_the_newest_request_says_so() -> None:
    """Quoted under the newest request with nothing said, the answer to an earlier request reads
    as the answer to this one (seen in a real Claude Code session cut mid-way)."""
    report = "Fixed the chat panel: it now uses the light theme and a custom input. " * 4
    done = [_user("Fix the chat panel"), _said(report)]
    going = [*done, _user("It still hides the user's own video."), _call("c", "Edit", {"file_path": "a.tsx"})]
    note = "- It answered an earlier request, not the current one (above), which came after it."
    assert note not in digest(SummaryRequest(done, 2000))
    text = digest(SummaryRequest(going, 2000))
    assert f"## Last Deliverable (verbatim)\n{note}\n  Fixed the chat panel" in text
    prompt = facts_block(extract(SummaryRequest(going, 2000)), 4000)  # what a summarizer model is told
    assert "The last deliverable (the answer to an earlier request, not to the newest one)" in prompt
    assert _streamed(going).earlier_deliverable
    rolled = digest(SummaryRequest([_user("And the mute button?")], 2000, previous_summary=text))
    assert rolled.count(note) == 1  # made afresh, not carried as part of the deliverable


def test_an_older_long_request_keeps_its_first_and_last_sentences() -> None:
    long = "Build the importer. " + "It reads CSV rows and maps the columns. " * 30 + "Ship it by Friday."
    assert first_and_last(long, 600) == "Build the importer. […] Ship it by Friday."


# ------------------------------------------------------------- what the agent is told


def test_the_continuation_tells_the_truth_and_quotes_the_request() -> None:
    waiting = assess([_user("Fix it"), _said("Fixed. Should I also update the docs?")])
    done = assess([_user("Fix it"), _said("Fixed: the parser strips the separators; the suite passes.")])
    going = assess([_user("Fix it"), _call("c", "Bash", {"command": "pytest"})])
    texts = {st.state: continuation_message("Fix it", st).text for st in (waiting, done, going)}
    assert (
        "Put this question to the user again and wait" in texts[WAITING]
        and "Should I also update the docs?" in texts[WAITING]
    )
    assert "Wait for the user's next request; do not redo" in texts[DONE] and "Continue" not in texts[DONE]
    assert "Continue working on this request" in texts[IN_PROGRESS]
    for st in (waiting, done, going):
        assert continued_request(continuation_message("Fix it", st)) == "Fix it"


def test_the_guard_keeps_the_step_under_way_verbatim_after_the_summary() -> None:
    guard = ContextGuard("gpt-4o", window=8_000)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Explain the parser."}]
    guard.before_request(history, system="You are a coding agent.")
    guard.after_response(300)
    history += [
        {"role": "assistant", "content": "The parser reads each line. " * 1200},
        {"role": "user", "content": "Now fix the parser."},
        {"role": "assistant", "content": "Running the tests first.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed: test_commas"},
    ]  # fmt: skip
    prepared = guard.before_request(history, system="You are a coding agent.")
    assert prepared.compacted and prepared.messages[2:] == history[-2:]  # the exchange as it was sent
    assert guard.state.watermark == len(history) - 2
    assert "The step under way is kept verbatim after this note." in prepared.messages[1]["content"]
    again = guard.before_request(history, system="You are a coding agent.")
    assert (
        not again.compacted and again.messages == prepared.messages
    )  # [summary, continuation] + events[mark:]


def test_the_summary_names_the_original_session(tmp_path: Path) -> None:
    import ctxfold

    src = ROOT / "fixtures" / "ctxfold" / "coding-session.jsonl"
    result = ctxfold.compact(src, window=3_200, out_dir=tmp_path, force=True)
    assert result.summary is not None
    assert f"`{src.resolve()}` (entries 1–20, the whole session)" in result.summary.text
    assert "Working directory" not in result.summary.text  # its log names none


@pytest.mark.parametrize(
    "src",
    [
        ROOT / "fixtures" / "codex" / "lab-0169.jsonl",
        ROOT / "fixtures" / "heldout" / "claude-code" / "apanloco-random.jsonl",
        REAL / "pi" / "before-compaction.jsonl",
    ],
    ids=["codex", "claude-code", "pi"],
)
def test_the_summary_names_the_working_directory_the_log_names(src: Path, tmp_path: Path) -> None:
    """Where the session ran, so that the paths it names can be found (a Codex or pi header's
    ``cwd``, a Claude Code line's), for the offline digest and in a summarizer model's prompt."""
    import ctxfold
    from ctxfold.providers.render import build_prompt

    if not src.is_file():
        pytest.skip(f"{src.name} not available (../shared absent)")
    named = [d.get("cwd") or (d.get("payload") or {}).get("cwd") for d in map(json.loads, src.open())]
    cwd = [c for c in named if isinstance(c, str) and c][-1]
    predicted = ctxfold.estimate(src).predicted.tokens
    result = ctxfold.compact(src, window=int(predicted / 0.85), out_dir=tmp_path, force=True)
    assert result.summary is not None
    assert f"Working directory: `{cwd}`" in result.summary.text
    prompt = build_prompt(SummaryRequest([_user("Fix it")], 500, cwd=cwd), window=50_000)
    assert f"Name the working directory in Current State: `{cwd}`." in prompt.user


# --------------------------------------------------------- the hand labels, asserted


def _labelled() -> list[tuple[str, Path]]:
    out = []
    for key in LABELS:
        path = ROOT / key if key.startswith("fixtures/") else REAL / key
        out.append((key, path))
    return out


def _norm(text: str) -> str:
    return " ".join(" ".join(ln.strip().removeprefix("> ").strip() for ln in text.splitlines()).split())


@pytest.mark.parametrize("key", list(HELD_OUT))
def test_the_held_out_labels_quote_their_session(key: str) -> None:
    """Each held-out label's words are in its session (the bench scores ctxfold on them; no
    test holds ctxfold to them)."""
    path = ROOT / key if key.startswith("fixtures/") else REAL / key
    if not path.is_file():
        pytest.skip(f"{key} not available (../shared absent)")
    label = HELD_OUT[key]
    text = path.read_text(encoding="utf-8")
    docs = (
        [json.loads(ln) for ln in text.splitlines() if ln.strip()]
        if path.suffix == ".jsonl"
        else [json.loads(text)]
    )
    raw = _norm(json.dumps(docs, ensure_ascii=False))
    said = [x for k in ("requests", "rules", "values", "paths") for x in label[k]]
    said += [label[k] for k in ("question", "next", "deliverable") if label.get(k)]
    unquoted = [x for x in said if _norm(json.dumps(x, ensure_ascii=False)[1:-1]) not in raw]
    assert unquoted == [] and label["state"] in ("waiting", "in_progress", "done")


@pytest.mark.parametrize(("key", "path"), _labelled(), ids=[k for k, _ in _labelled()])
def test_the_labels_hold_on_every_session(key: str, path: Path) -> None:
    """Where things stand is read right, and a roomy summary keeps every labelled request,
    rule, value and path, and the last deliverable whole."""
    if not path.is_file():
        pytest.skip(f"{key} not available (../shared absent)")
    label = LABELS[key]
    messages = list(current_context(load(path).entries).messages)
    st = assess(messages)
    assert st.state == label["state"]
    if label.get("question"):
        assert st.question and label["question"] in st.question
    if label["deliverable"]:
        assert st.deliverable and _norm(label["deliverable"]) in _norm(st.deliverable[1])
    text = _norm(digest(SummaryRequest(messages, 12_000)))
    missing = [x for k in ("requests", "rules", "values", "paths") for x in label[k] if _norm(x) not in text]
    assert missing == []
    if st.deliverable:
        assert _norm(st.deliverable[1]) in text
