"""Outputs as a locked set: eight ``ctxfold compact`` processes on one input and one folder write
the set once (the others find it up to date), every output is whole and valid, and another
session's outputs of the same name are never replaced."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
from conftest import FIXTURES

SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"


def _compact(src: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "CTXFOLD_WORKERS": "0"}
    args = [sys.executable, "-m", "ctxfold", "compact", str(src), "--window", "3000", "--out-dir", str(out)]
    return subprocess.Popen(
        [*args, "--no-profile", "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_eight_at_once_write_the_set_once(tmp_path: Path) -> None:
    src = tmp_path / SAMPLE.name
    shutil.copy(SAMPLE, src)
    out = tmp_path / "out"
    procs = [_compact(src, out) for _ in range(8)]
    done = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    assert all(code == 0 for code, _, _ in done), [err for _, _, err in done]
    statuses = sorted(orjson.loads(stdout)["status"] for _, stdout, _ in done)
    assert statuses == ["compacted"] + ["up-to-date"] * 7
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{src.stem}.{s}" for s in ("compacted.jsonl", "summary.md", "ctxfold.json"))
    state = orjson.loads((out / f"{src.stem}.ctxfold.json").read_bytes())
    assert len(state["passes"]) == 1
    check = subprocess.run(
        [sys.executable, "-m", "ctxfold", "validate", str(out / f"{src.stem}.compacted.jsonl")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_two_sessions_of_one_name_never_replace_each_other(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, second = tmp_path / "one" / SAMPLE.name, tmp_path / "two" / SAMPLE.name
    shutil.copy(SAMPLE, first)
    second.write_bytes(SAMPLE.read_bytes().replace(b"7f1c2d9e-sample", b"another-session"))
    out = tmp_path / "out"
    a, b = _compact(first, out, "--force"), _compact(second, out, "--force")
    codes = sorted((a.wait(timeout=120), b.wait(timeout=120)))
    assert codes == [0, 1]  # whichever came second is refused, --force or not
    loser = a if a.returncode else b
    assert "belongs to another session" in loser.stderr.read()  # type: ignore[union-attr]
    assert len(orjson.loads((out / f"{SAMPLE.stem}.ctxfold.json").read_bytes())["passes"]) == 1


def test_a_session_being_written_compacts_as_it_grows(tmp_path: Path) -> None:
    """A harness appends to the session, half a line at a time, while compact runs again and
    again: every run ends in a documented way (a half-written last line is left out with a
    warning), every set written is whole and valid, and the last run folds what was appended."""
    import threading
    import time

    from ctxfold.compaction.outputs import set_is_whole
    from ctxfold.compaction.run import CompactOptions, compact_file
    from ctxfold.compaction.statefile import load_state
    from ctxfold.errors import NoShrinkError, WindowTooSmallError
    from ctxfold.formats.validate import validate
    from ctxfold.providers.offline import OfflineSummarizer

    lines = (FIXTURES / "real" / "claude-code-sidechains.jsonl").read_bytes().splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    live.write_bytes(b"".join(lines[: len(lines) // 3]))
    out = tmp_path / "out"

    def harness() -> None:
        with live.open("ab") as f:
            for raw in lines[len(lines) // 3 :]:
                half = len(raw) // 2
                f.write(raw[:half])
                f.flush()
                time.sleep(0.002)
                f.write(raw[half:])
                f.flush()

    writer = threading.Thread(target=harness)
    writer.start()
    outcomes: list[str] = []
    options = CompactOptions(window=24_000, out_dir=str(out))
    while True:
        done = not writer.is_alive()
        try:
            r = compact_file(str(live), OfflineSummarizer(), summarizer_window=None, options=options)
            outcomes.append(r.status)
            assert r.status in ("compacted", "not-due", "up-to-date"), r.status
        except (NoShrinkError, WindowTooSmallError) as err:  # documented refusals: nothing written
            outcomes.append(type(err).__name__)
        state = load_state(out / "live.ctxfold.json")
        if state is not None:
            outs = r.outputs if outcomes[-1] == "compacted" else None
            if outs is not None:
                assert set_is_whole(outs, state)
                assert validate(str(outs.compacted)).ok
        if done:
            break
    assert outcomes.count("compacted") >= 1 and live.read_bytes() == b"".join(lines)
    final = load_state(out / "live.ctxfold.json")
    assert final is not None and final.prefix_bytes <= live.stat().st_size


def test_a_line_finished_while_it_is_read_is_still_the_last_line(tmp_path: Path) -> None:
    """The reader is at a half-written last line when the harness writes its second half: that
    half-line is the end of the file as it was read, never 'a bad line' followed by its rest."""
    from ctxfold.errors import LineError
    from ctxfold.formats.base import Line
    from ctxfold.formats.jsonl import iter_lines

    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    half = len(lines[3]) // 2
    path.write_bytes(b"".join(lines[:3]) + lines[3][:half])
    items = iter_lines(path)
    seen = [next(items) for _ in range(3)]  # reading the third line reads the half one behind it
    with path.open("ab") as f:
        f.write(lines[3][half:])
    rest = list(items)
    assert all(isinstance(x, Line) for x in seen)
    assert len(rest) == 1 and isinstance(rest[0], LineError) and "half-written" in rest[0].reason
