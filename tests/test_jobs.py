"""Many files on several processes, one large file with a helper: the results of a serial run.

The output (documents, order, failures) and the learned profile must be those of one worker,
file for file; a file that fails teaches nothing, and a bug or a dying worker costs only its
own file."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, real_files
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxfold.cli import jobs
from ctxfold.cli.app import app
from ctxfold.tokens import incremental
from ctxfold.tokens.estimate import estimate_file, estimate_to_dict
from ctxfold.tokens.tokenizers import ENGINE_VAR

runner = CliRunner()
_original_count_file = incremental.count_file


def _sessions(folder: Path) -> Path:
    """A folder of sessions of every format: the bundled fixtures, and the real ones if present."""
    folder.mkdir()
    sources = [p for p in sorted(FIXTURES.rglob("*.jsonl")) if "writer-edge" not in p.name]
    sources += real_files("claude-code")[:3] + real_files("codex")[:2] + real_files("pi")[:1]
    for i, src in enumerate(sources):
        shutil.copyfile(src, folder / f"{i:02d}-{src.parent.name}-{src.name}")
    (folder / "50-broken.jsonl").write_bytes(b'{"role": "user", "content": "hi"}\n{"role": \n')
    (folder / "51-empty.jsonl").write_bytes(b"")
    return folder


def _run(args: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any, bytes | None]:
    """Exit code, the --json document, and the profile the run left in its own cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    r = runner.invoke(app, [*args, "--json"])
    profile = cache / "ctxfold" / "profile.json"
    return r.exit_code, orjson.loads(r.stdout), profile.read_bytes() if profile.exists() else None


@pytest.fixture(autouse=True, params=[8, 1], ids=["file-tasks", "chunked"])
def _parallel_even_for_small_folders(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Every test runs with one file per task and with files in chunks (as a large folder is)."""
    monkeypatch.setattr(jobs, "MIN_BYTES", 0)
    monkeypatch.setattr(jobs, "TASKS_PER_WORKER", request.param)


@pytest.mark.parametrize("command", [["estimate"], ["report"], ["report", "--simulate-compaction"]])
def test_several_workers_give_the_serial_results_and_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    folder = _sessions(tmp_path / "sessions")
    serial = _run([*command, str(folder), "--jobs", "1"], tmp_path / "c1", monkeypatch)
    parallel = _run([*command, str(folder), "--jobs", "3"], tmp_path / "c3", monkeypatch)
    assert serial[0] == parallel[0] == 1  # the broken and the empty file
    assert parallel[1] == serial[1]
    assert len(serial[1]["files"]) >= 20 and len(serial[1]["failed"]) == 2
    assert serial[2] is not None and parallel[2] == serial[2]  # learned the same, in the same order
    # the profile grows file by file: a second run predicts from it, alike on both sides
    again = _run([*command, str(folder), "--jobs", "1"], tmp_path / "c1", monkeypatch)
    again_parallel = _run([*command, str(folder), "--jobs", "3"], tmp_path / "c3", monkeypatch)
    assert again_parallel[1] == again[1]


def test_validate_on_several_workers_gives_the_serial_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``validate`` of a folder reads its files on every core: the same document, in the same
    order, with the broken and the empty file among the failures."""
    folder = _sessions(tmp_path / "sessions")
    pools: list[int] = []
    real_pool = jobs._pool
    monkeypatch.setattr(jobs, "_pool", lambda n: pools.append(n) or real_pool(n))
    serial = _run(["validate", str(folder), "--jobs", "1"], tmp_path / "c1", monkeypatch)
    parallel = _run(["validate", str(folder), "--jobs", "3"], tmp_path / "c3", monkeypatch)
    assert pools == [3] and parallel[:2] == serial[:2]
    assert len(serial[1]["files"]) >= 20 and serial[0] == 1  # the broken file is a failed check


def _failing_estimate_file(path: str, **kwargs: Any) -> Any:
    """estimate_file, but a file named *bug* meets a bug and one named *die* kills its worker."""
    name = Path(path).name
    if "bug" in name:
        raise ZeroDivisionError("a bug met on this file")
    if "die" in name and os.getpid() != _PARENT:
        os._exit(9)
    return _original_count_file(path, **kwargs)


_PARENT = os.getpid()


def test_a_bug_or_a_dead_worker_costs_only_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    good = FIXTURES / "ctxfold" / "coding-session.jsonl"
    for name in ("a.jsonl", "b-bug.jsonl", "c.jsonl", "d-die.jsonl", "e.jsonl"):
        shutil.copyfile(good, folder / name)
    monkeypatch.setattr(incremental, "count_file", _failing_estimate_file)
    code, doc, _ = _run(["estimate", str(folder), "--jobs", "2"], tmp_path / "cache", monkeypatch)
    assert code == 1
    assert [Path(f["path"]).name for f in doc["files"]] == ["a.jsonl", "c.jsonl", "e.jsonl"]
    failed = {Path(f["path"]).name: f["error"] for f in doc["failed"]}
    assert "internal error: ZeroDivisionError: a bug met on this file" in failed["b-bug.jsonl"]
    assert "the worker process reading it died" in failed["d-die.jsonl"]


@dataclass(frozen=True, slots=True)
class _Kept:
    """A value pickled by Python code (a frozen dataclass with slots gets a ``__getstate__``
    written in Python), as the price list's are: there the pickling thread may give up the
    interpreter to the main one."""

    n: int


def _size_of(path: str, *, settings: dict[int, _Kept], on_progress: Any = None) -> int:
    return os.path.getsize(path)


def test_finishing_files_while_workers_read_never_races_the_settings_sent_to_them(tmp_path: Path) -> None:
    """``finish`` runs here while later files are still being sent to the workers, and may
    touch what the settings hold (the price list remembers each model it looked up). Once, a
    folder's ``report`` met "dictionary changed size during iteration": the pool pickles each
    task in a thread of its own, and it was pickling a dict ``finish`` was adding to."""
    from functools import partial

    paths = []
    for i in range(120):
        paths.append(str(tmp_path / f"{i:03d}.jsonl"))
        Path(paths[-1]).write_bytes(b"x" * i)
    shared = {k: _Kept(k) for k in range(20_000)}  # some ms to pickle: the window the race needs
    work = partial(_size_of, settings=shared)

    def finish(size: int) -> int:
        for k in range(200):
            shared[-size * 1000 - k] = _Kept(k)  # what a memo does while the next tasks are sent
        return size

    results, failed = jobs.read_files((paths, []), work, finish, jobs=2, progress=False)
    assert failed == []
    assert results == list(range(120))


def test_nothing_is_learned_from_a_file_that_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = real_files("claude-code")[:1] or [FIXTURES / "claude-code" / "edge-cases.jsonl"]
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copyfile(src[0], folder / "x-bug.jsonl")
    shutil.copyfile(FIXTURES / "ctxfold" / "coding-session.jsonl", folder / "y.jsonl")
    monkeypatch.setattr(incremental, "count_file", _failing_estimate_file)
    _, _, with_bug = _run(["estimate", str(folder), "--jobs", "2"], tmp_path / "c1", monkeypatch)
    (folder / "x-bug.jsonl").unlink()
    _, _, without = _run(["estimate", str(folder), "--jobs", "1"], tmp_path / "c2", monkeypatch)
    assert with_bug == without


def test_how_many_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [str(p) for p in sorted((FIXTURES / "codex").glob("*.jsonl"))]
    assert jobs.jobs_for(None, paths[:1]) == 1  # one file: read here
    assert jobs.jobs_for(8, paths) == len(paths)  # no more workers than files
    assert jobs.jobs_for(1, paths) == 1
    assert jobs.jobs_for(2, [*paths, "-"]) == 1  # stdin is read here
    monkeypatch.setenv("CTXFOLD_WORKERS", "0")
    assert jobs.jobs_for(None, paths) == 1
    monkeypatch.setenv("CTXFOLD_WORKERS", "2")
    assert jobs.jobs_for(None, paths) == 2 and jobs.jobs_for(3, paths) == 3  # the flag wins
    monkeypatch.setenv("CTXFOLD_DEBUG", "1")
    assert jobs.jobs_for(None, paths) == 1  # its tracebacks are this process's
    monkeypatch.delenv("CTXFOLD_DEBUG")
    monkeypatch.setattr(jobs, "MIN_BYTES", 10**12)
    assert jobs.jobs_for(None, paths) == 1  # too little to pay for a pool
    monkeypatch.setenv("CTXFOLD_WORKERS", "many")
    r = runner.invoke(app, ["estimate", *paths])
    assert r.exit_code == 2 and "CTXFOLD_WORKERS='many'" in r.stderr


def test_a_folder_read_before_is_answered_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the bytes still to parse pay for a pool: a folder whose files the count cache answers
    is read in this process, with the output of the run that filled the cache."""
    folder = _sessions(tmp_path / "sessions")
    to_read: list[int | None] = []
    pools: list[int] = []
    real_jobs_for, real_pool = jobs.jobs_for, jobs._pool

    def jobs_for(flag: int | None, paths: list[str], size: int | None = None) -> int:
        to_read.append(size)
        return real_jobs_for(flag, paths, size)

    monkeypatch.setattr(jobs, "jobs_for", jobs_for)
    monkeypatch.setattr(jobs, "_pool", lambda n: pools.append(n) or real_pool(n))
    total = jobs.total_size([str(p) for p in folder.iterdir()])
    monkeypatch.setattr(jobs, "MIN_BYTES", total)
    args = ["report", str(folder), "--jobs", "2", "--no-profile"]
    first = _run(args, tmp_path / "cache", monkeypatch)
    assert to_read == [total] and pools == [2]  # nothing kept yet: all of it, in a pool
    again = _run(args, tmp_path / "cache", monkeypatch)
    assert to_read[1] is not None and to_read[1] < total // 10  # (the broken files, the empty one)
    assert pools == [2] and again[1] == first[1] and again[0] == first[0] == 1


def _large_sessions() -> list[Path]:
    found = real_files("codex")[:1] + real_files("claude-code")[:1]
    return found or [FIXTURES / "codex" / "lab-0169.jsonl"]


@pytest.mark.parametrize("engine", ["quicktok", "rs-bpe", "tiktoken"])
@pytest.mark.parametrize("path", _large_sessions(), ids=lambda p: p.name)
def test_a_large_file_counted_with_helpers_equals_in_process(
    path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """quicktok counts batches in a helper thread, rs-bpe and tiktoken in forked processes;
    either way the estimate is the in-process one, batch for batch."""
    from ctxfold.tokens import parallel, tokenizers

    for name in ("THREAD_FIRST", "THREAD_WORTH", "THREAD_AFTER"):  # the helper from the first batch on
        monkeypatch.setattr(parallel, name, 0)
    monkeypatch.setenv(ENGINE_VAR, engine)
    monkeypatch.setattr(tokenizers, "_instances", {})
    monkeypatch.setenv("CTXFOLD_WORKERS", "0")
    alone = estimate_to_dict(estimate_file(path))
    monkeypatch.setenv("CTXFOLD_WORKERS", "2")
    helped = estimate_to_dict(estimate_file(path))
    assert helped == alone and helped["context_tokens"] > 0


def test_the_per_file_function_is_pure(tmp_path: Path) -> None:
    """What docs/scale.md promises an engine that maps it over a bucket: the same plain data from
    the bytes as from the path, every time, and nothing written (no profile)."""
    import io

    path = FIXTURES / "codex" / "lab-0169.jsonl"
    from_path = estimate_to_dict(estimate_file(path))
    stream = io.BytesIO(path.read_bytes())
    stream.name = str(path)
    assert estimate_to_dict(estimate_file(stream)) == from_path == estimate_to_dict(estimate_file(path))
    assert orjson.loads(orjson.dumps(from_path)) == from_path  # plain data
    assert not list((Path.home() / ".cache").rglob("profile.json"))


def test_the_files_bar_runs_no_thread_while_workers_are_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal a bar counts the files; it draws from the callbacks, so when the workers
    are forked no other thread holds a lock a child could inherit held."""
    import io
    import threading

    from rich.console import Console

    from ctxfold.cli import render

    screen = Console(file=io.StringIO(), force_terminal=True, width=100)
    monkeypatch.setattr(render, "err", screen)
    started: list[list[str]] = []  # threads started by the command, when it forks workers
    real_pool = jobs._pool

    def pool(n: int) -> Any:
        started.append([t.name for t in threading.enumerate() if t.ident not in before])
        return real_pool(n)

    monkeypatch.setattr(jobs, "_pool", pool)
    folder = _sessions(tmp_path / "sessions")
    before = {t.ident for t in threading.enumerate()}  # threads other tests may have left running
    r = runner.invoke(app, ["estimate", str(folder), "--jobs", "2"])
    assert r.exit_code == 1 and started == [[]]
    n = len(list(folder.glob("*.jsonl")))
    assert f"{n}/{n}" in screen.file.getvalue()  # type: ignore[attr-defined]


class _Released:
    """A tokenizer whose batches a helper thread would count: records which batches went there."""

    name = "fake"

    def __init__(self) -> None:
        self.handed: list[int] = []

    def native(self) -> object:
        return self

    def released(self) -> object:
        return lambda texts, threads: self.handed.append(len(texts)) or [1] * len(texts)

    def count_batch(self, texts: list[str]) -> list[int]:
        return [1] * len(texts)


@pytest.mark.parametrize(
    ("read", "handed_from"),
    [
        (lambda: 10_000_000, 2),  # a tenth read with 2 M characters counted: 18 M projected to come
        (lambda: 90_000_000, None),  # 90 % read: at most 1.1 M to come, not worth the thread start
        (None, 8),  # the bytes read unknown: after THREAD_AFTER
    ],
    ids=["early", "nearly-done", "unknown"],
)
def test_a_helper_thread_starts_when_what_is_left_pays_for_it(
    read: Any, handed_from: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxfold.tokens import parallel

    monkeypatch.setenv("CTXFOLD_WORKERS", "2")
    tok = _Released()
    counting = parallel.Counting(tok, 100_000_000, read)
    try:
        for _ in range(10):
            counting.submit(["x" * 1_000_000]).result()
    finally:
        counting.close()
    # batch k (0-based) goes to the thread once k million characters were counted here
    want = 0 if handed_from is None else 10 - handed_from
    assert len(tok.handed) == want


@pytest.mark.parametrize(("chars", "engine"), [(100_000, "rs-bpe"), (400_000, "quicktok")])
def test_a_large_input_with_little_text_to_count_is_counted_by_the_engine_that_loads_fast(
    chars: int, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 MB of log wants quicktok by its size; but the first batch (1 MB of it read) projects
    the text to count: 20 M characters are counted sooner by rs-bpe (loaded in 0.05 s), 80 M by
    quicktok (loaded in about a second)."""
    from ctxfold.tokens import parallel, tokenizers
    from ctxfold.tokens.encodings import get_encoding

    monkeypatch.delenv(ENGINE_VAR, raising=False)
    monkeypatch.setenv("CTXFOLD_WORKERS", "2")
    tok = tokenizers.BpeTokenizer("o200k", "o200k_base")
    counting = parallel.Counting(tok, 200_000_000, lambda: 1_000_000)
    try:
        text = "a few words " * (chars // 12)
        assert counting.submit([text]).result() == [len(get_encoding("o200k_base").encode_ordinary(text))]
    finally:
        counting.close()
    assert tok.engine == engine


def test_a_large_inputs_engine_is_chosen_from_its_first_megabytes_not_its_first_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A log's opening is denser than the rest: a first batch of 1 MB read that would project
    200 M characters, then 1 MB batches of little text. By ``DECIDE_BYTES`` (4 MB) the batches
    project 53 M: rs-bpe, every batch counted as tiktoken counts it, in order."""
    from ctxfold.tokens import parallel, tokenizers
    from ctxfold.tokens.encodings import get_encoding

    monkeypatch.delenv(ENGINE_VAR, raising=False)
    monkeypatch.setenv("CTXFOLD_WORKERS", "2")
    tok = tokenizers.BpeTokenizer("o200k", "o200k_base")
    read = [0]
    counting = parallel.Counting(tok, 200_000_000, lambda: read[0])
    texts = ["dense words " * 83_000, *(f"{i} sparse" * 2_000 for i in range(5))]
    futures = []
    try:
        for text in texts:
            read[0] += 1_000_000
            futures.append(counting.submit([text]))
            # none counted before the engine is chosen: the caller may leave them all in flight
            assert counting.in_flight >= len(futures) or read[0] >= parallel.DECIDE_BYTES
        got = [f.result() for f in futures]
    finally:
        counting.close()
    reference = get_encoding("o200k_base")
    assert got == [[len(reference.encode_ordinary(t))] for t in texts]
    assert tok.engine == "rs-bpe"


def test_only_an_engine_still_to_choose_waits_for_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches are held for a large input only: not for a smaller one (rs-bpe), nor once
    quicktok is loaded (any input keeps it), nor with an engine pinned."""
    from ctxfold.tokens import tokenizers

    pytest.importorskip("quicktok", reason="quicktok has no wheel for this platform")
    monkeypatch.delenv(ENGINE_VAR, raising=False)
    tok = tokenizers.BpeTokenizer("o200k", "o200k_base")
    assert tok.by_text(tokenizers.QUICK_INPUT) and not tok.by_text(tokenizers.QUICK_INPUT - 1)
    tok.plan(tokenizers.QUICK_INPUT)
    assert tok.native().name == "quicktok" and not tok.by_text(tokenizers.QUICK_INPUT)
    monkeypatch.setenv(ENGINE_VAR, "rs-bpe")
    assert not tokenizers.BpeTokenizer("o200k", "o200k_base").by_text(tokenizers.QUICK_INPUT)


@pytest.mark.parametrize("path", _large_sessions(), ids=lambda p: p.name)
def test_batches_held_until_the_engine_is_chosen_give_the_in_process_estimate(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log large enough for its text to choose the engine (the threshold lowered to this
    one), in small batches, the choice made halfway: the estimate is the in-process one."""
    from ctxfold.tokens import parallel, session, tokenizers

    monkeypatch.delenv(ENGINE_VAR, raising=False)
    monkeypatch.setattr(tokenizers, "QUICK_INPUT", 0)
    monkeypatch.setattr(session, "BATCH_MESSAGES", 8)
    monkeypatch.setattr(parallel, "DECIDE_BYTES", path.stat().st_size // 2)
    monkeypatch.setattr(tokenizers, "_instances", {})
    monkeypatch.setenv("CTXFOLD_WORKERS", "0")
    alone = estimate_to_dict(estimate_file(path))
    held: list[int] = []
    decide = parallel.Counting.decide

    def spy(self: Any) -> None:
        held.append(len(self._held))
        decide(self)

    monkeypatch.setattr(parallel.Counting, "decide", spy)
    monkeypatch.setattr(tokenizers, "_instances", {})
    monkeypatch.setenv("CTXFOLD_WORKERS", "2")
    helped = estimate_to_dict(estimate_file(path))
    assert helped == alone and helped["context_tokens"] > 0
    assert len(held) == 1 and held[0] > 1


@given(st.integers(0, 3000), st.integers(1, 32), st.integers(1, 8))
def test_the_tasks_take_every_file_once_in_order_smaller_at_the_end(n: int, chunk: int, workers: int) -> None:
    """The workers run out of files together: tasks shrink towards the end, none over the cap,
    and together they are the files in order."""
    tasks = jobs._chunks(list(range(n)), chunk, workers)
    assert [i for t in tasks for i in t] == list(range(n))
    sizes = [len(t) for t in tasks]
    assert all(0 < s <= chunk for s in sizes)
    assert sizes == sorted(sizes, reverse=True)
    if n > 2 * workers:
        assert sizes[-1] == 1


def test_a_folder_names_the_files_pathlib_s_rglob_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder's logs are found by ``os.scandir``, and named and chosen as ``Path.rglob`` would
    find them: hidden folders too, linked files but not linked folders, no folder named like a
    log, no broken link, whatever the folder's argument looks like."""
    from ctxfold.cli.inputs import _is_log, _paths

    log = b'{"type":"user"}\n'
    chat = b'{"sessionId": "s", "projectHash": "p", "messages": []}'
    tree = {
        "a.jsonl": log,
        "sub/b.jsonl": log,
        "sub/.hidden/c.jsonl": log,
        "sub/deep/er/d.jsonl": log,
        "sub/chat.json": chat,
        "sub/package.json": b'{"name": "x"}',
        "sub/e.jsonl.bak": log,
        "sub/f.ctxfold.json": chat,
        "sub/.jsonl": log,
        "other/g.jsonl": log,
    }
    root = tmp_path / "logs"
    for name, data in tree.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "dir.json").mkdir()
    (root / "linked").symlink_to(root / "other", target_is_directory=True)
    (root / "sub" / "link.jsonl").symlink_to(root / "a.jsonl")
    (root / "sub" / "broken.jsonl").symlink_to(root / "missing.jsonl")
    monkeypatch.chdir(tmp_path)
    for arg in ["logs", "logs/", "./logs", "logs/sub/..", str(root), "logs/sub"]:
        want = sorted(str(f) for f in Path(arg).rglob("*.json*") if f.is_file() and _is_log(f))
        assert _paths(arg) == want, arg
    monkeypatch.chdir(root)
    assert _paths(".") == sorted(str(f) for f in Path(".").rglob("*.json*") if f.is_file() and _is_log(f))
    assert "a.jsonl" in _paths(".") and "linked/g.jsonl" not in _paths(".")
