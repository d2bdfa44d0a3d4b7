"""What a harness sends in every request that its session log does not record, measured.

Claude Code, Codex, pi and Gemini CLI send a system prompt and tool definitions that their logs
leave out (Codex logs its instructions, not its tools). How large they are depends on the
harness version, and moves a lot between versions (Claude Code: 4.5k to 22k tokens), so they are
measured, not learned: ``bench/harness_prompts.py`` runs each published version against a
scripted model server, counts its first request with ctxfold's own counter, and subtracts
ctxfold's estimate of the same request read from the log that harness wrote. The tables it
writes ship with ctxfold (``tokens/harnesses/<harness>.json``, one per harness: version →
tokens per tokenizer, how and when measured; docs/harnesses.md, "What each harness sends").

A log is matched to the measured version nearest to the one it names (Claude Code ``version``,
Codex ``cli_version``); pi logs name none, so the version released last before the log's first
timestamp is used. What the log shows picks the variant: a Claude Code sub-agent's transcript
gets the sub-agent's prompt, ``claude -p`` (entrypoint ``sdk-…``) the print mode's, and a session
whose endpoint is not Anthropic's own (no Anthropic request id on its responses: a proxy, a
gateway) the prompt without tool search, where every tool's schema is sent up front.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ctxfold.transcript.model import ContextUpdate, Entry, Message

TABLES = ("claude-code", "codex", "pi", "gemini-cli")
NAMES = {"claude-code": "Claude Code", "codex": "Codex", "pi": "pi", "gemini-cli": "Gemini CLI"}
# Anthropic's API names each response (Claude Code logs it as ``requestId``); a proxy or another
# host does not, and Claude Code turns its tool search off for any host but Anthropic's
_ANTHROPIC_REQUEST_ID = re.compile(r"req_[0-9A-Za-z]{10,}")


@dataclass
class LogFacts:
    """What a log says about the harness that wrote it, gathered while it is replayed."""

    version: str | None = None  # Claude Code ``version`` on its lines, Codex ``cli_version``
    started: str | None = None  # the first timestamp (ISO 8601)
    entrypoint: str | None = None  # Claude Code: cli, claude-desktop, claude-vscode, sdk-cli...
    first_request_id: str | None = None  # the request id of the first main-chain response
    responses: int = 0  # main-chain responses seen (counted up to the first)
    logged: bool = False  # the log records the system prompt and tools it sent (set by the replay)
    tool_search: bool | None = None  # as those records show: some tools loaded only when searched for

    def see(self, e: Entry) -> None:
        """Note what ``e`` says; the replay calls it for every entry until ``done``."""
        if isinstance(e, Message):
            self._message(e)
        elif isinstance(e, ContextUpdate):
            cli = e.extra.get("cli_version")
            if isinstance(cli, str) and self.version is None:
                self.version = cli
            ts = e.extra.get("timestamp")
            if isinstance(ts, str) and self.started is None:
                self.started = ts

    def _message(self, m: Message) -> None:
        if m.branch is not None:
            return
        x = m.extra
        if self.started is None and m.timestamp:
            self.started = m.timestamp
        version = x.get("version")
        if self.version is None and isinstance(version, str) and re.match(r"\d+\.\d+", version):
            self.version = version
        entrypoint = x.get("entrypoint")
        if self.entrypoint is None and isinstance(entrypoint, str):
            self.entrypoint = entrypoint
        if m.role == "assistant" and self.responses == 0:
            rid = x.get("requestId")
            self.first_request_id = rid if isinstance(rid, str) else None
            self.responses = 1

    @property
    def done(self) -> bool:
        """Everything is known by the first response (the version is on the first lines)."""
        return bool(self.responses and self.started)


@dataclass(frozen=True)
class HarnessPrompt:
    """The measured part of a request its log does not show, in one tokenizer's tokens."""

    harness: str
    version: str  # the measured version used
    variant: str  # "default", "print", "no-tool-search" or "subagent"
    tokens: int  # what the log leaves out: system prompt, tool definitions, injected text
    system: int  # of the whole request (counted), for display
    tools: int
    tool_count: int
    measured: str  # the day it was measured
    basis: str  # why this version and variant, for --explain
    records: bool = False  # the log records the system prompt and tools sent: ``tokens`` is the rest

    @property
    def family(self) -> str:
        """The variant and harness generation (major.minor) the prompt belongs to."""
        kind = f"{self.variant}+records" if self.records else self.variant
        return f"{self.harness}/{kind}@{'.'.join(map(str, vkey(self.version)[:2]))}"

    def describe(self) -> str:
        return f"{NAMES.get(self.harness, self.harness)} {self.version}{_VARIANT_TEXT[self.variant]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "harness": self.harness,
            "version": self.version,
            "variant": self.variant,
            "tokens": self.tokens,
            "system": self.system,
            "tools": self.tools,
            "tool_count": self.tool_count,
            "measured": self.measured,
            "basis": self.basis,
            "records": self.records,
        }


_VARIANT_TEXT = {
    "default": "",
    "print": " (claude -p)",
    "no-tool-search": " (every tool sent: not Anthropic's endpoint)",
    "subagent": " sub-agent",
}


@functools.cache
def table(harness: str) -> dict[str, Any] | None:
    """The shipped table of ``harness``, or None when ctxfold has none."""
    if harness not in TABLES:
        return None
    # beside this module, read directly: importlib.resources would import tempfile and zipfile
    data = (Path(__file__).parent / "harnesses" / f"{harness}.json").read_bytes()
    loaded: dict[str, Any] = orjson.loads(data)
    return loaded


@functools.lru_cache(maxsize=1024)
def vkey(version: str) -> tuple[int, ...]:
    """``"2.1.3-beta"`` -> ``(2, 1, 3)``; kept per version string: a folder of logs asks the same
    few versions thousands of times."""
    return tuple(int(x) for x in re.findall(r"\d+", version.split("-")[0])[:3])


@functools.cache
def _rows(harness: str, subagent: bool = False) -> list[dict[str, Any]]:
    """The measured versions of ``harness``'s table, oldest first (sorted once per process); for
    a ``subagent``'s transcript, those whose sub-agent was measured (all when none was)."""
    if subagent:
        return [r for r in _rows(harness) if r.get("subagent")] or _rows(harness)
    t = table(harness)
    return sorted(t["versions"], key=lambda r: vkey(r["version"])) if t else []


@functools.lru_cache(maxsize=1024)
def _nearest(harness: str, subagent: bool, version: str) -> dict[str, Any]:
    """The row of ``_rows(harness, subagent)`` closest to ``version``: the same major.minor first,
    then the fewest patch releases away; between two equally near, the older (a prompt is
    inherited forward). Kept per version: a folder of logs asks the same few thousands of times."""
    rows = _rows(harness, subagent)
    want = vkey(version)

    def distance(r: dict[str, Any]) -> tuple[int, int, int]:
        have = vkey(r["version"])
        if have[:2] != want[:2]:
            return (1, abs(_flat(have) - _flat(want)), 0)
        patch = (have[2] if len(have) > 2 else 0) - (want[2] if len(want) > 2 else 0)
        return (0, abs(patch), 1 if patch > 0 else 0)

    return min(rows, key=distance)


def _flat(v: tuple[int, ...]) -> int:
    padded = (*v, 0, 0, 0)[:3]
    return padded[0] * 1_000_000 + padded[1] * 1_000 + padded[2]


def _by_date(rows: list[dict[str, Any]], started: str | None) -> tuple[dict[str, Any], str]:
    """For a log that names no version: the last measured version released on or before its
    first day, else the newest measured (a log newer than every known release date)."""
    day = (started or "")[:10]
    dated = [r for r in rows if r.get("released")]
    before = [r for r in dated if day and r["released"] <= day]
    if before and before[-1] is not dated[-1]:
        return before[-1], f"released last before the log's first day {day}"
    if before or not day:
        newest = rows[-1]
        return newest, "the newest measured version" + (f" (the log starts {day})" if day else "")
    return rows[0], f"the oldest measured version (the log starts {day}, before it)"


def choose(harness: str, facts: LogFacts, *, agent: str | None, tokenizer: str) -> HarnessPrompt | None:
    """The measured prompt of the harness version and variant that wrote this log."""
    rows = _rows(harness, subagent=agent is not None)  # a sub-agent's transcript: its own measures
    if not rows:
        return None
    name = NAMES.get(harness, harness)
    if facts.version:
        row = _nearest(harness, agent is not None, facts.version)
        same = row["version"] == facts.version
        basis = f"the log's own version {facts.version}" if same else f"nearest measured to {facts.version}"
    else:
        row, basis = _by_date(rows, facts.started)
    variant, data, why = _variant(harness, row, facts, agent)
    tokens = data["tokens"].get(tokenizer) or data["tokens"]["o200k"]
    if facts.logged:  # its request records: what the log still leaves out (0 when not measured)
        why += "; the log records the system prompt and tools it sent"
    left = tokens.get("unlogged_with_records", 0) if facts.logged else tokens["unlogged"]
    return HarnessPrompt(
        harness=harness,
        version=row["version"],
        variant=variant,
        tokens=int(left),
        system=int(tokens["system"]),
        tools=int(tokens["tools"]),
        tool_count=len(data.get("tool_names") or ()),
        measured=row["measured"],
        basis=f"{name} {row['version']}: {basis}{why}",
        records=facts.logged,
    )


def _variant(
    harness: str, row: dict[str, Any], facts: LogFacts, agent: str | None
) -> tuple[str, dict[str, Any], str]:
    variants = row.get("variants") or {}
    if agent is not None and row.get("subagent"):
        return "subagent", row["subagent"], "; a sub-agent's own transcript"
    if harness != "claude-code":
        return "default", row, ""
    anthropic = bool(facts.first_request_id and _ANTHROPIC_REQUEST_ID.fullmatch(facts.first_request_id))
    if facts.tool_search is False and "no-tool-search" in variants:
        return "no-tool-search", variants["no-tool-search"], "; its request records show no tool search"
    if facts.tool_search is None and facts.responses and not anthropic and "no-tool-search" in variants:
        return "no-tool-search", variants["no-tool-search"], "; its responses carry no Anthropic request id"
    if (facts.entrypoint or "").startswith("sdk") and "print" in variants:
        return "print", variants["print"], f"; entrypoint {facts.entrypoint}"
    return "default", row, ""
