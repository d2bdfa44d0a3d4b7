"""``ctxfold statusline``: Claude Code's status JSON in, one line out, exit 0, never a traceback.

The command is run the way Claude Code runs it: a process with the JSON on stdin (the payload
shape of Claude Code's statusline documentation), through the installed entry point's module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, real_files

from ctxfold.cli.statusline import _k
from ctxfold.engine.now import predict_now, prior_for
from ctxfold.tokens.estimate import estimate_file

LAUNCH = "import sys; sys.argv = ['ctxfold', *sys.argv[1:]]; from ctxfold.cli.main import main; main()"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def payload(transcript: Path | str, **extra: Any) -> str:
    """Claude Code's status JSON (its statusline documentation's fields)."""
    doc = {
        "hook_event_name": "Status",
        "session_id": "abc123",
        "transcript_path": str(transcript),
        "cwd": "/home/user/project",
        "model": {"id": "claude-sonnet-4-5-20250929", "display_name": "Sonnet 4.5"},
        "workspace": {"current_dir": "/home/user/project", "project_dir": "/home/user/project"},
        "version": "2.1.121",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.42, "total_duration_ms": 45000, "total_lines_added": 156},
        **extra,
    }
    return json.dumps(doc)


def run(
    stdin: str | bytes, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCH, "statusline", *args],
        input=data,
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=60,
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def _session() -> Path:
    found = real_files("claude-code")
    return found[0] if found else FIXTURES / "real" / "claude-code-sidechains.jsonl"


def test_one_line_with_the_engines_numbers(tmp_path: Path) -> None:
    src = _session()
    target = tmp_path / "session.jsonl"
    target.write_bytes(src.read_bytes())
    out = run(payload(target))
    assert out.returncode == 0 and out.stderr == ""
    (line,) = out.stdout.splitlines()
    est = estimate_file(str(target), skip_invalid=True)
    predicted = predict_now(est, prior_for(est, None)).tokens
    assert line.startswith(
        f"{_k(predicted)}/{_k(est.model.window)} tokens ({predicted / est.model.window:.0%})"
    )
    assert "left before" in line or "compaction due" in line
    assert not ANSI.search(line)  # NO_COLOR is set by the tests' environment
    assert list(
        (Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "counts").glob("*.bin")
    )  # kept for the next


def test_the_threshold_comes_first_that_fires_first(tmp_path: Path) -> None:
    target = tmp_path / "session.jsonl"
    target.write_bytes(_session().read_bytes())
    line = run(payload(target)).stdout.strip()
    assert "Claude Code's auto-compact (167k)" in line  # 200k window: 167k before ctxfold's 180k
    small = run(payload(target, context_window={"context_window_size": 1_000_000})).stdout.strip()
    assert "/1M tokens" in small and "(967k)" in small  # the window Claude Code sends is used
    lowered = run(payload(target), env={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}).stdout.strip()
    assert "(90k)" in lowered  # 50 % of the window less the output reserve


def test_colour_when_near_and_no_colour_with_no_color(tmp_path: Path) -> None:
    target = tmp_path / "session.jsonl"
    target.write_bytes(_session().read_bytes())
    est = estimate_file(str(target), skip_invalid=True)
    predicted = predict_now(est, prior_for(est, None)).tokens
    tight = {"context_window": {"context_window_size": predicted}}  # over every threshold
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    coloured = subprocess.run(
        [sys.executable, "-c", LAUNCH, "statusline"], input=payload(target, **tight), capture_output=True,
        text=True, env=env, check=False,
    ).stdout  # fmt: skip
    assert coloured.startswith("\x1b[31m") and "compaction due" in coloured
    plain = run(payload(target, **tight), env={"NO_COLOR": "1"}).stdout
    assert "compaction due" in plain and not ANSI.search(plain)


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        (b"", "no session data on stdin"),
        (b"not json at all", "no session data on stdin"),
        (b'{"session_id": "x"}', "no session data on stdin"),
        (b"[1, 2, 3]", "no session data on stdin"),
        (b"\xff\xfe\x00garbage", "no session data on stdin"),
    ],
)
def test_bad_stdin_is_one_short_line(stdin: bytes, said: str) -> None:
    out = run(stdin)
    assert out.returncode == 0 and out.stdout.strip() == f"ctxfold: {said}" and out.stderr == ""


def test_no_transcript_yet_or_one_that_cannot_be_read(tmp_path: Path) -> None:
    out = run(payload(tmp_path / "not-yet.jsonl"))
    assert (out.returncode, out.stdout.strip(), out.stderr) == (
        0,
        "ctxfold: no transcript yet (Sonnet 4.5)",
        "",
    )
    for name, data in (
        ("empty.jsonl", b""),
        ("binary.jsonl", b"\x00\x01\x02" * 50),
        ("other.jsonl", b'{"a": 1}\n'),
    ):
        (tmp_path / name).write_bytes(data)
        out = run(payload(tmp_path / name))
        assert out.returncode == 0 and out.stderr == "", name
        assert out.stdout.startswith("ctxfold: ") and len(out.stdout.splitlines()) == 1, name
        assert "Traceback" not in out.stdout


def test_a_session_being_written_is_read_on(tmp_path: Path) -> None:
    data = _session().read_bytes()
    target = tmp_path / "session.jsonl"
    half = data.index(b"\n", len(data) // 2) + 40  # a line still being written
    target.write_bytes(data[:half])
    first = run(payload(target))
    assert first.returncode == 0 and "tokens" in first.stdout
    target.write_bytes(data)
    again = run(payload(target)).stdout.strip()
    assert again == run(payload(target), env={"CTXFOLD_NO_CACHE": "1"}).stdout.strip()


def test_stdin_left_open_after_the_json() -> None:
    """Some Claude Code versions write the JSON and never close stdin: the line still comes."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "statusline"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(payload("/nonexistent/session.jsonl"))
    proc.stdin.flush()
    start = time.monotonic()
    line = proc.stdout.readline()
    assert "no transcript yet" in line and time.monotonic() - start < 30
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_it_imports_neither_typer_nor_rich(tmp_path: Path) -> None:
    target = tmp_path / "session.jsonl"
    data = _session().read_bytes()
    target.write_bytes(data)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def imported() -> set[str]:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", LAUNCH, "statusline"],
            input=payload(target),
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert out.returncode == 0 and "tokens" in out.stdout
        lines = out.stderr.splitlines()
        return {line.rsplit("|", 1)[-1].strip() for line in lines if "import time:" in line}

    lines = data.splitlines(keepends=True)
    ascii_line = next(line for line in lines[len(lines) // 2 :] if line.isascii())
    for run in range(3):  # cold; then the session goes on (the first builds the Python engine's table)
        if run:  # its count is kept, the new line counted in Python
            with target.open("ab") as f:
                f.write(lines[len(lines) // 2] if run == 1 else ascii_line)
        modules = imported()
        assert "ctxfold.tokens.incremental" in modules  # the measure is real
        assert not {m for m in modules if m.split(".")[0] in ("typer", "rich", "click", "pydantic")}
    # nor, on a live session, what only other runs need: a native engine, a thread pool, "did
    # you mean", TOML, package resources; nor what it needs a little of: OpenSSL (a name for
    # the count cache entry), tempfile (a temp file to write it), statistics (a median)
    assert "ctxfold.tokens.ranktable" in modules
    assert not {m for m in modules if m.split(".")[0] in ("tiktoken", "quicktok", "rs_bpe", "concurrent")}
    assert not modules & {"logging", "difflib", "tomllib", "importlib.resources"}
    assert not modules & {"_hashlib", "hashlib", "tempfile", "statistics"}
    assert "regex" not in modules  # an ASCII line is split by stdlib re


# --------------------------------------------------------------- an unchanged session's line


def _measures(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``status_line`` measures (not answered with the line it kept)."""
    from ctxfold.cli import statusline

    seen: list[str] = []
    measure = statusline._measure

    def counted(path: str, data: dict[str, Any], color: bool) -> str:
        seen.append(path)
        return measure(path, data, color)

    monkeypatch.setattr(statusline, "_measure", counted)
    return seen


def _fresh(raw: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The line as a first call makes it (nothing kept, nothing reused)."""
    from ctxfold.cli.statusline import status_line

    with monkeypatch.context() as m:
        m.setenv("CTXFOLD_NO_CACHE", "1")
        return status_line(raw.encode())


def test_an_unchanged_session_gets_the_line_it_got(tmp_path: Path) -> None:
    """A second call on the same bytes loads no counting code, and says the same; a line
    appended is measured again, as a first call would measure it."""
    target = tmp_path / "session.jsonl"
    lines = _session().read_bytes().splitlines(keepends=True)
    target.write_bytes(b"".join(lines[: len(lines) // 2]))

    def call(*flags: str, **env: str) -> tuple[str, set[str]]:
        out = subprocess.run(
            [sys.executable, *flags, "-c", LAUNCH, "statusline"],
            input=payload(target),
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            check=True,
        )
        modules = {ln.rsplit("|", 1)[-1].strip() for ln in out.stderr.splitlines() if "import time:" in ln}
        return out.stdout, modules

    first, _ = call()
    again, modules = call("-X", "importtime")
    assert again == first and "tokens" in again
    assert "ctxfold.cli.statusline" in modules and "ctxfold.tokens.incremental" not in modules
    with target.open("ab") as f:
        f.write(b"".join(lines[len(lines) // 2 :]))
    grown, modules = call("-X", "importtime")
    assert "ctxfold.tokens.incremental" in modules
    assert grown == call(CTXFOLD_NO_CACHE="1")[0] != first


def test_lines_that_add_nothing_keep_the_line_without_the_counting_code(tmp_path: Path) -> None:
    """Claude Code appends bookkeeping lines its reader gives nothing for (queue operations, hook
    progress): the line kept is the answer, no counting code loaded, and it is the line a full
    measure draws. A conversation line, a line not yet finished, a changed earlier byte or
    another setting is measured again."""
    target = tmp_path / "session.jsonl"
    source = FIXTURES / "real" / "claude-code-sidechains.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    target.write_bytes(b"".join(lines[:-3]))
    inert = (
        b'{"type":"queue-operation","operation":"enqueue","timestamp":"2026-01-01T00:00:00Z","sessionId":"s"}\n'
        b'{"type":"progress","data":{"type":"hook_progress"},"sessionId":"s","uuid":"p1"}\n'
    )

    def call(**env: str) -> tuple[str, bool]:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", LAUNCH, "statusline"], input=payload(target),
            capture_output=True, text=True, env={**os.environ, **env}, check=True,
        )  # fmt: skip
        return out.stdout, "ctxfold.tokens.incremental" in out.stderr

    def append(data: bytes) -> None:
        with target.open("ab") as f:
            f.write(data)

    first, measured = call()
    assert measured and "tokens" in first
    append(inert)
    assert call() == (first, False)
    assert call(CTXFOLD_NO_CACHE="1")[0] == first  # what a full measure draws on these bytes
    append(inert)
    assert call() == (first, False)  # read on from the line kept after the last call
    for change, env in (
        (lambda: append(lines[-3]), {}),  # a message: measured
        (lambda: append(inert[:40]), {}),  # a line being written
        (lambda: append(b"\n" + inert), {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}),  # another setting
    ):
        change()
        drawn, measured = call(**env)
        assert measured and drawn == call(CTXFOLD_NO_CACHE="1", **env)[0]
    call()
    data = bytearray(target.read_bytes())
    at = len(data) - 100  # an earlier byte rewritten (a digit of a count), then bookkeeping appended
    data[at] = ord("7") if data[at] != ord("7") else ord("8")
    target.write_bytes(bytes(data) + inert)
    assert call()[1]


def test_the_kept_line_follows_everything_it_is_made_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxfold.cli.statusline import status_line

    target = tmp_path / "session.jsonl"
    target.write_bytes(_session().read_bytes())
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    measured = _measures(monkeypatch)
    raw = payload(target, cwd=str(project))

    def check(raw: str, *, again: bool) -> None:
        before = len(measured)
        assert status_line(raw.encode()) == _fresh(raw, monkeypatch)
        assert len(measured) == before + (2 if again else 1)  # and the fresh one's

    check(raw, again=True)
    check(raw, again=False)  # nothing changed: the line kept
    monkeypatch.setenv("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")  # the environment
    check(raw, again=True)
    check(raw, again=False)
    kept = status_line(raw.encode())
    (project / "ctxfold.toml").write_text("[defaults]\nwindow = 150000\n")  # a config file appears
    check(raw, again=True)
    assert status_line(raw.encode()) != kept
    check(raw, again=False)
    bigger = payload(target, cwd=str(project), context_window={"context_window_size": 1_000_000})
    check(bigger, again=True)  # the payload's window
    check(raw, again=True)
    target.write_bytes(target.read_bytes() + b"\n")  # the transcript (a blank line: no entry)
    check(raw, again=True)
    check(raw, again=False)


def test_a_rewrite_within_one_tick_of_the_clock_is_told_by_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """File times move by the kernel's tick: two writes of the same size can leave the same stat."""
    from ctxfold.cli import status_memo

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b'{"x": 1}\n' * 20_000)
    b.write_bytes(b'{"x": 1}\n' * 19_999 + b'{"x": 2}\n')
    same = os.stat(a)
    monkeypatch.setattr(status_memo.os, "fstat", lambda fd: same)
    assert status_memo._fingerprint(str(a)) != status_memo._fingerprint(str(b))
    assert status_memo._fingerprint(str(a)) == status_memo._fingerprint(str(a))
