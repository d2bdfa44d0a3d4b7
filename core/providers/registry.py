"""Summarizers by name: ``"provider:model"``, and comma lists as fallback chains.

::

    offline                                   the digest made without a model (default)
    anthropic[:MODEL]                         Messages API, key from ANTHROPIC_API_KEY
    openai[:MODEL]                            Chat Completions, key from OPENAI_API_KEY
    openai-responses[:MODEL]                  Responses API, key from OPENAI_API_KEY
    openai-compatible:MODEL                   Chat Completions at ``base_url``, key optional
    anthropic:claude-haiku-4-5,openai,offline a chain: on failure, a warning and the next one

Provider modules are imported only when used. A chain falls back only to what it names: a
provider named alone never turns into another one (asked for Claude, a user who gets the offline
digest instead, with exit status 0, was misled), so ``offline`` goes last in a chain that should
always produce a summary. ``strict`` raises the first failure even in a chain.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ctxfold.errors import MissingKeyError, ProviderError, UsageError
from ctxfold.names import did_you_mean
from ctxfold.providers.base import Summarizer, SummaryRequest, SummaryResult
from ctxfold.providers.remote import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ctxfold.providers.render import ToolResults

PROVIDERS: dict[str, str] = {
    "offline": "ctxfold.providers.offline:OfflineSummarizer",
    "anthropic": "ctxfold.providers.anthropic_api:AnthropicSummarizer",
    "openai": "ctxfold.providers.openai_api:OpenAISummarizer",
    "openai-responses": "ctxfold.providers.openai_api:OpenAIResponsesSummarizer",
    "openai-compatible": "ctxfold.providers.openai_api:OpenAICompatibleSummarizer",
}
DEFAULT = "offline"
PerProvider = str | Mapping[str, str] | None  # one value for every provider, or by provider name


def parse_spec(spec: str | None) -> list[tuple[str, str | None]]:
    """``"anthropic:claude-haiku-4-5,offline"`` → ``[("anthropic", "claude-haiku-4-5"), ("offline", None)]``."""
    out: list[tuple[str, str | None]] = []
    for item in (spec or DEFAULT).split(","):
        item = item.strip()
        if not item:
            raise UsageError(f"empty provider in {spec!r}")
        name, _, model = item.partition(":")
        name = name.strip().lower()
        if name not in PROVIDERS:
            raise UsageError(f"unknown provider {name!r}{did_you_mean(name, list(PROVIDERS))}")
        out.append((name, model.strip() or None))
    return out


def _family(name: str) -> str:
    """Providers that share a key and endpoint (``openai`` and ``openai-responses``)."""
    return "openai" if name == "openai-responses" else name


def _pick(value: PerProvider, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.get(name) or value.get(_family(name))


def _check_shared(value: PerProvider, what: str, names: list[str]) -> None:
    """One key (or URL) for providers of different vendors would send one vendor's secret to
    another's server: they must be given by provider name."""
    families = sorted({_family(n) for n in names if n != "offline"})
    if isinstance(value, str) and len(families) > 1:
        raise UsageError(
            f"one {what} for several providers ({', '.join(families)}): give it per provider, "
            f'e.g. {{"{families[0]}": ...}}'
        )


def _load(name: str) -> Callable[..., Summarizer]:
    module, _, attr = PROVIDERS[name].partition(":")
    factory: Callable[..., Summarizer] = getattr(importlib.import_module(module), attr)
    return factory


class ChainSummarizer:
    """Tries each summarizer in turn; the result carries a warning per failure."""

    def __init__(self, links: Sequence[Summarizer], *, strict: bool = False) -> None:
        if not links:
            raise UsageError("a summarizer chain needs at least one provider")
        self.links = list(links)
        self.strict = strict

    @property
    def window(self) -> int | None:
        """The first provider's window: what the strategy should truncate the conversation to."""
        return getattr(self.links[0], "window", None)

    @property
    def spec(self) -> str:
        """The chain as a provider spec (``anthropic:claude-haiku-4-5,offline``): what a state
        file records, so a later run with another provider is noticed."""
        return ",".join(_label(link) for link in self.links)

    def __repr__(self) -> str:
        return f"ChainSummarizer({', '.join(map(repr, self.links))}, strict={self.strict})"

    def check_keys(self) -> None:
        """Raise the :class:`MissingKeyError` a call would meet when nothing in the chain can
        stand in for the provider that lacks its key: a provider named alone, the chain's last,
        or any with ``strict``. Called before a file is read, so nothing is written."""
        for n, link in enumerate(self.links):
            last = self.strict or n == len(self.links) - 1
            api_key = getattr(link, "api_key", None)
            if not callable(api_key):
                return  # needs no key (offline)
            try:
                api_key()
            except MissingKeyError:
                if last:
                    raise
            else:
                return  # this one can be called: nothing after it is needed for a key

    def __call__(self, request: SummaryRequest) -> SummaryResult:
        warnings: list[str] = []
        for n, link in enumerate(self.links):
            try:
                result = link(request)
            except ProviderError as err:
                if self.strict or n == len(self.links) - 1:
                    if warnings:
                        raise type(err)(f"{err} (after: {'; '.join(warnings)})") from None
                    raise
                nxt = self.links[n + 1]
                warnings.append(f"summarizer failed: {err}; falling back to {_label(nxt)}")
                continue
            return replace(result, warnings=[*warnings, *result.warnings])
        raise AssertionError("unreachable")  # pragma: no cover


def _label(s: Summarizer) -> str:
    label = getattr(s, "label", None)
    return str(label) if label else str(getattr(s, "provider", type(s).__name__))


def make_summarizer(
    spec: str | None = DEFAULT,
    *,
    api_key: PerProvider = None,
    base_url: PerProvider = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    tool_results: str | None = None,
    window: int | None = None,
    strict: bool = False,
) -> ChainSummarizer:
    """A summarizer for ``spec``; options apply to every remote provider in the chain.

    ``api_key`` and ``base_url`` are one string when the chain has one vendor, else a mapping
    by provider name (``{"anthropic": ..., "openai-compatible": ...}``; ``openai`` also serves
    ``openai-responses``). Bad names and options raise
    :class:`UsageError` here, before anything is sent; call-time failures (missing key,
    HTTP errors, timeouts) are the chain's to handle: it moves on to the next provider it names,
    and the last one's failure is raised (:meth:`ChainSummarizer.check_keys` finds a missing key
    before anything is read).

    >>> summarize = ctxfold.make_summarizer("offline")
    >>> request = ctxfold.SummaryRequest([ctxfold.Message("user", (ctxfold.TextPart("Fix the parser"),))], 2_000)
    >>> summary = summarize(request)
    >>> summary.provider, "Fix the parser" in summary.text
    ('offline', True)
    """
    parsed = parse_spec(spec)
    ToolResults.parse(tool_results)  # a bad value is a usage error whichever providers are chained
    _check_shared(api_key, "API key", [n for n, _ in parsed])
    _check_shared(base_url, "base URL", [n for n, _ in parsed])
    links: list[Summarizer] = []
    for name, model in parsed:
        factory = _load(name)
        if name == "offline":
            links.append(factory(model))
            continue
        options: dict[str, Any] = {
            "api_key": _pick(api_key, name),
            "base_url": _pick(base_url, name),
            "timeout": timeout,
            "max_retries": max_retries,
            "tool_results": tool_results,
            "window": window,
        }
        links.append(factory(model, **options))
    return ChainSummarizer(links, strict=strict)
