"""Can the next agent carry on? What each strategy's compacted context keeps of what matters.

    python bench/carryon.py [--real DIR] [--strategy S ...] [--provider P] [--files] [--held-out]

Every real session under ``DIR`` (default ``$CTXFOLD_REAL_FIXTURES`` or ``../shared/fixtures-real``:
claude-code, codex, pi, litellm, openhands) and the bundled ones under ``fixtures/`` that have hand
labels in ``tests/carryon_labels.py`` is compacted as it would be when due: its window is set so
that the request the session makes now is at 85 % of it (over the 80 % threshold), ``--force``,
no learned profile, the offline summarizer unless ``--provider`` says otherwise. What the next
agent receives is read back from the compacted file (the context it holds after its last
compaction) and checked against the labels:

* ``req``: the user's requests kept (a snippet of each; the newest must be whole);
* ``rules``: the user's standing rules kept verbatim;
* ``values``: exact values (URLs, ports, commits, ids, versions, error text) kept;
* ``paths``: the files that matter kept;
* ``deliv``: the last substantial assistant message kept whole (``-`` when the label has none);
* ``state``: the next agent is told the truth about where things stand: waiting for the user,
  in progress or done (read from the summary's "Where things stand" line, else from what the
  continuation tells the agent to do; a strategy that keeps the last turn verbatim and makes no
  summary leaves the agent the same view it had).

``--held-out`` scores the held-out sessions instead (``HELD_OUT``: Gemini CLI's real chats,
labelled by someone who had not seen their summaries, and asserted by no test).

Matching ignores whitespace, indentation and quote marks (``> ``). It prints numbers and
asserts nothing; the tests assert the labels themselves on the fixtures.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from carryon_labels import HELD_OUT, LABELS  # noqa: E402

import ctxfold  # noqa: E402
from ctxfold.errors import CtxfoldError  # noqa: E402
from ctxfold.transcript.context import current_context  # noqa: E402
from ctxfold.transcript.model import CompactionMarker, Message, TextPart, ToolCallPart, ToolResultPart  # noqa: E402

STRATEGIES = ("summary", "sliding-window", "mask-observations")
REAL_FOLDERS = ("claude-code", "codex", "pi", "litellm", "openhands", "gemini-cli")
FILL = 0.85  # the request's share of the window when compaction runs
_HARNESS_TAGS = re.compile(r"<(ide_opened_file|system-reminder|ide_selection)>.*?</\1>", re.S)
_STATE = re.compile(r"where things stand:\W*(waiting|in progress|done|stopped)", re.I)


def norm(text: str) -> str:
    """Whitespace collapsed, each line's indentation and quote marks dropped."""
    lines = (re.sub(r"^\s*(?:>\s?)*", "", ln) for ln in text.splitlines())
    return " ".join(" ".join(lines).split())


def real_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("CTXFOLD_REAL_FIXTURES")
    return Path(env) if env else ROOT.parent / "shared" / "fixtures-real"


def sessions(real: Path, labels: dict[str, Any]) -> list[tuple[str, Path]]:
    out = []
    for key in labels:
        path = ROOT / key if key.startswith("fixtures/") else real / key
        if (key.split("/")[0] in REAL_FOLDERS or key.startswith("fixtures/")) and path.is_file():
            out.append((key, path))
    return out


def message_text(m: Message) -> str:
    out = []
    for p in m.parts:
        if isinstance(p, TextPart):
            out.append(p.text)
        elif isinstance(p, ToolCallPart):
            out.append(f"{p.name} {p.arguments}")
        elif isinstance(p, ToolResultPart):
            out.append(p.text)
    return "\n".join(out)


def received(path: Path) -> tuple[str, str, list[Message]]:
    """What the next agent gets from the compacted file: (summary text, all text, messages)."""
    t = ctxfold.read(path)
    ctx = current_context(t.entries)
    summary = ""
    for e in t.entries:
        if isinstance(e, CompactionMarker) and e.summary:
            summary = e.summary
    texts = [message_text(m) for m in ctx.messages]
    whole = "\n".join([summary, *texts]) if summary and summary not in "\n".join(texts) else "\n".join(texts)
    return summary, whole, list(ctx.messages)


@dataclass
class Score:
    found: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    deliverable: bool | None = None
    state: str = "?"
    state_ok: bool = False
    note: str = ""
    missed: list[str] = field(default_factory=list)

    def add(self, name: str, items: list[str], text: str) -> None:
        hits = [x for x in items if norm(x) in text]
        self.found[name] = len(hits)
        self.total[name] = len(items)
        self.missed += [f"{name}: {x[:60]}" for x in items if x not in hits]


def newest_whole(original: list[Message], snippet: str) -> str | None:
    """The whole text of the newest user message holding ``snippet`` (harness tags removed)."""
    for m in reversed(original):
        if m.role == "user" and norm(snippet) in norm(m.text):
            return norm(_HARNESS_TAGS.sub("", m.text))
    return None


def deliverable_text(original: list[Message], snippet: str) -> str | None:
    for m in reversed(original):
        if m.role == "assistant" and norm(snippet) in norm(m.text):
            return norm(m.text)
    return None


def told(summary: str, messages: list[Message]) -> str:
    """What the next agent is told about where things stand."""
    match = _STATE.search(summary) or next((s for m in messages[:3] if (s := _STATE.search(m.text))), None)
    if match:
        return match.group(1).lower().replace(" ", "_")
    head = " ".join([summary, *(m.text for m in messages[:3] if m.role == "user")])
    if "Continue working" in head or "Continue the current user request" in head:
        return "in_progress"
    return "?"


def score(label: dict[str, Any], path: Path, strategy: str, provider: str, out: Path) -> Score:
    s = Score()
    original = list(current_context(ctxfold.read(path).entries).messages)
    predicted = ctxfold.estimate(path).predicted.tokens
    window = max(2_000, math.ceil(predicted / FILL))
    try:
        result = ctxfold.compact(
            path, window=window, out_dir=out, strategy=strategy, force=True, summarizer=provider
        )
        summary, whole, messages = received(result.outputs.compacted)
        made_summary = result.summary is not None
    except CtxfoldError as err:  # refused: nothing is written, the agent goes on with the session as it is
        s.note = f"refused ({type(err).__name__})"
        summary, whole, messages = "", "\n".join(map(message_text, original)), original
        made_summary = False
    text = norm(whole)
    requests = list(label["requests"])
    s.add("req", requests, text)
    newest = newest_whole(original, requests[-1]) if requests else None
    if newest is not None:
        s.total["req"] += 1
        if newest in text:
            s.found["req"] += 1
        else:
            s.missed.append("req: newest not whole")
    s.add("rules", list(label["rules"]), text)
    s.add("values", list(label["values"]), text)
    s.add("paths", list(label["paths"]), text)
    if label.get("deliverable"):
        whole_deliverable = deliverable_text(original, label["deliverable"])
        s.deliverable = whole_deliverable is not None and whole_deliverable in text
    summary = summary or (messages[0].text if messages else "")
    if (
        not made_summary or "goes on verbatim after this summary" in summary
    ):  # the end is kept as it was: the agent sees the conversation's end as it was
        s.state = "as-is"
        last = next((m for m in reversed(original) if m.role == "assistant" and m.text.strip()), None)
        s.state_ok = last is None or norm(last.text) in text
    else:
        s.state = told(summary, messages)
        s.state_ok = s.state == label["state"]
    return s


def pct(found: int, total: int) -> str:
    return f"{found}/{total}" if total else "-"


def row(name: str, s: Score) -> str:
    cells = [pct(s.found.get(k, 0), s.total.get(k, 0)) for k in ("req", "rules", "values", "paths")]
    deliv = "-" if s.deliverable is None else "whole" if s.deliverable else "CUT"
    state = f"{s.state}{'' if s.state_ok else ' ✗'}"
    return (
        f"{name:<52} {cells[0]:>7} {cells[1]:>6} {cells[2]:>7} {cells[3]:>6} {deliv:>6}  {state:<14} {s.note}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--real", help="folder of the real sessions (default: ../shared/fixtures-real)")
    ap.add_argument("--strategy", action="append", choices=STRATEGIES, help="default: all three")
    ap.add_argument("--provider", default="offline")
    ap.add_argument("--files", action="store_true", help="one line per file and what it missed")
    ap.add_argument("--held-out", action="store_true", help="the held-out sessions (HELD_OUT) instead")
    args = ap.parse_args(argv)
    labels = HELD_OUT if args.held_out else LABELS
    files = sessions(real_dir(args.real), labels)
    kind = "held-out" if args.held_out else "labelled"
    print(f"{len(files)} {kind} sessions; summarizer {args.provider}; window = request / {FILL}\n")
    head = f"{'file':<52} {'req':>7} {'rules':>6} {'values':>7} {'paths':>6} {'deliv':>6}  state"
    totals: list[str] = []
    for strategy in args.strategy or STRATEGIES:
        scores: list[Score] = []
        if args.files:
            print(f"== {strategy}\n{head}")
        with tempfile.TemporaryDirectory() as tmp:
            for n, (key, path) in enumerate(files):
                s = score(labels[key], path, strategy, args.provider, Path(tmp) / str(n))
                scores.append(s)
                if args.files:
                    print(row(key, s))
                    for miss in s.missed:
                        print(f"{'':<4}missed {miss}")
        if args.files:
            print()
        total = Score()
        for k in ("req", "rules", "values", "paths"):
            total.found[k] = sum(s.found.get(k, 0) for s in scores)
            total.total[k] = sum(s.total.get(k, 0) for s in scores)
        delivs = [s.deliverable for s in scores if s.deliverable is not None]
        states = sum(s.state_ok for s in scores)
        refused = sum(bool(s.note) for s in scores)

        def share(k: str, t: Score = total) -> str:
            f, n = t.found[k], t.total[k]
            return f"{f}/{n} ({100 * f / n:.0f} %)" if n else "-"

        totals.append(
            f"| {strategy} | {share('req')} | {share('rules')} | {share('values')} | {share('paths')} "
            f"| {sum(delivs)}/{len(delivs)} | {states}/{len(scores)} | {refused} |"
        )
    print(
        "| strategy | user requests | rules | exact values | paths | deliverable whole | state right | refused |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(totals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
