"""The shipped tables of measured harness prompts (``core/tokens/harnesses/<harness>.json``):
read, written one row per version, printed, and the release days of harnesses whose logs name
no version. Used by ``harness_prompts.py`` and ``harness_triggers.py``."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from harness_lab import HARNESSES, ROOT

TABLES = ROOT / "core" / "tokens" / "harnesses"
HOW = (
    "python bench/harness_prompts.py add: each version installed from npm and run headless "
    "(default settings, no MCP servers, an empty project folder, a private HOME) against a "
    "scripted model server; its first model request counted with ctxfold's counter, next "
    "to ctxfold's estimate of the same request from the log the harness wrote"
)


def table_path(name: str) -> Path:
    return TABLES / f"{name}.json"


def load_table(name: str) -> dict[str, Any]:
    path = table_path(name)
    if path.exists():
        table: dict[str, Any] = json.loads(path.read_text())
        return table
    h = HARNESSES[name]
    return {
        "harness": name,
        "package": h.package,
        "how": HOW,
        "versions": [],
    }


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v.split("-")[0]))


def write_table(name: str, table: dict[str, Any]) -> None:
    table["versions"].sort(key=lambda r: vkey(r["version"]))
    TABLES.mkdir(parents=True, exist_ok=True)
    text = json.dumps(table, indent=1, ensure_ascii=False)
    # one row of numbers per line: a table a reader can scan and a diff can show
    text = re.sub(r"\{\s+(\"system\"[^{}]*?)\s+\}", lambda m: "{" + " ".join(m.group(1).split()) + "}", text)
    tmp = table_path(name).with_suffix(".tmp")
    tmp.write_text(text + "\n")
    tmp.replace(table_path(name))


# where a harness's repository names its version, for the versions it tagged no release of
PACKAGE_JSON = {"pi": "packages/coding-agent/package.json", "gemini-cli": "packages/cli/package.json"}


def releases(repo: Path, harness: str) -> dict[str, str]:
    """version → the day it was released, from a clone of the harness's public repository:
    its ``vX.Y.Z`` tags, else the first commit whose package.json names the version."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        ).stdout

    days: dict[str, str] = {}
    day = ""
    for line in git(
        "log", "--reverse", "--date=short", "--format=@@%ad", "-p", "--", PACKAGE_JSON[harness]
    ).splitlines():
        if line.startswith("@@") and len(line) == 12:
            day = line[2:]
            continue
        m = re.match(r'\+\s*"version": "(\d+\.\d+\.\d+)"', line)
        if m:
            days.setdefault(m.group(1), day)
    for line in git(
        "for-each-ref", "--format=%(refname:short) %(creatordate:short)", "refs/tags"
    ).splitlines():
        m = re.fullmatch(r"v(\d+\.\d+\.\d+) (\d{4}-\d\d-\d\d)", line)
        if m:
            days[m.group(1)] = m.group(2)
    return days


def markdown(names: list[str]) -> str:
    """The measured versions as one markdown table (o200k tokens)."""
    lines = [
        "| harness | version | default model | system | tools (n) | left out of the log | "
        "`claude -p` / no tool search | sub-agent | measured |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        for row in load_table(name)["versions"]:
            t = row["tokens"]["o200k"]
            v = row.get("variants") or {}
            var = " / ".join(
                f"{v[k]['tokens']['o200k']['unlogged']:,}" for k in ("print", "no-tool-search") if k in v
            )
            sub = row.get("subagent")
            sub_text = f"{sub['tokens']['o200k']['unlogged']:,}" if sub else "—"
            released = f" ({row['released']})" if row.get("released") else ""
            lines.append(
                f"| {name} | {row['version']}{released} | {row['model']} | {t['system']:,} | "
                f"{t['tools']:,} ({len(row['tool_names'])}) | {t['unlogged']:,} | {var or '—'} | {sub_text} | {row['measured']} |"
            )
    return "\n".join(lines)


def summary(name: str, row: dict[str, Any]) -> str:
    t = row["tokens"]["o200k"]
    text = (
        f"{name} {row['version']:<9} {row['model']:<24} system {t['system']:>6,} tools {t['tools']:>6,} "
        f"({len(row['tool_names'])}) messages {t['messages']:>5,} logged {t['logged']:>5,} unlogged {t['unlogged']:>6,}"
    )
    for variant, v in (row.get("variants") or {}).items():
        t = v["tokens"]["o200k"]
        text += f"\n    {variant}: system {t['system']:>6,} tools {t['tools']:>6,} ({len(v['tool_names'])}) unlogged {t['unlogged']:>6,}"
    sub = row.get("subagent")
    if sub:
        s = sub["tokens"]["o200k"]
        text += f"\n    sub-agent: system {s['system']:>6,} tools {s['tools']:>6,} ({len(sub['tool_names'])}) unlogged {s['unlogged']:>6,}"
    return text
