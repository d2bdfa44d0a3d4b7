"""The format registry: name → module, imported only when used.

Each format is a folder whose ``__init__`` exposes ``NAME``, ``DESCRIPTION``, ``sniff(objs) -> int`` and ``Reader``.
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

# One line per format: its name, its folder under core/formats/, and whether it has a writer
# (a format without one, such as OpenHands evaluation output, is written as ctxfold native,
# which keeps everything, with a note saying so). The folder's __init__ exports NAME,
# DESCRIPTION, sniff and Reader; its writer, when it has one, is ``writer.py`` beside them.
_TABLE = (
    ("ctxfold", "native", True),
    ("claude-code", "claude_code", True),
    ("codex", "codex", True),
    ("pi", "pi", True),
    ("litellm", "litellm", True),
    ("openhands", "openhands", False),
    ("openai-chat", "openai_chat", True),
    ("openai-responses", "openai_responses", True),
    ("anthropic", "anthropic", True),
    ("genai", "genai", True),
    ("gemini-cli", "gemini_cli", True),
)
FORMATS: dict[str, str] = {name: f"{_PKG}.{folder}" for name, folder, _ in _TABLE}
WRITERS: dict[str, str] = {name: f"{_PKG}.{folder}.writer" for name, folder, writes in _TABLE if writes}


_loaded: dict[str, ModuleType] = {}  # a folder of logs asks for each format a dozen times a file


def get(name: str) -> ModuleType:
    module = _loaded.get(name)
    if module is not None:
        return module
    if name not in FORMATS:
        raise UsageError(f"unknown format {name!r}{did_you_mean(name, list(FORMATS))}")
    module = _loaded[name] = importlib.import_module(FORMATS[name])
    return module


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


def writer(name: str) -> tuple[str, ModuleType]:
    """The format an output is written in (the input's own when it has a writer) and its module."""
    out = name if name in WRITERS else "ctxfold"
    return out, importlib.import_module(WRITERS[out])
