"""Count what goes over the wire, per part, per message, per request.

A message becomes *pieces*: texts to tokenize (batched across many messages, so a batch can
go to a worker process as one unit, ``tokens/parallel.py``) and fixed counts (framing, images). Framing follows
each provider's published or well-measured overheads; what is left unexplained (hidden
system prompts, tokenizer differences) is the calibrator's job, not this module's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ctxfold.tokens import media
from ctxfold.tokens.tokenizers import Tokenizer
from ctxfold.transcript.model import (
    MediaPart,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

SIGNATURE_TOKENS_PER_CHAR = 0.34
# Claude 4 models return a *summary* of their thinking, but the full thinking (carried by the
# signature) is what the next request reads: a Claude Code scout-images response showed 7.4k
# characters of thinking, 9,203 output tokens, and the next request grew by 9,198. Over the
# real logs with summarized thinking (Claude Code scout and solsmile, pi), output tokens not
# explained by the visible text are 0.20–0.23 per signature character, so the thinking of a
# message counts at least that much.
SUMMARIZED_SIGNATURE_TOKENS_PER_CHAR = 0.22
# A ``tool_reference`` block (Claude Code's ToolSearch result) is expanded by the API into the
# referenced tool's full definition, which the log does not hold. On the real logs, the 13
# references in 6 ToolSearch results (Claude Code posthog and privacy sessions) grew the next
# request by 14.7k real tokens more than its visible growth: ~1,130 each, ÷ those sessions'
# tokenizer ratio 1.38 ≈ 820 estimated tokens.
TOOL_REFERENCE_TOKENS = 820
CATEGORIES = ("system", "tools", "user", "assistant", "tool_calls", "tool_results", "media")


@dataclass(frozen=True, slots=True)
class Framing:
    """Tokens the provider adds around content."""

    per_message: int
    per_request: int  # reply priming / request preamble
    tools_block: int  # fixed cost of having any tools (e.g. Anthropic's tool-use system prompt)
    per_tool: int
    per_tool_call: int
    per_tool_result: int
    thinking_sent: bool  # is earlier thinking sent back as input?


FRAMING: dict[str, Framing] = {
    # OpenAI cookbook: 3 per message, 3 reply priming; function defs ~7 each + 12 per block.
    "openai": Framing(3, 3, 12, 7, 3, 3, thinking_sent=False),
    # Anthropic: 346-token tool-use system prompt (auto tool choice). Thinking is counted in
    # every turn: current models keep it, and on real Claude Code logs counting it fits the
    # growth of the real counts better than stripping earlier turns' thinking.
    "anthropic": Framing(3, 3, 346, 3, 3, 3, thinking_sent=True),
    "google": Framing(2, 2, 0, 4, 2, 2, thinking_sent=False),
    "meta": Framing(4, 4, 20, 6, 3, 3, thinking_sent=False),
    "other": Framing(3, 3, 12, 7, 3, 3, thinking_sent=False),
}


@dataclass(slots=True)
class Batch:
    """Messages prepared for counting: ``texts`` still to tokenize, owned by ``counts[i]``."""

    texts: list[str]
    owners: list[tuple[int, str, bool]]  # (message index, category, is thinking)
    counts: list[MessageCount]
    thinking_floor: dict[int, int] = field(default_factory=dict)  # message index → minimum thinking


@dataclass(slots=True)
class MessageCount:
    """Token count of one message, split by category; ``thinking`` is included in ``total``."""

    role: str
    total: int = 0
    by_category: dict[str, int] = field(default_factory=dict)
    thinking: int = 0
    id: str | None = None
    preview: str = ""


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _squash(text: str, n: int) -> str:
    return " ".join(text[: n * 4].split())[:n]


def _preview(msg: Message) -> str:
    for p in msg.parts:
        if isinstance(p, TextPart) and p.text and not p.text.isspace():  # no copy of a long text
            return _squash(p.text, 80)
        if isinstance(p, ToolCallPart):
            return f"[call {p.name}]"
        if isinstance(p, ToolResultPart):
            first = next((c.text for c in p.content if isinstance(c, TextPart)), "")
            return f"[result of {p.name or p.call_id}] " + _squash(first, 60)
        if isinstance(p, MediaPart):
            return f"[{p.mime_type}]"
    return ""


class Counter:
    """Counts messages, system prompts and tool definitions for one provider and tokenizer."""

    def __init__(self, tokenizer: Tokenizer, provider: str = "other", *, memo: bool = False) -> None:
        self.tokenizer = tokenizer
        self.provider = provider if provider in FRAMING else "other"
        self.framing = FRAMING[self.provider]
        # With ``memo`` a message object is counted once (it is kept alive so its id stays
        # unique): for in-memory work that counts the same messages several times (compact).
        self._memo: dict[int, tuple[Message, MessageCount]] | None = {} if memo else None
        self._system: tuple[tuple[str, ...], int] = ((), 0)  # the last system prompt counted

    # ---------------------------------------------------------------- messages, batched

    def count_messages(self, messages: Sequence[Message]) -> list[MessageCount]:
        memo = self._memo
        if memo is None:
            batch = self.prepare(messages)
            return self.finish(batch, self.tokenizer.count_batch(batch.texts))
        missing = [m for m in messages if memo.get(id(m), (None,))[0] is not m]
        if missing:
            batch = self.prepare(missing)
            for m, mc in zip(
                missing, self.finish(batch, self.tokenizer.count_batch(batch.texts)), strict=True
            ):
                memo[id(m)] = (m, mc)
        return [memo[id(m)][1] for m in messages]

    def prepare(self, messages: Sequence[Message]) -> Batch:
        """Everything but tokenizing: the texts to count and the fixed counts per message."""
        texts: list[str] = []
        owners: list[tuple[int, str, bool]] = []  # (message index, category, is thinking)
        counts: list[MessageCount] = []
        floors: dict[int, int] = {}
        f = self.framing
        for i, msg in enumerate(messages):
            mc = MessageCount(role=msg.role, id=msg.id, preview=_preview(msg))
            if msg.dropped:  # the harness sends no part of it
                mc.by_category = {}
                counts.append(mc)
                continue
            base = _role_category(msg)
            fixed = {base: f.per_message}
            for part in msg.parts:
                if isinstance(part, TextPart):
                    texts.append(part.text)
                    owners.append((i, base, False))
                elif isinstance(part, ToolCallPart):
                    texts.append(part.name + " " + _json(part.arguments))
                    owners.append((i, "tool_calls", False))
                    fixed["tool_calls"] = fixed.get("tool_calls", 0) + f.per_tool_call
                elif isinstance(part, ToolResultPart):
                    fixed["tool_results"] = fixed.get("tool_results", 0) + f.per_tool_result
                    for sub in part.content:
                        if isinstance(sub, OpaquePart) and sub.type == "tool_reference":
                            fixed["tool_results"] = fixed.get("tool_results", 0) + TOOL_REFERENCE_TOKENS
                        elif isinstance(sub, MediaPart):
                            fixed["media"] = fixed.get("media", 0) + self.media_tokens(sub, texts, owners, i)
                        else:
                            texts.append(sub.text if isinstance(sub, TextPart) else _json(sub.data))
                            owners.append((i, "tool_results", False))
                elif isinstance(part, ThinkingPart):
                    if not f.thinking_sent:
                        continue
                    if part.text:
                        texts.append(part.text)
                        owners.append((i, "assistant", True))
                        if part.signature:
                            floor = round(len(part.signature) * SUMMARIZED_SIGNATURE_TOKENS_PER_CHAR)
                            floors[i] = floors.get(i, 0) + floor
                    elif part.signature or part.encrypted:
                        hidden = thinking_from_blob(part)
                        fixed["assistant"] = fixed.get("assistant", 0) + hidden
                        mc.thinking += hidden
                elif isinstance(part, MediaPart):
                    fixed["media"] = fixed.get("media", 0) + self.media_tokens(part, texts, owners, i)
                elif isinstance(part, OpaquePart):
                    texts.append(_json(part.data))
                    owners.append((i, base, False))
            mc.by_category = fixed
            mc.total = sum(fixed.values())
            counts.append(mc)
        return Batch(texts, owners, counts, floors)

    @staticmethod
    def finish(batch: Batch, tokens: Sequence[int]) -> list[MessageCount]:
        """Add the token counts of the batch's texts to their messages."""
        counts = batch.counts
        for (i, cat, thinking), n in zip(batch.owners, tokens, strict=True):
            mc = counts[i]
            mc.by_category[cat] = mc.by_category.get(cat, 0) + n
            mc.total += n
            if thinking:
                mc.thinking += n
        for i, floor in batch.thinking_floor.items():  # summarized thinking: the signature's size
            mc = counts[i]
            if floor > mc.thinking:
                extra = floor - mc.thinking
                mc.by_category["assistant"] = mc.by_category.get("assistant", 0) + extra
                mc.total += extra
                mc.thinking = floor
        return counts

    def media_tokens(
        self, part: MediaPart, texts: list[str], owners: list[tuple[int, str, bool]], i: int
    ) -> int:
        """Fixed tokens of an image or document; a document's text is queued for tokenizing."""
        if part.mime_type.startswith("image/"):
            return media.image_tokens(part, self.provider)
        if part.text:
            texts.append(part.text)
            owners.append((i, "media", False))
            return 0
        if part.mime_type == "application/pdf":
            return media.pdf_pages(part) * media.PDF_TOKENS_PER_PAGE
        if part.data and part.mime_type.startswith("text/"):
            import base64

            texts.append(base64.b64decode(part.data + "=" * (-len(part.data) % 4)).decode("utf-8", "replace"))
            owners.append((i, "media", False))
            return 0
        return 0

    # ------------------------------------------------------------- fixed request parts

    def count_system(self, system: Sequence[str]) -> int:
        """A log restates its system prompt at every turn (Codex's ``turn_context``): the same
        one is counted once."""
        if not system:
            return 0
        key = tuple(system)
        kept_key, kept = self._system  # read once: a guard's counter may serve several threads
        if key != kept_key:
            kept = sum(self.tokenizer.count_batch(list(key)))
            self._system = key, kept
        return kept + self.framing.per_message

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        """Tool definitions as the provider serializes them: name, description, JSON schema."""
        if not tools:
            return 0
        texts = [_json(_tool_wire(t, self.provider)) for t in tools]
        f = self.framing
        return sum(self.tokenizer.count_batch(texts)) + f.tools_block + f.per_tool * len(tools)


def thinking_from_blob(part: ThinkingPart) -> int:
    """Tokens of thinking kept only as a signature or encrypted blob.

    Measured on the real Claude Code logs whose thinking text is redacted: the response's
    output tokens not explained by its visible text and tool calls are ≈0.34 per signature
    character (0.32–0.35 across three sessions).
    """
    blob = part.signature or part.encrypted or ""
    return round(len(blob) * SIGNATURE_TOKENS_PER_CHAR)


def _role_category(msg: Message) -> str:
    if msg.role == "tool":
        return "tool_results"
    if msg.role == "system":
        return "system"
    return msg.role


def _tool_wire(t: ToolDef, provider: str) -> dict[str, Any]:
    schema = dict(t.parameters) if t.parameters else {"type": "object", "properties": {}}
    if provider == "anthropic":
        return {"name": t.name, "description": t.description, "input_schema": schema}
    if provider == "google":
        return {"name": t.name, "description": t.description, "parameters": schema}
    return {
        "type": "function",
        "function": {"name": t.name, "description": t.description, "parameters": schema},
    }
