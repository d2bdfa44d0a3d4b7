"""Resuming a compacted Codex rollout: ``codex resume <id>`` (and ``codex exec resume <id>``)
looks the id up in Codex's state database, then among the file names under
``$CODEX_HOME/sessions`` (``~/.codex/sessions`` by default): ``rollout-<local time
YYYY-MM-DDThh-mm-ss>-<id>.jsonl``, kept in ``YYYY/MM/DD`` folders of that time. The file must
start with a ``session_meta`` naming the same id. A session found by name is added to the
database on the spot, so nothing else needs registering.

An id Codex cannot find is no error to ``codex exec resume``: it starts a new, empty session.
"""

from __future__ import annotations

from datetime import datetime, timezone
from itertools import islice
from pathlib import Path

import orjson

from ctxfold.formats.base import CarryOn
from ctxfold.paths import codex_home
from ctxfold.transcript.model import Transcript

HARNESS = "Codex"


def store(home: Path) -> Path:
    return codex_home(home) / "sessions"


def rollout_path(sessions: Path, session_id: str, started: datetime) -> Path:
    """Where Codex keeps a session it started at ``started`` (named in local time, as Codex does)."""
    local = started.astimezone()
    name = f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl"
    return sessions / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}" / name


def plan(compacted: Transcript, written: Path, home: Path) -> CarryOn:
    sid, cwd, started = _meta(written)
    sid = sid or compacted.session_id
    install_to = rollout_path(store(home), sid, started) if sid else None
    return CarryOn(HARNESS, sid, ("codex", "resume", sid or "SESSION_ID"), cwd, install_to)


def _meta(path: Path) -> tuple[str | None, str | None, datetime]:
    """The session id, working directory and start the written rollout's session_meta names."""
    with open(path, "rb") as f:
        for raw in islice(f, 5):
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            p = line.get("payload") if isinstance(line, dict) and line.get("type") == "session_meta" else None
            if isinstance(p, dict):
                sid, cwd = p.get("id"), p.get("cwd")
                return (
                    sid if isinstance(sid, str) else None,
                    cwd if isinstance(cwd, str) else None,
                    _when(p.get("timestamp")),
                )
    return None, None, datetime.now(timezone.utc)


def _when(stamp: object) -> datetime:
    if isinstance(stamp, str):
        try:
            parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return datetime.now(timezone.utc)
