"""What a model's tokens cost: USD per million, by kind of token, so a session's bill can be read
off its usage records.

Prices go stale, so every row says where it was read and when, a model without a row is named
as unpriced rather than guessed, and ``[prices."NAME"]`` in ``ctxfold.toml`` (input, output,
cache_read, cache_write, cache_write_1h) adds or overrides one. A row applies to its own name,
a dated snapshot of it (``claude-sonnet-4-20250514``, ``gpt-5-2025-08-07``) or a bracketed
variant (``claude-opus-4-6[1m]``), never to a newer version that merely shares a prefix:
``claude-opus-4`` costs three times ``claude-opus-4-7``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxfold.errors import ConfigError
from ctxfold.names import model_key

PRICE_KEYS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens. A missing cache rate means the provider bills those tokens as
    input: no discount for reads, no surcharge for writes (OpenAI's automatic caching)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None  # 5-minute writes (Anthropic's default)
    cache_write_1h: float | None = None
    # a prompt longer than this is billed whole at the long-context rates (× input, × output)
    long_above: int | None = None
    long_input: float = 1.0
    long_output: float = 1.0
    source: str = ""


_ANTHROPIC = "platform.claude.com/docs/en/about-claude/pricing, read 2026-11"
_OPENAI = "developers.openai.com/api/docs/pricing, read 2026-11"


def _claude(inp: float, out: float, read: float, w5: float, w1h: float, **long: Any) -> Price:
    return Price(inp, out, read, w5, w1h, source=_ANTHROPIC, **long)


def _gpt(inp: float, read: float, out: float, **long: Any) -> Price:
    return Price(inp, out, read, source=_OPENAI, **long)


# Anthropic's long-context rates (a prompt over 200k on the 1M-window beta) apply to Sonnet 4
# and 4.5; later models bill the whole window at the base rate.
_SONNET_LONG = {"long_above": 200_000, "long_input": 2.0, "long_output": 1.5}

PRICES: dict[str, Price] = {
    "claude-opus-5-5": _claude(4, 20, 0.20, 5, 8),
    "claude-opus-5": _claude(5, 25, 0.50, 6.25, 10),
    "claude-opus-4-8": _claude(5, 25, 0.50, 6.25, 10),
    "claude-opus-4-7": _claude(5, 25, 0.50, 6.25, 10),
    "claude-opus-4-6": _claude(5, 25, 0.50, 6.25, 10),
    "claude-opus-4-5": _claude(5, 25, 0.50, 6.25, 10),
    "claude-opus-4-1": _claude(15, 75, 1.50, 18.75, 30),
    "claude-opus-4": _claude(15, 75, 1.50, 18.75, 30),
    "claude-sonnet-5-5": _claude(2, 10, 0.10, 2.50, 4),  # cache reads cut from 0.20 on 2026-10-07
    "claude-sonnet-5": _claude(2, 10, 0.20, 2.50, 4),
    "claude-sonnet-4-6": _claude(3, 15, 0.30, 3.75, 6),
    "claude-sonnet-4-5": _claude(3, 15, 0.30, 3.75, 6, **_SONNET_LONG),
    "claude-sonnet-4": _claude(3, 15, 0.30, 3.75, 6, **_SONNET_LONG),
    "claude-3-7-sonnet": _claude(3, 15, 0.30, 3.75, 6),
    "claude-3-5-sonnet": _claude(3, 15, 0.30, 3.75, 6),
    "claude-haiku-4-5": _claude(1, 5, 0.10, 1.25, 2),
    "claude-3-5-haiku": _claude(0.80, 4, 0.08, 1, 1.6),
    "claude-3-haiku": _claude(0.25, 1.25, 0.03, 0.30, 0.50),
    "claude-3-opus": _claude(15, 75, 1.50, 18.75, 30),
    # OpenAI: cached input is a tenth of input on the GPT-5 family; writes cost nothing extra.
    # GPT-5.5 bills a prompt over 272k whole at 2× input and 1.5× output.
    "gpt-5.5": _gpt(5, 0.50, 30, long_above=272_000, long_input=2.0, long_output=1.5),
    "gpt-5.4": _gpt(2.50, 0.25, 15),
    "gpt-5": _gpt(1.25, 0.125, 10),
    "gpt-5-codex": _gpt(1.25, 0.125, 10),
}

# what may follow a row's name and still be that model: a date, or a bracketed variant
_SUFFIX = re.compile(r"(-\d{4}-?\d{2}-?\d{2}|-latest)?(\[[^\]]*\])?")


def _matches(name: str, row: str) -> bool:
    return name.startswith(row) and _SUFFIX.fullmatch(name[len(row) :]) is not None


@dataclass(frozen=True, slots=True)
class PriceList:
    """The shipped rows and the config file's, looked up once per model name."""

    config: Mapping[str, Price] = field(default_factory=dict)
    # model name → its row: a report prices every request, and a folder thousands of them
    _found: dict[str, Price | None] = field(default_factory=dict, compare=False, repr=False)

    def price(self, model: str | None) -> Price | None:
        if not model:
            return None
        try:
            return self._found[model]
        except KeyError:
            found = self._found[model] = self._lookup(model)
            return found

    def _lookup(self, model: str) -> Price | None:
        if model in self.config:
            return self.config[model]
        key = model_key(model)
        for table in (self.config, PRICES):
            for row, price in table.items():
                if _matches(key, model_key(row)):
                    return price
        return None


def price_list(config_prices: Mapping[str, Any] | None = None, where: str = "ctxfold.toml") -> PriceList:
    """The shipped prices plus ``[prices."NAME"]`` tables from the config file (checked here:
    a price that is not a non-negative number is an error naming the key)."""
    rows: dict[str, Price] = {}
    for name, conf in (config_prices or {}).items():
        if not isinstance(conf, Mapping):
            raise ConfigError(f'{where}: [prices."{name}"] must be a table')
        values: dict[str, float] = {}
        for key in PRICE_KEYS:
            v = conf.get(key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v:
                raise ConfigError(
                    f"{where}: prices.{name}.{key} must be a number ≥ 0 (USD per million tokens)"
                )
            values[key] = float(v)
        if "input" not in values or "output" not in values:
            raise ConfigError(f'{where}: [prices."{name}"] needs input and output (USD per million tokens)')
        rows[name] = Price(
            values["input"],
            values["output"],
            values.get("cache_read"),
            values.get("cache_write"),
            values.get("cache_write_1h"),
            source=f"{where} [prices.{name!r}]",
        )
    return PriceList(rows)
