"""Running a harness binary as a user would, offline: a private HOME, the project folder as the
working directory, nothing inherited from the environment but PATH, and a time limit."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# What every harness is told so that it makes no call beyond the scripted server.
QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "NO_UPDATE_NOTIFIER": "1",
    "CI": "1",
}


@dataclass(frozen=True)
class Run:
    args: Sequence[str]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> Run:
        if self.returncode != 0:
            raise AssertionError(
                f"{' '.join(map(str, self.args))} exited {self.returncode}\n"
                f"stdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-2000:]}"
            )
        return self


def run(
    args: Sequence[str | Path],
    *,
    home: Path,
    env: Mapping[str, str] = {},
    cwd: Path | None = None,
    timeout: float = 180,
) -> Run:
    """Run ``args`` with HOME at ``home`` in ``cwd`` (default ``home/project``)."""
    full = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        **QUIET,
        **env,
    }
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd or home / "project",
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Run([str(a) for a in args], done.returncode, done.stdout, done.stderr)


def project_dir_name(cwd: Path) -> str:
    """Claude Code's folder under ``~/.claude/projects`` for a working directory."""
    return "".join(c if c.isalnum() else "-" for c in str(cwd))
