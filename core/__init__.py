"""ctxfold: keep LLM-agent conversations inside the model's context window.

Read a session log of any supported harness, count the request the model really sees, decide
against the window, and compact — from Python as from the command line (:mod:`ctxfold.cli`)::

    import ctxfold

    est = ctxfold.estimate("session.jsonl")            # count and predict the next request
    result = ctxfold.compact("session.jsonl", out_dir="out")  # fold it when it is due
    guard = ctxfold.ContextGuard("claude-sonnet-4-5")  # or decide around each call in a loop

Every name below is imported on first use, so ``import ctxfold`` stays fast and pulls in no
provider SDK. Anything not in ``__all__`` is private.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's, without importing typing (7 ms of every start, the statusline's)
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # the four tasks
    "read": "ctxfold.api",
    "open_transcript": "ctxfold.formats.loader",
    "estimate": "ctxfold.api",
    "report": "ctxfold.api",
    "compact": "ctxfold.api",
    "Estimate": "ctxfold.engine.now",
    "Report": "ctxfold.engine.replay",
    "CompactResult": "ctxfold.compaction.run",
    # in an agent loop
    "ContextGuard": "ctxfold.compaction.guard",
    "Decision": "ctxfold.engine.policy",
    "Prepared": "ctxfold.compaction.guard",
    "MemoryStore": "ctxfold.engine.state",
    "JsonFileStore": "ctxfold.engine.state",
    # the transcript model
    "Transcript": "ctxfold.transcript.model",
    "Message": "ctxfold.transcript.model",
    "TextPart": "ctxfold.transcript.model",
    "ThinkingPart": "ctxfold.transcript.model",
    "ToolCallPart": "ctxfold.transcript.model",
    "ToolResultPart": "ctxfold.transcript.model",
    "MediaPart": "ctxfold.transcript.model",
    "OpaquePart": "ctxfold.transcript.model",
    "Usage": "ctxfold.transcript.model",
    "ToolDef": "ctxfold.transcript.model",
    "CompactionMarker": "ctxfold.transcript.model",
    "ContextUpdate": "ctxfold.transcript.model",
    "ContextReset": "ctxfold.transcript.model",
    "Rewind": "ctxfold.transcript.model",
    "ApiError": "ctxfold.transcript.model",
    # summarizers
    "Summarizer": "ctxfold.providers.base",
    "SummaryRequest": "ctxfold.providers.base",
    "SummaryResult": "ctxfold.providers.base",
    "make_summarizer": "ctxfold.providers.registry",
    # registries and settings
    "list_formats": "ctxfold.api",
    "list_tokenizers": "ctxfold.api",
    "list_strategies": "ctxfold.api",
    "list_providers": "ctxfold.api",
    "get_tokenizer": "ctxfold.tokens.tokenizers",
    "get_strategy": "ctxfold.strategies.base",
    "Config": "ctxfold.config",
    "load_config": "ctxfold.config",
    # the exception tree
    "CtxfoldError": "ctxfold.errors",
    "UsageError": "ctxfold.errors",
    "InputError": "ctxfold.errors",
    "EmptyInputError": "ctxfold.errors",
    "UnknownFormatError": "ctxfold.errors",
    "LineError": "ctxfold.errors",
    "TokenizerError": "ctxfold.errors",
    "ConfigError": "ctxfold.errors",
    "OutputError": "ctxfold.errors",
    "ProviderError": "ctxfold.errors",
    "MissingKeyError": "ctxfold.errors",
    "WindowTooSmallError": "ctxfold.errors",
    "NoShrinkError": "ctxfold.errors",
    "ChangedPrefixError": "ctxfold.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxfold' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and editors see; nothing is imported at run time
    from ctxfold.api import (
        compact,
        estimate,
        list_formats,
        list_providers,
        list_strategies,
        list_tokenizers,
        read,
        report,
    )
    from ctxfold.compaction.guard import ContextGuard, Prepared
    from ctxfold.compaction.run import CompactResult
    from ctxfold.config import Config, load_config
    from ctxfold.engine.now import Estimate
    from ctxfold.engine.policy import Decision
    from ctxfold.engine.replay import Report
    from ctxfold.engine.state import JsonFileStore, MemoryStore
    from ctxfold.errors import (
        ChangedPrefixError,
        ConfigError,
        CtxfoldError,
        EmptyInputError,
        InputError,
        LineError,
        MissingKeyError,
        NoShrinkError,
        OutputError,
        ProviderError,
        TokenizerError,
        UnknownFormatError,
        UsageError,
        WindowTooSmallError,
    )
    from ctxfold.formats.loader import open_transcript
    from ctxfold.providers.base import Summarizer, SummaryRequest, SummaryResult
    from ctxfold.providers.registry import make_summarizer
    from ctxfold.strategies.base import get_strategy
    from ctxfold.tokens.tokenizers import get_tokenizer
    from ctxfold.transcript.model import (
        ApiError,
        CompactionMarker,
        ContextReset,
        ContextUpdate,
        MediaPart,
        Message,
        OpaquePart,
        Rewind,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolDef,
        ToolResultPart,
        Transcript,
        Usage,
    )
