"""``ctxfold.toml``: the first found of ``./ctxfold.toml`` and the user config dir's.

Precedence everywhere is flags > environment > this file > built-in defaults; this module
only reads the file. Known tables: ``[defaults]`` (model, tokenizer, window, buffer) and
``[models."NAME"]`` (window, max_output, tokenizer, provider) for models the registry lacks
or gets wrong.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxfold.core.errors import ConfigError
from ctxfold.core.paths import config_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

FILE_NAME = "ctxfold.toml"


@dataclass(frozen=True)
class Config:
    path: Path | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)


def candidates() -> list[Path]:
    explicit = os.environ.get("CTXFOLD_CONFIG")
    if explicit:
        return [Path(explicit)]
    return [Path.cwd() / FILE_NAME, config_dir() / FILE_NAME]


def load_config(path: Path | None = None) -> Config:
    for p in [path] if path else candidates():
        if p is not None and p.is_file():
            return _parse(p)
    return Config()


def _parse(path: Path) -> Config:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    defaults = raw.get("defaults", {})
    models = raw.get("models", {})
    if not isinstance(defaults, dict) or not isinstance(models, dict):
        raise ConfigError(f"{path}: [defaults] and [models] must be tables")
    for name, conf in models.items():
        if not isinstance(conf, dict):
            raise ConfigError(f"{path}: [models.{name!r}] must be a table")
        for key in ("window", "max_output"):
            if key in conf and (not isinstance(conf[key], int) or conf[key] <= 0):
                raise ConfigError(f"{path}: models.{name}.{key} must be a positive integer")
    return Config(path=path, defaults=defaults, models=models, raw=raw)
