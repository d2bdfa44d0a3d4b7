"""Resuming a compacted Claude Code log: Claude Code finds a session by its id in the project
folder of the working directory, ``~/.claude/projects/<cwd, every other character than a
letter or digit made "-">/<session id>.jsonl`` (``$CLAUDE_CONFIG_DIR/projects`` when set), and
``claude --resume <id>`` run in that directory picks it up."""

from __future__ import annotations

import os
import re
from itertools import islice
from pathlib import Path

import orjson

from ctxfold.formats.base import CarryOn
from ctxfold.transcript.model import Transcript

HARNESS = "Claude Code"


def store(home: Path) -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(configured) if configured else home / ".claude") / "projects"


def project_folder(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def plan(compacted: Transcript, written: Path, home: Path) -> CarryOn:
    sid, cwd = _session_and_cwd(written)
    sid = sid or compacted.session_id
    install_to = store(home) / project_folder(cwd) / f"{sid}.jsonl" if sid and cwd else None
    return CarryOn(HARNESS, sid, ("claude", "--resume", sid or "SESSION_ID"), cwd, install_to)


def _session_and_cwd(path: Path) -> tuple[str | None, str | None]:
    """The session id and working directory the written log's lines name."""
    sid = cwd = None
    with open(path, "rb") as f:
        for raw in islice(f, 50):
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(line, dict):
                sid = sid or (line.get("sessionId") if isinstance(line.get("sessionId"), str) else None)
                cwd = cwd or (line.get("cwd") if isinstance(line.get("cwd"), str) else None)
            if sid and cwd:
                break
    return sid, cwd
