"""Resuming a compacted pi session.

pi keeps a working directory's sessions in ``~/.pi/agent/sessions/--<cwd>--/``: the cwd
without its leading ``/``, every ``/``, ``\\`` and ``:`` made ``-`` (under
``$PI_CODING_AGENT_DIR/sessions`` when that is set; all in one folder, whatever the directory,
when ``$PI_CODING_AGENT_SESSION_DIR`` or the ``sessionDir`` setting names one), a file per
session named ``<creation time>_<session id>.jsonl``. ``pi --session ID`` run in the session's
directory finds it there by its id, as ``pi -c`` (the newest file of the folder) and ``pi
--resume`` (a picker) do; ``pi --session PATH`` opens any file, but then keeps the sessions it
starts from there (``/new``, ``/fork``) beside it.

``--install`` copies the compacted session into that folder under pi's own kind of name (the
header's creation time, which for a compacted session is when it was compacted, and its new
id), so all three find it; the printed command is ``pi --session <new id>``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from ctxfold.errors import OutputError
from ctxfold.formats.base import CarryOn
from ctxfold.formats.pi.session import file_name
from ctxfold.paths import pi_agent_dir
from ctxfold.transcript.model import Transcript

HARNESS = "pi"


def _session_dir_setting(home: Path) -> Path | None:
    """A session folder set in the environment or pi's settings: it holds every directory's."""
    configured = os.environ.get("PI_CODING_AGENT_SESSION_DIR")
    if not configured:
        try:
            settings = orjson.loads((pi_agent_dir(home) / "settings.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        value = settings.get("sessionDir") if isinstance(settings, dict) else None
        configured = value if isinstance(value, str) and value else None
    if configured is None:
        return None
    if configured == "~" or configured.startswith("~/"):
        return home / configured[2:]
    return Path(configured)


def store(home: Path) -> Path:
    return _session_dir_setting(home) or pi_agent_dir(home) / "sessions"


def folder_for(cwd: str) -> str:
    """pi's folder name for a working directory's sessions."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def plan(compacted: Transcript, written: Path, home: Path) -> CarryOn:
    head = _header(written)
    sid, cwd = head.get("id"), head.get("cwd")
    if not isinstance(sid, str):  # pi would take the file for corrupt and start it afresh, over it
        raise OutputError(f"{written}: no session header pi can read on its first line; not offered to pi")
    if not isinstance(cwd, str):
        return CarryOn(HARNESS, sid, ("pi", "--session", str(written)))
    flat = _session_dir_setting(home)
    folder = flat if flat is not None else store(home) / folder_for(cwd)
    return CarryOn(HARNESS, sid, ("pi", "--session", sid), cwd, folder / file_name(head))


def _header(path: Path) -> dict[str, Any]:
    with open(path, "rb") as f:
        first = f.readline()
    try:
        head = orjson.loads(first)
    except orjson.JSONDecodeError:
        return {}
    return head if isinstance(head, dict) and head.get("type") == "session" else {}
