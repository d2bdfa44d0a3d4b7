"""Where the engine keeps what must survive between model calls: a small key–value store.

The keys are the seeds' session-state keys (``__context_guard_*_{agent}``), so a reader of
the Go plugin recognises them: the summary, the watermark (events already summarized), the
tokens at summarization, the last real count, the last estimate, plus the calibrator's points.
Two stores: in memory (a dict, for one process) and a JSON file written atomically.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, Protocol

import orjson

from ctxfold.atomic import write_atomic
from ctxfold.errors import ConfigError

PREFIX = "__context_guard_"
KEYS = ("summary", "contents_at_compaction", "summarized_at", "real_tokens", "last_heuristic", "calibration")


class StateStore(Protocol):
    def get(self, key: str, default: Any = None) -> Any: ...

    def set(self, key: str, value: Any) -> None: ...

    def delete(self, key: str) -> None: ...


class MemoryStore:
    """A plain mapping; pass your own dict to share state with an agent framework's session.

    >>> session_state = {}
    >>> guard = ctxfold.ContextGuard("gpt-4o", store=ctxfold.MemoryStore(session_state))
    >>> _ = guard.before_request([{"role": "user", "content": "Hello"}])
    >>> sorted(session_state)[:2]
    ['__context_guard_conversation_default', '__context_guard_last_heuristic_default']
    """

    def __init__(self, data: MutableMapping[str, Any] | None = None) -> None:
        self.data: MutableMapping[str, Any] = data if data is not None else {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value

    def delete(self, key: str) -> None:
        self.data.pop(key, None)


class JsonFileStore(MemoryStore):
    """A JSON object on disk, rewritten atomically on every change: the guard's state survives
    a restart of the agent.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "guard.json"
    >>> guard = ctxfold.ContextGuard("gpt-4o", store=ctxfold.JsonFileStore(path))
    >>> _ = guard.before_request([{"role": "user", "content": "Hello"}])
    >>> path.exists()
    True
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        data: dict[str, Any] = {}
        if self.path.exists():
            try:
                loaded = orjson.loads(self.path.read_bytes())
            except (OSError, orjson.JSONDecodeError) as err:
                raise ConfigError(f"{self.path}: unreadable engine state: {err}") from None
            if not isinstance(loaded, dict):
                raise ConfigError(f"{self.path}: engine state must be a JSON object")
            data = loaded
        super().__init__(data)

    def set(self, key: str, value: Any) -> None:
        super().set(key, value)
        self._save()

    def delete(self, key: str) -> None:
        if key in self.data:
            super().delete(key)
            self._save()

    def _save(self) -> None:
        write_atomic(self.path, orjson.dumps(dict(self.data), option=orjson.OPT_INDENT_2))


class AgentState:
    """The seeds' keys for one agent, typed."""

    def __init__(self, store: StateStore, agent: str = "default") -> None:
        self.store = store
        self.agent = agent

    def key(self, name: str) -> str:
        return f"{PREFIX}{name}_{self.agent}"

    def get(self, name: str, default: Any = None) -> Any:
        return self.store.get(self.key(name), default)

    def set(self, name: str, value: Any) -> None:
        self.store.set(self.key(name), value)

    def delete(self, name: str) -> None:
        self.store.delete(self.key(name))

    @property
    def summary(self) -> str | None:
        return self.get("summary")

    @property
    def watermark(self) -> int:
        return int(self.get("contents_at_compaction", 0) or 0)

    def snapshot(self) -> dict[str, Any]:
        return {name: self.get(name) for name in KEYS}
