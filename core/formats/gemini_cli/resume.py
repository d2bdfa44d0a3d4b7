"""Resuming a compacted Gemini CLI session: Gemini CLI lists the sessions of the project it runs
in from ``~/.gemini/tmp/<project>/chats/`` (``$GEMINI_CLI_HOME`` replaces the home folder), any
file there named ``session-*.json`` or ``session-*.jsonl``, and ``gemini --resume <id>`` run in
the project folder picks one up by the ``sessionId`` inside it. The project's folder name comes
from ``~/.gemini/projects.json`` (project path → name); a session's ``projectHash`` is the
SHA-256 of that path, which is how a session found elsewhere is matched to its project.

The installed file is named ``session-<time>-<id8>.compacted.jsonl``: Gemini CLI 0.61, at start,
deletes every ``session-*-<id8>.jsonl`` of a session whose newest file holds nothing to resume,
which is what a resume in a later minute leaves behind; a name it cannot take an id from is
spared. Without a known project, ``gemini --session-file FILE`` imports the file into the
project it runs in.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from itertools import islice
from pathlib import Path

import orjson

from ctxfold.formats.base import CarryOn
from ctxfold.transcript.model import Transcript

HARNESS = "Gemini CLI"


def gemini_dir(home: Path) -> Path:
    configured = os.environ.get("GEMINI_CLI_HOME")
    return (Path(configured) if configured else home) / ".gemini"


def store(home: Path) -> Path:
    return gemini_dir(home) / "tmp"


def plan(compacted: Transcript, written: Path, home: Path) -> CarryOn:
    sid, project_hash = _header(written)
    sid = sid or compacted.session_id
    found = _project(compacted, project_hash, home)
    if found is None or sid is None:
        return CarryOn(HARNESS, sid, ("gemini", "--session-file", str(written)))
    cwd, chats = found
    minute = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M")
    install_to = chats / f"session-{minute}-{sid[:8]}.compacted.jsonl"
    return CarryOn(HARNESS, sid, ("gemini", "--resume", sid), cwd, install_to)


def _header(path: Path) -> tuple[str | None, str | None]:
    """The session id and project hash the written file's first record names."""
    with open(path, "rb") as f:
        for raw in islice(f, 5):
            try:
                d = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(d, dict) and isinstance(d.get("sessionId"), str):
                ph = d.get("projectHash")
                return d["sessionId"], ph if isinstance(ph, str) else None
    return None, None


def _project(compacted: Transcript, project_hash: str | None, home: Path) -> tuple[str, Path] | None:
    """(project folder, its chats folder): from the input's own place in the store, else from
    the project list, by the session's project hash."""
    tmp = store(home)
    src = Path(compacted.path) if compacted.path and compacted.path != "-" else None
    if src is not None and src.parent.name == "chats":
        root_file = src.parent.parent / ".project_root"
        try:
            if root_file.is_file() and src.parent.parent.parent.resolve() == tmp.resolve():
                return root_file.read_text().strip(), src.parent
        except OSError:
            pass
    if project_hash is None:
        return None
    try:
        projects = orjson.loads((gemini_dir(home) / "projects.json").read_bytes()).get("projects")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    for cwd, name in projects.items() if isinstance(projects, dict) else ():
        if isinstance(name, str) and hashlib.sha256(cwd.encode()).hexdigest() == project_hash:
            return cwd, tmp / name / "chats"
    return None
