"""Codex's status line provider (``ctxfold statusline --codex``) as Codex reads it, for ``cache.py``.

One provider process for the whole run (Codex starts it once), a generated Codex session under a
private ``CODEX_HOME``, and reads as Codex makes them (``resources/read`` with its snapshot, the
reply awaited): the first reads until the line is made; then, ``runs`` times, a read of the
session unchanged and a read after one more line was appended (a live session). A read waits at
most 0.6 s for its line; the grown reads that came back with the previous line are counted.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from _gen import MB, generate
from estimate import generator_sources

URI = "ui://ctxfold/statusline"
WAIT = 0.6  # codex_statusline.WAIT: the longest a read waits for its line
TID = "01a21320-4ecb-7de1-b309-e1b449249bae"


def _read(proc: subprocess.Popen[bytes], n: int, state: dict[str, Any]) -> tuple[Any, float]:
    assert proc.stdin is not None and proc.stdout is not None
    params = {"uri": URI, "_meta": {"com.openai/codex-statusline-state": state}}
    start = time.perf_counter()
    proc.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": n, "method": "resources/read", "params": params}).encode()
    )
    proc.stdin.write(b"\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    took = time.perf_counter() - start
    return json.loads(reply["result"]["contents"][0]["text"]), took


def codex_provider(
    python: str, size_mb: float, runs: int, seed: int, work: Path, env: dict[str, str]
) -> dict[str, Any]:
    """``{"mb", "first_s", "same_s", "grown_s", "late", "line"}``, or ``{"line": None}`` when the
    measured ctxfold has no Codex provider."""
    path, _ = generate("codex", generator_sources("codex"), size_mb, seed=seed)
    home = work / "codex-home"
    day = home / "sessions" / "2026" / "11" / "27"
    day.mkdir(parents=True, exist_ok=True)
    live = day / f"rollout-2026-11-27T05-00-00-{TID}.jsonl"
    shutil.copy(path, live)
    lines = live.read_bytes().splitlines(keepends=True)
    state = {"thread": {"id": TID, "model": {"display_name": "GPT-5.1 Codex"}}}
    proc = subprocess.Popen(
        [python, "-m", "ctxfold", "statusline", "--codex"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**env, "CODEX_HOME": str(home)},
    )
    try:
        start, n = time.perf_counter(), 0
        tree, _ = _read(proc, n, state)
        if proc.poll() is not None:
            return {"line": None}
        while "tokens" not in str(tree) and time.perf_counter() - start < 300:  # the line, not a note
            time.sleep(max(0.0, 1 - (time.perf_counter() - start) % 1))  # Codex: a read a second
            n += 1
            tree, _ = _read(proc, n, state)
        first = time.perf_counter() - start
        same, grown, late = [], [], 0
        for i in range(runs):
            n += 1
            same.append(_read(proc, n, state)[1])
            with live.open("ab") as f:
                f.write(lines[len(lines) // 2 + i])
            n += 1
            took = _read(proc, n, state)[1]
            grown.append(took)
            late += took >= WAIT - 0.01  # it came back with the previous line
    except (OSError, ValueError, KeyError):
        return {"line": None}
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "mb": os.path.getsize(path) / MB,
        "first_s": first,
        "same_s": statistics.median(same),
        "grown_s": statistics.median(grown),
        "late": late,
        "line": tree if isinstance(tree, str) else tree["children"][0],
    }
