"""What the framework adapter tests share: the README's examples, the checks every adapter must
pass on each request a scripted model received, and the scripted model's rules.

Each framework's test drives a real agent loop of that framework (its own test model, or its
real SDK client against a server on 127.0.0.1) with a scripted model that calls a tool a few
times per user turn and then answers. The model counts a request its own way, the characters of
its JSON over three, not with ctxfold's tokenizer, and refuses a request above its limit in
the provider's words, so what the guard predicts is checked against a count it cannot see.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from conftest import ROOT

from ctxfold.strategies.summary import SUMMARY_OPEN

SECTION = "### Use it in an agent loop"
FILLER = "lorem ipsum dolor sit amet "  # a tool's output, repeated


def readme_example(marker: str) -> str:
    """The README's agent-loop example that mentions ``marker``, as written."""
    section = (ROOT / "README.md").read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```python")[1:]]
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"one README example should use {marker}"
    return found[0]


def run_example(marker: str, namespace: dict[str, Any]) -> dict[str, Any]:
    exec(compile(readme_example(marker), "README.md", "exec"), namespace)
    return namespace


def real_tokens(*parts: Any) -> int:
    """The scripted provider's own count: characters of the request's JSON / 3."""
    return len(json.dumps(parts, default=str)) // 3


def too_long(n: int, limit: int) -> str:
    return f"prompt is too long: {n} tokens > {limit} maximum"


def tool_output(path: str, words: int = 200) -> str:
    return f"{path}: " + FILLER * (words // 5)


def check_paired(calls: Sequence[tuple[int, str]], results: Sequence[tuple[int, str]]) -> None:
    """Every call answered later in the same request, every result after its call: ``(position
    in the request, call id)``."""
    called = {cid: i for i, cid in calls}
    answered = {cid: i for i, cid in results}
    assert set(called) == set(answered), (sorted(called), sorted(answered))
    assert all(called[cid] < answered[cid] for cid in called)


def starts_with_summary(text: str) -> bool:
    return text.startswith(SUMMARY_OPEN)
