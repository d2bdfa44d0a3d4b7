"""Codex's own settings and files, where ctxfold needs them: its home, a thread's rollout, and
when it compacts by itself.

Codex keeps everything under ``$CODEX_HOME`` (``~/.codex`` unless set): its ``config.toml`` and
the rollouts, ``sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``. Its
auto-compaction (``engine/triggers.py``, ``Trigger("codex")``) fires at 90 % of the model's
window; ``model_auto_compact_token_limit`` in ``config.toml`` can only lower it. A file that is
missing or not TOML counts as empty.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ctxfold.paths import codex_config_file, codex_home

_THREAD_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,99}")  # a UUID; never a glob pattern


def find_rollout(thread_id: str, home: Path | None = None) -> Path | None:
    """The rollout Codex writes for ``thread_id`` (the newest, should there be several), or None
    while it has written none (a thread gets its file with its first turn)."""
    if not _THREAD_ID.fullmatch(thread_id):
        return None
    sessions = codex_home(home) / "sessions"
    found = sorted(sessions.glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[-1] if found else None


def auto_compact_limit(home: Path | None = None) -> int | None:
    """``model_auto_compact_token_limit`` from Codex's ``config.toml``, when set to a count."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib

    try:
        data = tomllib.loads(codex_config_file(home).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    limit = data.get("model_auto_compact_token_limit")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None
