"""An agent's in-memory history → messages, and ctxfold's own messages back in the history's kind.

``ContextGuard`` is handed the whole history on every call, in whatever shape the agent keeps
(:mod:`messages` tells them apart), and must send back the caller's own objects with its summary
and continuation in front. Those two must be of the caller's kind, or the request it sends is
malformed: a chat ``{"role": "user", "content": text}``, a Responses ``message`` item with
``input_text``, a genai Content (of the caller's own class when it gave ``types.Content``
objects, as ADK does; core never imports the SDK).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxfold.formats.genai.parts import Calls
from ctxfold.formats.messages import from_dict, shape_of, to_plain
from ctxfold.transcript.model import Message


class LiveReader:
    """Converts one conversation's events, remembering what tells the caller's kind.

    Dicts and objects the caller keeps convert once (by identity: the history is append-only);
    genai Contents convert afresh on each pass, because ADK rebuilds them for every request and
    their id-less function calls pair with their responses by name within the pass, as the
    genai reader pairs them within a file."""

    def __init__(self) -> None:
        self.shape = "chat"  # the last shape that told: "genai" or "responses"; else "chat"
        self._content_type: Any = None  # the class of the caller's genai Contents, if objects
        self._names: dict[str, str] = {}  # call id -> tool name, for results that do not say
        self._seen: dict[int, tuple[Any, Message]] = {}

    def messages(self, events: Sequence[Any], first: int = 1) -> list[Message]:
        """One message per event; ``first`` is the first event's number, for errors."""
        calls = Calls()
        return [self._one(e, first + i, calls) for i, e in enumerate(events)]

    def keep(self, events: Sequence[Any]) -> None:
        """Forget the conversions of objects no longer in the history: a caller that rebuilds
        its dicts for every request would otherwise keep every copy alive."""
        if len(self._seen) > len(events):
            alive = {id(e) for e in events}
            self._seen = {k: v for k, v in self._seen.items() if k in alive}

    def _one(self, event: Any, no: int, calls: Calls) -> Message:
        if isinstance(event, Message):
            return event
        hit = self._seen.get(id(event))
        if hit is not None and hit[0] is event:
            return hit[1]
        plain = to_plain(event)
        shape = shape_of(plain) if isinstance(plain, Mapping) else "chat"
        if shape == "genai":
            self.shape = shape
            if plain is not event:
                self._content_type = type(event)
            return from_dict(plain, self._names, no, calls)
        if shape == "responses":
            self.shape = shape
        message = from_dict(plain, self._names, no)
        self._seen[id(event)] = (event, message)
        return message

    def own(self, text: str) -> Any:
        """A user message of the caller's kind holding ``text`` (ctxfold's summary or
        continuation)."""
        if self.shape == "genai":
            content = {"role": "user", "parts": [{"text": text}]}
            return self._content_type.model_validate(content) if self._content_type else content
        if self.shape == "responses":
            return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        return {"role": "user", "content": text}

    def outgoing(self, events: Sequence[Any], messages: list[Message], head: int) -> list[Any]:
        """``messages`` in the kind the caller gave: its own events after the first ``head``
        (ctxfold's summary and continuation, made :meth:`own`); ``Message`` values stay so."""
        if all(isinstance(e, Message) for e in events):
            return messages
        mine = [self.own(m.text) for m in messages[:head]]
        return [*mine, *events[len(events) - (len(messages) - head) :]]
