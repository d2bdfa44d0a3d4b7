"""Where ctxfold keeps per-user files (XDG config and cache folders, or their env overrides), and
where the files it reads live: its config file, its learned profile, pi's and Codex's settings. Here, in a
module that imports nothing of ctxfold, so that the statusline can tell whether they changed
before it loads anything that reads them."""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ctxfold"


def cache_dir() -> Path:
    asked = (os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))
    found = _cache_dirs.get(asked)  # a folder's every file asks: worked out once per environment
    if found is None:
        base = asked[0] or str(Path.home() / ".cache")
        found = _cache_dirs[asked] = Path(base) / "ctxfold"
    return found


_cache_dirs: dict[tuple[str | None, str | None], Path] = {}


CACHE_OFF_ENV = "CTXFOLD_NO_CACHE"  # set (to anything but 0): nothing is kept or reused


def cache_off() -> bool:
    """Whether ``CTXFOLD_NO_CACHE`` turns the count cache (and the statusline's kept line) off."""
    return os.environ.get(CACHE_OFF_ENV, "0") not in ("", "0")


CONFIG_FILE = "ctxfold.toml"
CONFIG_ENV = "CTXFOLD_CONFIG"


def config_candidates() -> list[Path]:
    """Where the config file is looked for, in order: ``CTXFOLD_CONFIG``'s alone, else
    ``./ctxfold.toml`` then the user's."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return [Path(explicit)]
    return [Path.cwd() / CONFIG_FILE, config_dir() / CONFIG_FILE]


def profile_path() -> Path:
    return cache_dir() / "profile.json"


PI_DIR = ".pi"  # pi's folder in the home and in a project


def pi_agent_dir(home: Path | None = None) -> Path:
    """pi's agent folder (settings, models, sessions, extensions)."""
    configured = os.environ.get("PI_CODING_AGENT_DIR")
    if configured:
        return Path(configured).expanduser()
    return (home if home is not None else Path.home()) / PI_DIR / "agent"


def pi_settings_files(cwd: str | Path | None, home: Path | None = None) -> list[Path]:
    """pi's settings files for a session run in ``cwd``: the global one, then the project's."""
    files = [pi_agent_dir(home) / "settings.json"]
    return [*files, Path(cwd) / PI_DIR / "settings.json"] if cwd else files


def codex_home(home: Path | None = None) -> Path:
    """Codex's folder (``config.toml``, ``sessions``): ``$CODEX_HOME``, else ``~/.codex``."""
    configured = os.environ.get("CODEX_HOME")
    if configured:
        return Path(configured).expanduser()
    return (home if home is not None else Path.home()) / ".codex"


def codex_config_file(home: Path | None = None) -> Path:
    return codex_home(home) / "config.toml"
