"""``ctxfold.toml``: the first found of ``./ctxfold.toml`` and the user config dir's, or the file
``CTXFOLD_CONFIG`` names (which must then exist).

Precedence everywhere is flags > environment > this file > built-in defaults; this module
only reads the file. Known tables: ``[defaults]`` and ``[compact]`` (the settings of
:mod:`ctxfold.settings`), ``[models."NAME"]`` (window, max_output, tokenizer, provider)
for models the registry lacks or gets wrong, and ``[prices."NAME"]`` (USD per million tokens:
input, output, cache_read, cache_write, cache_write_1h) for models the price table lacks. A key ctxfold does not know is ignored with a
warning (:attr:`Config.warnings`, for the caller to show): a typo must not pass for a setting.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxfold.errors import ConfigError
from ctxfold.names import did_you_mean
from ctxfold.paths import CONFIG_ENV, config_candidates
from ctxfold.prices import PRICE_KEYS, PriceList, price_list

SECTIONS = ("defaults", "compact", "models", "prices")
MODEL_KEYS = ("window", "max_output", "tokenizer", "provider")


# The settings every command reads (ctxfold.settings resolves them): the table of the file each
# belongs in, its default, its type, and for numbers the smallest value that makes sense.
@dataclass(frozen=True)
class Spec:
    section: str
    default: Any
    kind: type
    minimum: float | None = None  # for numbers: the smallest value that makes sense


SPECS: dict[str, Spec] = {
    "model": Spec("defaults", None, str),
    "window": Spec("defaults", None, int, minimum=1),
    "tokenizer": Spec("defaults", None, str),
    "buffer": Spec("defaults", None, str),
    "calibration": Spec("defaults", "growth", str),
    "strategy": Spec("compact", "summary", str),
    "provider": Spec("compact", "offline", str),
    "base_url": Spec("compact", None, str),
    "tool_results": Spec("compact", "elide", str),
    "timeout": Spec("compact", 60.0, float, minimum=0.1),
    "max_retries": Spec("compact", 2, int, minimum=0),
    "keep_observations": Spec("compact", 10, int, minimum=0),
}


@dataclass(frozen=True)
class Config:
    """The settings read from ``ctxfold.toml`` (see :func:`load_config`).

    >>> ctxfold.Config().models
    {}
    """

    path: Path | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    prices: PriceList = field(default_factory=PriceList)
    raw: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # keys the file has and ctxfold ignores, one message each


def load_config(path: Path | None = None) -> Config:
    """The first config file found; ``path`` or ``CTXFOLD_CONFIG`` name one that must exist.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ctxfold.toml"
    >>> _ = path.write_text('[models."my-local-model"]\\nwindow = 32000\\n')
    >>> config = ctxfold.load_config(path)
    >>> ctxfold.ContextGuard("my-local-model", config=config).policy.window
    32000
    """
    explicit = path or (Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else None)
    if explicit is not None:
        if not explicit.is_file():
            what = "not a file" if explicit.exists() else "no such config file"
            named = f" (named by {CONFIG_ENV})" if path is None else ""
            raise ConfigError(f"{explicit}: {what}{named}")
        return _parse(explicit)
    for p in config_candidates():
        if p.is_file():
            return _parse(p)
    return Config()


def _parse(path: Path) -> Config:
    # imported here: a run with no configuration file (the statusline's, most often) skips it
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    defaults = raw.get("defaults", {})
    models = raw.get("models", {})
    if not all(isinstance(raw.get(s, {}), dict) for s in SECTIONS):
        raise ConfigError(f"{path}: [defaults], [compact], [models] and [prices] must be tables")
    for name, conf in models.items():
        if not isinstance(conf, dict):
            raise ConfigError(f"{path}: [models.{name!r}] must be a table")
        for key in ("window", "max_output"):
            if key in conf and (not isinstance(conf[key], int) or conf[key] <= 0):
                raise ConfigError(f"{path}: models.{name}.{key} must be a positive integer")
    prices = price_list(raw.get("prices"), str(path))
    return Config(
        path=path, defaults=defaults, models=models, prices=prices, raw=raw, warnings=unknown_keys(path, raw)
    )


def unknown_keys(path: Path, raw: dict[str, Any]) -> tuple[str, ...]:
    """One warning per key of the file that no setting reads: the file, where, and the
    nearest known name (or the table where a known setting belongs)."""
    warnings: list[str] = []

    def placed(key: str, where: str) -> str | None:
        spec = SPECS.get(key)
        if spec is None or f"[{spec.section}]" == where:
            return None
        return f"{path}: {key!r} belongs in [{spec.section}], not {where}; ignored"

    for top, value in raw.items():
        if top in SECTIONS:
            continue
        kind = "table" if isinstance(value, dict) else "key"
        warnings.append(
            placed(top, "the top level")
            or f"{path}: unknown {kind} {top!r}, ignored{did_you_mean(top, SECTIONS)}"
        )
    for section in ("defaults", "compact"):
        known = [k for k, spec in SPECS.items() if spec.section == section]
        for key in raw.get(section, {}):
            if key not in known:
                warnings.append(
                    placed(key, f"[{section}]")
                    or f"{path}: unknown key {key!r} in [{section}], ignored{did_you_mean(key, known)}"
                )
    for table, keys in (("models", MODEL_KEYS), ("prices", PRICE_KEYS)):
        for name, conf in raw.get(table, {}).items():
            for key in conf:
                if key not in keys:
                    warnings.append(
                        f'{path}: unknown key {key!r} in [{table}."{name}"], ignored'
                        + did_you_mean(key, keys)
                    )
    return tuple(warnings)
