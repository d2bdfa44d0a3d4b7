"""The watermark state file ``NAME.ctxfold.json`` (schema ``ctxfold-state``, version 1).

It is what makes a second run fold only what is new: which source it belongs to, how many of
its entries the summary covers (the watermark), and the sha256 of the file's bytes at that time,
so a file that was rewritten rather than appended is detected. The last covered entry is hashed
too: a response still being written (a Claude Code message grows line by line) is folded again. It also keeps
the numbers behind the decision (tokens before and after, last real and estimated counts,
calibration), the settings the decision and the fold depended on (model, window, threshold,
strategy, summarizer…: a run with other ones does not answer "up to date" for outputs made
with these) and a ledger of every pass. Documented in docs/commands.md ("State file").
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ctxfold.errors import ConfigError
from ctxfold.transcript import codec
from ctxfold.transcript.model import Entry

SCHEMA = "ctxfold-state"
VERSION = 1


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def entry_sha256(entry: Entry) -> str:
    """sha256 of one entry in ctxfold's canonical JSON (format-independent)."""
    return hashlib.sha256(
        orjson.dumps(codec.encode(entry), option=orjson.OPT_SORT_KEYS, default=str)
    ).hexdigest()


def file_hashes(path: str, at: int | None = None) -> tuple[str | None, str, int]:
    """(sha256 of the first ``at`` bytes or None, sha256 of the whole file, its size): one pass."""
    whole = hashlib.sha256()
    prefix: str | None = None
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            if at is not None and prefix is None and done + len(chunk) >= at:
                whole.update(chunk[: at - done])
                prefix = whole.hexdigest()
                whole.update(chunk[at - done :])
            else:
                whole.update(chunk)
            done += len(chunk)
    if at is not None and prefix is None and done == at:
        prefix = whole.hexdigest()
    return prefix, whole.hexdigest(), done


@dataclass
class Pass:
    at: str
    entries: int  # watermark after this pass
    tokens_before: int  # predicted prompt tokens before
    tokens_after: int  # predicted prompt tokens after
    strategy: str
    provider: str
    model: str | None = None


@dataclass
class State:
    source_name: str
    source_format: str
    session_id: str | None
    watermark: int  # entries of the source covered by the summary
    prefix_bytes: int  # the source's size when it was summarized
    prefix_sha256: str  # sha256 of those bytes: a rewritten (not appended) file is detected
    last_entry_sha256: str  # the last summarized entry, which may still have been growing
    summary: str
    tokens_at_summarization: int
    tokens_after: int
    last_real: int | None
    last_estimate: int | None
    calibration: dict[str, Any]
    strategy: str
    provider: str
    model: str | None
    summarizer_usage: dict[str, int]
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)
    passes: list[Pass] = field(default_factory=list)
    # sha256 of the compacted transcript and summary written with this state, which is written
    # after them: outputs that do not match were not written with it (an interrupted set)
    outputs: dict[str, str] = field(default_factory=dict)
    # what the decision and the fold depended on (see ``settings_changes``); {} in older files
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> bytes:
        data = {"schema": SCHEMA, "version": VERSION, **asdict(self)}
        return orjson.dumps(data, option=orjson.OPT_INDENT_2)


def load_state(path: Path) -> State | None:
    if not path.exists():
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as err:
        raise ConfigError(f"{path}: unreadable state file: {err}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: not a ctxfold state file")
    if data.get("version") != VERSION:
        raise ConfigError(
            f"{path}: state file version {data.get('version')!r} is not supported (this is {VERSION})"
        )
    try:
        passes = [Pass(**p) for p in data.pop("passes", [])]
        data.pop("schema")
        data.pop("version")
        return State(**data, passes=passes)
    except TypeError as err:
        raise ConfigError(f"{path}: malformed state file: {err}") from None


_SETTING_NAMES = {
    "summarizer": "provider",
    "max_tokens": "max-tokens",
    "keep_observations": "keep-observations",
    "to": "--to",
}
_UNSET = {  # what a setting left unset stands for
    "model": "the log's",
    "window": "the model's",
    "max_tokens": "none",
    "buffer": "the default",
    "to": "the input's format",
}


def settings_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between the settings a state was written with and this run's, in words
    (``window the model's → 50,000``); empty when they agree or the state predates the record."""
    if not old:
        return []
    return [
        f"{_SETTING_NAMES.get(key, key)} {_shown(key, old[key])} → {_shown(key, value)}"
        for key, value in new.items()
        if key in old and old[key] != value
    ]


def _shown(key: str, value: Any) -> str:
    if value is None:
        return _UNSET.get(key, "none")
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    text = str(value)
    return text if len(text) <= 40 else repr(text[:37] + "...")
