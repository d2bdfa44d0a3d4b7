"""Names shared by every registry: a helpful "did you mean" for typos, and model names as looked up."""

from __future__ import annotations

from collections.abc import Sequence


def did_you_mean(name: str, choices: Sequence[str]) -> str:
    """A suffix for an "unknown X" message: the closest known name, then the list of names."""
    import difflib  # here: only a typo pays for it

    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{hint} (known: {', '.join(choices)})"


def model_key(name: str) -> str:
    """A model name as the model and price tables look it up:
    ``openrouter/meta-llama/Llama-4-Maverick`` → ``llama-4-maverick``."""
    return name.strip().lower().rsplit("/", 1)[-1]
