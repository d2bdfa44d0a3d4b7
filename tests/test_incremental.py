"""The count cache: a run that reads on from a cached prefix gives exactly the cold run's result.

Every bundled fixture and every real session is cut at several line boundaries (and once inside
a line, a session still being written); the prefix is read in another process (another hash
seed: nothing cached may depend on it), the rest appended, and the file read again here, from
the cache, next to a cold read of the same bytes; then once more unchanged, answered from the
result kept (the run after growth keeps none: a live session's; the next one does).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, REAL, real_files
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.config import Config
from ctxfold.tokens import countstore, filecheck, incremental, parallel
from ctxfold.tokens.countstore import CountStore
from ctxfold.tokens.estimate import Spec, estimate_file, estimate_to_dict
from ctxfold.tokens.incremental import cache_key, estimate_incremental

runner = CliRunner()
PREFIX_RUN = """
import json, sys
from ctxfold.tokens.incremental import estimate_incremental
out = {}
for path in sys.argv[1:]:
    trace = {}
    try:
        estimate_incremental(path, trace=trace)
    except Exception as err:  # the cold run fails the same way: compared in the parent
        trace["error"] = str(err)
    out[path] = trace
print(json.dumps(out))
"""


def _cuts(data: bytes) -> list[int]:
    """Where to cut: after a third, two thirds and all but the last line, and inside a line."""
    ends = [i + 1 for i, b in enumerate(data) if b == 10]
    if len(ends) < 4:
        return [ends[0]] if ends and ends[0] < len(data) else []
    middle = ends[len(ends) // 2]
    inside = middle + max(1, (ends[len(ends) // 2 + 1] - middle) // 2)
    return sorted({ends[len(ends) // 3], ends[2 * len(ends) // 3], ends[-2], inside})


def _line_end(data: bytes, fraction: float) -> int:
    """The end of the line that holds the byte at ``fraction`` of the file."""
    return data.index(b"\n", int(len(data) * fraction)) + 1


def _doc(path: Path, **kw: Any) -> Any:
    try:
        return estimate_to_dict(estimate_file(str(path), **kw))
    except Exception as err:
        return f"{type(err).__name__}: {err}"


def _cached(path: Path, trace: dict[str, int] | None = None, **kw: Any) -> Any:
    try:
        return estimate_to_dict(estimate_incremental(str(path), trace=trace, **kw))
    except Exception as err:
        return f"{type(err).__name__}: {err}"


def _check_resumes(sources: list[Path], tmp_path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Cut every source, read the prefixes in a child process, append, compare, and compare
    again unchanged; per source, how many cuts were read on from the cache, and how many of the
    unchanged runs were answered from the result kept."""
    jobs: list[tuple[Path, Path, bytes]] = []
    for n, src in enumerate(sources):
        data = src.read_bytes()
        for c in _cuts(data):
            target = tmp_path / f"{n}-{c}" / src.name
            target.parent.mkdir()
            target.write_bytes(data[:c])
            jobs.append((src, target, data))
    env = {**os.environ, "PYTHONHASHSEED": "1"}
    child = subprocess.run(
        [sys.executable, "-c", PREFIX_RUN, *(str(t) for _, t, _ in jobs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    kept = json.loads(child.stdout)
    resumed: dict[str, int] = {}
    answered: dict[str, int] = {}
    for src, target, data in jobs:
        target.write_bytes(data)
        trace: dict[str, int] = {}
        warm = _cached(target, trace)
        cold = _doc(target)
        assert warm == cold, f"{src} cut at {target.parent.name}"
        if kept[str(target)].get("kept") and not _goes_back(src, data, kept[str(target)]["kept"]):
            assert trace["resumed"] == kept[str(target)]["kept"], f"{src}: the kept state was not used"
        resumed[str(src)] = resumed.get(str(src), 0) + bool(trace["resumed"])
        again: dict[str, int] = {}  # unchanged: read on from the state (nothing new), answer kept
        assert _cached(target, again) == cold, f"{src} cut at {target.parent.name}, then unchanged"
        assert not (again["answered"] and trace["resumed"])  # a run after growth keeps no answer
        third: dict[str, int] = {}
        assert _cached(target, third) == cold, f"{src} cut at {target.parent.name}, then answered"
        answered[str(src)] = answered.get(str(src), 0) + third["answered"]
        assert third["answered"] or not (trace["kept"] or trace["resumed"]), f"{src}: no answer kept"
    return resumed, answered


def _goes_back(src: Path, data: bytes, offset: int) -> bool:
    """Whether what was appended after ``offset`` goes back to messages a pi state does not keep
    (``v3-tree.jsonl``'s branch summary, parented back past its compaction): read again whole."""
    return src == FIXTURES / "pi" / "v3-tree.jsonl" and b'"id": "b2"' in data[offset:]


def test_every_bundled_fixture_reads_on_as_a_cold_run(tmp_path: Path) -> None:
    sources = sorted(p for p in FIXTURES.rglob("*.jsonl") if p.stat().st_size)
    resumed, answered = _check_resumes(sources, tmp_path)
    assert sum(resumed.values()) >= len(sources)  # most cuts were really read on from the cache
    assert sum(answered.values()) >= sum(resumed.values())
    for fmt in ("claude-code", "codex", "pi", "anthropic", "openai-chat", "openai-responses", "litellm"):
        assert any(n for p, n in resumed.items() if f"/{fmt}/" in p), fmt


def test_every_real_session_reads_on_as_a_cold_run(tmp_path: Path) -> None:
    sources = real_files() + sorted(REAL.glob("gemini-cli/*.json")) if REAL.is_dir() else []
    if not sources:
        pytest.skip("../shared/fixtures-real absent")
    resumed, answered = _check_resumes(sources, tmp_path)
    assert sum(answered.values()) >= sum(resumed.values())
    for src in real_files("claude-code") + real_files("codex") + real_files("pi"):
        assert resumed[str(src)] >= 2, src  # a log that grows is read on, not read again


def _session(tmp_path: Path) -> tuple[Path, bytes]:
    src = FIXTURES / "codex" / "lab-0169.jsonl"
    data = src.read_bytes()
    target = tmp_path / "s" / "session.jsonl"
    target.parent.mkdir(exist_ok=True)
    return target, data


@pytest.mark.parametrize(
    "how",
    ["inline", "thread", "process"],
    ids=["checked-at-once", "checked-in-a-thread", "checked-in-a-process"],
)
def test_a_rewritten_prefix_is_counted_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    from ctxfold.tokens.filecheck import PrefixCheck

    if how == "process" and not parallel.may_fork():
        pytest.skip("no fork, or one core: prefixes are checked in a thread")
    monkeypatch.setattr(PrefixCheck, "INLINE", 1 << 40 if how == "inline" else 0)
    monkeypatch.setattr(PrefixCheck, "FORK", 0 if how == "process" else 1 << 40)
    target, data = _session(tmp_path)
    cut = _line_end(data, 0.5)
    target.write_bytes(data[:cut])
    _cached(target)
    # the same size, one letter changed early in the file: not an append
    at = data.index(b'"text":"') + 9
    changed = data[:at] + (b"X" if data[at : at + 1] != b"X" else b"Y") + data[at + 1 :]
    target.write_bytes(changed[:cut])
    trace: dict[str, int] = {}
    assert _cached(target, trace) == _doc(target) and trace["resumed"] == 0
    # then grown: read on from the new prefix, not the old one
    target.write_bytes(changed)
    trace = {}
    assert _cached(target, trace) == _doc(target) and trace["resumed"] == cut
    # shorter than what was cached (the file was replaced by an older copy)
    target.write_bytes(changed[: cut // 2 + data[cut // 2 :].index(b"\n") + 1])
    trace = {}
    assert _cached(target, trace) == _doc(target) and trace["resumed"] == 0


def test_a_half_written_last_line_is_read_again_once_finished(tmp_path: Path) -> None:
    target, data = _session(tmp_path)
    ends = [i + 1 for i, b in enumerate(data) if b == 10]
    half = ends[-3] + (ends[-2] - ends[-3]) // 2
    target.write_bytes(data[:half])
    first = _cached(target)
    assert first == _doc(target) and "left out" in " ".join(first["warnings"])
    target.write_bytes(data)
    trace: dict[str, int] = {}
    assert _cached(target, trace) == _doc(target) and trace["resumed"] == ends[-3]


def test_an_unchanged_file_is_answered_from_the_result_kept(tmp_path: Path) -> None:
    target, data = _session(tmp_path)
    ends = [i + 1 for i, b in enumerate(data) if b == 10]
    half = ends[-3] + (ends[-2] - ends[-3]) // 2
    target.write_bytes(data[:half])  # a line still being written: part of what is answered
    assert _cached(target) == _doc(target)
    trace: dict[str, int] = {}
    assert _cached(target, trace) == _doc(target) and trace["answered"] == 1
    # the same size, one letter of the unfinished line changed: its bytes no longer check
    changed = data[: half - 1] + (b"X" if data[half - 1 : half] != b"X" else b"Y")
    target.write_bytes(changed)
    trace = {}
    assert _cached(target, trace) == _doc(target) and not trace["answered"]
    assert trace["resumed"] == ends[-3]  # the complete lines still check: read on from them
    # one letter changed early in the file: neither the answer nor the state is used
    at = data.index(b'"text":"') + 9
    early = changed[:at] + (b"X" if changed[at : at + 1] != b"X" else b"Y") + changed[at + 1 :]
    target.write_bytes(early)
    trace = {}
    assert _cached(target, trace) == _doc(target) and not trace["answered"] and not trace["resumed"]
    # named another way: the answer is this file's, under the name given
    trace = {}
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert _cached(link, trace) == _doc(link) and trace["answered"] == 1


@pytest.mark.parametrize("kind", ["no model yet", "one JSON document"])
def test_a_file_that_keeps_no_state_is_answered_all_the_same(tmp_path: Path, kind: str) -> None:
    """A log that names no model yet (Claude Code's queue operations alone) and a whole-file
    document (a Gemini CLI chat) keep no state to read on from; their result is kept for their
    bytes and answers the next run. Changed bytes, of the same size or grown, are read again."""
    if kind == "no model yet":
        target = tmp_path / "queued.jsonl"
        line = (
            '{"type":"queue-operation","operation":"enqueue","timestamp":"2025-01-01T00:00:0%dZ",'
            '"sessionId":"0a12da8e-1b6d-4238-b047-e14b0aacd8e1"}\n'
        )
        data = "".join(line % i for i in range(3)).encode()
        named = (FIXTURES / "real" / "claude-code-sidechains.jsonl").read_bytes()
        grown = data + named[: _line_end(named, 0.3)]  # then lines that name the model
        same_size = data.replace(b"enqueue", b"dequeue", 1)
    else:
        target = tmp_path / "chat.json"
        data = (FIXTURES / "real" / "gemini-cli-pomodoro-timer.json").read_bytes()
        grown = data.replace(b"}", b"} ", 1)  # the same document, one byte longer
        same_size = data.replace(b"pure HTML", b"bare HTML", 1)
    assert same_size != data and len(same_size) == len(data)
    target.write_bytes(data)
    first: dict[str, int] = {}
    assert _cached(target, first) == _doc(target)
    assert not first["kept"] and not first["answered"]
    again: dict[str, int] = {}
    assert _cached(target, again) == _doc(target) and again["answered"] == 1
    for changed in (same_size, grown):
        target.write_bytes(changed)
        trace: dict[str, int] = {}
        assert _cached(target, trace) == _doc(target) and not trace["answered"]
        assert isinstance(_doc(target), dict)  # a result, not an error


def _aged(path: Path, data: bytes, seconds: int = 3600) -> None:
    """Write ``data`` to ``path`` and date its modification ``seconds`` back (its change time is
    now: ctime cannot be set back, which is what makes it worth checking)."""
    path.write_bytes(data)
    old = time.time_ns() - seconds * 10**9
    os.utime(path, ns=(old, old))


def test_an_old_file_unchanged_is_answered_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filecheck, "RACY_NS", 0)  # its change time is this test's
    target, data = _session(tmp_path)
    _aged(target, data)
    cold = _doc(target)
    assert _cached(target) == cold
    trace: dict[str, int] = {}
    assert _cached(target, trace) == cold and trace["answered"] == 1 and trace["checked"] == 0
    # rewritten in place: the same size, one letter changed, its modification time set back as
    # it was; its change time moves on, so the bytes are checked and the answer refused
    mtime = target.stat().st_mtime_ns
    at = data.index(b'"text":"') + 9
    changed = data[:at] + (b"X" if data[at : at + 1] != b"X" else b"Y") + data[at + 1 :]
    time.sleep(0.05)  # past the clock tick the file's times are taken from
    target.write_bytes(changed)
    os.utime(target, ns=(mtime, mtime))
    trace = {}
    assert _cached(target, trace) == _doc(target) != cold
    assert trace["checked"] == 1 and not trace["answered"]


def test_where_there_is_no_change_time_the_bytes_are_always_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filecheck, "RACY_NS", 0)
    monkeypatch.setattr(filecheck, "NO_CHANGE_TIME", True)  # Windows: st_ctime is the creation time
    target, data = _session(tmp_path)
    _aged(target, data)
    assert _cached(target) == _doc(target)
    trace: dict[str, int] = {}
    assert _cached(target, trace) == _doc(target) and trace["answered"] == 1 and trace["checked"] == 1


def test_a_file_kept_just_after_a_write_is_checked_byte_by_byte(tmp_path: Path) -> None:
    target, data = _session(tmp_path)
    target.write_bytes(data)  # written now: within RACY_NS of the result kept
    assert _cached(target) == _doc(target)
    trace: dict[str, int] = {}
    assert _cached(target, trace) == _doc(target) and trace["answered"] == 1 and trace["checked"] == 1
    header = json.loads(_entry(tmp_path).read_bytes().split(b"\n", 2)[1])
    meta = header["answer"]
    assert meta["stat"][0] == len(data) and meta["kept_ns"] - meta["stat"][1] < filecheck.RACY_NS


def test_a_large_file_keeps_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxfold.tokens import cacherun

    target, data = _session(tmp_path)
    monkeypatch.setattr(cacherun, "ANSWER_MAX", len(data) - 1)
    target.write_bytes(data)
    _cached(target)
    assert b'"answer"' not in _entry(tmp_path).read_bytes().split(b"\n", 2)[1]
    trace: dict[str, int] = {}
    assert _cached(target, trace) == _doc(target) and not trace["answered"] and trace["resumed"]


def _entry(tmp_path: Path) -> Path:
    folder = Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "counts"
    (entry,) = folder.glob("*.bin")
    return entry


@pytest.mark.parametrize("damage", ["garbage", "flipped", "truncated", "header"])
def test_a_damaged_entry_is_ignored_with_a_warning(tmp_path: Path, damage: str) -> None:
    target, data = _session(tmp_path)
    target.write_bytes(data[: _line_end(data, 0.5)])
    _cached(target)
    entry = _entry(tmp_path)
    raw = entry.read_bytes()
    broken = {
        "garbage": b"\x00not a cache\n" * 10,
        "flipped": raw[:-100] + bytes([raw[-100] ^ 0xFF]) + raw[-99:],
        "truncated": raw[: len(raw) // 2],
        "header": raw[: len(countstore.MAGIC)]
        + b"{broken\n"
        + raw[raw.index(b"\n", len(countstore.MAGIC)) + 1 :],
    }[damage]
    entry.write_bytes(broken)
    target.write_bytes(data)
    trace: dict[str, int] = {}
    warm, cold = _cached(target, trace), _doc(target)
    assert trace["resumed"] == 0
    notes = [w for w in warm["warnings"] if "count cache entry" in w]
    assert len(notes) == 1 and "counted afresh" in notes[0]
    warm["warnings"] = [w for w in warm["warnings"] if w not in notes]
    assert warm == cold
    assert _cached(target) == cold  # the entry was replaced: no warning the next time


def test_an_answer_is_read_without_the_state_it_does_not_need(tmp_path: Path) -> None:
    target, data = _session(tmp_path)
    target.write_bytes(data)
    cold = _doc(target)
    _cached(target)
    entry = _entry(tmp_path)
    raw = entry.read_bytes()
    header = json.loads(raw.split(b"\n", 2)[1])
    state_at = raw.index(b"\n", len(countstore.MAGIC)) + 1 + 10  # a byte of the state
    assert state_at < len(raw) - header["answer"]["bytes"]
    entry.write_bytes(raw[:state_at] + bytes([raw[state_at] ^ 0xFF]) + raw[state_at + 1 :])
    trace: dict[str, int] = {}
    warm = _cached(target, trace)  # answered: the damaged state is not read, nor reported
    assert warm == cold and trace["answered"] == 1
    grown = data + data[: data.index(b"\n") + 1]  # one line more: the state is needed now
    target.write_bytes(grown)
    trace = {}
    warm = _cached(target, trace)
    notes = [w for w in warm["warnings"] if "count cache entry" in w]
    assert trace["resumed"] == 0 and len(notes) == 1 and "damaged" in notes[0]


@pytest.mark.parametrize("part", ["state", "answer"])
def test_a_pickle_that_would_run_code_is_refused(tmp_path: Path, part: str) -> None:
    target, data = _session(tmp_path)
    cut = _line_end(data, 0.5)
    target.write_bytes(data[:cut])
    _cached(target)
    entry = _entry(tmp_path)
    raw = entry.read_bytes()
    end = raw.index(b"\n", len(countstore.MAGIC))
    header = json.loads(raw[len(countstore.MAGIC) : end])
    meta = header.pop("answer")
    state = raw[end + 1 : len(raw) - meta["bytes"]]
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    evil = pickle.dumps({"format": Evil()})
    if part == "state":
        header["payload_crc32"] = zlib.crc32(evil)
        body = evil
        target.write_bytes(data)  # grown: the state is read on from
    else:  # the file unchanged: the answer is what would be used
        header["answer"] = {**meta, "bytes": len(evil), "check": zlib.crc32(evil)}
        body = state + evil
    entry.write_bytes(countstore.MAGIC + json.dumps(header).encode() + b"\n" + body)
    warm = _cached(target)
    assert not marker.exists()
    assert any("could not be read back" in w for w in warm["warnings"])
    warm["warnings"] = [w for w in warm["warnings"] if "could not be read back" not in w]
    assert warm == _doc(target)


def test_other_settings_never_reuse_the_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, data = _session(tmp_path)
    cut = _line_end(data, 0.5)
    target.write_bytes(data[:cut])
    _cached(target, window=50_000)
    target.write_bytes(data)
    for kw in ({"window": 60_000}, {"tokenizer": "cl100k"}, {"model": "gpt-4o"}, {"tokenizer": "heuristic"}):
        trace: dict[str, int] = {}
        assert _cached(target, trace, **kw) == _doc(target, **kw), kw
        assert trace["resumed"] == 0, kw
    monkeypatch.setenv("CTXFOLD_TOKENIZER", "cl100k")  # the environment is a setting too
    trace = {}
    assert _cached(target, trace, window=50_000) == _doc(target, window=50_000)
    assert trace["resumed"] == 0
    monkeypatch.delenv("CTXFOLD_TOKENIZER")
    trace = {}
    assert _cached(target, trace, window=50_000) == _doc(target, window=50_000)
    assert trace["resumed"] == cut  # its own settings' entry is still there
    config = Config(models={"gpt-5-codex": {"window": 123_456}})
    assert cache_key(str(target), Spec(None, None, None, config), None, False) != cache_key(
        str(target), Spec(None, None, None, Config()), None, False
    )


def test_a_long_session_is_kept_in_slices_and_read_on_as_a_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept state pickles its requests a slice at a time (one pickle of them all holds a memo
    of every object); past MAX_CHUNKS, afresh."""
    monkeypatch.setattr(countstore, "SLICE", 3)
    monkeypatch.setattr(countstore, "MAX_CHUNKS", 6)
    target, data = _session(tmp_path)
    most = 0
    for step, fraction in enumerate((0.55, 0.65, 0.75, 0.85, 0.95, 1.0)):
        target.write_bytes(data[: _line_end(data, fraction) if fraction < 1 else len(data)])
        trace: dict[str, int] = {}
        assert _cached(target, trace) == _doc(target), fraction
        assert bool(trace["resumed"]) == (step > 0) and trace["kept"], (fraction, trace)
        entry = CountStore().load(cache_key(str(target), Spec(None, None, None, Config()), None, False), [])
        assert entry is not None
        requests, _ = pickle.loads(entry.payload)["frozen"]
        assert all(len(pickle.loads(c)) <= 3 for c in requests)
        most = max(most, len(requests))
    assert most > 1


def test_the_folder_is_kept_under_its_limit(tmp_path: Path) -> None:
    store = CountStore(tmp_path / "counts")
    for i in range(6):
        store.save({"n": i}, {"offset": 1, "lines": 1, "prefix_crc32": ""}, os.urandom(1000))
        os.utime(store.path_for({"n": i}), (1_000_000 + i, 1_000_000 + i))
    store.sweep(limit=3 * 1200)
    left = sorted(p.name for p in store.folder.glob("*.bin"))
    assert left == sorted(store.path_for({"n": i}).name for i in (3, 4, 5))  # the newest kept


def test_a_write_sweeps_the_folder_only_when_no_process_did_lately(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CountStore(tmp_path / "counts")
    sweep = CountStore.sweep  # the folder's limit: four entries (each is 1,000 bytes and a header)
    monkeypatch.setattr(CountStore, "sweep", lambda self: sweep(self, limit=4 * 1300))

    def write(n: int, sweep_age: float | None) -> list[str]:
        monkeypatch.setattr(CountStore, "swept", False)  # a new process
        monkeypatch.setattr(CountStore, "written", 0)
        if sweep_age is not None:
            stamp = store.folder / countstore.SWEPT
            stamp.touch()
            os.utime(stamp, (time.time() - sweep_age,) * 2)
        store.save({"n": n}, {"offset": 1, "lines": 1, "prefix_crc32": ""}, os.urandom(1000))
        os.utime(store.path_for({"n": n}), (1_000_000 + n, 1_000_000 + n))
        return sorted(p.name for p in store.folder.glob("*.bin"))

    for i in range(3):
        write(i, None)
    recent = countstore.SWEEP_EVERY / 2
    assert len(write(3, recent)) == 4
    assert len(write(4, recent)) == 5  # over the limit, but a sweep ran lately: left for later
    kept = write(5, countstore.SWEEP_EVERY * 2)
    assert kept == sorted(store.path_for({"n": i}).name for i in (2, 3, 4, 5))  # the newest kept
    assert time.time() - (store.folder / countstore.SWEPT).stat().st_mtime < recent


def test_checks_of_a_prefix_in_threads_switch_quickly_then_put_the_interval_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    path = tmp_path / "session.jsonl"
    path.write_bytes(os.urandom(3 << 20))  # over PrefixCheck.INLINE: checked in a thread
    release = threading.Event()
    check = filecheck.PrefixCheck._check
    monkeypatch.setattr(filecheck.PrefixCheck, "_check", lambda self: (release.wait(10), check(self)))
    before = sys.getswitchinterval()
    checks = [filecheck.PrefixCheck(str(path), size) for size in (2 << 20, 3 << 20)]  # at once
    assert sys.getswitchinterval() == min(before, filecheck.SWITCH_INTERVAL)
    release.set()
    digests = [c.result().hexdigest() for c in checks]
    assert sys.getswitchinterval() == before
    data = path.read_bytes()
    assert digests == [f"{zlib.crc32(data[:n]):08x}" for n in (2 << 20, 3 << 20)]


def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    if not parallel.may_fork():
        pytest.skip("no fork, or one core: prefixes are checked in a thread")
    monkeypatch.setattr(filecheck.PrefixCheck, "INLINE", 0)
    monkeypatch.setattr(filecheck.PrefixCheck, "FORK", 0)


def test_a_prefix_checked_in_a_forked_process_gives_the_crc_and_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forking(monkeypatch)
    path = tmp_path / "session.jsonl"
    data = os.urandom(3 << 20)
    path.write_bytes(data)
    for size in (1, 1 << 20, (3 << 20) - 7, 3 << 20, 4 << 20):  # the last: the file is shorter
        check = filecheck.PrefixCheck(str(path), size)
        assert check.forked is not None
        pid = check.forked[0]
        inline = filecheck.PrefixHash()
        inline.update(data[:size])
        if size > len(data):
            inline.update(b"\0cut short")
        assert check.result().hexdigest() == inline.hexdigest()
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped


def test_a_forked_check_that_dies_is_hashed_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _forking(monkeypatch)
    path = tmp_path / "session.jsonl"
    data = os.urandom(2 << 20)
    path.write_bytes(data)
    here, check = os.getpid(), filecheck.PrefixCheck._check_mapped

    def dies_in_the_child(self: filecheck.PrefixCheck) -> None:
        if os.getpid() != here:
            os._exit(3)  # killed before it could answer (SIGBUS: the file cut short while mapped)
        check(self)

    monkeypatch.setattr(filecheck.PrefixCheck, "_check_mapped", dies_in_the_child)
    checked = filecheck.PrefixCheck(str(path), len(data))
    assert checked.forked is not None
    assert checked.result().hexdigest() == f"{zlib.crc32(data):08x}"


def test_no_forked_check_with_helpers_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _forking(monkeypatch)
    monkeypatch.setenv("CTXFOLD_WORKERS", "0")  # a folder's worker: its siblings have the cores
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"x" * (2 << 20))
    check = filecheck.PrefixCheck(str(path), 2 << 20)
    assert check.forked is None and check.ident is not None  # a thread, started
    assert check.result().hexdigest() == f"{zlib.crc32(b'x' * (2 << 20)):08x}"


def _cli(args: list[str], cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any, Any]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    result = runner.invoke(app, args)
    profile = cache_home / "ctxfold" / "profile.json"
    return (
        result.exit_code,
        orjson.loads(result.stdout),
        orjson.loads(profile.read_bytes()) if profile.exists() else None,
    )


@pytest.mark.parametrize("command", ["estimate", "report"])
def test_the_profile_learns_as_in_a_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    sources = real_files("claude-code")[:2] or [FIXTURES / "claude-code" / "edge-cases.jsonl"]
    folder = tmp_path / "sessions"
    folder.mkdir()
    for src in sources:
        data = src.read_bytes()
        (folder / src.name).write_bytes(data[: _line_end(data, 0.5)])
    runs: dict[str, list[Any]] = {"cache": [], "cold": []}
    for step in range(3):  # the sessions grow between the runs
        if step == 1:
            for src in sources:
                (folder / src.name).write_bytes(src.read_bytes())
        for side, extra in (("cache", []), ("cold", ["--no-cache"])):
            runs[side].append(_cli([command, str(folder), "--json", *extra], tmp_path / side, monkeypatch))
    assert runs["cache"] == runs["cold"]
    assert list((tmp_path / "cache" / "ctxfold" / "counts").glob("*.bin"))
    assert not (tmp_path / "cold" / "ctxfold" / "counts").exists()  # --no-cache keeps nothing


def test_the_environment_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXFOLD_NO_CACHE", "1")
    code, doc, _ = _cli(
        ["estimate", str(FIXTURES / "codex" / "lab-0169.jsonl"), "--json"], tmp_path, monkeypatch
    )
    assert code == 0 and doc["files"]
    assert not (tmp_path / "ctxfold" / "counts").exists()


def test_pending_bytes_are_what_the_cache_would_not_answer(tmp_path: Path) -> None:
    from ctxfold.tokens.incremental import pending_bytes

    target, data = _session(tmp_path)
    cut = _line_end(data, 0.5)
    target.write_bytes(data[: cut + 10])  # a line still being written
    other = tmp_path / "other.jsonl"
    other.write_bytes(data)
    paths = [str(target), str(other)]
    assert pending_bytes(paths) == cut + 10 + len(data)  # nothing kept yet
    _cached(target)
    assert pending_bytes(paths) == len(data)  # the first is answered, its unfinished line too
    target.write_bytes(data)
    assert pending_bytes(paths) == 2 * len(data) - cut  # read on after the state kept


def test_a_folder_the_cache_answers_loads_no_engine(tmp_path: Path) -> None:
    """A report over sessions read before: every file is answered, and no tokenizer engine is
    loaded for the folder before its workers are forked (nor by them)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    data = (FIXTURES / "codex" / "lab-0169.jsonl").read_bytes()
    for i in range(24):  # over a megabyte: read by two worker processes
        (folder / f"{i:02d}.jsonl").write_bytes(data)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "CTXFOLD_BPE": ""}
    cmd = [
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "ctxfold",
        "report",
        str(folder),
        "--brief",
        "--jobs",
        "2",
    ]

    def engines() -> set[str]:
        out = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, check=True)
        assert len(json.loads(out.stdout)["files"]) == 24
        imported = {
            line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "import time:" in line
        }
        return {m for m in imported if m.split(".")[0] in ("tiktoken", "quicktok", "rs_bpe")}

    assert engines()  # the first run counts: the measure is real
    assert not engines()


def test_a_cold_read_kept_for_later_tells_its_counting_how_far_it_has_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large log's engine and helper thread turn on the bytes read so far
    (``tokens/parallel.py``): a cold read through the count cache, which ``estimate`` makes by
    default, says how far it has read, as a read without the cache does."""
    from ctxfold.tokens import parallel

    path = FIXTURES / "codex" / "lab-0169.jsonl"
    made: list[Any] = []
    init = parallel.Counting.__init__

    def spy(self: Any, tokenizer: Any, size: int | None, read: Any = None) -> None:
        init(self, tokenizer, size, read)
        made.append(self)

    monkeypatch.setattr(parallel.Counting, "__init__", spy)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    seen = []
    for run in (estimate_file, estimate_incremental):
        made.clear()
        trace: dict[str, int] = {}
        run(str(path), **({"trace": trace} if run is estimate_incremental else {}))
        seen.append([(c._size, c._bytes_read()) for c in made if c._size])
    assert trace["kept"]  # the second read was made to be kept
    assert seen[0] == seen[1] == [(path.stat().st_size, path.stat().st_size)]


def _tokenized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the tokenizer is given from now on (by any engine of this process)."""
    from ctxfold.tokens.tokenizers import BpeTokenizer

    seen: list[str] = []
    count_batch = BpeTokenizer.count_batch

    def recording(self: BpeTokenizer, texts: Any) -> list[int]:
        seen.extend(texts)
        return count_batch(self, texts)

    monkeypatch.setattr(BpeTokenizer, "count_batch", recording)
    return seen


@pytest.mark.parametrize("header", ["kept", "changed"])
def test_what_the_reader_held_is_not_tokenized_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, header: str
) -> None:
    """Claude Code writes a line no message comes of (a queue operation) after an assistant's
    message the reader still holds: the next run takes that message's counts from the entry
    (heldcounts.py) and tokenizes nothing, and gives the cold run's result. Counts changed in
    the entry's header no longer check: the message is tokenized again, and the result is
    still the cold run's."""
    src = FIXTURES / "real" / "claude-code-sidechains.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    at = next(i for i in range(len(lines) // 2, len(lines)) if b'"type":"assistant"' in lines[i]) + 1
    target = tmp_path / "s" / "session.jsonl"
    target.parent.mkdir()
    target.write_bytes(b"".join(lines[:at]))
    _cached(target)
    entry = _entry(tmp_path)
    raw = entry.read_bytes()
    head, rest = raw[len(countstore.MAGIC) :].split(b"\n", 1)
    doc = json.loads(head)
    assert doc["held"]["counts"]  # the held message's texts, counted at the end of the run
    if header == "changed":
        counts = doc["held"]["counts"]
        counts[next(iter(counts))] += 1000
        entry.write_bytes(countstore.MAGIC + json.dumps(doc, sort_keys=True).encode() + b"\n" + rest)
    with target.open("ab") as f:
        f.write(b'{"type":"queue-operation","operation":"enqueue","timestamp":"2025-01-01T00:00:00Z"}\n')
    seen = _tokenized(monkeypatch)
    trace: dict[str, int] = {}
    warm = _cached(target, trace)
    assert trace["resumed"]
    assert (seen == []) == (header == "kept")
    assert warm == _doc(target)


def test_the_key_names_the_real_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The path in a cache key is ``os.path.realpath``'s, found faster (a folder resolved once):
    through a linked folder, a linked file, dots, a relative path, a missing file."""
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "a.jsonl").write_text("{}\n")
    (tmp_path / "linked").symlink_to(real)
    (real / "sub" / "b.jsonl").symlink_to(real / "sub" / "a.jsonl")
    (real / "deep" / "er").mkdir(parents=True)
    (real / "deep" / "a.jsonl").write_text("{}\n")
    (tmp_path / "to-deep").symlink_to(real / "deep" / "er")
    monkeypatch.chdir(real)
    cases = [
        str(tmp_path / "linked" / "sub" / "a.jsonl"),
        str(real / "sub" / "b.jsonl"),
        str(tmp_path / "linked" / "sub" / ".." / "sub" / "a.jsonl"),
        "sub/a.jsonl",
        str(tmp_path / "linked" / "sub" / "missing.jsonl"),
        str(tmp_path / "linked" / "sub"),
        str(tmp_path / "to-deep" / ".." / "a.jsonl"),  # the link first, then ..
    ]
    for _ in range(2):  # the second time, from the folders found the first
        for case in cases:
            assert incremental._real(case) == os.path.realpath(case), case
