"""What the framework adapters share, without any framework: the guard's small hooks they stand
on (the messages that are ctxfold's own, a framework's own refusal class, a forced compaction kept
in the state), the stores, the mapping back to the caller's objects, and that ``import ctxfold``
never loads a framework."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ctxfold.adapters.stores
from ctxfold.adapters._common import GuardFactory, restore
from ctxfold.adapters.stores import SqliteStore, StateView
from ctxfold.compaction.guard import ContextGuard
from ctxfold.engine.state import MemoryStore
from ctxfold.errors import ConfigError, UsageError
from ctxfold.strategies.summary import SUMMARY_OPEN

FRAMEWORKS = ("google.adk", "langchain", "langgraph", "pydantic_ai", "agents")


def history(turns: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"role": "user", "content": "Rename the photos."}]
    for i in range(turns):
        events.append({"role": "assistant", "content": f"Step {i}: " + "renamed a file. " * 120})
        events.append({"role": "user", "content": f"Go on with step {i + 1}."})
    return events


def test_prepared_own_counts_ctxfolds_messages_and_the_rest_are_the_callers() -> None:
    guard = ContextGuard("gpt-4o", window=8_000)
    events = history(2)
    assert guard.before_request(events).own == 0
    events = history(30)
    prepared = guard.before_request(events)
    assert prepared.compacted and prepared.own == 2
    assert prepared.messages[0]["content"].startswith(SUMMARY_OPEN)
    tail = prepared.messages[prepared.own :]
    assert all(a is b for a, b in zip(tail, events[len(events) - len(tail) :], strict=True))
    events.append({"role": "assistant", "content": "Done."})
    again = guard.before_request(events)
    assert again.own == 2 and again.messages[-1] is events[-1]


def test_a_forced_compaction_is_kept_in_the_state_for_a_guard_built_afresh() -> None:
    """An adapter builds a guard per call: the refusal one learned makes the next one compact."""
    store = MemoryStore()
    events = history(4)
    assert not ContextGuard("gpt-4o", store=store).before_request(events).decision.due
    assert ContextGuard("gpt-4o", store=store).on_error(
        "Your input exceeds the context window of this model."
    )
    rebuilt = ContextGuard("gpt-4o", store=store)
    assert rebuilt.forced and rebuilt.before_request(events).compacted
    assert not ContextGuard("gpt-4o", store=store).forced  # the compaction used it up
    rebuilt.on_error("context_length_exceeded")
    rebuilt.reset()
    assert not ContextGuard("gpt-4o", store=store).forced


def test_a_frameworks_own_refusal_class_is_trusted_whatever_its_words() -> None:
    class ContextOverflow(Exception):
        pass

    guard = ContextGuard("gpt-4o")
    error = ContextOverflow("Bad request (400)")
    assert not guard.on_error(error)
    assert guard.on_error(error, overflow=True) and guard.forced
    stated = ContextGuard("gpt-4o")
    assert stated.on_error(ContextOverflow("prompt is too long: 9000 tokens > 8000 maximum"), overflow=True)
    assert stated.policy.window == 8_000 and stated.state.get("real_tokens") == 9_000


def test_restore_maps_the_prepared_request_back_to_the_frameworks_objects() -> None:
    class Msg:  # a framework's message class
        def __init__(self, text: str) -> None:
            self.text = text

    originals = [Msg(e["content"]) for e in history(30)]
    guard = ContextGuard("gpt-4o", window=8_000)
    prepared = guard.before_request([{"role": "user", "content": m.text} for m in originals])
    out = restore(prepared, originals, lambda texts: [Msg(t) for t in texts])
    assert out[0].text.startswith(SUMMARY_OPEN) and len(out) == len(prepared.messages)
    assert all(o is m for o, m in zip(out[2:], originals[len(originals) - len(out) + 2 :], strict=True))


def test_the_sqlite_store_keeps_each_scope_and_survives_a_new_connection(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    a, b = SqliteStore(db, scope="a"), SqliteStore(db, scope="b")
    a.set("k", {"points": [(1, 2)]})
    b.set("k", 7)
    assert SqliteStore(db, scope="a").get("k") == {"points": [[1, 2]]} and b.get("k") == 7
    a.delete("k")
    a.delete("k")  # deleting what is gone is fine
    assert a.get("k", "none") == "none" and b.get("k") == 7
    guard = ContextGuard("gpt-4o", window=8_000, store=SqliteStore(db, scope="c"))
    guard.before_request(history(30))
    assert ContextGuard("gpt-4o", window=8_000, store=SqliteStore(db, scope="c")).state.watermark > 0
    with pytest.raises(ConfigError, match="database file"):
        SqliteStore(":memory:")
    (tmp_path / "not-a-db").write_text("hello, I am not SQLite " * 100)
    with pytest.raises(ConfigError, match="not-a-db"):
        SqliteStore(tmp_path / "not-a-db")
    failures, _ = doctest.testmod(ctxfold.adapters.stores)
    assert failures == 0


def test_a_state_view_holds_json_and_reads_a_deleted_key_as_absent() -> None:
    state: dict[str, Any] = {}
    view = StateView(state)
    view.set("points", [(1, 2)])
    assert state["points"] == [[1, 2]]
    view.delete("points")
    assert state == {"points": None} and view.get("points", {}) == {}
    guard = ContextGuard("gpt-4o", window=8_000, store=view)
    guard.before_request(history(30))
    guard.reset()  # every key the guard had becomes None, which reads as absent
    assert ContextGuard("gpt-4o", window=8_000, store=StateView(state)).state.summary is None


def test_an_adapters_bad_argument_fails_where_it_is_made() -> None:
    with pytest.raises(UsageError, match="window"):
        GuardFactory("gpt-4o", None, {"window": 0})
    with pytest.raises(UsageError, match="store"):
        GuardFactory("gpt-4o", None, {"store": MemoryStore()})
    with pytest.raises(UsageError, match="provider"):
        GuardFactory("my-model", None, {"provider": "anthropc"})


def test_import_ctxfold_never_loads_a_framework() -> None:
    code = "import ctxfold, ctxfold.adapters, ctxfold.adapters.stores\nctxfold.ContextGuard\nimport sys\nprint(' '.join(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [m for m in loaded if m.split(".")[0] in {f.split(".")[0] for f in FRAMEWORKS} - {"google"}]
    assert not [m for m in loaded if m.startswith("google.adk")]
    import ctxfold.adapters

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        ctxfold.adapters.Nope  # noqa: B018
    assert ctxfold.adapters.SqliteStore is SqliteStore
