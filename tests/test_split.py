"""A large Claude Code log read in two processes gives the one-process result, field for field.

Every Claude Code fixture and real session is read with its second part (from a seam near 10 %,
30 %, 50 %, 70 % and 90 % of it) in a forked process, next to a read in one process; so is a log
the join must refuse (a result after the seam whose call came before it), logs with a bad or a
half-written line after the seam, and a read with the count cache that is then read on from.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, real_files

from ctxfold.errors import LineError
from ctxfold.formats.jsonl import _lines
from ctxfold.formats.loader import load, open_lines, open_transcript
from ctxfold.tokens import parallel, split
from ctxfold.tokens.countstore import CountStore
from ctxfold.tokens.estimate import FileEstimate, estimate_file, estimate_to_dict
from ctxfold.tokens.incremental import estimate_incremental
from ctxfold.transcript.model import ContextUpdate, Rewind

AT = (0.1, 0.3, 0.5, 0.7, 0.9)
FILES = [
    *sorted((FIXTURES / "claude-code").glob("*.jsonl")),
    *sorted((FIXTURES / "heldout" / "claude-code").glob("*.jsonl")),
    FIXTURES / "real" / "claude-code-sidechains.jsonl",
    *real_files("claude-code"),
]


class Joins:
    """How many reads were split, and how many of those joined what the other process read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = self.joined = 0
        start, join = split._Split.start.__func__, split._Split.join  # type: ignore[attr-defined]

        def counted_start(cls: Any, *a: Any) -> Any:
            two = start(cls, *a)
            self.started += two is not None
            return two

        def counted_join(two: Any, *a: Any) -> bool:
            ok: bool = join(two, *a)
            self.joined += ok
            return ok

        monkeypatch.setattr(split._Split, "start", classmethod(counted_start))
        monkeypatch.setattr(split._Split, "join", counted_join)


@pytest.fixture
def joins(monkeypatch: pytest.MonkeyPatch) -> Joins:
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    monkeypatch.delenv(parallel.WORKERS_ENV, raising=False)
    monkeypatch.setattr(split, "LOOK", 1 << 40)
    return Joins(monkeypatch)


def everything(est: FileEstimate) -> dict[str, Any]:
    """The estimate's ``--json`` and every field of its replay: each request row, the context's
    rows, the calls that are not requests, what the log says of its harness."""
    r, ctx = est.replay, est.replay.context
    rows = [list(ctx.totals), [list(c) for c in ctx.cats], list(ctx.roles), ctx.ids, ctx.largest(10)]
    fields = {k: v for k, v in vars(r).items() if k != "context"}
    return {**estimate_to_dict(est), "replay": fields, "rows": rows}


def one_process(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setattr(split, "MIN_BYTES", 1 << 62)
        return everything(estimate_file(path, **kw))


def two_processes(path: Path, at: float, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setattr(split, "MIN_BYTES", 0)
        m.setattr(split, "AT", at)
        return everything(estimate_file(path, **kw))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_log_read_in_two_processes_gives_the_one_process_result(
    path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = one_process(path, monkeypatch)
    for at in AT:
        assert two_processes(path, at, monkeypatch) == want, f"seam near {at:.0%}"
    if path.read_bytes().count(b"\n") > 100:  # (a shorter one is read whole by detection)
        assert joins.joined >= 3, "most of the reads were split, and joined"


@pytest.mark.parametrize(
    "path", [p for p in FILES if p.read_bytes().count(b"\n") > 100], ids=lambda p: p.name
)
def test_a_reader_started_at_a_seam_and_joined_gives_the_whole_files_entries(path: Path) -> None:
    """The seam rules alone, in one process: the first part's entries, what its reader emits at
    the seam, then the entries of a reader started there, as ``join`` mends them."""
    rules = split.seams("claude-code")
    assert rules is not None
    serial = open_transcript(path)
    whole = list(serial.entries)
    size, joined = path.stat().st_size, 0
    with path.open("rb") as f, path.open("rb") as g:
        for at in AT:
            seam = split._find_seam(f, int(size * at), size, rules.is_seam)
            if seam is None:
                continue
            f.seek(0)
            opened = open_lines(str(path), _lines(f, split.RawLines(f, seam)), finish=False)
            tail = rules.tail_reader(g, seam)
            g.seek(seam)
            entries = [e for line in _lines(g, split.RawLines(g, size), no=1) for e in tail.feed(line)]
            unseen = rules.detach(tail)
            first = [*opened.entries, *rules.at_seam(opened.reader, unseen)]
            reader = rules.join(opened.reader, tail, unseen)
            if reader is not None:
                ours = [e for e in [*first, *entries, *reader.finish()] if not isinstance(e, ContextUpdate)]
                assert ours == [e for e in whole if not isinstance(e, ContextUpdate)], f"seam at byte {seam}"
                assert _state(reader) == _state(serial.reader)
                joined += 1
    assert joined >= 2


def _state(reader: Any) -> tuple[Any, ...]:
    return (
        reader._names,
        reader._session,
        reader._model,
        reader._own,
        reader._started,
        reader._chain.placed,
        reader._chain.given,
        reader._chain.lines,
        reader._kept,
        reader._anchor,
        reader._shape,
    )


def _line(kind: str, uuid: str, content: Any, **more: Any) -> bytes:
    d: dict[str, Any] = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": None,
        "sessionId": "s1",
        "timestamp": "2026-11-27T10:00:00Z",
        "message": {"role": kind, "content": content, **more},
    }
    return orjson.dumps(d) + b"\n"


def _turn(i: int, *, call: bool = True) -> list[bytes]:
    usage = {"input_tokens": 100 + i, "output_tokens": 5}
    msg = {"id": f"msg_{i}", "model": "claude-sonnet-4-5", "usage": usage}
    out = [_line("user", f"u{i}", f"question {i} " + "words " * 40)]
    if call:
        block = {"type": "tool_use", "id": f"call_{i}", "name": "Bash", "input": {"command": f"ls {i}"}}
        out.append(_line("assistant", f"a{i}", [block], **msg))
        result = {"type": "tool_result", "tool_use_id": f"call_{i}", "content": "file " * 30}
        out.append(_line("user", f"r{i}", [result]))
    return out


EVERY = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".jsonl", ".json"))


@pytest.mark.parametrize("path", EVERY, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_read_as_a_large_file_gives_what_a_stream_read_gives(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large file's lines are read up to its last complete one, then the rest (``split.feed``
    for every format): the result, or the error, of reading it as a stream."""

    def read(min_bytes: int) -> Any:
        with monkeypatch.context() as m:
            m.setattr(split, "MIN_BYTES", min_bytes)
            try:
                return everything(estimate_file(path))
            except Exception as err:  # a fixture a stream read refuses is refused the same way
                return f"{type(err).__name__}: {err}"

    assert read(0) == read(1 << 62)


def test_a_log_that_goes_on_with_another_session_gives_the_one_process_result(
    tmp_path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions one after the other (as the generated benchmark logs are): the second names
    an entry point the first never did, which a one-process read never learns (it reads what
    the log says of its harness up to the first response only)."""
    path = tmp_path / "two-sessions.jsonl"
    first, second = (
        FIXTURES / "real" / "claude-code-sidechains.jsonl",
        FIXTURES / "heldout" / "claude-code" / "bhavana.jsonl",
    )
    path.write_bytes(first.read_bytes() + second.read_bytes())
    want = one_process(path, monkeypatch)
    assert want["replay"]["facts"].entrypoint is None and b'"entrypoint"' in second.read_bytes()
    for at in AT:
        assert two_processes(path, at, monkeypatch) == want, f"seam near {at:.0%}"
    assert joins.joined >= 4


def test_a_result_after_the_seam_whose_call_came_before_it_is_read_here(
    tmp_path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every user line is a seam; each call's result comes after the next question, so the
    other process cannot name it: the join is refused, and the part read here."""
    lines: list[bytes] = []
    for i in range(40):
        question, call, result = _turn(i)
        lines += [call, question, result]
    path = tmp_path / "late-results.jsonl"
    path.write_bytes(b"".join(lines))
    want = one_process(path, monkeypatch)
    got = two_processes(path, 0.5, monkeypatch)
    assert got == want
    assert joins.started == 1 and joins.joined == 0


def test_a_bad_line_after_the_seam_is_reported_as_one_process_reports_it(
    tmp_path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [line for i in range(40) for line in _turn(i)]
    lines[100] = b'{"type": "user", "message": \n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    with pytest.raises(LineError) as serial:
        one_process(path, monkeypatch)
    with pytest.raises(LineError) as two:
        two_processes(path, 0.5, monkeypatch)
    assert str(two.value) == str(serial.value) and ":101: not valid JSON" in str(two.value)
    assert joins.started == 1 and joins.joined == 0
    want = one_process(path, monkeypatch, skip_invalid=True)
    assert two_processes(path, 0.5, monkeypatch, skip_invalid=True) == want
    assert want["skipped_lines"]


def test_a_last_line_still_being_written_is_left_out_as_in_one_process(
    tmp_path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [line for i in range(40) for line in _turn(i)]
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"".join(lines) + lines[0][:50])
    want = one_process(path, monkeypatch)
    assert two_processes(path, 0.5, monkeypatch) == want
    assert want["warnings"] and joins.joined == 1


def test_a_split_cold_read_keeps_the_state_a_grown_file_is_read_on_from(
    tmp_path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (FIXTURES / "heldout" / "claude-code" / "bhavana.jsonl").read_bytes()
    cut = data.rindex(b"\n", 0, len(data) * 3 // 4) + 1
    path = tmp_path / "session.jsonl"
    path.write_bytes(data[:cut])
    store = CountStore(tmp_path / "cache")
    monkeypatch.setattr(split, "MIN_BYTES", 0)
    trace: dict[str, int] = {}
    first = everything(estimate_incremental(str(path), store=store, trace=trace))
    assert trace["kept"] == cut and joins.joined == 1
    assert first == one_process(path, monkeypatch)
    with path.open("ab") as f:
        f.write(data[cut:])
    trace = {}
    grown = everything(estimate_incremental(str(path), store=store, trace=trace))
    assert trace["resumed"] == cut
    shutil.copy(path, tmp_path / "fresh.jsonl")
    assert grown == one_process(tmp_path / "fresh.jsonl", monkeypatch) | {"path": str(path)}
    assert len(grown["replay"]["requests"]) > len(first["replay"]["requests"])


SCRIPT = """
import sys, threading
from ctxfold.tokens import parallel, split
from ctxfold.tokens.estimate import estimate_file
split.MIN_BYTES, parallel.cpus = 0, lambda: 2
joined = []
join = split._Split.join
split._Split.join = lambda two, *a: joined.append(join(two, *a)) or joined[-1]
threading.Thread(target=sys.stdin.read, daemon=True).start()  # a thread waiting on stdin
sys.stdout.write("written before")  # buffered: the pipe is no terminal
est = estimate_file(sys.argv[1])
print("", len(est.requests), joined)
"""


def test_the_forked_process_neither_writes_output_twice_nor_waits_on_stdin(tmp_path: Path) -> None:
    """The child flushes nothing this process buffered, and leaves stdin alone: a thread of this
    process waits on it (multiprocessing's child would close it, and hang on its lock)."""
    import subprocess
    import sys

    path = FIXTURES / "heldout" / "claude-code" / "bhavana.jsonl"
    run = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        run.wait(timeout=120)  # stdin left open all along
        out = run.stdout.read() if run.stdout else ""
    finally:
        run.kill()
    assert out.count("written before") == 1 and out.rstrip().endswith("[True]"), out


def test_a_log_replaced_since_it_was_opened_is_read_in_one_process(tmp_path: Path) -> None:
    """The forked process reads the file this one opened, not what its path names now."""
    path, other = tmp_path / "session.jsonl", tmp_path / "new.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    other.write_bytes(b'{"b": 2}\n')
    with path.open("rb") as f:
        again = split._reopened(f, str(path))
        assert again is not None and again.read() == b'{"a": 1}\n'
        again.close()
        other.replace(path)
        assert split._reopened(f, str(path)) is None


def test_the_crc_of_bytes_hashed_elsewhere_joins_the_crc_of_those_before() -> None:
    import os
    import zlib

    from ctxfold.tokens.filecheck import crc32_combine

    for before, after in ((0, 0), (1, 0), (0, 1), (5, 7), (1000, 1 << 20), (3, 12_345_679)):
        a, b = os.urandom(before), os.urandom(after)
        assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def _forking(turns: int, far: int, back: int) -> list[bytes]:
    """Turns of a question, a call and its result, chained by ``parentUuid``; every fifth
    question is parented past the response before it (left behind, its call never answered),
    the question of turn ``far`` to the first turn's, and that of turn ``back`` to the result
    two turns before (a rewind past the turn between)."""
    lines: list[bytes] = []
    parent: str | None = None
    for i in range(turns):
        question, call, result = (orjson.loads(line) for line in _turn(i))
        if i % 5 == 4:
            message = {**call["message"], "id": f"msg_left{i}"}
            lines.append(
                orjson.dumps({**call, "uuid": f"left{i}", "parentUuid": parent, "message": message}) + b"\n"
            )
        question["parentUuid"] = "u0" if i == far else f"r{i - 2}" if i == back else parent
        call["parentUuid"], result["parentUuid"] = question["uuid"], call["uuid"]
        lines += [orjson.dumps(d) + b"\n" for d in (question, call, result)]
        parent = result["uuid"]
    return lines


def test_a_log_whose_lines_leave_responses_behind_gives_the_one_process_result(
    tmp_path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Responses left behind by the question after them, at seams and between them, and a
    question parented far back into the first part: what one process reads, the other's part
    joined wherever it could read it."""
    path = tmp_path / "forks.jsonl"
    lines = _forking(60, far=50, back=57)
    path.write_bytes(b"".join(lines))
    t = load(path)
    left = {m.id for m in t.messages if m.dropped}
    assert left == {f"left{i}" for i in range(4, 60, 5)} | {"a49", "r49", "a56", "r56"}
    rewinds = [e.ids for e in t.entries if isinstance(e, Rewind)]
    assert len(rewinds) == 2 and rewinds[1] == ("u56",)  # (its response and result dropped as read)
    want = one_process(path, monkeypatch)
    starts = {orjson.loads(line)["uuid"]: sum(map(len, lines[:k])) for k, line in enumerate(lines)}
    size = path.stat().st_size
    # seams before the question parented far back (its parent in the first part: the join is
    # refused), at it, at a question after it that leaves a response behind, and before and at
    # the one that rewinds
    for name in ("u2", "u14", "u40", "u50", "u54", "u56", "u57"):
        seam = starts[name]
        assert two_processes(path, (seam - 1) / size, monkeypatch) == want, f"seam at {name}"
    assert (joins.started, joins.joined) == (7, 4)


def test_a_part_that_reads_request_records_is_read_again_in_one_process(
    tmp_path: Path, joins: Joins, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code 2.1.332's record of a request's system prompt and tools in the second part:
    that part's replay is not joined (it holds a prompt), and the result is one process's."""
    records = [
        line
        for line in (FIXTURES / "claude-code" / "request-records.jsonl")
        .read_bytes()
        .splitlines(keepends=True)
    ]
    shape = next(line for line in records if b'"api-request-shape"' in line[:100])
    turns = [line for i in range(60) for line in _turn(i)]
    path = tmp_path / "late-records.jsonl"
    path.write_bytes(b"".join([*turns[: len(turns) * 3 // 4], shape, *turns[len(turns) * 3 // 4 :]]))
    want = one_process(path, monkeypatch)
    assert want["replay"]["by_category"]["tools"] > 0
    assert two_processes(path, 0.5, monkeypatch) == want
    assert joins.started and not joins.joined
