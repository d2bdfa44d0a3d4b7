"""``compact`` streaming a long context (flat memory) writes what reading the session whole
writes: byte for byte, on every bundled fixture and real session, the summary pass with the
offline digest and the default options, and the other strategies keeping only the context.

Three runs per file, with the same fresh ids and clock: the session kept whole (the reading
a state file's pass still uses), the outline with
the context kept as a list (what a context under ``CTXFOLD_STREAM_CHARS`` takes), and every
context streamed (``CTXFOLD_STREAM_CHARS=0``: the digest's streamed readings, the kept tail,
the outline the writers read). A refusal must be the same refusal."""

from __future__ import annotations

import random
import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, real, real_files

import ctxfold.compaction.read as read_step
import ctxfold.compaction.run as run
import ctxfold.compaction.statefile as statefile
import ctxfold.formats.base as formats_base
import ctxfold.formats.genai.writer as genai_writer
import ctxfold.formats.pi.session as pi_session
import ctxfold.formats.pi.writer as pi_writer
import ctxfold.providers.helper as helper
from ctxfold.compaction.options import CompactOptions
from ctxfold.errors import CtxfoldError
from ctxfold.formats.loader import load
from ctxfold.providers.offline import OfflineSummarizer
from ctxfold.strategies import sliding_window, streamed
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import Message, TextPart

FILES = sorted(FIXTURES.rglob("*.jsonl")) + real_files()


class _Frozen(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> _Frozen:
        return cls(2026, 1, 2, 3, 4, 5, 678000, tzinfo=tz or timezone.utc)


def _compact(
    path: Path, out: Path, monkeypatch: pytest.MonkeyPatch, strategy: str = "summary", **options: Any
) -> dict[str, Any]:
    draw = random.Random(20)  # the same ids in every run, each as random-looking as uuid4's
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=draw.getrandbits(128), version=4))
    for module in (statefile, formats_base, pi_writer, pi_session, genai_writer):
        monkeypatch.setattr(module, "datetime", _Frozen)
    summarizer = OfflineSummarizer()
    try:
        r = run.compact_file(
            str(path),
            summarizer,
            summarizer_window=None,
            options=CompactOptions(force=True, out_dir=str(out), strategy=strategy, **options),
        )
    except CtxfoldError as err:
        return {"refused": str(err).replace(str(out), "OUT")}
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}
    return {"status": r.status, "notes": r.notes, "files": files}


def _runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with monkeypatch.context() as m:
        m.setattr(run, "_can_outline", lambda *a: False)
        out["whole"] = _compact(path, tmp_path / "whole", m)
    with monkeypatch.context() as m:
        m.setenv("CTXFOLD_STREAM_CHARS", str(10**12))
        out["outline"] = _compact(path, tmp_path / "outline", m)
    with monkeypatch.context() as m:
        m.setenv("CTXFOLD_STREAM_CHARS", "0")
        m.setattr(streamed, "RETAIN_CHARS", 20_000)  # a short kept tail: its bounds are crossed too
        folds = _counting(m, streamed, "fold_streamed")
        reads = _counting(m, run, "read_input")
        out["streamed"] = _compact(path, tmp_path / "streamed", m)
        folded = "files" in out["whole"] or "refused: the" in out["whole"].get("refused", "")
        # a context streams from its second message on (the first may be a summary the next
        # replaces); a compaction the log recorded that keeps messages the short tail let go
        # reads the session again whole
        if folded and len(current_context(load(str(path)).entries).messages) >= 2:
            assert folds or len(reads) == 2, "the streamed run neither folded streaming nor read again"
    return out


def _counting(m: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    m.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_streamed_compaction_writes_what_the_whole_one_writes(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs(path, tmp_path, monkeypatch)
    whole = runs["whole"]
    for name in ("outline", "streamed"):
        got = runs[name]
        if "files" in whole and "files" in got:
            assert got["files"].keys() == whole["files"].keys()
            for file, data in whole["files"].items():
                assert got["files"][file] == data, f"{name}: {file} differs"
        assert got == whole, name


@pytest.mark.parametrize("strategy", ["sliding-window", "mask-observations"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_strategy_keeps_only_the_context_and_writes_what_the_whole_read_writes(
    path: Path, strategy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first pass of any strategy keeps the current context and the writers' outline, not
    every entry (a 200 MB Claude Code log: 496 -> 140 MB with mask-observations)."""
    read_input, kept = run.read_input, []

    def reading(*a: Any, **k: Any) -> Any:
        read = read_input(*a, **k)
        kept.append(read.outline is not None)
        return read

    monkeypatch.setattr(run, "read_input", reading)
    got = _compact(path, tmp_path / "outline", monkeypatch, strategy)
    monkeypatch.setattr(run, "_can_outline", lambda *a: False)
    assert got == _compact(path, tmp_path / "whole", monkeypatch, strategy)
    assert kept == [True, False]  # the first run kept an outline, the second every entry


def test_a_tail_the_stream_did_not_keep_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose exchange under way stays verbatim: with only its last message kept, the
    streamed fold cannot tell where that exchange starts, so the session is read again whole."""
    path = real("codex/edgerunner.jsonl")
    monkeypatch.setenv("CTXFOLD_STREAM_CHARS", "0")
    monkeypatch.setattr(streamed, "RETAIN_CHARS", 1)
    rereads = _counting(monkeypatch, run, "reread")
    got = _compact(path, tmp_path / "fallback", monkeypatch)
    assert rereads, "the streamed fold did not read the session again"
    monkeypatch.setattr(run, "_can_outline", lambda *a: False)
    assert got == _compact(path, tmp_path / "whole", monkeypatch)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_readings_made_by_a_helper_process_are_the_same(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large log's streamed readings are made by a helper process (providers/helper.py):
    here every context streams and every log counts as large, and the outputs are the ones the
    readings made in-process give, byte for byte."""
    monkeypatch.setenv("CTXFOLD_STREAM_CHARS", "0")
    local = _compact(path, tmp_path / "local", monkeypatch)
    started = _counting(monkeypatch, helper.HelperDigesting, "_hand_over")
    monkeypatch.setattr(read_step, "workers_for", lambda size: 2)
    monkeypatch.setattr(helper, "HANDOVER", 3)  # the readings of the first 3 messages are handed over
    assert _compact(path, tmp_path / "helper", monkeypatch) == local
    if "files" in local and len(current_context(load(str(path)).entries).messages) >= 4:
        assert started  # the context streamed, and its readings went to the helper


def test_a_helper_that_fails_leaves_the_whole_read_to_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = FIXTURES / "codex" / "lab-0169.jsonl"
    monkeypatch.setenv("CTXFOLD_STREAM_CHARS", "0")
    monkeypatch.setattr(read_step, "workers_for", lambda size: 2)
    monkeypatch.setattr(helper, "HANDOVER", 3)
    monkeypatch.setattr(helper.sys, "executable", "/bin/false")  # a helper that answers nothing
    rereads = _counting(monkeypatch, run, "reread")
    got = _compact(path, tmp_path / "failed", monkeypatch)
    assert rereads and "files" in got
    monkeypatch.setattr(run, "_can_outline", lambda *a: False)
    assert got == _compact(path, tmp_path / "whole", monkeypatch)


def test_no_helper_without_workers_and_a_helper_let_go_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXFOLD_WORKERS", "0")
    assert read_step.workers_for(10**12) == 0  # CTXFOLD_WORKERS=0: every reading in-process
    monkeypatch.setattr(helper, "HANDOVER", 2)
    digesting = helper.HelperDigesting()
    digesting.add(Message("user", (TextPart("hello"),)))
    assert digesting._process is None  # a context let go this soon starts no process
    digesting.add(Message("user", (TextPart("again"),)))
    assert digesting._process is not None
    digesting.close()  # the context it read was let go: its process does not run on
    assert digesting._process.returncode is not None


def _grown_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Compact the first 3/5 of the session's lines, then the whole (a state file's pass):
    reading outlines, and reading every entry."""
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    runs: dict[str, Any] = {}
    for name in ("outline", "whole"):
        with monkeypatch.context() as m:
            if name == "whole":
                m.setattr(run, "_can_outline", lambda *a: False)
            log, out = tmp_path / "s" / path.name, tmp_path / "s" / "out"  # the same paths: the
            shutil.rmtree(log.parent, ignore_errors=True)  # summary names the session file
            log.parent.mkdir()
            log.write_bytes(b"".join(lines[: len(lines) * 3 // 5]))
            first = _compact(log, out, m)
            log.write_bytes(data)
            runs[name] = (first, _compact(log, out, m))
    return runs


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_state_files_pass_keeps_only_the_context_and_writes_what_the_whole_read_writes(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass after a state file keeps the context from its watermark (and the entry
    before, and the whole current context, for the starts over it may make), not every entry
    (a 200 MB Claude Code log: 486 -> 140 MiB)."""
    runs = _grown_runs(path, tmp_path, monkeypatch)
    assert runs["outline"] == runs["whole"]


def test_a_state_files_pass_reads_an_outline_and_goes_on_from_the_watermark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resumed: list[tuple[bool, bool]] = []
    resume = run.resume

    def spy(read: Any, *a: Any, **k: Any) -> Any:
        out = resume(read, *a, **k)
        resumed.append((read.outline is not None, out.incremental))
        return out

    monkeypatch.setattr(run, "resume", spy)
    runs = _grown_runs(FIXTURES / "real" / "claude-code-sidechains.jsonl", tmp_path, monkeypatch)
    assert "files" in runs["outline"][1]
    assert resumed == [(True, False), (True, True), (False, False), (False, True)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_streamed_sliding_window_writes_what_the_whole_read_writes(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every context streams: a tail that fits needs messages that were not kept, and the
    session is read again keeping them (never whole); the outputs are the whole read's."""
    with monkeypatch.context() as m:
        m.setenv("CTXFOLD_STREAM_CHARS", "0")
        tails, rereads = _counting(m, run, "read_tail"), _counting(m, run, "reread")
        got = _compact(path, tmp_path / "streamed", m, "sliding-window")
    assert not rereads and len(tails) <= 1
    monkeypatch.setattr(run, "_can_outline", lambda *a: False)
    assert got == _compact(path, tmp_path / "whole", monkeypatch, "sliding-window")


@pytest.mark.parametrize(
    ("rel", "window"),
    [
        ("claude-code/posthog-impact-dashboard.jsonl", 64_000),
        ("claude-code/solsmile-thirdparty-proxy.jsonl", 64_000),
        ("pi/large-session.jsonl", 36_000),  # (its failed responses count nothing)
    ],
)
def test_a_tail_that_fits_alone_but_not_after_its_summary_is_read_for_the_next_pass(
    rel: str, window: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streamed sliding window whose first tail fits alone but not after its summary: a
    read for that tail, then one for the next pass's, which the passes reach without folding
    the first again; the outputs are the whole read's."""
    path = real(rel)
    with monkeypatch.context() as m:
        m.setenv("CTXFOLD_STREAM_CHARS", "0")
        tails, rereads = _counting(m, run, "read_tail"), _counting(m, run, "reread")
        heads = _counting(m, sliding_window, "streamed_fold_for")
        got = _compact(path, tmp_path / "streamed", m, "sliding-window", max_tokens=window)
    assert len(tails) == 2 and not rereads
    assert len(heads) == 2, "the first tail was folded again on the second read"
    monkeypatch.setattr(run, "_can_outline", lambda *a: False)
    assert got == _compact(path, tmp_path / "whole", monkeypatch, "sliding-window", max_tokens=window)


@pytest.mark.parametrize(
    ("rel", "window"),
    [
        ("codex/edgerunner.jsonl", 24_000),
        ("pi/large-session.jsonl", 8_000),
        ("claude-code/fundwise.jsonl", 32_000),
    ],
)
def test_a_sliding_window_no_tail_of_fits_streams_its_summary(
    rel: str, window: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a window too small for any of its tails (a session whose context is the whole log
    and its recent tool output large), the passes are decided from the read's counts and the
    summary of everything streams: never held, never read again, and the same outputs."""
    path = real(rel)
    with monkeypatch.context() as m:
        m.setattr(run, "_can_outline", lambda *a: False)
        whole = _compact(path, tmp_path / "whole", m, "sliding-window", max_tokens=window)
    assert any("fell back" in n for n in whole.get("notes", ())), f"a tail of {rel} fits: {whole}"
    monkeypatch.setenv("CTXFOLD_STREAM_CHARS", "0")
    folds = _counting(monkeypatch, streamed, "fold_streamed")
    rereads = _counting(monkeypatch, run, "reread")
    got = _compact(path, tmp_path / "streamed", monkeypatch, "sliding-window", max_tokens=window)
    assert folds and not rereads
    assert got == whole
