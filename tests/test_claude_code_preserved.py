"""What Claude Code keeps across its own compaction: 2.1.332's ``/compact`` (and the automatic
compaction) may keep the newest messages verbatim. The boundary's ``compactMetadata`` names them
(``preservedSegment``: head, tail and the summary line they go after; ``preservedMessages``: the
lines listed), and on resume Claude Code puts them back after the summary, then what followed the
summary (``tests/interop/test_claude_code_sends.py`` shows it with the real harness). So they stay
in the context ctxfold counts, and a rewind to one of them leaves out what was read after the
summary.

``fixtures/claude-code/preserved.jsonl`` is hand-made in 2.1.332's line shapes: a turn, a second
turn that ``/compact`` keeps, the summary and the command's lines, a turn after it, and a rewind to
the kept answer. Its usage is ctxfold's estimate of each request plus 17,000 tokens. The
fixture-wide tests (writers, streamed compaction, the count cache, two-process reads) read it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from conftest import FIXTURES

from ctxfold.formats import loader
from ctxfold.formats.claude_code.writer import write
from ctxfold.formats.jsonl import _lines
from ctxfold.tokens import split
from ctxfold.tokens.estimate import estimate_file, estimate_to_dict
from ctxfold.tokens.incremental import estimate_incremental
from ctxfold.transcript.context import current_context
from ctxfold.transcript.model import CompactionMarker, ContextUpdate, Rewind

LOG = FIXTURES / "claude-code" / "preserved.jsonl"
KEPT = ["q1", "q2", "q3", "q4"]  # the second turn: its question, call, result and answer


def _rows(path: Path = LOG) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _linear(tmp_path: Path, order: list[str]) -> Path:
    """The log's lines ``order`` (uuids) one after the other, no compaction: what Claude Code
    sends, linked as it links them on resume."""
    by_id = {r["uuid"]: r for r in _rows() if "uuid" in r}
    rows, parent = [], None
    for uid in order:
        rows.append({**by_id[uid], "parentUuid": parent})
        parent = uid
    return _write(tmp_path / "linear.jsonl", rows)


def _until(tmp_path: Path, last: str) -> Path:
    """The log up to line ``last`` (a uuid)."""
    rows = _rows()
    end = next(i for i, r in enumerate(rows) if r.get("uuid") == last)
    return _write(tmp_path / "until.jsonl", rows[: end + 1])


def test_the_messages_a_compaction_kept_are_counted_after_it(tmp_path: Path) -> None:
    t = loader.load(LOG)
    (marker,) = [e for e in t.entries if isinstance(e, CompactionMarker)]
    assert marker.first_kept_id == "q1"
    # the turn after the compaction is sent with the summary, the kept turn and the command's lines
    after = _until(tmp_path, "t1")
    sent = _linear(tmp_path, ["s1", *KEPT, "s2", "s3", "s4", "t1"])
    assert estimate_file(after).context_tokens == estimate_file(sent).context_tokens
    ids = [m.id for m in current_context(loader.load(after).entries).messages]
    assert ids == ["s1", *KEPT, "s2", "s3", "s4", "t1"]  # the summary line, then what it kept


def test_a_rewind_to_a_kept_message_leaves_out_what_followed_the_summary(tmp_path: Path) -> None:
    t = loader.load(LOG)
    (rewind,) = [e for e in t.entries if isinstance(e, Rewind)]
    assert rewind.ids == ("s2", "s3", "s4", "t1", "t2", "t3")
    assert [m.id for m in t.messages if m.dropped] == ["t4"]  # the answer being read when it forked
    sent = _linear(tmp_path, ["s1", *KEPT, "u1", "u2"])
    assert estimate_file(LOG).context_tokens == estimate_file(sent).context_tokens
    assert [m.id for m in current_context(t.entries).messages if not m.dropped] == ["s1", *KEPT, "u1", "u2"]


def test_lines_read_after_the_kept_ones_and_before_the_boundary_are_not_kept(tmp_path: Path) -> None:
    rows = _rows()
    for r in rows:
        if r.get("subtype") == "compact_boundary":  # keeps the question and the call only
            meta = r["compactMetadata"]
            meta["preservedSegment"]["tailUuid"] = "q2"
            meta["preservedMessages"]["uuids"] = meta["preservedMessages"]["allUuids"] = ["q1", "q2"]
    t = loader.load(_write(tmp_path / "short.jsonl", rows))
    assert next(e.ids for e in t.entries if isinstance(e, Rewind)) == ("q3", "q4")
    ids = [m.id for m in current_context(t.entries).messages]
    assert ids[:3] == ["s1", "q1", "q2"]


def test_a_segment_not_on_the_chain_keeps_nothing(tmp_path: Path) -> None:
    """Claude Code, finding no such lines, puts nothing back: the boundary cuts as older ones do."""
    rows = _rows()
    plain = [dict(r) for r in rows]
    for r, p in zip(rows, plain, strict=True):
        if r.get("subtype") == "compact_boundary":
            r["compactMetadata"] = {**r["compactMetadata"], "preservedMessages": None}
            r["compactMetadata"]["preservedSegment"] = {
                "headUuid": "nowhere",
                "anchorUuid": "s1",
                "tailUuid": "q4",
            }
            p["compactMetadata"] = {k: v for k, v in r["compactMetadata"].items() if k != "preservedSegment"}
    unknown = _write(
        tmp_path / "unknown.jsonl", rows[: rows.index(next(r for r in rows if r.get("uuid") == "t4")) + 1]
    )
    without = _write(tmp_path / "without.jsonl", plain[: len(_rows(unknown))])
    assert estimate_file(unknown).context_tokens == estimate_file(without).context_tokens
    marker = next(e for e in loader.load(unknown).entries if isinstance(e, CompactionMarker))
    assert marker.first_kept_id is None


def test_the_list_is_preferred_to_the_segment_as_claude_code_prefers_it(tmp_path: Path) -> None:
    rows = _rows()
    for r in rows:
        if r.get("subtype") == "compact_boundary":
            r["compactMetadata"]["preservedMessages"]["uuids"] = ["q3", "q4"]
    t = loader.load(_write(tmp_path / "listed.jsonl", rows))
    marker = next(e for e in t.entries if isinstance(e, CompactionMarker))
    assert marker.first_kept_id == "q3"


def test_a_log_written_back_keeps_what_the_compaction_kept(tmp_path: Path) -> None:
    """The writer names the kept lines by their new uuids: read again, the same context."""
    t = loader.load(LOG)
    out = tmp_path / "written.jsonl"
    out.write_bytes(b"".join(line + b"\n" for line in write(t)))
    back = loader.load(out)
    assert [m.text for m in current_context(back.entries).messages] == [
        m.text for m in current_context(t.entries).messages if not m.dropped
    ]
    assert estimate_file(out).context_tokens == estimate_file(LOG).context_tokens


def test_the_count_cache_reads_on_across_the_compaction_as_a_cold_run(tmp_path: Path) -> None:
    """States kept at the boundary (the kept lines not put back yet), at the summary line and
    after the rewind: each read on to the end gives the cold result."""
    rows = _rows()
    for last in ("k1", "s1", "s2", "t1", "u1"):
        path = tmp_path / f"live-{last}.jsonl"
        end = next(i for i, r in enumerate(rows) if r.get("uuid") == last)
        _write(path, rows[: end + 1])
        estimate_incremental(str(path))
        _write(path, rows)
        trace: dict[str, int] = {}
        warm = estimate_incremental(str(path), trace=trace)
        assert trace["resumed"], last
        assert estimate_to_dict(warm) == estimate_to_dict(estimate_file(path)), last


def test_a_read_started_at_any_seam_joins_or_is_refused_never_wrong() -> None:
    """Every user line of the log as the seam of a two-process read: the join gives the whole
    file's entries, or is refused: at the summary line (the first part read the kept lines, not
    put back yet), and where a later line is parented to a kept line the first part read."""
    rules = split.seams("claude-code")
    assert rules is not None
    serial = loader.open_transcript(LOG)
    whole = [e for e in serial.entries if not isinstance(e, ContextUpdate)]
    data = LOG.read_bytes()
    joined, refused = [], []
    with LOG.open("rb") as f, LOG.open("rb") as g:
        for d, start in zip(_rows(), _starts(data), strict=True):
            if not rules.is_seam(d):
                continue
            f.seek(0)
            opened = loader.open_lines(str(LOG), _lines(f, split.RawLines(f, start)), finish=False)
            tail = rules.tail_reader(g, start)
            g.seek(start)
            entries = [e for line in _lines(g, split.RawLines(g, len(data)), no=1) for e in tail.feed(line)]
            unseen = rules.detach(tail)
            first = [*opened.entries, *rules.at_seam(opened.reader, unseen)]
            reader = rules.join(opened.reader, tail, unseen)
            if reader is None:
                refused.append(d["uuid"])
                continue
            ours = [e for e in [*first, *entries, *reader.finish()] if not isinstance(e, ContextUpdate)]
            assert ours == whole, d["uuid"]
            joined.append(d["uuid"])
    assert {"s1", "t1"} <= set(refused)
    assert {"p1", "q1", "u1"} <= set(joined)  # (u1: the rewind line itself, parented to q4, is the seam)


def _starts(data: bytes) -> list[int]:
    starts, at = [], 0
    for line in data.splitlines(keepends=True):
        starts.append(at)
        at += len(line)
    return starts


def test_a_kept_line_written_ahead_of_its_parent_is_kept_too(tmp_path: Path) -> None:
    """A call's result written before the call's own line (as parallel calls' results are) is
    on no place of the chain, but it was read: what the compaction kept is kept whole."""
    rows = _rows()
    at = {r.get("uuid"): i for i, r in enumerate(rows)}
    rows[at["q2"]], rows[at["q3"]] = rows[at["q3"]], rows[at["q2"]]
    ahead = _write(tmp_path / "ahead.jsonl", rows)
    marker = next(e for e in loader.load(ahead).entries if isinstance(e, CompactionMarker))
    assert marker.first_kept_id == "q1"
    assert estimate_file(ahead).context_tokens == estimate_file(LOG).context_tokens


def test_metadata_of_another_shape_keeps_nothing_and_fails_no_line(tmp_path: Path) -> None:
    """Kept lines named by a list or an object where a uuid belongs (a later version's shape, a
    damaged line) are none: the line reads, and the log written back drops what it cannot name."""
    rows = _rows()
    (at,) = [i for i, r in enumerate(rows) if r.get("subtype") == "compact_boundary"]
    meta = rows[at]["compactMetadata"]
    for name, odd in [
        ("segment", {"preservedSegment": {**meta.get("preservedSegment", {}), "headUuid": ["q1"]}}),
        ("listed", {"preservedMessages": {"anchorUuid": "x", "uuids": [["q1"]]}}),
    ]:
        bare = {k: v for k, v in meta.items() if k not in ("preservedSegment", "preservedMessages")}
        rows[at] = {**rows[at], "compactMetadata": {**bare, **odd}}
        path = _write(tmp_path / f"{name}.jsonl", rows)
        t = loader.load(path)
        assert not [e for e in t.entries if isinstance(e, CompactionMarker) and e.first_kept_id], name
        assert b"".join(write(t)), name
    env = {
        "type": "attachment",
        "attachment": {"type": "environment", "snapshot": {"isGitRepo": [1], "shell": "bash"}},
    }
    rows = [*_rows()[:1], {**_rows()[0], **env, "uuid": "env1", "parentUuid": _rows()[0].get("uuid")}]
    assert (
        "Shell: bash"
        in current_context(loader.load(_write(tmp_path / "env.jsonl", rows)).entries).messages[-1].text
    )
