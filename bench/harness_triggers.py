"""Measure when each harness compacts by itself, against the rule ctxfold replays for it.

    python bench/harness_triggers.py [HARNESS ...] [--write]

Each pinned harness of the lab (``tests/interop/package.json``) runs headless against the
scripted server, which answers with a tool call, turn after turn, and reports a usage of its
choosing. The first turns report little; then one response reports ``n`` tokens, and the run
shows whether the harness compacted before its next request (a compaction entry in its log, or
its summarizing call). A bisection over ``n`` finds the smallest count that fires, with the
harness's default settings and once with a setting changed (Claude Code's
``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``, Codex's ``model_auto_compact_token_limit``, pi's
``compaction.reserveTokens``, Gemini CLI's ``model.compressionThreshold``). Next to it: what
ctxfold's replay of that harness's rule (``ctxfold.engine.triggers``) says for the same window
and setting. ``--write`` stores the measurements in the shipped tables
(``core/tokens/harnesses/<harness>.json``, key ``trigger``). Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness_lab import HARNESSES, ROOT, Recorded, Reply, run_session
from harness_tables import load_table, write_table
from harness_tty import run_two_prompts

from ctxfold.engine.triggers import TRIGGERS, parse_trigger

LAB = ROOT / "tests" / "interop"
OUTPUT = 12  # output tokens every scripted reply reports


def lab_bin(name: str) -> Path:
    """The pinned binary of the harness lab (installed by its conftest on first use)."""
    from interop.conftest import installed_lab  # the lab's own install, keyed by its lockfile

    root = installed_lab()
    return root / "node_modules" / ".bin" / {"claude-code": "claude", "gemini-cli": "gemini"}.get(name, name)


def lab_version(name: str) -> str:
    pkg = json.loads((LAB / "package.json").read_text())["dependencies"][HARNESSES[name].package]
    return str(pkg)


@dataclass
class Probe:
    """How one harness is driven to its trigger and how its compaction shows."""

    tool: Callable[[Path, int], tuple[str, dict[str, Any]]]  # (project, i): the i-th call, all different
    markers: tuple[str, ...]  # text of the harness's summarizing request
    log_marker: str  # a compaction entry in its log
    count: Callable[[int], int]  # the count the harness compares, for a reported input n
    setting: tuple[str, Any]  # (ctxfold's --trigger setting, its value) for the second run
    apply: Callable[[Path, dict[str, str], Any], None]  # write that setting into HOME or the env
    warmup: int = 1
    args: list[str] = field(default_factory=list)


def _cc_setting(home: Path, env: dict[str, str], pct: Any) -> None:
    env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = str(pct)


def _codex_setting(home: Path, env: dict[str, str], limit: Any) -> None:
    config = home / ".codex" / "config.toml"
    config.write_text(f"model_auto_compact_token_limit = {limit}\n" + config.read_text())


def _pi_setting(home: Path, env: dict[str, str], reserve: Any) -> None:
    path = home / ".pi" / "agent" / "settings.json"
    settings = json.loads(path.read_text())
    settings["compaction"] = {"enabled": True, "reserveTokens": reserve}
    path.write_text(json.dumps(settings))


def _gemini_setting(home: Path, env: dict[str, str], threshold: Any) -> None:
    path = home / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    settings["model"] = {"compressionThreshold": threshold}
    path.write_text(json.dumps(settings))


PROBES: dict[str, Probe] = {
    "claude-code": Probe(
        tool=lambda project, i: ("Read", {"file_path": str(project / f"notes{i}.txt")}),
        markers=("detailed summary of the conversation",),
        log_marker='"subtype":"compact_boundary"',
        count=lambda n: n + OUTPUT,
        setting=("pct", 50),
        apply=_cc_setting,
        args=["--model", "claude-sonnet-4-6", "-p"],  # a 200k model (the default Opus has 1M)
    ),
    "codex": Probe(
        tool=lambda project, i: (
            "update_plan",
            {"plan": [{"step": f"read notes {i}", "status": "in_progress"}]},
        ),
        markers=("CONTEXT CHECKPOINT COMPACTION", "handoff summary"),
        log_marker='"type":"compacted"',
        count=lambda n: n + OUTPUT,
        setting=("limit", 100_000),
        apply=_codex_setting,
        args=["exec", "--skip-git-repo-check", "-m", "gpt-5.5"],
    ),
    "pi": Probe(
        tool=lambda project, i: ("read", {"path": f"notes{i}.txt"}),
        markers=("context summarization assistant",),
        log_marker='"type":"compaction"',
        count=lambda n: n + OUTPUT,
        setting=("reserve", 50_000),
        apply=_pi_setting,
    ),
    "gemini-cli": Probe(
        tool=lambda project, i: ("read_file", {"file_path": f"notes{i}.txt"}),
        markers=("state_snapshot",),
        log_marker="\u0000",  # its chat log records no compression; the summarizing call shows it
        count=lambda n: n,
        setting=("threshold", 0.3),
        apply=_gemini_setting,
        warmup=3,
    ),
}


def fired(name: str, binary: Path, n: int, setting: Any = None) -> tuple[bool, dict[str, Any]]:
    """Run the harness once with a response reporting ``n`` input tokens: did it compact?"""
    h, probe = HARNESSES[name], PROBES[name]
    with tempfile.TemporaryDirectory(prefix=f"ctxfold-trigger-{name}-") as tmp:
        home = Path(tmp) / "home"
        project = home / "project"
        project.mkdir(parents=True)
        for i in range(probe.warmup + 1):
            (project / f"notes{i}.txt").write_text(f"{i + 3} apples\n")
        script = [
            Reply(tool_calls=[probe.tool(project, i)], input_tokens=1_000 + 10 * i)
            for i in range(probe.warmup)
        ]
        big = probe.tool(project, probe.warmup)
        script += [Reply(tool_calls=[big], input_tokens=n), Reply("Read them.", input_tokens=n)]
        env: dict[str, str] = {}

        def setup(home_: Path) -> None:
            if setting is not None:
                probe.apply(home_, env, setting)

        summarizing = _summarizer(probe)
        harness = dataclasses.replace(
            h, side=lambda r: h.side(r) or summarizing(r), side_reply=Reply(SUMMARY)
        )
        if name == "gemini-cli":  # it compresses when a user turn starts: a second prompt is typed
            script[-2] = Reply("Read them.", input_tokens=n)
            prompts = ("Read the notes files one by one.", "Now say something else.")
            s = run_two_prompts(
                harness, binary, script, prompts, after_calls=len(script) - 1, env=env, home=home, setup=setup
            )
        else:
            args = [*probe.args, "Read the notes files one by one."] if probe.args else None
            prompt = "Read the notes files one by one."
            s = run_session(
                harness, binary, script, prompt, home=home, env=env, args=args, setup=setup, timeout=180
            )
        calls = [r for r in s.requests if r.model_call]
        big = next(
            (i for i, r in enumerate(calls) if r.reply is not None and r.reply.input_tokens == n), None
        )
        after = calls[big + 1 :] if big is not None else []
        by_call = any(summarizing(r) for r in after)
        by_log = any(probe.log_marker in p.read_text(errors="replace") for p in s.logs)
        window = _window(name, s.logs)
        detail = {
            "reached": big is not None,
            "summarizing_call": by_call,
            "log_entry": by_log,
            "window": window,
        }
        if big is None:
            detail["stderr"] = s.stderr[-600:]
        return by_call or by_log, detail


SUMMARY = "<state_snapshot>The user asked to read notes.txt; it says three apples.</state_snapshot>"


def _summarizer(probe: Probe) -> Callable[[Recorded], bool]:
    def summarizing(r: Recorded) -> bool:
        return r.model_call is not False and any(m in r.text for m in probe.markers)

    return summarizing


def _window(name: str, logs: list[Path]) -> int | None:
    """The context window the harness itself worked with, where its log records it."""
    for p in logs:
        for line in p.read_text(errors="replace").splitlines():
            if '"model_context_window"' in line:
                info = (json.loads(line).get("payload") or {}).get("info") or {}
                if isinstance(info.get("model_context_window"), int):
                    return int(info["model_context_window"])
    return None


def bisect(
    name: str, binary: Path, guess: int, setting: Any = None, *, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """The smallest reported input that makes the harness compact, near ``guess``."""
    lo, hi = max(0, guess - 2_000), guess + 2_000
    runs = 0
    while True:  # widen until lo does not fire and hi does
        runs += 2
        lo_fired, _ = fired(name, binary, lo, setting)
        hi_fired, detail = fired(name, binary, hi, setting)
        if not detail["reached"]:
            return {"error": f"the script did not reach the large count: {detail.get('stderr', '')}"}
        if lo_fired:
            lo, hi = max(0, lo - 4 * (hi - lo)), lo
        elif not hi_fired:
            lo, hi = hi, hi + 4 * (hi - lo)
        else:
            break
        if hi > 50_000_000:
            return {"error": "never fired"}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        runs += 1
        ok, detail = fired(name, binary, mid, setting)
        log(f"    {name} n={mid:,}: {'compacts' if ok else 'no'}")
        if ok:
            hi = mid
        else:
            lo = mid
    return {
        "fires_at_input": hi,
        "not_at_input": lo,
        "runs": runs,
        **{k: v for k, v in detail.items() if k != "reached"},
    }


def measure(name: str, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    probe = PROBES[name]
    binary = lab_bin(name)
    version = lab_version(name)
    out: dict[str, Any] = {"version": version, "measured": datetime.date.today().isoformat(), "runs": []}
    for key, value in ((None, None), probe.setting):
        spec = name if key is None else f"{name}:{key}={value}"
        rule = parse_trigger(spec)
        # the first run finds the window the rule needs (the harness's own, from its log when it
        # records one, else the model's); a second guess is made with it
        window = rule.default_window
        guess = rule.threshold(window) - probe.count(0)
        result = bisect(name, binary, max(1, guess), value, log=log)
        if "error" in result:
            out["runs"].append({"setting": spec, **result})
            continue
        if result.get("window"):  # the harness recorded the window it used (Codex: 95 % of it)
            window = rule.window_for(result["window"], recorded=True)
        measured = probe.count(result["fires_at_input"])
        predicted = rule.fires_at(window)
        out["runs"].append(
            {
                "setting": spec,
                "window": window,
                "fires_at": measured,
                "not_at": probe.count(result["not_at_input"]),
                "ctxfold_rule": rule.describe(window),
                "ctxfold_fires_at": predicted,
                "bisection_runs": result["runs"],
            }
        )
        log(
            f"{spec:<28} window {window:>9,}  fires at {measured:>9,}  ctxfold's rule: {predicted:>9,}  ({rule.describe(window)})"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("harnesses", nargs="*", default=list(PROBES))
    ap.add_argument("--write", action="store_true", help="store the measurements in the shipped tables")
    args = ap.parse_args()
    if not shutil.which("node"):
        sys.exit("the harnesses need node and npm")
    for name in args.harnesses:
        if name not in TRIGGERS:
            sys.exit(f"no trigger rule for {name}")
        result = measure(name)
        if args.write:
            table = load_table(name)
            table["trigger"] = result
            write_table(name, table)


if __name__ == "__main__":
    main()
