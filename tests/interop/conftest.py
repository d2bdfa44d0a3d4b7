"""The harness lab: the real agent harnesses, pinned in ``package.json`` and its lockfile, are
installed from the npm registry into a cache directory on first use (``npm ci``; about 30 s and
1.3 GB) and pointed at the scripted model servers of ``server.py`` on 127.0.0.1.

Every test here carries the ``interop`` marker (``python -m pytest -m interop`` runs only them).
They skip, saying why, when node or npm is missing; a failed install is a failure, not a skip.
``CTXFOLD_INTEROP_CACHE`` moves the cache (default ``~/.cache/ctxfold-interop``); the
installed tree is keyed by the lockfile's hash, so a version bump installs afresh.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parent
INSTALL_TIMEOUT = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if LAB in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.interop)


def _cache_root() -> Path:
    return Path(os.environ.get("CTXFOLD_INTEROP_CACHE") or Path.home() / ".cache" / "ctxfold-interop")


def installed_lab() -> Path:
    """The folder holding ``node_modules`` of the pinned harnesses, installed if need be."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip(
            "the harness lab needs node and npm on PATH (the harnesses install from the npm registry)"
        )
    lock = (LAB / "package-lock.json").read_bytes()
    digest = hashlib.sha256((LAB / "package.json").read_bytes() + lock).hexdigest()[:16]
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / digest
    with open(root / f"{digest}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one install at a time, across processes
        if not (target / ".installed").exists():
            work = root / f"{digest}.partial"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            for name in ("package.json", "package-lock.json"):
                shutil.copy(LAB / name, work / name)
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
            if done.returncode != 0:
                raise RuntimeError(f"npm ci of the harness lab failed:\n{done.stderr[-4000:]}")
            shutil.rmtree(target, ignore_errors=True)
            work.rename(target)
            (target / ".installed").write_text(digest)
    return target


@pytest.fixture(scope="session")
def harness_bin() -> Callable[[str], Path]:
    """``harness_bin("claude")`` → the pinned binary (``codex-0130`` is the older Codex,
    ``codex-0171`` the first with status line providers)."""
    root = installed_lab()

    def find(name: str) -> Path:
        if name.startswith("codex-0"):
            path = root / "node_modules" / name / "bin" / "codex.js"
        else:
            path = root / "node_modules" / ".bin" / name
        if not path.exists():
            raise FileNotFoundError(f"{name} is not in the harness lab ({path})")
        return path

    return find


@pytest.fixture
def lab_home(tmp_path: Path) -> Iterator[Path]:
    """A private HOME for one harness run (its config, sessions and caches), and a project
    folder inside it to run in."""
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    yield home
