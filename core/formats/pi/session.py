"""What pi needs from a session file before any message: a header it accepts, and the model
it restores.

pi checks the first line of a file before it reads a session from it: ``pi -c`` looks only at
the first 512 bytes (a longer header line does not parse there, and the file is passed over),
and a file whose first line is not a ``session`` header with a string ``id`` is taken for
corrupt, replaced by a fresh session of the same name. So the header we write holds pi's own
header fields and no more, and stays under that size.

pi takes the model to resume with from the newest ``model_change`` or assistant message on the
path (its ``provider`` and ``model``); a provider it does not know makes it warn and fall back
to its default model. A session pi wrote names its provider; a transcript from another harness
does not, and the provider is inferred from the model's family (pi's names for them).
"""

from __future__ import annotations

import os
import re
import uuid
from datetime import datetime, timezone
from typing import Any

import orjson

from ctxfold.formats.base import now_iso
from ctxfold.formats.origin import last_model, native, session_cwd, sources
from ctxfold.transcript.model import ContextUpdate, Message, Transcript

NAME = "pi"
VERSION = 3
HEADER_PEEK = 512  # bytes of the first line ``pi -c`` reads to tell a session file
_HEADER_KEYS = ("type", "version", "id", "timestamp", "cwd")  # what pi itself writes, in order
UNKNOWN = "unknown"

# model family → (pi's provider, its API), for a transcript another harness wrote
_FAMILIES = (
    (re.compile(r"^(anthropic/)?claude", re.I), "anthropic", "anthropic-messages"),
    (re.compile(r"^(openai/)?(gpt|o\d|codex|chatgpt)", re.I), "openai", "openai-responses"),
    (re.compile(r"^(google/)?gemini", re.I), "google", "google-generative-ai"),
)


def family(model: str | None) -> tuple[str, str]:
    """pi's (provider, api) for a model another harness used; ("unknown", "unknown") if unsure."""
    for pattern, provider, api in _FAMILIES:
        if model and pattern.match(model):
            return provider, api
    return UNKNOWN, UNKNOWN


def origin(t: Transcript) -> tuple[str, str, str | None]:
    """(provider, api, model) of the newest answer, for pi to restore the session's model."""
    if native(t, NAME):
        for src in sources(t):
            for e in reversed(src.entries):
                found = _named(e)
                if found is not None:
                    return found
    model = last_model(t)
    provider, api = family(model)
    return provider, api, model


def _named(e: object) -> tuple[str, str, str | None] | None:
    """The provider, API and model a pi entry names, if it names a provider."""
    if isinstance(e, Message) and e.role == "assistant":
        em = e.extra.get("message")
        if isinstance(em, dict) and isinstance(em.get("provider"), str):
            api = em.get("api")
            return em["provider"], api if isinstance(api, str) else family(e.model)[1], e.model
    if isinstance(e, ContextUpdate) and e.extra.get("type") in ("model_change", "session"):
        provider = e.extra.get("provider")
        model = e.extra.get("modelId") if e.extra.get("type") == "model_change" else e.model
        if isinstance(provider, str) and isinstance(model, str):
            return provider, family(model)[1], model
    return None


def header(t: Transcript, first_ts: str) -> dict[str, Any]:
    """The session header: pi's own fields (and a version 1 header's extras) from a pi session;
    a compacted session is a new one, created now, whose ``parentSession`` is the file it was
    compacted from (pi's lineage link, as its own forks write it)."""
    own = next((e for e in t.entries if isinstance(e, ContextUpdate) and e.session_id), None)
    pi_header = next(
        (
            e
            for s in sources(t)
            for e in s.entries
            if isinstance(e, ContextUpdate) and e.extra.get("type") == "session"
        ),
        None,
    )
    fields: dict[str, Any] = {}
    if pi_header is not None and native(t, NAME):
        fields.update((k, v) for k, v in pi_header.extra.items() if k not in ("type", "version", "id"))
        if pi_header.model:  # a version 1 header names the model; later ones do not
            fields["modelId"] = pi_header.model
    sid = (own.session_id if own else None) or t.session_id or str(uuid.uuid4())
    cwd = fields.pop("cwd", None) or session_cwd(t) or os.getcwd()
    ts = fields.pop("timestamp", None) or first_ts
    compacted = len(sources(t)) > 1
    if compacted:
        ts = now_iso()
        original = sources(t)[1]
        if native(original, NAME) and original.path and original.path != "-":
            fields["parentSession"] = os.path.abspath(str(original.path))
    head = {"type": "session", "version": VERSION, "id": sid, "timestamp": ts, "cwd": cwd, **fields}
    if len(orjson.dumps(head)) > HEADER_PEEK:  # pi -c would pass the file over: pi's own fields only
        head = {k: head[k] for k in _HEADER_KEYS}
    return head


def file_name(head: dict[str, Any]) -> str:
    """The name pi gives a session file: its creation time (``:`` and ``.`` made ``-``) and id."""
    ts = head.get("timestamp")
    if not isinstance(ts, str):
        ts = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return f"{re.sub(r'[:.]', '-', ts)}_{head['id']}.jsonl"
