"""The transcript model every format reads into and writes back from.

Values are frozen dataclasses (made a little faster than ``dataclasses`` makes them: a log of
200 MB holds a few hundred thousand; ``transcript/frozen.py``). Each carries a ``kind`` class
attribute so code and JSON can tell them apart without ``isinstance`` chains. Whatever a format has that the model does not
use is kept in ``extra`` (a mapping of the format's own field names), so a writer can put it
back and a round trip loses nothing.

Requests are not stored: a *model request* is recovered from the entries (see
``transcript/requests.py``): the context sent is every main-branch entry before a run of
assistant messages, and the run ends at the message carrying the provider's usage record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, ClassVar, Literal

from ctxfold.transcript.frozen import fast_init

Role = Literal["system", "user", "assistant", "tool"]


def _extra() -> Any:
    return field(default_factory=dict, repr=False)


# No request, response or window has ever counted a billion tokens: a count beyond it in a log
# is damage (a flipped byte, 2**64, 1e308), and would overflow the arithmetic that follows.
MAX_COUNT = 10**9


class CountError(ValueError):
    """A token count read from a log is negative, not a whole number, or beyond any real count;
    the loader reports it as a bad line naming the file and line."""


def _check_counts(entry: object, names: tuple[str, ...]) -> None:
    """The one place every reader's numbers pass: each named field is None or a count."""
    for name in names:
        value = getattr(entry, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and 0 <= value <= MAX_COUNT:
                continue  # 1200.0 from a JSON writer that prints every number as a float
            raise CountError(f"{name} is {value!r}, not a token count")
        if not 0 <= value <= MAX_COUNT:
            shown = f"{value:,}" if abs(value) < 10**15 else f"about 10^{len(str(abs(value))) - 1}"
            raise CountError(f"{name} is {shown}, {'negative' if value < 0 else 'beyond any real count'}")


# ----------------------------------------------------------------------------------- parts


@fast_init
@dataclass(frozen=True, slots=True)
class TextPart:
    """Text of a message.

    >>> ctxfold.TextPart("Run the tests").kind
    'text'
    """

    text: str
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "text"


@fast_init
@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Reasoning. ``text`` may be empty when only a signature or encrypted blob was kept.

    >>> ctxfold.ThinkingPart(signature="EqQBCkYIB…").text
    ''
    """

    text: str = ""
    signature: str | None = None
    encrypted: str | None = None
    redacted: bool = False
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "thinking"


@fast_init
@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A call the model made. ``arguments`` is the JSON value (usually a dict) or, for
    free-form tools and unparsable argument strings, the raw string.

    >>> call = ctxfold.ToolCallPart("call_1", "bash", {"command": "pytest -q"})
    >>> call.arguments["command"]
    'pytest -q'
    """

    id: str
    name: str
    arguments: Any = None
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "tool_call"


@fast_init
@dataclass(frozen=True, slots=True)
class MediaPart:
    """An image, document or other blob. ``data`` is base64 text when inline, else ``url``.

    >>> ctxfold.MediaPart("image/png", url="https://example.com/shot.png", width=800, height=600).width
    800
    """

    mime_type: str
    data: str | None = None
    url: str | None = None
    byte_size: int | None = None
    width: int | None = None
    height: int | None = None
    text: str | None = None  # extracted text of a document, when the format carries one
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "media"


@fast_init
@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """What a tool returned. ``content`` holds text and media parts.

    >>> result = ctxfold.ToolResultPart("call_1", (ctxfold.TextPart("3 passed"),), name="bash")
    >>> result.text
    '3 passed'
    """

    call_id: str
    content: tuple[TextPart | MediaPart | OpaquePart, ...] = ()
    name: str | None = None
    is_error: bool = False
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "tool_result"

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))


@fast_init
@dataclass(frozen=True, slots=True)
class OpaquePart:
    """Anything not modelled (web search calls, server tools...): kept verbatim as JSON.

    >>> ctxfold.OpaquePart({"type": "web_search_call", "status": "completed"}, type="web_search_call").type
    'web_search_call'
    """

    data: Any
    type: str = "opaque"
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "opaque"


Part = TextPart | ThinkingPart | ToolCallPart | ToolResultPart | MediaPart | OpaquePart


# --------------------------------------------------------------------------------- entries


_USAGE_COUNTS = (
    "prompt_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "reasoning_tokens",
    "context_window",
)


@fast_init
@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts the provider reported for one model response.

    ``prompt_tokens`` is everything the model read, cached or not (Anthropic:
    input + cache_creation + cache_read; OpenAI: prompt_tokens / input_tokens).
    ``fields`` names the source fields each number came from, for ``--explain``.

    >>> ctxfold.Usage(prompt_tokens=21_552, output_tokens=310, cache_read_tokens=20_100).prompt_tokens
    21552
    """

    prompt_tokens: int
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # of the cache writes, those kept an hour (Anthropic bills them at 2× input, not 1.25×)
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int | None = None
    final: bool = True
    model: str | None = None
    context_window: int | None = None
    fields: Mapping[str, str] = _extra()
    kind: ClassVar[str] = "usage"

    def __post_init__(self) -> None:
        _check_counts(self, _USAGE_COUNTS)

    # pickled as a tuple (the count cache keeps every request's usage): the slots default looks
    # the fields up per object, and the constructor checks counts that were checked when read
    def __getstate__(self) -> tuple[Any, ...]:
        return _USAGE_STATE(self)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        # one line per field through the slots' own setters, not a loop over __setattr__: three
        # times as fast over a session's thousands of usages
        (prompt, output, cache_read, cache_write, cache_write_1h, reasoning, final, model, window, fields) = (
            state
        )
        s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 = _USAGE_SETTERS
        s0(self, prompt)
        s1(self, output)
        s2(self, cache_read)
        s3(self, cache_write)
        s4(self, cache_write_1h)
        s5(self, reasoning)
        s6(self, final)
        s7(self, model)
        s8(self, window)
        s9(self, fields)


_USAGE_FIELDS = (
    "prompt_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens",
    "reasoning_tokens", "final", "model", "context_window", "fields",
)  # fmt: skip
assert tuple(f.name for f in fields(Usage)) == _USAGE_FIELDS, "Usage.__setstate__ names every field"
_USAGE_STATE = attrgetter(*_USAGE_FIELDS)
_USAGE_SETTERS = tuple(Usage.__dict__[name].__set__ for name in _USAGE_FIELDS)


@fast_init
@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation: a role and its parts; ``usage`` is the provider's
    count for the response it ends (assistant messages), ``branch`` a sub-agent's side chain,
    ``stopped`` that the user stopped the assistant right after it, as the log shows (a
    response cut off as it streamed, a request cancelled before its answer): shown to the user,
    never sent, so it is no part of the message's text. ``dropped``: the harness leaves the
    whole message out of every later request (pi: a response that failed or was stopped; Claude
    Code: a response the conversation went on without), so it takes no room in the context;
    its call was still made, and billed.

    >>> call = ctxfold.ToolCallPart("call_1", "bash", {"command": "pytest -q"})
    >>> m = ctxfold.Message("assistant", (ctxfold.TextPart("Running them."), call))
    >>> m.text, [c.name for c in m.tool_calls]
    ('Running them.', ['bash'])
    """

    role: Role
    parts: tuple[Part, ...]
    id: str | None = None
    timestamp: str | None = None
    usage: Usage | None = None
    model: str | None = None
    branch: str | None = None  # None = main conversation; else a side chain (sub-agent) id
    extra: Mapping[str, Any] = _extra()
    stopped: bool = False
    dropped: bool = False
    kind: ClassVar[str] = "message"

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))


@fast_init
@dataclass(frozen=True, slots=True)
class CompactionMarker:
    """A compaction the recording tool itself performed.

    After it the context is ``replacement`` when given (Codex), else the summary message that
    follows (Claude Code) or ``summary`` plus the entries from ``first_kept_id`` (pi).

    >>> ctxfold.CompactionMarker("claude-code", summary="We fixed the parser.", trigger="auto").trigger
    'auto'
    """

    source: str
    summary: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    trigger: str | None = None
    first_kept_id: str | None = None
    replacement: tuple[Message, ...] | None = None
    id: str | None = None
    timestamp: str | None = None
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "compaction"

    def __post_init__(self) -> None:
        _check_counts(self, ("tokens_before", "tokens_after"))


@fast_init
@dataclass(frozen=True, slots=True)
class ApiError:
    """A request the provider refused. When the error states the prompt size
    ("prompt is too long: 200819 tokens > 200000 maximum") it is a real count too.

    >>> ctxfold.ApiError("prompt is too long: 200819 tokens > 200000 maximum", 200_819, 200_000).limit
    200000
    """

    message: str
    prompt_tokens: int | None = None
    limit: int | None = None
    id: str | None = None
    timestamp: str | None = None
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "api_error"

    def __post_init__(self) -> None:
        _check_counts(self, ("prompt_tokens", "limit"))


@fast_init
@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool the model may call: its name, description and JSON schema.

    >>> ctxfold.ToolDef("bash", "Run a shell command", {"type": "object"}).name
    'bash'
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None  # JSON schema
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "tool_def"


HARNESS_TOKENS = "harness_tokens"  # ContextUpdate.extra: tokens of unlogged per-request harness text
# ContextUpdate.extra: the system prompt and tools are the harness's own record of what it sent
# (its hash), and whether some tools were loaded only when searched for (a bool)
REQUEST_SHAPE, TOOL_SEARCH = "request_shape", "tool_search"


@fast_init
@dataclass(frozen=True, slots=True)
class ContextUpdate:
    """The request's fixed parts changed: system prompt, tools, model or window.

    ``None`` means "unchanged"; an empty tuple means "now empty". ``extra[HARNESS_TOKENS]``
    declares text the harness sends with every request but the log leaves out, by its size.

    >>> ctxfold.ContextUpdate(system=("You are a coding agent.",), model="claude-sonnet-4-5").model
    'claude-sonnet-4-5'
    """

    system: tuple[str, ...] | None = None
    tools: tuple[ToolDef, ...] | None = None
    model: str | None = None
    context_window: int | None = None
    session_id: str | None = None
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "context"

    def __post_init__(self) -> None:
        _check_counts(self, ("context_window",))


@fast_init
@dataclass(frozen=True, slots=True)
class ContextReset:
    """A request log's next request does not extend the previous one: the conversation
    restarted (new session, or the client rewrote history).

    >>> ctxfold.ContextReset("the messages do not extend the previous request").kind
    'reset'
    """

    reason: str = ""
    kind: ClassVar[str] = "reset"


@fast_init
@dataclass(frozen=True, slots=True)
class Rewind:
    """The conversation went back to an earlier point: the messages with these ``ids``, and
    the ``last`` messages of the main conversation, read before it, are left out of every
    later request (Claude Code and pi: a question parented to an earlier message, as
    ``/rewind``, ``--resume-session-at`` and pi's ``/tree`` write them; Codex: a rollback of
    the last turns). Requests made before it sent them, and were billed as they were.

    When the point is one the context no longer holds (pi: before a compaction, or on a branch
    left earlier), ``to`` gives the whole context from there instead: the messages the harness
    sends again, a compaction's summary first as the context puts one.

    >>> ctxfold.Rewind(("u2", "a2")).ids
    ('u2', 'a2')
    """

    ids: tuple[str, ...] = ()
    last: int = 0
    to: tuple[Message, ...] | None = None
    extra: Mapping[str, Any] = _extra()
    kind: ClassVar[str] = "rewind"

    def __post_init__(self) -> None:
        if isinstance(self.last, bool) or not isinstance(self.last, int) or self.last < 0:
            raise CountError(f"last is {self.last!r}, not a number of messages")


Entry = Message | CompactionMarker | ApiError | ContextUpdate | ContextReset | Rewind


@fast_init
@dataclass(frozen=True, slots=True)
class Transcript:
    """A whole transcript, materialised. Streaming consumers use the entry iterator instead
    (:func:`open_transcript`).

    >>> t = ctxfold.read("fixtures/real/claude-code-sidechains.jsonl")
    >>> t.source_format, t.models, len(t.messages)
    ('claude-code', ('claude-sonnet-4-20250514',), 345)
    """

    source_format: str
    entries: tuple[Entry, ...]
    path: str | None = None
    session_id: str | None = None
    models: tuple[str, ...] = ()
    context_window: int | None = None
    system: tuple[str, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    extra: Mapping[str, Any] = _extra()

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(e for e in self.entries if isinstance(e, Message))


def harness_tokens(update: ContextUpdate) -> int | None:
    """The declared size of the harness's unlogged text, when this update sets it."""
    n = update.extra.get(HARNESS_TOKENS)
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None
