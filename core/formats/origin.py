"""What a writer needs to know about where a transcript came from.

``compact --to FORMAT`` hands a writer a transcript another format's reader made: its ``extra``
mappings hold that format's fields (a Claude Code line's ``cwd``, a pi message's ``usage`` in
pi's shape), which must not be copied into the target's lines as if they were its own. A
compacted transcript keeps the input it came from in ``extra["original"]``; these helpers look
at both, newest first.
"""

from __future__ import annotations

from collections.abc import Iterator

from ctxfold.transcript.model import ContextUpdate, Entry, Message, Transcript

SYNTHETIC_MODELS = frozenset({"<synthetic>"})  # Claude Code's name for answers no model gave


def sources(t: Transcript) -> list[Transcript]:
    """The transcript, then the one it was compacted from (if any)."""
    original = t.extra.get("original")
    return [t, original] if isinstance(original, Transcript) else [t]


def native(t: Transcript, fmt: str) -> bool:
    """True when ``t`` was read from a ``fmt`` file: its ``extra`` fields are that format's."""
    return t.source_format == fmt


def _newest(t: Transcript) -> Iterator[Entry]:
    for src in sources(t):
        yield from reversed(src.entries)


def session_cwd(t: Transcript) -> str | None:
    """The working directory the session's own lines name (a Claude Code line's ``cwd``, a pi
    header's, a Codex ``session_meta`` or ``turn_context`` payload's), newest first."""
    for e in _newest(t):
        if isinstance(e, (ContextUpdate, Message)):
            cwd = e.extra.get("cwd")
            if isinstance(cwd, str) and cwd:
                return cwd
    return None


def last_model(t: Transcript) -> str | None:
    """The model of the newest answer that names one (else the newest model the session set)."""
    for e in _newest(t):
        if isinstance(e, Message) and e.role == "assistant" and e.model and e.model not in SYNTHETIC_MODELS:
            return e.model
    for e in _newest(t):
        if isinstance(e, ContextUpdate) and e.model:
            return e.model
    return None
