"""Model registry: model name → provider, tokenizer, context window, max output.

New model names are matched by the longest known prefix after dropping routing prefixes
(``openrouter/anthropic/…``, ``litellm_proxy/…``, ``models/…``), so a dated or suffixed
release (``claude-sonnet-4-5-20250929``) finds its family; failing that, by the longest
family name found inside it (``openrouter-llama-4-maverick``). The window is resolved in this
order: ``--window`` > the config file's ``[models."NAME"]`` > the window recorded in the log
> this table > a stated default. An unknown model is never guessed silently: the resolution
carries a warning that says what was assumed. A log whose own real counts go beyond the table's
window or the default proves the window is at least that large: the largest count is used, and
the warning says so (a model through a router, a long-context option the table does not know).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxfold.names import model_key

DEFAULT_WINDOW = 128_000
DEFAULT_TOKENIZER = "o200k"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    family: str
    provider: str  # anthropic | openai | google | meta | other: selects framing and image rules
    window: int
    max_output: int
    tokenizer: str = "o200k"
    exact_tokenizer: bool = False  # True only where the tokenizer is the model's own


def _m(family: str, provider: str, window: int, max_output: int, tokenizer: str = "o200k") -> ModelInfo:
    exact = provider == "openai"
    return ModelInfo(family, provider, window, max_output, tokenizer, exact)


_TABLE: tuple[ModelInfo, ...] = (
    # Anthropic (windows without the 1M beta header)
    _m("claude-opus-4-6", "anthropic", 200_000, 128_000),
    _m("claude-opus-4-5", "anthropic", 200_000, 64_000),
    _m("claude-opus-4", "anthropic", 200_000, 32_000),
    _m("claude-sonnet-4", "anthropic", 200_000, 64_000),
    _m("claude-haiku-4", "anthropic", 200_000, 64_000),
    _m("claude-3-7-sonnet", "anthropic", 200_000, 64_000),
    _m("claude-3-5", "anthropic", 200_000, 8_192),
    _m("claude-3", "anthropic", 200_000, 4_096),
    _m("claude", "anthropic", 200_000, 32_000),
    # OpenAI
    _m("gpt-5-chat", "openai", 128_000, 16_384),
    _m("gpt-5", "openai", 400_000, 128_000),
    _m("codex-mini", "openai", 200_000, 100_000),
    _m("gpt-4.1", "openai", 1_047_576, 32_768),
    _m("gpt-4o", "openai", 128_000, 16_384),
    _m("gpt-4.5", "openai", 128_000, 16_384),
    _m("gpt-4-turbo", "openai", 128_000, 4_096, "cl100k"),
    _m("gpt-4-32k", "openai", 32_768, 4_096, "cl100k"),
    _m("gpt-4", "openai", 8_192, 4_096, "cl100k"),
    _m("gpt-3.5-turbo", "openai", 16_385, 4_096, "cl100k"),
    _m("gpt-oss", "openai", 131_072, 32_768),
    _m("o1-mini", "openai", 128_000, 65_536),
    _m("o1", "openai", 200_000, 100_000),
    _m("o3", "openai", 200_000, 100_000),
    _m("o4-mini", "openai", 200_000, 100_000),
    # Google
    _m("gemini-3", "google", 1_048_576, 65_536),
    _m("gemini-2.5", "google", 1_048_576, 65_536),
    _m("gemini-2.0", "google", 1_048_576, 8_192),
    _m("gemini-1.5-pro", "google", 2_097_152, 8_192),
    _m("gemini-1.5", "google", 1_048_576, 8_192),
    # Others seen through routers
    _m("llama-4-maverick", "meta", 1_048_576, 16_384),
    _m("llama-4-scout", "meta", 327_680, 16_384),
    _m("deepseek", "other", 128_000, 8_192),
    _m("qwen3-coder", "other", 262_144, 65_536),
    _m("kimi-k2", "other", 131_072, 16_384),
    _m("grok-4", "other", 256_000, 16_384),
)

_BY_FAMILY = {m.family: m for m in _TABLE}


def lookup(name: str | None) -> ModelInfo | None:
    """The registry entry of the longest family prefix of ``name``, or None."""
    if not name:
        return None
    key = model_key(name)
    best: ModelInfo | None = None
    for family, info in _BY_FAMILY.items():
        if key.startswith(family) and (best is None or len(family) > len(best.family)):
            best = info
    if best is None:  # router-mangled names: "openrouter-llama-4-maverick"
        for family, info in _BY_FAMILY.items():
            if len(family) >= 6 and family in key and (best is None or len(family) > len(best.family)):
                best = info
    return best


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """What the estimate uses, and where each number came from (for ``--explain``)."""

    name: str | None
    provider: str
    tokenizer: str
    window: int
    window_source: str
    max_output: int
    warnings: tuple[str, ...] = field(default=())


def resolve(
    name: str | None,
    *,
    window: int | None = None,
    window_source: str = "--window",
    recorded_window: int | None = None,
    tokenizer: str | None = None,
    config_models: Mapping[str, Mapping[str, Any]] | None = None,
    observed: int | None = None,
) -> ResolvedModel:
    """``observed``: the largest prompt the provider counted for this log (a request it
    answered), a floor for a window that was only looked up or assumed."""
    info = lookup(name)
    conf = _config_for(name, config_models or {})
    if window:
        win, source = window, window_source
    elif conf.get("window"):
        win, source = int(conf["window"]), "config file"
    elif recorded_window:
        win, source = recorded_window, "recorded in the log"
    elif info:
        win, source = info.window, f"model registry ({info.family})"
    else:
        win, source = DEFAULT_WINDOW, "default"
    warnings: list[str] = []
    looked_up = source == "default" or source.startswith("model registry")
    raised = looked_up and observed is not None and observed > win
    if raised and observed is not None:
        before = f"the {win:,}-token window " + ("assumed" if source == "default" else f"of the {source}")
        warnings.append(
            f"the log's own real counts reach {observed:,} tokens, more than {before}: its window is at least "
            f"that large, and {observed:,} is used (--window sets it)"
        )
        win, source = observed, "the log's largest real count"
    if info is None and not conf:
        what = f"unknown model {name!r}{_close(name)}" if name else "no model named in the transcript"
        assumed = f"the {tokenizer or DEFAULT_TOKENIZER} tokenizer and generic framing"
        if source == "default":
            assumed += f", and a {DEFAULT_WINDOW:,}-token window (pass --window to set it)"
        warnings.insert(0, f"{what}: assuming {assumed}")
    elif info is not None and not conf and name and info.family == "claude" and model_key(name) != "claude":
        warnings.append(
            f"model {name!r} is not in the registry{_close(name)}: read as a generic Claude model"
        )
    tok = tokenizer or conf.get("tokenizer") or (info.tokenizer if info else DEFAULT_TOKENIZER)
    return ResolvedModel(
        name=name,
        provider=str(conf.get("provider") or (info.provider if info else "other")),
        tokenizer=str(tok),
        window=win,
        window_source=source,
        max_output=int(conf.get("max_output") or (info.max_output if info else 8_192)),
        warnings=tuple(warnings),
    )


def _close(name: str | None) -> str:
    """ " (did you mean 'claude-sonnet-4'?)" for a name one typo away from a known family."""
    import difflib  # here: only an unknown name pays for it

    close = difflib.get_close_matches(model_key(name or ""), list(_BY_FAMILY), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _config_for(name: str | None, models: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    if not name:
        return {}
    if name in models:
        return models[name]
    key = model_key(name)
    for conf_name, conf in models.items():
        if key.startswith(model_key(conf_name)):
            return conf
    return {}
