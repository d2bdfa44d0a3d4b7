"""Stores for the guard's state beside a framework's own: a SQLite table, and a view of a
framework's state mapping.

``SqliteStore`` keeps each key as one row of a table in any SQLite file (the Agents SDK's
``SQLiteSession`` database, or a file of your own), so many conversations share one file
(``scope`` tells them apart) and every change is committed at once: the state survives a
restart, and a crash loses at most the change under way. ``StateView`` reads and writes a
framework's mapping (ADK's session ``state``, a LangChain agent-state dict), where a deleted key
is stored as None, as those mappings cannot drop a key from a pending delta.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import orjson

from ctxfold.errors import ConfigError

TABLE = "ctxfold_guard_state"


class SqliteStore:
    """The guard's state in a SQLite database: ``(scope, key) → JSON value``.

    >>> import pathlib, tempfile
    >>> db = pathlib.Path(tempfile.mkdtemp()) / "agent.db"
    >>> store = SqliteStore(db, scope="session-1")
    >>> store.set("__context_guard_summary_default", "the summary")
    >>> SqliteStore(db, scope="session-1").get("__context_guard_summary_default")
    'the summary'
    >>> SqliteStore(db, scope="session-2").get("__context_guard_summary_default") is None
    True
    """

    def __init__(self, path: str | Path, scope: str = "default", *, table: str = TABLE) -> None:
        if str(path) == ":memory:":
            raise ConfigError(
                "SqliteStore needs a database file: an in-memory database is gone with its connection"
            )
        if not table.isidentifier():
            raise ConfigError(f"not a usable table name: {table!r}")
        self.path, self.scope, self.table = Path(path), scope, table
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {table} "
                "(scope TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (scope, key))"
            )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One short connection per change, committed on the way out: no handle is kept open
        across threads or event loops (the frameworks call from either)."""
        try:
            with self._lock, closing(sqlite3.connect(self.path, timeout=30)) as db, db:
                yield db
        except sqlite3.Error as err:
            raise ConfigError(f"{self.path}: guard state: {err}") from None

    def get(self, key: str, default: Any = None) -> Any:
        with self._connect() as db:
            row = db.execute(
                f"SELECT value FROM {self.table} WHERE scope = ? AND key = ?", (self.scope, key)
            ).fetchone()
        return orjson.loads(row[0]) if row else default

    def set(self, key: str, value: Any) -> None:
        with self._connect() as db:
            db.execute(
                f"INSERT INTO {self.table} (scope, key, value) VALUES (?, ?, ?) "
                "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value",
                (self.scope, key, orjson.dumps(value).decode()),
            )

    def delete(self, key: str) -> None:
        with self._connect() as db:
            db.execute(f"DELETE FROM {self.table} WHERE scope = ? AND key = ?", (self.scope, key))


class StateView:
    """A ``StateStore`` over a framework's state mapping. Values are stored in their JSON form
    (tuples as lists), as the framework's persistent store will give them back; a deleted key
    holds None, which reads as absent."""

    def __init__(self, state: MutableMapping[str, Any] | Any) -> None:
        self.state = state

    def get(self, key: str, default: Any = None) -> Any:
        value = self.state.get(key)
        return default if value is None else value

    def set(self, key: str, value: Any) -> None:
        if isinstance(value, (list, tuple, dict)):
            value = orjson.loads(orjson.dumps(value))
        self.state[key] = value

    def delete(self, key: str) -> None:
        if self.state.get(key) is not None:
            self.state[key] = None
