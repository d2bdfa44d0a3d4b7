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
    assert not {m for m in modules if m.split(".")[0] in ("tiktoken", "quicktok", "concurrent")}
    assert not modules & {"logging", "difflib", "tomllib", "importlib.resources"}
    assert not modules & {"_hashlib", "hashlib", "tempfile", "statistics"}
    assert "regex" not in modules  # an ASCII line is split by stdlib re
