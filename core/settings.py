"""Effective settings: flags > environment > ``ctxfold.toml`` > built-in defaults.

Each setting has one environment variable (``CTXFOLD_<NAME>``) and one place in the file
(``[defaults]`` for what every command uses, ``[compact]`` for compaction). API keys are not
settings: they come from ``--api-key`` or the SDK's own variable, and are only ever shown
redacted.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxfold.config import SPECS, Config, Spec
from ctxfold.errors import ConfigError

KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


@dataclass(frozen=True)
class Setting:
    value: Any
    source: str  # "flag", "env CTXFOLD_X", "file PATH", "default"


def env_name(name: str) -> str:
    return f"CTXFOLD_{name.upper()}"


def effective(
    flags: Mapping[str, Any], config: Config, environ: Mapping[str, str] | None = None
) -> dict[str, Setting]:
    return {name: setting(name, flags.get(name), config, environ) for name in SPECS}


def setting(name: str, flag: Any, config: Config, environ: Mapping[str, str] | None = None) -> Setting:
    """One setting: the flag if given, else ``CTXFOLD_<NAME>``, else the file, else the default."""
    spec = SPECS[name]
    env = os.environ if environ is None else environ
    section = config.raw.get(spec.section, {})
    if flag is not None:
        return Setting(flag, "flag")
    if env.get(env_name(name)):
        return Setting(_convert(name, spec, env[env_name(name)], env_name(name)), f"env {env_name(name)}")
    if isinstance(section, dict) and name in section:
        return Setting(_convert(name, spec, section[name], str(config.path)), f"file {config.path}")
    return Setting(spec.default, "default")


def _convert(name: str, spec: Spec, raw: Any, where: str) -> Any:
    bad = ConfigError(f"{where}: {name} should be {spec.kind.__name__}, got {raw!r}")
    if isinstance(raw, bool) or (spec.kind is int and isinstance(raw, float) and not raw.is_integer()):
        raise bad  # TOML true or 2.7 is not a count
    try:
        value = spec.kind(raw)
    except (TypeError, ValueError):
        raise bad from None
    if isinstance(value, float) and not math.isfinite(value):
        raise bad
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(f"{where}: {name} should be at least {spec.minimum}, got {raw!r}")
    return value


def redact(value: str | None) -> str | None:
    """``sk-ant-…`` → ``sk-…(41 chars)``: enough to tell which key, never the key."""
    if not value:
        return None
    return f"{value[:3]}…({len(value)} chars)"


def keys(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> dict[str, Setting]:
    env = os.environ if environ is None else environ
    out = {
        var: Setting(redact(env.get(var)), f"env {var}" if env.get(var) else "not set") for var in KEY_VARS
    }
    if explicit:
        out["--api-key"] = Setting(redact(explicit), "flag")
    return out
