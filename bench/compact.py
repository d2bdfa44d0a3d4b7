"""Benchmark ``ctxfold compact``: its time next to ``estimate``, and what the offline summary keeps.

    python bench/compact.py [--size-mb 200] [--quick] [--seed 0] [--out DIR] [FIXTURES_DIR]

1. Speed. On the large generated files of ``estimate.py`` (real sessions repeated with fresh
   ids, see ``_gen.py``; the same cached files are reused), ``compact_file`` with the offline
   summarizer (``--force``, outputs to a temp folder, no learned profile) and ``estimate_file``
   each run in a fresh child process, alternating, best of ``--repeat`` (2). Printed: seconds,
   the ratio compact / estimate (target <= 1.5) and each child's peak RSS (``VmHWM``).
2. Retention. Every real fixture is compacted with strategy ``summary`` and the offline
   summarizer, and ``NAME.summary.md`` is checked for what a resumed agent needs. The expected
   items are derived here from the loaded transcript, without the summarizer's code:

   * user requests: main-branch user messages with typed text (no tool results, not
     ``isMeta``/``isCompactSummary``/ctxfold's own/OpenHands observations/pi ``bashExecution``;
     harness wrappers such as ``<command-name>``, ``<local-command-stdout>``,
     ``<environment_context>`` left out);
     kept when their first 200 characters (whitespace-normalised) occur in the summary;
   * touched paths: ``path``/``file_path``/``filename``/``notebook_path`` arguments of tool
     calls plus ``*** Update File:``/``*** Add File:`` headers of patches; kept when the path (or,
     for an absolute path longer than 50 characters, its base name) occurs;
   * todo list: the items of the last ``TodoWrite``/``update_plan``/``todo_write`` list (or the
     ``TaskCreate`` subjects so far, when that came last); ``yes`` when all occur;
   * last error: the first meaningful line (not "Exit code 1") of the last ``is_error`` tool
     result, or the exception line of the last traceback; ``yes`` when its first 160 characters
     occur, ``other`` when only another line of that same result does.

   The scope is the context ``compact`` folds (after the last recorded compaction or reset:
   ``transcript.context.current_context``); files where the whole file differs get a second
   table. A miss is attributed to the summarizer's window (the request never reached the
   summarizer) or to the digest (it was in the input but not in the output).

It prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections import Counter as Tally
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import PRELUDE, run_child
from _gen import MB, default_dir, generate
from estimate import GENERATED_FORMATS, REAL, generator_sources

from ctxfold.providers.calls import call_args
from ctxfold.transcript.model import Message, TextPart, ToolResultPart

TARGET_RATIO = 1.5
REPORT_TARGET = 1.2  # issue: report costs at most 1.2x estimate on the same file
REQUEST_CHARS = 200
ERROR_CHARS = 160
LONG_PATH = 50
SHOW_MISSES = 4

_CHILD = (
    PRELUDE
    + r"""
from ctxfold.tokens.tokenizers import get_tokenizer
if args["what"] == "compact":
    from ctxfold.compaction.run import CompactOptions, compact_file
    from ctxfold.providers.registry import make_summarizer
    summarizer = make_summarizer("offline")
    out_dir = tempfile.mkdtemp(prefix="ctxfold-bench-compact-")
elif args["what"] == "report":
    from ctxfold.engine.replay import report_file
else:
    from ctxfold.tokens.estimate import estimate_file
tok = get_tokenizer("o200k")
getattr(tok, "native", lambda: None)()  # the engine a large file uses, loaded before the clock
out = {"loaded_peak_mb": hwm()}
t = time.perf_counter()
if args["what"] == "compact":
    r = compact_file(
        args["path"], summarizer,
        summarizer_window=summarizer.window,
        options=CompactOptions(fmt=args["fmt"], force=True, out_dir=out_dir),
    )
    out["seconds"] = time.perf_counter() - t
    out["info"] = {"status": r.status, "before": r.tokens_before, "after": r.tokens_after,
                   "messages": r.messages_before, "notes": list(r.notes)}
    shutil.rmtree(out_dir, ignore_errors=True)
elif args["what"] == "report":
    rep = report_file(args["path"], fmt=args["fmt"])
    out["seconds"] = time.perf_counter() - t
    out["info"] = {"requests": len(rep.rows)}
else:
    r = estimate_file(args["path"], fmt=args["fmt"])
    out["seconds"] = time.perf_counter() - t
    out["info"] = {"requests": len(r.requests), "context_tokens": r.context_tokens}
out["peak_mb"] = hwm()
print(json.dumps(out))
"""
)


# --------------------------------------------------------------------------- speed


def measure(what: str, path: Path, fmt: str) -> dict[str, Any]:
    job = {"what": what, "path": str(path), "fmt": fmt}
    return run_child(_CHILD, job, what=f"{what} child on {path.name}")


def speed(formats: Sequence[str], size_mb: float, seed: int, out: Path | None, repeat: int) -> None:
    rows = []
    for fmt in formats:
        sources = generator_sources(fmt)
        if not sources:
            print(f"{fmt}: no real sessions to build a large file from; skipped")
            continue
        t = time.perf_counter()
        path, reused = generate(fmt, sources, size_mb, seed=seed, out_dir=out)
        how = "reused cached" if reused else f"built in {time.perf_counter() - t:.1f} s:"
        print(f"{fmt}: {how} {path} ({path.stat().st_size / MB:.1f} MB)")
        runs: dict[str, list[dict[str, Any]]] = {"estimate": [], "report": [], "compact": []}
        for _ in range(repeat):  # alternating, so a burst of load hits all sides alike
            for what in ("estimate", "report", "compact"):
                runs[what].append(measure(what, path, fmt))
        rows.append((fmt, path, {k: min(v, key=lambda r: r["seconds"]) for k, v in runs.items()}, runs))
    if not rows:
        return
    head = (
        f"{'file':<28} {'MB':>6} {'estimate s':>10} {'peak MB':>8} {'+MB':>7} "
        f"{'compact s':>10} {'peak MB':>8} {'+MB':>7} {'ratio':>6}"
    )
    print(f"\ncompact vs estimate (fresh child each, best of {repeat}; tokenizer loaded before timing)")
    print(head)
    print("-" * len(head))
    for fmt, path, best, _ in rows:
        e, c = best["estimate"], best["compact"]
        ratio = c["seconds"] / e["seconds"]
        print(
            f"{'generated ' + fmt:<28} {path.stat().st_size / MB:>6.1f} {e['seconds']:>10.2f} "
            f"{e['peak_mb']:>8.1f} {e['peak_mb'] - e['loaded_peak_mb']:>+7.1f} {c['seconds']:>10.2f} "
            f"{c['peak_mb']:>8.1f} {c['peak_mb'] - c['loaded_peak_mb']:>+7.1f} {ratio:>6.2f}"
        )
    for fmt, _, best, runs in rows:
        e, c = best["estimate"], best["compact"]
        ratio = c["seconds"] / e["seconds"]
        ok = "ok" if ratio <= TARGET_RATIO else "OVER"
        info = c["info"]
        rep = best["report"]["seconds"] / e["seconds"]
        print(
            f"  {fmt}: ratio {ratio:.2f} (target <= {TARGET_RATIO}: {ok}); all runs: estimate "
            f"{_times(runs['estimate'])} s, compact {_times(runs['compact'])} s"
        )
        print(
            f"  {fmt}: report {best['report']['seconds']:.2f} s = {rep:.2f}x estimate "
            f"(target <= {REPORT_TARGET}: {'ok' if rep <= REPORT_TARGET else 'OVER'}); all runs {_times(runs['report'])} s"
        )
        print(
            f"    estimate: {e['info']['requests']:,} requests, context {e['info']['context_tokens']:,} tokens; "
            f"compact: {info['status']}, {info['messages']:,} messages, {info['before']:,} -> "
            f"{info['after'] or 0:,} predicted tokens{'; ' + '; '.join(info['notes']) if info['notes'] else ''}"
        )


def _times(runs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['seconds']:.2f}" for r in runs)


# --------------------------------------------------------------------------- expected items


def norm(text: str) -> str:
    return " ".join(text.split())


_HARNESS_TAGS = (
    "command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    "local-command-caveat|system-reminder|task-notification|environment_context|user_instructions|"
    "ide_opened_file|ide_selection|ide_diagnostics|user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr"
)
_WRAPPER = re.compile(rf"<({_HARNESS_TAGS})>.*?</\1>", re.S)
_HARNESS_PREFIXES = (
    "# AGENTS.md instructions",
    "Caveat: The messages below were generated",
    "[Request interrupted",
)
_SKIP_FLAGS = ("isMeta", "isCompactSummary", "ctxfold", "observation")
_NOT_TYPED = ("bashExecution", "custom", "hookMessage")
_PATH_KEYS = ("path", "file_path", "filename", "notebook_path")
_PATCH = re.compile(r"^\*\*\* (?:Update|Add) File: (.+?)\s*$", re.M)
_NOISE_LINE = re.compile(r"^(exit code \d+|command exited with code \d+|\(no output\))$", re.I)
_EXCEPTION = re.compile(r"^\s*[\w.]*(?:Error|Exception)\b.*$", re.M)
_TODO_KEYS = ("content", "step", "subject", "text", "title")


def request_of(m: Message) -> str | None:
    """What the person typed, or None for tool results, harness notes and injected messages."""
    if m.role != "user" or m.branch is not None or m.tool_results:
        return None
    if any(m.extra.get(k) for k in _SKIP_FLAGS):
        return None
    raw = m.extra.get("message")
    if isinstance(raw, dict) and raw.get("role") in _NOT_TYPED:  # pi: a `!command` the user ran, hooks
        return None
    texts = []
    for p in m.parts:
        if isinstance(p, TextPart):
            t = _WRAPPER.sub("", p.text).strip()
            if t and not t.startswith(_HARNESS_PREFIXES):
                texts.append(t)
    return "\n".join(texts) or None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _todo_items(name: str, args: Any) -> list[str] | None:
    key = re.sub(r"[^a-z]", "", name.lower())
    if key not in ("todowrite", "updateplan") or not isinstance(args, dict):
        return None
    items = args.get("plan" if key == "updateplan" else "todos")
    if not isinstance(items, list):
        return None
    texts = (_todo_text(it) for it in items)
    return [t.strip() for t in texts if t and t.strip()]


def _todo_text(item: Any) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return next((item[k] for k in _TODO_KEYS if isinstance(item.get(k), str)), None)
    return None


def _error_line(r: ToolResultPart) -> str | None:
    text = r.text
    if r.is_error:
        text = re.sub(r"</?tool_use_error>", "", text)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        meaningful = [ln for ln in lines if not _NOISE_LINE.match(ln)]
        return (meaningful or lines or ["(empty)"])[0]
    if "Traceback (most recent call last)" in text:
        tail = text.rsplit("Traceback (most recent call last)", 1)[1]
        found = _EXCEPTION.findall(tail)
        return found[-1].strip() if found else None
    return None


@dataclass
class Expected:
    requests: list[str] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)  # path -> first tool that named it
    todo: list[str] | None = None
    todo_tool: str | None = None
    error: tuple[str, str, str] | None = None  # (tool, line, the result's whole text)


def expected(messages: Sequence[Message]) -> Expected:
    exp = Expected()
    names: dict[str, str] = {}
    tasks: list[str] = []
    for m in messages:
        if m.branch is not None:
            continue
        req = request_of(m)
        if req:
            exp.requests.append(req)
        for call in m.tool_calls:
            names[call.id] = call.name
            args = call_args(call)
            if isinstance(args, dict):
                for k in _PATH_KEYS:
                    if isinstance(args.get(k), str) and args[k].strip():
                        exp.paths.setdefault(args[k].strip(), call.name)
            for s in _strings(args):
                if "*** " in s:
                    for path in _PATCH.findall(s):
                        exp.paths.setdefault(path.strip(), call.name)
            items = _todo_items(call.name, args)
            if items is not None:
                exp.todo, exp.todo_tool = items, call.name
            elif (
                call.name == "TaskCreate" and isinstance(args, dict) and isinstance(args.get("subject"), str)
            ):
                tasks.append(args["subject"].strip())
                exp.todo, exp.todo_tool = list(tasks), "TaskCreate"
        for r in m.tool_results:
            line = _error_line(r)
            if line:
                exp.error = (r.name or names.get(r.call_id, "tool"), line, r.text)
    return exp


# --------------------------------------------------------------------------- retention


class Recording:
    """The offline summarizer, remembering what it was asked and what it answered."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[Any] = []
        self.results: list[Any] = []

    @property
    def window(self) -> int | None:
        return getattr(self.inner, "window", None)

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        result = self.inner(request)
        self.results.append(result)
        return result


def path_kept(path: str, summary: str) -> bool:
    if path in summary:
        return True
    absolute = path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", path) is not None
    base = re.split(r"[\\/]", path.rstrip("/\\"))[-1]
    return absolute and len(path) > LONG_PATH and bool(base) and base in summary


@dataclass
class Check:
    req_kept: int
    req_total: int
    req_missed: list[tuple[str, str]]  # (request head, "window" | "digest")
    path_kept: int
    path_total: int
    path_missed: list[tuple[str, str]]  # (path, tool)
    todo: str
    todo_missed: list[str]
    error: str
    error_line: str | None


def check(exp: Expected, summary: str, given: set[str]) -> Check:
    """``given``: heads of the requests the summarizer received (a miss outside it is the window's)."""
    s = norm(summary)
    missed: list[tuple[str, str]] = []
    kept = 0
    for req in exp.requests:
        head = norm(req)[:REQUEST_CHARS]
        if head in s:
            kept += 1
        else:
            missed.append((head, "digest" if head in given else "window"))
    pmiss = [
        (p, tool) for p, tool in exp.paths.items() if not path_kept(p, summary) and not path_kept(norm(p), s)
    ]
    todo, tmiss = "none", []
    if exp.todo is not None:
        tmiss = [t for t in exp.todo if norm(t)[:REQUEST_CHARS] not in s]
        todo = "yes" if not tmiss else f"no {len(exp.todo) - len(tmiss)}/{len(exp.todo)}"
        todo = "empty" if not exp.todo else todo
    error, line = "none", None
    if exp.error:
        line = f"{exp.error[0]}: {exp.error[1]}"
        if norm(exp.error[1])[:ERROR_CHARS] in s:
            error = "yes"
        else:  # the summary may quote another line of the same result: say so, apart from "no"
            others = [
                norm(ln)[:ERROR_CHARS] for ln in re.sub(r"</?tool_use_error>", "", exp.error[2]).splitlines()
            ]
            quoted = [ln for ln in others if len(ln) >= 8 and not _NOISE_LINE.match(ln) and ln in s]
            error = "other" if quoted else "no"
    return Check(
        kept,
        len(exp.requests),
        missed,
        len(exp.paths) - len(pmiss),
        len(exp.paths),
        pmiss,
        todo,
        tmiss,
        error,
        line,
    )


@dataclass
class Retention:
    label: str
    status: str
    ctx: Check | None = None
    whole: Check | None = None
    tokens: int = 0
    budget: int = 0
    folded: int = 0
    given: int = 0
    dropped: int = 0
    todo_tool: str | None = None


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.0f}%)" if b else "-"


def retention_one(path: Path, out_dir: Path) -> Retention:
    from ctxfold.compaction.run import CompactOptions, compact_file
    from ctxfold.errors import CtxfoldError
    from ctxfold.formats.loader import load
    from ctxfold.providers.registry import make_summarizer
    from ctxfold.tokens.encodings import get_encoding
    from ctxfold.transcript.context import current_context

    label = f"{path.parent.name}/{path.name}"
    summarizer = Recording(make_summarizer("offline"))
    status = "compacted"
    summary_md: str | None = None
    try:
        result = compact_file(
            str(path),
            summarizer,
            summarizer_window=summarizer.window,
            options=CompactOptions(strategy="summary", force=True, out_dir=str(out_dir)),
        )
        status = result.status
        if result.status == "compacted":
            summary_md = result.outputs.summary.read_text(encoding="utf-8")
    except CtxfoldError as err:
        status = f"{type(err).__name__}"
    if not summarizer.results:
        return Retention(label, f"{status} (summarizer not called)")
    if summary_md is None:  # refused after summarizing: check the summarizer's own answer
        status += " (summary.md not written; checked the summarizer's output)"
        summary_md = summarizer.results[-1].text
    req = summarizer.requests[-1]
    given = {norm(r)[:REQUEST_CHARS] for r in map(request_of, req.messages) if r}
    transcript = load(str(path))
    ctx_messages = current_context(transcript.entries).messages
    ret = Retention(label, status)
    exp_ctx = expected(ctx_messages)
    ret.ctx = check(exp_ctx, summary_md, given)
    ret.todo_tool = exp_ctx.todo_tool
    if len(ctx_messages) != len([m for m in transcript.messages if m.branch is None]):
        ret.whole = check(expected(transcript.messages), summary_md, given)
    ret.tokens = len(get_encoding("o200k_base").encode_ordinary(summarizer.results[-1].text))
    ret.budget = req.budget_tokens
    ret.given, ret.dropped = len(req.messages), req.dropped
    ret.folded = len(ctx_messages)
    return ret


def print_table(title: str, rows: list[tuple[str, Check]], extra: dict[str, str] | None = None) -> None:
    head = f"{'file':<50} {'requests kept':>15} {'paths kept':>15} {'todo':>8} {'last error':>10}"
    if extra is not None:
        head += f" {'summary tok / budget':>22}"
    print(f"\n{title}")
    print(head)
    print("-" * len(head))
    for label, c in rows:
        line = (
            f"{label[:50]:<50} {pct(c.req_kept, c.req_total):>15} {pct(c.path_kept, c.path_total):>15} "
            f"{c.todo:>8} {c.error:>10}"
        )
        if extra is not None:
            line += f" {extra.get(label, ''):>22}"
        print(line)
    rk, rt = sum(c.req_kept for _, c in rows), sum(c.req_total for _, c in rows)
    pk, pt = sum(c.path_kept for _, c in rows), sum(c.path_total for _, c in rows)
    todo = Tally(c.todo.split()[0] for _, c in rows)
    err = Tally(c.error for _, c in rows)
    print(
        f"{'all':<50} {pct(rk, rt):>15} {pct(pk, pt):>15}   todo yes {todo['yes']} of {sum(todo.values()) - todo['none']}"
        f"; last error yes {err['yes']}, other line {err['other']} of {sum(err.values()) - err['none']}"
    )


def print_details(ret: Retention) -> None:
    c = ret.ctx
    if c is None:
        return
    print(
        f"  {ret.label}: {ret.status}; {ret.folded} context messages, summarizer given {ret.given}"
        f"{f' ({ret.dropped} oldest dropped to fit its window)' if ret.dropped else ''}; "
        f"summary {ret.tokens:,} of {ret.budget:,} budget tokens"
    )
    why = Tally(reason for _, reason in c.req_missed)
    if c.req_missed:
        print(
            f"    requests missed: {c.req_total - c.req_kept} ({', '.join(f'{k} {v}' for k, v in why.items())})"
        )
        for head, reason in c.req_missed[-SHOW_MISSES:]:
            print(f"      [{reason}] {head[:90]!r}")
        if len(c.req_missed) > SHOW_MISSES:
            print(f"      ... and {len(c.req_missed) - SHOW_MISSES} older")
    if c.path_missed:
        tools = Tally(tool for _, tool in c.path_missed)
        print(f"    paths missed by tool: {', '.join(f'{k} {v}' for k, v in tools.most_common())}")
        for p, tool in c.path_missed[:SHOW_MISSES]:
            print(f"      {tool}: {p[:100]}")
    if c.todo_missed:
        print(f"    todo ({ret.todo_tool}) items missed: {[t[:60] for t in c.todo_missed[:SHOW_MISSES]]}")
    if c.error_line:
        print(f"    last error ({c.error}): {c.error_line[:140]!r}")


def retention(root: Path) -> None:
    files = sorted(root.glob("*/*.jsonl")) if root.is_dir() else []
    if not files:
        print(f"\nno real fixtures at {root}; retention skipped")
        return
    results: list[Retention] = []
    with tempfile.TemporaryDirectory(prefix="ctxfold-bench-retention-") as d:
        for f in files:
            try:
                results.append(retention_one(f, Path(d)))
            except Exception as err:  # one broken reader must not hide the other rows
                print(
                    f"  {f.parent.name}/{f.name}: FAILED {type(err).__name__}: {str(err).splitlines()[0][:200]}"
                )
    checked = [(r.label, r.ctx) for r in results if r.ctx is not None]
    budget = {r.label: f"{r.tokens:,} / {r.budget:,}" for r in results}
    print_table(
        "retention in NAME.summary.md, offline summarizer, strategy summary (scope: the context compact folds)",
        checked,
        budget,
    )
    for r in results:
        if r.ctx is None:
            print(f"  {r.label}: {r.status}")
    whole = [(r.label, r.whole) for r in results if r.whole is not None]
    if whole:
        print_table(
            "same summaries against the whole file (main branch, across recorded compactions/resets)", whole
        )
    print("\ndetails (newest misses shown):")
    for r in results:
        print_details(r)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("fixtures", nargs="?", type=Path, default=REAL, help=f"real fixtures folder ({REAL})")
    ap.add_argument("--size-mb", type=float, default=200.0, help="size of each generated file (default 200)")
    ap.add_argument("--quick", action="store_true", help="20 MB generated files")
    ap.add_argument("--seed", type=int, default=0, help="session order of the generated file")
    ap.add_argument("--out", type=Path, default=None, help=f"folder for generated files ({default_dir()})")
    ap.add_argument("--formats", default=",".join(GENERATED_FORMATS), help="formats to generate")
    ap.add_argument("--repeat", type=int, default=2, help="child runs of each command (best is kept)")
    ap.add_argument("--no-speed", action="store_true", help="skip the timing part")
    ap.add_argument("--no-retention", action="store_true", help="skip the retention part")
    args = ap.parse_args(argv)
    size_mb = 20.0 if args.quick else args.size_mb
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load}")
    if not args.no_speed:
        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        speed(formats, size_mb, args.seed, args.out, args.repeat)
    if not args.no_retention:
        retention(args.fixtures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
