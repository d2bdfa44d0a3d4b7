"""Measure what a harness sends in the first request of a session that its own log leaves out.

    python bench/harness_prompts.py measure claude-code 2.1.121 [--subagent]   # one version, printed
    python bench/harness_prompts.py add claude-code 2.1.121 2.1.126 ...         # measure, write the table
    python bench/harness_prompts.py refresh [HARNESS ...]                       # + the newest npm version
    python bench/harness_prompts.py show [HARNESS ...]                          # the shipped tables

Each version is installed from npm into a cache outside the repository (``harness_lab.py``) and
run headless with default settings, no MCP servers, in an empty project folder of a private
HOME, against a scripted model server that records every request. Of the first model request
it counts, with ctxfold's own counter and per tokenizer (o200k, cl100k, heuristic): the system
prompt, the tool definitions, the messages, and the whole request; and of the session log the
harness wrote in that same run, ctxfold's estimate of the same first request. Their difference,
``unlogged``, is what ctxfold adds to a log of that version: the part of the request no log of
it can show (the system prompt and tools everywhere; for Codex the tools only, since its log
records the developer text; reminders a version injects without logging them).

With ``--subagent`` (Claude Code) the server also makes the model call the harness's sub-agent
tool (Task, later Agent), and the sub-agent's own first request is measured the same way against
the sub-agent's own log: a sub-agent has its own system prompt and tools.

The tables are ``core/tokens/harnesses/<harness>.json``, shipped with ctxfold as package data;
``docs/harnesses.md`` ("What each harness sends") describes them. For pi, whose logs do not name
the harness version (pi, Gemini CLI), each row also records the day the version was released
(``--released VERSION=DAY``, or ``--repo PATH`` pointing at a clone of badlogic/pi-mono or
google-gemini/gemini-cli: its tags, else its package.json history), so a log is matched by its
date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness_lab import (
    HARNESSES,
    Harness,
    Recorded,
    Reply,
    Session,
    install,
    installed_version,
    pi_redirect,
    run_session,
)
from harness_tables import PACKAGE_JSON, load_table, markdown, releases, summary, write_table
from harness_tty import run_interactive

from ctxfold.errors import CtxfoldError
from ctxfold.tokens.estimate import FileEstimate, estimate_file

TOKENIZERS = ("o200k", "cl100k", "heuristic")
REQUEST_FORMAT = {
    "claude-code": "anthropic",
    "pi": "anthropic",
    "codex": "openai-responses",
    "gemini-cli": "genai",
}
# ctxfold's reader of each harness's own log (without one, the system instruction and tools are
# taken as what the log leaves out, the messages as what it records)
LOG_FORMAT = {"claude-code": "claude-code", "pi": "pi", "codex": "codex", "gemini-cli": "gemini-cli"}
SUBAGENT_TOOLS = ("Agent", "Task")
SUBAGENT_PROMPT = "List the files in the current folder and report what you find."
MAIN_SUBAGENT_PROMPT = "Use a sub-agent to list the files here."


def _request_lines(h: Harness, body: dict[str, Any], path: str) -> dict[str, Any]:
    """A captured request as a line ctxfold's API readers take (Gemini names its model in the URL)."""
    if h.name == "gemini-cli" and "model" not in body:
        m = re.search(r"/models/([^:/]+):", path)
        return {**body, "model": m.group(1) if m else "gemini"}
    extra = [
        i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") == "additional_tools"
    ]
    if extra:  # Codex 0.14x sends its tools as an input item ("code mode"): counted as the tools
        tools = _flat(list(body.get("tools") or []) + [t for i in extra for t in i.get("tools") or []])
        return {**body, "tools": tools, "input": [i for i in body["input"] if i not in extra]}
    if REQUEST_FORMAT[h.name] == "anthropic" and any(
        m.get("role") == "system" for m in body.get("messages", [])
    ):
        # Claude Code 2.1.1xx+ sends some context as system-role messages: counted with the system
        system = body.get("system") or []
        system = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        for m in body["messages"]:
            if m.get("role") == "system":
                content = m.get("content")
                blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
                system.extend(b for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        messages = [m for m in body["messages"] if m.get("role") != "system"]
        return {**body, "system": system, "messages": messages}
    return body


def _flat(tools: list[Any]) -> list[Any]:
    """Tools with Codex's namespaces (0.16x: ``{type: namespace, tools: [...]}``) opened up."""
    out: list[Any] = []
    for t in tools:
        if isinstance(t, dict) and t.get("type") == "namespace" and isinstance(t.get("tools"), list):
            out.extend(_flat(t["tools"]))
        else:
            out.append(t)
    return out


def _estimate(path: Path, fmt: str, tokenizer: str, model: str | None = None) -> FileEstimate:
    return estimate_file(path, fmt=fmt, tokenizer=tokenizer, model=model)


def count_request(h: Harness, req: Recorded, tokenizer: str, work: Path) -> dict[str, int]:
    """The request's parts as ctxfold counts them."""
    body = _request_lines(h, req.body, req.path)
    line = work / f"request-{tokenizer}.jsonl"
    line.write_text(json.dumps(body) + "\n")
    est = _estimate(line, REQUEST_FORMAT[h.name], tokenizer, str(body.get("model")))
    parts = est.replay.by_category
    return {
        "system": parts["system"],
        "tools": parts["tools"],
        "messages": est.context_tokens - parts["system"] - parts["tools"] - est.replay.per_request,
        "request": est.context_tokens,
    }


def logged_first(
    h: Harness, log: Path, tokenizer: str, model: str | None, records: bool = False
) -> int | None:
    """ctxfold's estimate of the first request from the harness's own log, if it can read it:
    without the log's records of the system prompt and tools it sent (Claude Code 2.1.3xx's
    ``api-request-shape``: the table is what a log without them leaves out), or with them."""
    fmt = LOG_FORMAT.get(h.name)
    if fmt is None:
        return None
    if not records:
        log = _without_records(log)
    est = _estimate(log, fmt, tokenizer, model)
    return est.requests[0].estimate if est.requests else est.context_tokens


def _without_records(log: Path) -> Path:
    """``log`` without its ``api-request-shape`` lines (itself when it has none)."""
    lines = log.read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if b'"api-request-shape"' not in line[:200]]
    if len(kept) == len(lines):
        return log
    out = log.with_name(log.stem + ".without-records.jsonl")
    out.write_bytes(b"".join(kept))
    return out


def _tool_names(h: Harness, body: dict[str, Any]) -> list[str]:
    tools = _request_lines(h, body, "").get("tools") or []
    if h.name == "gemini-cli":
        return [d.get("name", "") for t in tools for d in t.get("functionDeclarations", [])]
    return [str(t.get("name") or t.get("type")) for t in tools if isinstance(t, dict)]


def _main_calls(s: Session) -> list[Recorded]:
    """The agent's own model calls: a turn of the conversation carries the tools (a title or
    topic call of the harness carries none)."""
    return [
        r
        for r in s.requests
        if r.model_call
        and not r.side
        and isinstance(r.body, dict)
        and (r.body.get("tools") or REQUEST_FORMAT[s.harness] != "anthropic")
    ]


def measure_one(h: Harness, req: Recorded, log: Path | None, work: Path) -> dict[str, Any]:
    body = req.body
    row: dict[str, Any] = {"model": body.get("model") or _request_lines(h, body, req.path)["model"]}
    row["tool_names"] = _tool_names(h, body)
    tokens: dict[str, dict[str, int]] = {}
    for tok in TOKENIZERS:
        counts = count_request(h, req, tok, work)
        logged = logged_first(h, log, tok, row["model"]) if log is not None else None
        if logged is None:  # no reader of its log: the messages are what it records
            logged = counts["request"] - counts["system"] - counts["tools"]
        # negative when ctxfold's reading of the log counts more than the harness sent
        tokens[tok] = {**counts, "logged": logged, "unlogged": counts["request"] - logged}
        with_records = logged_first(h, log, tok, row["model"], records=True) if log is not None else None
        if with_records is not None and with_records != logged:  # the log records what it sent
            tokens[tok]["unlogged_with_records"] = counts["request"] - with_records
    row["tokens"] = tokens
    return row


def _subagent_script(first: Recorded) -> list[Reply]:
    """Make the model call the sub-agent tool with the arguments its schema requires (a deferred
    tool, whose schema the first request does not carry, is called with the usual ones)."""
    tools = {t.get("name"): t for t in first.body.get("tools") or [] if isinstance(t, dict)}
    name = next((n for n in SUBAGENT_TOOLS if n in tools), "Agent")
    props = (tools.get(name, {}).get("input_schema") or {}).get("properties") or {"subagent_type": {}}
    args: dict[str, Any] = {"description": "List files", "prompt": SUBAGENT_PROMPT}
    if "subagent_type" in props:
        args["subagent_type"] = "general-purpose"
    script = [Reply(tool_calls=[(name, args)]), Reply("Three files."), Reply("Done.")]
    if name not in tools and "ToolSearch" in tools:  # 2.1.69 to 2.1.9x defer it: load it first
        script.insert(0, Reply(tool_calls=[("ToolSearch", {"query": f"select:{name}", "max_results": 1})]))
    return script


def _subagent_request(s: Session) -> Recorded | None:
    """The sub-agent's first request: its conversation opens with the prompt it was given."""
    for r in _main_calls(s)[1:]:
        messages = json.dumps(r.body.get("messages") or [])
        if SUBAGENT_PROMPT in messages and MAIN_SUBAGENT_PROMPT not in messages:
            return r
    return None


def _first(h: Harness, s: Session, what: str) -> Recorded:
    calls = _main_calls(s)
    if not calls:
        raise SystemExit(
            f"{h.name} ({what}) made no model call (exit {s.returncode}):\n{s.stderr[-1500:]}{s.stdout[-800:]}"
        )
    return calls[0]


def measure(name: str, version: str, *, subagent: bool = False) -> dict[str, Any]:
    """One version's row of the table (raises SystemExit when the harness did not answer).

    Claude Code is measured as users run it, in its interactive terminal UI with Anthropic's API
    defaults (tool search on); its variants: ``print`` (``claude -p``, whose logs name the
    entrypoint ``sdk-cli``) and ``no-tool-search`` (an endpoint other than Anthropic's, where
    Claude Code sends every tool's schema up front)."""
    h = HARNESSES[name]
    binary = install(h, version)
    version = installed_version(h, binary)
    row: dict[str, Any] = {"version": version, "measured": datetime.date.today().isoformat()}
    with tempfile.TemporaryDirectory(prefix=f"ctxfold-{name}-") as tmp:
        work = Path(tmp)
        if name == "claude-code":
            s = run_interactive(h, binary, [Reply("Hello.")], home=work / "home")
            row.update(measure_one(h, _first(h, s, "interactive"), _main_log(h, s), work))
            variants = {}
            p = run_session(h, binary, [Reply("Hello.")], home=work / "home-print")
            variants["print"] = measure_one(h, _first(h, p, "print"), _main_log(h, p), work)
            off = {"ENABLE_TOOL_SEARCH": "false"}
            n = run_interactive(h, binary, [Reply("Hello.")], env=off, home=work / "home-off")
            variants["no-tool-search"] = measure_one(h, _first(h, n, "no tool search"), _main_log(h, n), work)
            row["variants"] = variants
            if subagent:
                row["subagent"] = _measure_subagent(h, binary, _first(h, p, "print"), work)
        else:
            s = run_session(h, binary, [Reply("Hello.")], home=work / "home")
            if name == "pi" and not _main_calls(s):  # a pi without custom providers (0.7.x)
                pi_redirect(binary)
                args = ["--provider", "anthropic", "--model", "claude-sonnet-4-5", "-p", "Say hello."]
                s = run_session(h, binary, [Reply("Hello.")], home=work / "home-builtin", args=args)
            row.update(measure_one(h, _first(h, s, "headless"), _main_log(h, s), work))
    return row


def _main_log(h: Harness, s: Session) -> Path | None:
    logs = [p for p in s.logs if "subagents" not in p.parts]
    return max(logs, key=lambda p: p.stat().st_size) if logs else None


def _measure_subagent(h: Harness, binary: Path, first: Recorded, work: Path) -> dict[str, Any] | None:
    s = run_session(h, binary, _subagent_script(first), MAIN_SUBAGENT_PROMPT, home=work / "home-sub")
    req = _subagent_request(s)
    if req is None:
        return None
    agent_logs = sorted(s.home.glob(".claude/projects/*/*/subagents/agent-*.jsonl"))
    row = measure_one(h, req, agent_logs[0] if agent_logs else None, work)
    if not agent_logs:
        # 1.x kept the sub-agent inline in the session log, as a side chain: what it records of
        # the sub-agent's first request is the prompt the main agent gave it
        for counts in row["tokens"].values():
            counts["logged"] = counts["messages"]
            counts["unlogged"] = counts["request"] - counts["messages"]
    row["log"] = "own file" if agent_logs else "side chain"
    return row


def add(name: str, versions: list[str], *, subagent: bool, released: dict[str, str]) -> None:
    table = load_table(name)
    for v in versions:
        try:
            row = measure(name, v, subagent=subagent)
        except (
            SystemExit,
            CtxfoldError,
        ) as err:  # a version that does not run here, or whose log ctxfold cannot read
            print(f"{name} {v}: not measured: {str(err).splitlines()[0] if str(err) else err!r}", flush=True)
            continue
        if row["version"] in released:
            row["released"] = released[row["version"]]
        old = next((r for r in table["versions"] if r["version"] == row["version"]), None)
        if old is not None:
            if "released" in old and "released" not in row:
                row["released"] = old["released"]
            table["versions"].remove(old)
        table["versions"].append(row)
        print(summary(name, row), flush=True)
        write_table(name, table)  # after each version: a long run keeps what it measured


def newest(h: Harness) -> str:
    out = subprocess.run(["npm", "view", h.package, "version"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"npm view {h.package} failed: {out.stderr.strip()}")
    return out.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="measure one version and print it")
    m.add_argument("harness", choices=HARNESSES)
    m.add_argument("version")
    m.add_argument("--subagent", action="store_true")
    a = sub.add_parser("add", help="measure versions and write them to the shipped table")
    a.add_argument("harness", choices=HARNESSES)
    a.add_argument("versions", nargs="+")
    a.add_argument("--subagent", action="store_true")
    a.add_argument("--released", action="append", default=[], metavar="VERSION=YYYY-MM-DD")
    a.add_argument("--repo", type=Path, help="a clone of the harness's repository, for its release days")
    r = sub.add_parser("refresh", help="measure the newest npm version of each harness")
    r.add_argument("harnesses", nargs="*", default=list(HARNESSES))
    r.add_argument("--repo", type=Path, action="append", default=[], metavar="HARNESS=PATH")
    d = sub.add_parser(
        "dates", help="fill in the release days (pi, Gemini CLI) from a clone of the harness's repository"
    )
    d.add_argument("harness", choices=list(PACKAGE_JSON))
    d.add_argument("--repo", type=Path, required=True)
    s = sub.add_parser("show", help="print the shipped tables")
    s.add_argument("harnesses", nargs="*", default=list(HARNESSES))
    s.add_argument("--markdown", action="store_true", help="as the table in docs/harnesses.md")
    args = ap.parse_args()
    if args.command == "measure":
        row = measure(args.harness, args.version, subagent=args.subagent)
        print(summary(args.harness, row))
        print(json.dumps(row, indent=1))
    elif args.command == "add":
        released = dict(x.split("=", 1) for x in args.released)
        if args.repo:
            released = {**releases(args.repo, args.harness), **released}
        add(args.harness, args.versions, subagent=args.subagent, released=released)
    elif args.command == "refresh":
        repos = dict(x.split("=", 1) for x in args.repo)
        for name in args.harnesses:
            released = releases(Path(repos[name]), name) if name in repos else {}
            add(name, [newest(HARNESSES[name])], subagent=name == "claude-code", released=released)
    elif args.command == "dates":
        days = releases(args.repo, args.harness)
        table = load_table(args.harness)
        for row in table["versions"]:
            if row["version"] in days:
                row["released"] = days[row["version"]]
        write_table(args.harness, table)
    elif args.markdown:
        print(markdown(args.harnesses))
    else:
        for name in args.harnesses:
            for row in load_table(name)["versions"]:
                print(summary(name, row))


if __name__ == "__main__":
    main()
