"""pi coding agent sessions (``~/.pi/agent/sessions/**/*.jsonl``).

The first line is a ``session`` header (id, cwd, provider, modelId...); then ``message``
entries holding user / assistant / toolResult (and pi's own bashExecution, custom,
branchSummary, compactionSummary) messages, plus ``model_change``,
``thinking_level_change``, ``compaction``, ``branch_summary`` and ``custom_message`` entries.

Version 1 files (no ``version`` in the header) have no entry ids: compactions point at the
first kept entry by its index in the file (header = 0). For those the reader gives every
entry the id ``"#<index>"`` so ``CompactionMarker.first_kept_id`` still names a message.
Version 2+ entries carry ``id``/``parentId`` (a tree, for in-place branching); ids are kept
as they are and ``parentId`` goes in ``extra``. pi appends each entry to the current leaf and
builds its request along ``parentId`` from it, so an entry parented to an earlier one than the
last (``/tree`` went back there) leaves what was read after that one behind: a ``Rewind`` names
those messages. One parented further back, before the last compaction (which then is off pi's
path, and what it folded comes back) or onto a branch left earlier, gets pi's context from
there whole, from the session's tree (``tree.py``, ``Rewind.to``).

A compaction keeps everything from its ``firstKeptEntryId`` on, and pi moves that cut back over
the entries that are no message just before it (a model or thinking-level change, an
extension's ``custom`` entry): such an id stands for the first message after it, or nothing
would be kept.

Derivatives of pi (oh-my-pi and its kin) write the same sessions with a few entries of their own:
a ``title`` line before the header, ``model_change`` with one ``model`` field
("provider/modelId") and a ``role`` (only the default role's model is the conversation's),
``reset_boundary`` (``/clear``: the context starts over after it) and ``session_init`` (a
sub-agent's system prompt, as sent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxfold.formats.base import (
    Line,
    ListReader,
    as_int,
    b64_size,
    get_dict,
    get_str,
    need,
    obj,
    parse_overflow,
    rest,
)
from ctxfold.formats.chain import Chain
from ctxfold.formats.pi.tree import CUTS, Tree
from ctxfold.transcript.model import (
    ApiError,
    CompactionMarker,
    ContextReset,
    ContextUpdate,
    Entry,
    MediaPart,
    Message,
    OpaquePart,
    Part,
    Rewind,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

NAME = "pi"
DESCRIPTION = "pi coding agent session (session header, then message/model_change/compaction entries)"

# pi's own wrappers for summaries it feeds back to the model as user messages (core/messages.ts).
COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"

_MESSAGE_ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage")
_ENTRY_USED = ("type", "id", "timestamp", "message")
_USAGE_FIELDS: Mapping[str, str] = {
    "prompt_tokens": "message.usage.input+cacheRead+cacheWrite",
    "output_tokens": "message.usage.output",
    "cache_read_tokens": "message.usage.cacheRead",
    "cache_write_tokens": "message.usage.cacheWrite",
}


def sniff(objs: Sequence[Any]) -> int:
    first = objs[0] if objs else None
    if isinstance(first, dict) and first.get("type") == "title" and len(objs) > 1:
        first = objs[1]  # a derivative's fixed-width title slot before the header
    if not isinstance(first, dict):
        return 0
    if first.get("type") == "session" and isinstance(first.get("id"), str) and "cwd" in first:
        return 100
    # No header (a fragment): pi nests the message under "message" with pi's own roles.
    for o in objs[:5]:
        if isinstance(o, dict) and o.get("type") == "message" and isinstance(o.get("message"), dict):
            role = o["message"].get("role")
            if role in ("toolResult", "bashExecution"):
                return 80
            if role in _MESSAGE_ROLES and "api" in o["message"]:
                return 70
    return 0


def _model_of(d: Mapping[str, Any]) -> str | None:
    """The conversation's model a ``model_change`` names: pi's ``modelId``, or a derivative's
    ``model`` ("provider/modelId") when it is for the default role (a ``smol`` or retry-fallback
    model does not change the conversation's)."""
    model_id = get_str(d, "modelId")
    if model_id is not None:
        return model_id
    model = d.get("model")
    if not isinstance(model, str) or d.get("role", "default") != "default":
        return None
    provider, _, rest_of = model.partition("/")
    return rest_of or provider


def _system_of(d: Mapping[str, Any]) -> tuple[str, ...] | None:
    blocks = d.get("systemPrompt")
    if isinstance(blocks, str):
        return (blocks,)
    if isinstance(blocks, list) and all(isinstance(b, str) for b in blocks):
        return tuple(blocks)
    return None


def bash_text(m: Mapping[str, Any]) -> str:
    """What pi sends the model for a ``!command`` the user ran (bashExecutionToText)."""
    output = m.get("output")
    text = f"Ran `{m.get('command')}`\n" + (f"```\n{output}\n```" if output else "(no output)")
    code = m.get("exitCode")
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(code, int) and code != 0:
        text += f"\n\nCommand exited with code {code}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {m['fullOutputPath']}]"
    return text


def _block(b: Any) -> Part:
    if not isinstance(b, dict):
        return TextPart(b) if isinstance(b, str) else OpaquePart(b, type=type(b).__name__)
    kind = b.get("type")
    if kind == "text" and isinstance(b.get("text"), str):
        return TextPart(b["text"], extra=rest(b, ("type", "text")) if len(b) > 2 else {})
    if kind == "thinking":
        return ThinkingPart(
            str(b.get("thinking") or ""),
            signature=get_str(b, "thinkingSignature"),
            redacted=bool(b.get("redacted")),
            extra=rest(b, ("type", "thinking", "thinkingSignature", "redacted")),
        )
    if kind == "toolCall" and isinstance(b.get("name"), str):
        return ToolCallPart(
            str(b.get("id") or ""),
            b["name"],
            b.get("arguments"),
            extra=rest(b, ("type", "id", "name", "arguments")),
        )
    if kind == "image" and isinstance(b.get("data"), str):
        return MediaPart(
            str(b.get("mimeType") or "image/*"),
            data=b["data"],
            byte_size=b64_size(b["data"]),
            extra=rest(b, ("type", "data", "mimeType")),
        )
    return OpaquePart(b, type=kind if isinstance(kind, str) else "opaque")


def _listed(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [] if content is None or content == "" else [content]


def _result_block(b: Any) -> TextPart | MediaPart | OpaquePart:
    """Tool output holds text and images; anything else is kept opaque, not dropped."""
    part = _block(b)
    if isinstance(part, (TextPart, MediaPart, OpaquePart)):
        return part
    return OpaquePart(b, type=str(b.get("type")) if isinstance(b, dict) else "opaque")


def _blocks(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if isinstance(content, list):
        return [_block(b) for b in content]
    return [] if content is None else [OpaquePart(content, type=type(content).__name__)]


def _usage(m: Mapping[str, Any]) -> Usage | None:
    """input + cacheRead + cacheWrite is what the model read (== totalTokens - output in pi's
    files). All-zero usage (a request aborted before the first event) is no record at all; an
    aborted or failed stream has partial output counts, hence ``final=False``."""
    u = get_dict(m, "usage")
    inp, out = as_int(u.get("input")), as_int(u.get("output"))
    read, write = as_int(u.get("cacheRead")), as_int(u.get("cacheWrite"))
    if not (inp or out or read or write):
        return None
    return Usage(
        prompt_tokens=inp + read + write,
        output_tokens=out,
        cache_read_tokens=read,
        cache_write_tokens=write,
        final=m.get("stopReason") not in ("aborted", "error"),
        model=get_str(m, "model"),
        fields=_USAGE_FIELDS,
    )


class Reader(ListReader):
    def __init__(self) -> None:
        self._index = -1  # pi's entry index: the header is 0
        self._between: list[str] = []  # ids of the entries that are no message since the last message
        self._message_at: dict[str, str] = {}  # such an id → the first message id after it
        self._chain = Chain()  # the tree's entries since the last compaction (``formats/chain.py``)
        self._tree = Tree()  # every entry: any can be gone back to (``tree.py``)

    def feed(self, line: Line) -> Iterable[Entry]:
        self._index += 1
        d = obj(line)
        if d.get("type") == "title" and self._index == 0:
            self._index = -1  # a derivative's title slot, before the header: not in pi's index
            return []
        out = self._entries(d, line)
        if "parentId" in d:
            out = self._branch(d, out)
        first = next((e.id for e in out if isinstance(e, Message)), None)
        if first is not None:
            self._message_at.update(dict.fromkeys(self._between, first))
            self._between.clear()
        else:
            self._between.append(self._id(d))
        return out

    def _branch(self, d: dict[str, Any], out: list[Entry]) -> list[Entry]:
        """Follow the tree: an entry parented to an earlier entry than the last one (since the
        last compaction) leaves the messages after that one out, by a ``Rewind`` before it; one
        parented to an entry further back (before that compaction, or on a branch left) gives
        pi's context from there whole (``Rewind.to``)."""
        chain, parent, uid = self._chain, d.get("parentId"), d.get("id")
        at = chain.where(parent)
        if at is not None and 0 <= at < chain.lines - 1:  # (not the last entry read)
            gone = chain.after(at)
            if gone:
                out = [Rewind(tuple(gone)), *out]
        elif at is None and isinstance(parent, str) and parent in self._tree:
            out = [self._back_to(parent), *out]
        if any(isinstance(e, CUTS) for e in out):
            chain.clear()
        chain.place(uid, None, None)  # (pi writes no entry before its parent: all are placed)
        for e in out:
            if isinstance(e, Message):
                chain.note(e.id)
        if isinstance(uid, str):
            self._tree.add(uid, parent if isinstance(parent, str) else None, out)
        return out

    def _back_to(self, parent: str) -> Rewind:
        """pi's context from ``parent`` on, whole; the chain starts again at its newest cut."""
        path = self._tree.path(parent)
        messages, cut = self._tree.context(path)
        chain = self._chain
        chain.clear()
        for uid in path[cut + 1 :]:
            chain.place(uid, None, None)
            for m in self._tree.messages([uid]):
                chain.note(m.id)
        return Rewind(to=messages)

    def _entries(self, d: dict[str, Any], line: Line) -> list[Entry]:
        kind = need(d, "type", line, str)
        if kind == "message":
            return self._message(d, line)
        if kind == "session":
            return [self._session(d)]
        if kind == "model_change":
            return [ContextUpdate(model=_model_of(d), extra=self._meta(d))]
        if kind == "reset_boundary":
            return [ContextReset("the conversation was cleared (/clear)")]
        if kind == "session_init":
            return [ContextUpdate(system=_system_of(d), extra=self._meta(d))]
        if kind == "thinking_level_change":
            return [ContextUpdate(extra=self._meta(d))]
        if kind == "compaction":
            return [self._compaction(d)]
        if kind == "branch_summary":
            text = BRANCH_PREFIX + str(d.get("summary") or "") + BRANCH_SUFFIX
            return [self._msg("user", [TextPart(text)], d, extra=rest(d, ("type", "id", "timestamp")))]
        if kind == "custom_message":
            extra = rest(d, ("type", "id", "timestamp", "content"))
            return [self._msg("user", _blocks(d.get("content")), d, extra=extra)]
        return []  # custom (extension state), label, session_info, and later additions

    def _id(self, d: Mapping[str, Any]) -> str:
        value = get_str(d, "id")
        return value if value is not None else f"#{self._index}"

    def _meta(self, d: Mapping[str, Any]) -> dict[str, Any]:
        """A non-message entry in ``extra``, with the id a version 1 file lacks."""
        out = dict(d)
        out.setdefault("id", self._id(d))
        return out

    def _session(self, d: dict[str, Any]) -> ContextUpdate:
        return ContextUpdate(
            model=get_str(d, "modelId"),
            session_id=get_str(d, "id"),
            extra=rest(d, ("id", "modelId")),
        )

    def _compaction(self, d: dict[str, Any]) -> CompactionMarker:
        first = d.get("firstKeptEntryId")
        if not isinstance(first, str) and isinstance(d.get("firstKeptEntryIndex"), int):
            first = f"#{d['firstKeptEntryIndex']}"
        if isinstance(first, str):
            first = self._message_at.get(first, first)  # a cut moved back over entries that are no message
        tokens_after = d.get("tokensAfter")
        return CompactionMarker(
            source="pi",
            summary=get_str(d, "summary"),
            tokens_before=as_int(d.get("tokensBefore")) if d.get("tokensBefore") is not None else None,
            tokens_after=as_int(tokens_after) if tokens_after is not None else None,
            trigger="extension" if d.get("fromHook") else None,
            first_kept_id=first if isinstance(first, str) else None,
            id=self._id(d),
            timestamp=get_str(d, "timestamp"),
            extra=rest(
                d, ("type", "id", "timestamp", "summary", "tokensBefore", "tokensAfter", "firstKeptEntryId")
            ),
        )

    def _msg(
        self,
        role: Any,
        parts: list[Part],
        d: Mapping[str, Any],
        extra: dict[str, Any],
        usage: Usage | None = None,
        model: str | None = None,
        stopped: bool = False,
        dropped: bool = False,
    ) -> Message:
        return Message(
            role,
            tuple(parts),
            id=self._id(d),
            timestamp=get_str(d, "timestamp"),
            usage=usage,
            model=model,
            extra=extra,
            stopped=stopped,
            dropped=dropped,
        )

    def _message(self, d: dict[str, Any], line: Line) -> list[Entry]:
        m = need(d, "message", line, dict)
        role = need(m, "role", line, str)
        extra = rest(d, _ENTRY_USED)
        if role == "user":
            extra["message"] = rest(m, ("role", "content"))
            return [self._msg("user", _blocks(m.get("content")), d, extra)]
        if role == "assistant":
            return self._assistant(m, d, extra)
        if role == "toolResult":
            call_id = need(m, "toolCallId", line, str)
            content = tuple(_result_block(b) for b in _listed(m.get("content")))
            part = ToolResultPart(
                call_id,
                content,
                name=get_str(m, "toolName"),
                is_error=bool(m.get("isError")),
            )
            extra["message"] = rest(m, ("role", "toolCallId", "toolName", "content", "isError"))
            return [self._msg("tool", [part], d, extra)]
        if role == "bashExecution":
            if m.get("excludeFromContext"):
                return []  # a "!!" command: shown to the user, never sent to the model
            extra["message"] = dict(m)
            return [self._msg("user", [TextPart(bash_text(m))], d, extra)]
        if role in ("custom", "hookMessage"):
            extra["message"] = rest(m, ("content",))
            return [self._msg("user", _blocks(m.get("content")), d, extra)]
        if role in ("branchSummary", "compactionSummary"):
            pre, post = (
                (BRANCH_PREFIX, BRANCH_SUFFIX)
                if role == "branchSummary"
                else (COMPACTION_PREFIX, COMPACTION_SUFFIX)
            )
            extra["message"] = rest(m, ("summary",))
            return [self._msg("user", [TextPart(pre + str(m.get("summary") or "") + post)], d, extra)]
        return []  # a message role from a later pi version

    def _assistant(self, m: dict[str, Any], d: dict[str, Any], extra: dict[str, Any]) -> list[Entry]:
        # usage stays whole in extra (cost, totalTokens) for a writer; the counts are in Usage
        extra["message"] = rest(m, ("role", "content", "model"))
        model = get_str(m, "model")
        stop = m.get("stopReason")
        msg = self._msg(
            "assistant", _blocks(m.get("content")), d, extra, usage=_usage(m), model=model,
            stopped=stop == "aborted",  # the user pressed Esc as it streamed
            dropped=stop in ("aborted", "error"),  # pi sends neither again (tests/interop/test_pi_sends.py)
        )  # fmt: skip
        err = m.get("errorMessage")
        if stop != "error" or not isinstance(err, str):
            return [msg]
        found = parse_overflow(err)
        if found is None:
            return [msg]
        return [
            msg,
            ApiError(err, prompt_tokens=found[0], limit=found[1], id=msg.id, timestamp=msg.timestamp),
        ]
