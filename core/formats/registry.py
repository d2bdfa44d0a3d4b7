"""The format registry: name → module, imported only when used.

Each module exposes ``NAME``, ``DESCRIPTION``, ``sniff(objs) -> int`` and ``Reader``.
Detection asks every format to score the first parsed lines and takes the best score.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ctxfold.errors import UsageError
from ctxfold.names import did_you_mean

_PKG = "ctxfold.formats"

FORMATS: dict[str, str] = {
    "ctxfold": f"{_PKG}.native",
    "claude-code": f"{_PKG}.claude_code",
    "codex": f"{_PKG}.codex",
    "pi": f"{_PKG}.pi",
    "litellm": f"{_PKG}.litellm",
    "openhands": f"{_PKG}.openhands",
    "openai-chat": f"{_PKG}.openai_chat",
    "openai-responses": f"{_PKG}.openai_responses",
    "anthropic": f"{_PKG}.anthropic",
    "genai": f"{_PKG}.genai",
}


def get(name: str) -> ModuleType:
    if name not in FORMATS:
        raise UsageError(f"unknown format {name!r}{did_you_mean(name, list(FORMATS))}")
    return importlib.import_module(FORMATS[name])


def detect(objs: Sequence[Any]) -> tuple[str, int]:
    """The best-scoring format for these first parsed lines, with its score (0 = none)."""
    best, score = "", 0
    for name in FORMATS:
        try:
            s = get(name).sniff(objs)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError):
            s = 0  # lines a sniffer cannot make sense of are not its format
        if s > score:
            best, score = name, s
    return best, score


# Formats that can be written back. Others (OpenHands evaluation output) are written as
# ctxfold native, which keeps everything, with a note saying so.
WRITERS: dict[str, str] = {
    name: f"{FORMATS[name]}_writer"
    for name in (
        "ctxfold",
        "claude-code",
        "codex",
        "pi",
        "litellm",
        "openai-chat",
        "openai-responses",
        "anthropic",
        "genai",
    )
}
WRITERS["ctxfold"] = f"{_PKG}.native_writer"


def writer(name: str) -> tuple[str, ModuleType]:
    """The format an output is written in (the input's own when it has a writer) and its module."""
    out = name if name in WRITERS else "ctxfold"
    return out, importlib.import_module(WRITERS[out])
