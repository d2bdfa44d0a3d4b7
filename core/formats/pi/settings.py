"""pi's own settings, where ctxfold needs them: its agent folder, and when it compacts by itself.

pi reads ``settings.json`` in its agent folder (``~/.pi/agent``, moved by
``$PI_CODING_AGENT_DIR``), then the project's ``.pi/settings.json`` in its working directory over
it: a key of the project's file replaces the global one, except that two objects under the same
key are merged one level deep (so a project's ``{"compaction": {"reserveTokens": N}}`` keeps the
global ``compaction.enabled``). A file that is missing or not JSON counts as empty, as in pi.

Its auto-compaction (``engine/triggers.py``, ``Trigger("pi")``) fires once the context exceeds
the window less ``compaction.reserveTokens`` (16,384 unless set), unless
``compaction.enabled`` is false.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson

from ctxfold.paths import pi_settings_files


@dataclass(frozen=True)
class PiCompaction:
    """pi's auto-compaction settings as pi itself resolves them."""

    kind: ClassVar[str] = "pi-compaction"
    enabled: bool = True
    reserve: int | None = None  # ``compaction.reserveTokens`` when set (pi's default otherwise)


def compaction_settings(cwd: str | Path | None, home: Path | None = None) -> PiCompaction:
    """pi's ``compaction`` settings for a session run in ``cwd`` (the global file alone when
    ``cwd`` is not known)."""
    first, *project = pi_settings_files(cwd, home)
    merged = _read(first)
    for path in project:
        for key, value in _read(path).items():
            base = merged.get(key)
            merged[key] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    section = merged.get("compaction")
    section = section if isinstance(section, dict) else {}
    enabled, reserve = section.get("enabled"), section.get("reserveTokens")
    return PiCompaction(
        enabled=True if enabled is None else bool(enabled),
        reserve=int(reserve) if isinstance(reserve, (int, float)) and not isinstance(reserve, bool) else None,
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
