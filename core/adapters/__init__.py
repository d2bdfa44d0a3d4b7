"""ContextGuard as a drop-in for agent frameworks: one object in each framework's own hook.

    from ctxfold.adapters.adk import ContextGuardPlugin                # Google ADK: Runner(plugins=[...])
    from ctxfold.adapters.langchain import ContextGuardMiddleware      # LangChain: create_agent(middleware=[...])
    from ctxfold.adapters.pydantic_ai import context_guard             # pydantic-ai: Agent(capabilities=[...])
    from ctxfold.adapters.openai_agents import context_guard_filter    # Agents SDK: RunConfig(call_model_input_filter=...)

Each is a thin layer over the one ``ContextGuard``: it hands the guard the framework's own
history, system prompt and tools, sends what the guard prepared, reports the usage and learns
from a refusal as too long, and keeps the guard's state where the framework keeps the
conversation's. A framework is imported only by its own module (installed with
``pip install "ctxfold[adk]"``, ``[langchain]``, ``[pydantic-ai]`` or ``[openai-agents]``), so
``import ctxfold`` never pulls one in; the names below load their module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ContextGuardPlugin": "ctxfold.adapters.adk",
    "ContextGuardMiddleware": "ctxfold.adapters.langchain",
    "ContextGuardCapability": "ctxfold.adapters.pydantic_ai",
    "context_guard": "ctxfold.adapters.pydantic_ai",
    "ContextGuardFilter": "ctxfold.adapters.openai_agents",
    "context_guard_filter": "ctxfold.adapters.openai_agents",
    "SqliteStore": "ctxfold.adapters.stores",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxfold.adapters' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
