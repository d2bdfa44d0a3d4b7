"""``compact`` with the count cache decides first, and reads for the summary only when due.

The decision made from the cache must be the one the single read makes: same status, same
prediction, same counts and notes; a due session must be folded exactly as without the cache.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, real_files
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.compaction import decide, run
from ctxfold.compaction.run import CompactOptions, CompactResult, compact_file
from ctxfold.engine.profile import Profiles
from ctxfold.providers.registry import make_summarizer

SESSION = FIXTURES / "real" / "claude-code-sidechains.jsonl"


def _compact(path: Path, out: Path, **kw: Any) -> CompactResult:
    offline = make_summarizer("offline")
    profiles = kw.pop("profiles", None)
    opts = CompactOptions(out_dir=str(out), **kw)
    return compact_file(str(path), offline, summarizer_window=offline.window, options=opts, profiles=profiles)


def _seen(r: CompactResult) -> dict[str, Any]:
    """What a user is told of a run (the outputs' folder aside)."""
    return {
        "status": r.status,
        "format": r.format,
        "policy": asdict(r.policy),
        "before": (r.tokens_before, r.estimate_before, r.messages_before),
        "after": (r.tokens_after, r.estimate_after, r.messages_after),
        "summary": r.summary.text if r.summary else None,
        "notes": r.notes,
        "warnings": r.warnings,
    }


def _no_second_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: Any, **k: Any) -> None:
        raise AssertionError("the session was read again for the summary")

    monkeypatch.setattr(run, "read_input", refuse)


@pytest.mark.parametrize("path", [SESSION, *real_files()], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_session_not_due_is_decided_from_the_cache_as_by_a_whole_read(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _compact(path, tmp_path / "whole")
    if whole.status != "not-due":
        pytest.skip(f"{path.name} is due at its model's window")
    cold = _compact(path, tmp_path / "cold", cache=True)
    _no_second_read(monkeypatch)
    warm = _compact(path, tmp_path / "warm", cache=True)
    assert _seen(cold) == _seen(whole) == _seen(warm)
    for r in (cold, warm):  # nothing written
        assert not any(p.exists() for p in (r.outputs.compacted, r.outputs.summary, r.outputs.state))


def test_a_due_session_is_folded_as_without_the_cache(tmp_path: Path) -> None:
    whole = _compact(SESSION, tmp_path / "whole", window=24_000)
    cached = _compact(SESSION, tmp_path / "cached", window=24_000, cache=True)
    assert whole.status == "compacted" and _seen(cached) == _seen(whole)
    name = SESSION.stem + ".summary.md"
    assert (tmp_path / "cached" / name).read_text() == (tmp_path / "whole" / name).read_text()


def test_a_state_file_or_force_reads_once_for_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _compact(SESSION, tmp_path / "o", window=24_000, cache=True).status == "compacted"
    # the state file decides what is new since its summary: nothing, and the cache is not asked
    monkeypatch.setattr(decide, "count_file", lambda *a, **k: pytest.fail("decided from the cache"))
    assert _compact(SESSION, tmp_path / "o", window=24_000, cache=True).status == "up-to-date"
    assert _compact(SESSION, tmp_path / "f", force=True, cache=True).status == "compacted"


def test_the_profile_learns_a_session_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    learned: list[str] = []
    monkeypatch.setattr(Profiles, "learn", lambda self, key, session, *a: learned.append(session))
    for out, window in (("a", None), ("b", 24_000)):  # not due, then due
        _compact(SESSION, tmp_path / out, window=window, cache=True, profiles=Profiles())
    assert len(learned) == 2 and learned[0] == learned[1]


def test_no_cache_is_a_flag_of_compact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_second_read(monkeypatch)
    args = ["compact", str(SESSION), "--out-dir", str(tmp_path), "--json"]
    assert CliRunner().invoke(app, args).exit_code == 0  # decided from the cache
    refused = CliRunner().invoke(app, [*args, "--no-cache"])
    assert refused.exit_code != 0 and "read again for the summary" in refused.output
