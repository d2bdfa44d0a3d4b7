"""A multi-turn agent-loop simulator for ``ContextGuard``, faithful to the seeds' ADK flow audit.

The agent's history is an append-only list of ``Message`` events; every model step builds a
fresh request from ALL of it (``guard.before_request(events, system, tools)``), exactly as ADK's
``ContentsRequestProcessor`` does. Parallel tool calls are ONE assistant message with several
calls followed by ONE message with all results; a sequential chain is one model step per tool.

The simulated provider counts the request it receives as ctxfold's own o200k count of it
(additive per message, so each message is tokenized once and cached) times the scenario's
ratio, plus an optional hidden overhead. Above the window it refuses with Anthropic's
"prompt is too long: N tokens > M maximum"; the loop feeds that to ``guard.on_error`` and
retries the step (at most twice). Accepted requests report their count through
``guard.after_response`` when the scenario has usage metadata.

Texts are generated deterministically (seeded ``random.Random``) in a handful of realistic
styles (JSON records, kubectl tables, logs, source code, SQL rows...), cached per
(style, size, variant), so o200k counts are realistic and generation is paid once.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

import orjson
from sim_content import _NAMES, _WORDS, _media_size, _sentence, pdf_b64, png_b64, text
from sim_content import STYLES as STYLES

from ctxfold.compaction.guard import ContextGuard, Prepared
from ctxfold.errors import WindowTooSmallError
from ctxfold.providers.base import SummaryRequest, SummaryResult, budget_summarizer
from ctxfold.tokens.tokenizers import Tokenizer
from ctxfold.transcript.model import (
    MediaPart,
    Message,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

MAX_RETRIES = 2  # a refused step is retried at most twice
DEFAULT_MODEL = "claude-sonnet-4-5"  # Anthropic framing and error text, window set per scenario

# ------------------------------------------------------------------------------ scenario shape


@dataclass(frozen=True)
class Tool:
    """One tool call and the size of its result in characters (a range is drawn per turn)."""

    name: str
    size: int | tuple[int, int]
    style: str = "json"


@dataclass(frozen=True)
class Turn:
    user: int = 300  # characters of the user's message
    tools: tuple[Tool, ...] = ()
    sequential: bool = False  # one model step per tool instead of one parallel batch
    response: int = 120  # characters of the model's final text (the seed's default)
    images: tuple[int, ...] = ()  # byte sizes of PNG images attached to the user message
    documents: tuple[tuple[int, int], ...] = ()  # (byte size, pages) of PDFs attached


@dataclass(frozen=True)
class Scenario:
    name: str
    window: int
    turns: int
    ratio: float
    pattern: tuple[Turn, ...] = (Turn(),)  # cycled over the turns
    usage: bool = True
    usage_from_turn: int = 0  # usage metadata only from this turn on (late usage)
    ratio_changes: tuple[tuple[int, float], ...] = ()  # (from turn, ratio)
    ratio_after_compaction: float | None = None  # the provider counts differently afterwards
    hidden: int = 0  # tokens the provider adds that the request does not show
    system: int = 2_000  # characters of the system prompt
    system_style: str = "markdown"
    tool_defs: int = 0  # number of (MCP) tool definitions sent with every request
    tool_def_chars: int = 2_000  # characters of each definition's JSON schema
    model: str = DEFAULT_MODEL
    guard_window: bool = True  # False: the guard is not told the window (unknown model)
    note: str = ""  # values chosen where the seed is vague

    @property
    def group(self) -> str:
        return self.name.split("/", 1)[0]

    def has_usage(self, turn: int) -> bool:
        return self.usage and turn >= self.usage_from_turn

    def ratio_at(self, turn: int, compactions: int = 0) -> float:
        if compactions and self.ratio_after_compaction is not None:
            return self.ratio_after_compaction
        r = self.ratio
        for start, value in self.ratio_changes:
            if turn >= start:
                r = value
        return r

    @property
    def blind(self) -> bool:
        """Some requests get no usage metadata: the guard cannot learn the real count."""
        return not self.usage or self.usage_from_turn > 0


# ------------------------------------------------------------------------------ fixed parts


@cache
def tool_def(index: int, schema_chars: int) -> ToolDef:
    """An MCP-style tool definition whose JSON schema is about ``schema_chars`` characters."""
    r = random.Random(f"tooldef:{index}:{schema_chars}")
    props: dict[str, object] = {}
    schema: dict[str, object] = {"type": "object", "properties": props, "required": []}
    while len(orjson.dumps(schema)) < schema_chars:
        key = f"{r.choice(_WORDS)}_{r.choice(_WORDS)}_{len(props)}"
        prop: dict[str, object] = {
            "type": r.choice(("string", "integer", "boolean", "array")),
            "description": _sentence(r),
        }
        if prop["type"] == "string" and r.random() < 0.3:
            prop["enum"] = [r.choice(_WORDS) for _ in range(3)]
        props[key] = prop
        if r.random() < 0.3:
            schema["required"].append(key)  # type: ignore[attr-defined]
    return ToolDef(f"mcp_{r.choice(_NAMES)}_{index}", _sentence(r), schema)


def fixed_parts(s: Scenario) -> tuple[list[str], list[ToolDef]]:
    system = [text(s.system_style, s.system)] if s.system else []
    return system, [tool_def(i, s.tool_def_chars) for i in range(s.tool_defs)]


# ------------------------------------------------------------------------------ the script


@dataclass
class ScriptStep:
    """One model step: messages appended before the call, and the model's output after it."""

    turn: int
    label: str
    before: list[Message]
    after: list[Message]


def _size(spec: int | tuple[int, int], r: random.Random) -> int:
    if isinstance(spec, int):
        return spec
    lo, hi = spec
    return lo if hi <= lo else r.randrange(lo, hi + 1, 500) if hi - lo >= 500 else r.randint(lo, hi)


def _call(turn: int, k: int, tool: Tool) -> ToolCallPart:
    return ToolCallPart(f"call_{turn}_{k}", tool.name, {"target": f"{tool.name}-{turn}-{k}", "limit": 100})


def _result(turn: int, k: int, tool: Tool, size: int) -> ToolResultPart:
    return ToolResultPart(
        f"call_{turn}_{k}", (TextPart(text(tool.style, size, (turn + k) % 3)),), name=tool.name
    )


def build_script(s: Scenario) -> list[ScriptStep]:
    """The whole conversation as model steps; deterministic, independent of any guard."""
    steps: list[ScriptStep] = []
    r = random.Random(s.name)
    for t in range(s.turns):
        turn = s.pattern[t % len(s.pattern)]
        parts: list[TextPart | MediaPart] = [TextPart(text("prose", turn.user, t % 5))]
        for i, size in enumerate(turn.images):
            data = png_b64(size, (t + i) % 2)
            parts.append(MediaPart("image/png", data=data, byte_size=_media_size(data)))
        for size, pages in turn.documents:
            data = pdf_b64(size, pages)
            parts.append(MediaPart("application/pdf", data=data, byte_size=_media_size(data)))
        user = Message("user", tuple(parts))
        final = Message("assistant", (TextPart(text("prose", turn.response, t % 7 + 1)),))
        sizes = [_size(tool.size, r) for tool in turn.tools]
        if not turn.tools:
            steps.append(ScriptStep(t, "user-msg", [user], [final]))
        elif not turn.sequential:
            calls = Message("assistant", tuple(_call(t, k, tool) for k, tool in enumerate(turn.tools)))
            results = Message(
                "user", tuple(_result(t, k, tool, sizes[k]) for k, tool in enumerate(turn.tools))
            )
            steps.append(ScriptStep(t, "user-msg", [user], [calls]))
            steps.append(ScriptStep(t, "tool-results", [results], [final]))
        else:
            before: list[Message] = [user]
            for k, tool in enumerate(turn.tools):
                call = Message("assistant", (_call(t, k, tool),))
                steps.append(ScriptStep(t, "user-msg" if k == 0 else f"tool-chain-{k - 1}", before, [call]))
                before = [Message("user", (_result(t, k, tool, sizes[k]),))]
            steps.append(ScriptStep(t, f"tool-chain-{len(turn.tools) - 1}", before, [final]))
    return steps


# ------------------------------------------------------------------------------ counting


class MessageCounts:
    """ctxfold's o200k count of messages, one message at a time (the count is additive)."""

    def __init__(self, guard: ContextGuard, system: Sequence[str], tools: Sequence[ToolDef]) -> None:
        self.guard = guard
        self.fixed = guard.fixed_tokens(system, tools)
        self._cache: dict[int, tuple[Message, int]] = {}

    def of(self, messages: Sequence[Message]) -> list[int]:
        missing = [m for m in messages if id(m) not in self._cache]
        if missing:
            for m, c in zip(missing, self.guard.counter.count_messages(missing), strict=True):
                self._cache[id(m)] = (m, c.total)  # keep m alive so its id stays unique
        return [self._cache[id(m)][1] for m in messages]

    def request(self, messages: Sequence[Message]) -> int:
        return sum(self.of(messages)) + self.fixed


class MemoTokenizer:
    """Remembers counts by text. The guard re-tokenizes its whole request on every step (it
    keeps no per-message cache), which over ~5,000 simulated steps of up to 1M tokens costs
    minutes; the texts repeat (cached per size), so remembering them changes no number."""

    def __init__(self, inner: Tokenizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.memo: dict[str, int] = {}

    def count(self, text: str) -> int:
        n = self.memo.get(text)
        if n is None:
            n = self.memo[text] = self.inner.count(text)
        return n

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        memo = self.memo
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            memo.update(zip(missing, self.inner.count_batch(missing), strict=True))
        return [memo[t] for t in texts]


_MEMO: dict[str, MemoTokenizer] = {}


def make_guard(
    s: Scenario,
    summarizer: Callable[[SummaryRequest], SummaryResult] = budget_summarizer,
    *,
    memo: bool | None = None,
) -> ContextGuard:
    """The guard under test; ``memo`` (default: unless ``CTXFOLD_SIM_MEMO=0``) remembers token
    counts by text so the suite runs in seconds instead of minutes."""
    if s.guard_window:
        guard = ContextGuard(s.model, window=s.window, summarizer=summarizer)
    else:
        guard = ContextGuard(s.model, summarizer=summarizer)
    if memo is None:
        memo = os.environ.get("CTXFOLD_SIM_MEMO", "1") != "0"
    if memo:
        inner = guard.counter.tokenizer
        guard.counter.tokenizer = _MEMO.setdefault(inner.name, MemoTokenizer(inner))
    return guard


# ------------------------------------------------------------------------------ results


@dataclass
class StepRecord:
    turn: int
    label: str
    attempt: int
    estimate: int  # the simulator's own count of what was sent
    guard_estimate: int  # what the guard says it sent (decision, or after-compaction decision)
    predicted: int
    real: int
    accepted: bool
    compacted: bool
    forced: bool


@dataclass
class CompactionRecord:
    step: int  # index into Result.steps
    turn: int
    label: str
    before: int  # estimate of the request the guard was about to send
    after: int  # estimate of the compacted request
    real_before: int  # what the provider would have counted without the compaction
    real_after: int
    forced: bool  # the provider had refused the previous attempt
    summarizer_input: int  # estimated tokens handed to the summarizer

    @property
    def loop(self) -> bool:
        """The seed's definition: a compaction whose output is not smaller than its input."""
        return self.after >= self.before


@dataclass
class Result:
    scenario: Scenario
    threshold: int
    window: int
    steps: list[StepRecord] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)
    rejections: int = 0
    error: WindowTooSmallError | None = None
    failure: str | None = None  # a step refused more than MAX_RETRIES times
    completed: bool = False
    turns_done: int = 0

    @property
    def accepted(self) -> list[StepRecord]:
        return [st for st in self.steps if st.accepted]

    @property
    def over_window(self) -> list[StepRecord]:
        return [st for st in self.accepted if st.real > self.window]

    @property
    def loops(self) -> list[CompactionRecord]:
        return [c for c in self.compactions if c.loop]

    @property
    def ineffective(self) -> list[CompactionRecord]:
        """Compactions that leave the real request at or above the threshold: the next step
        must compact again."""
        return [c for c in self.compactions if c.real_after >= self.threshold]

    @property
    def thrash(self) -> list[CompactionRecord]:
        """A compaction right after a compaction (previous model step) although the request it
        folded was below the threshold and the provider had refused nothing: compacting on
        every step for nothing."""
        done = {c.step for c in self.compactions}
        return [
            c
            for c in self.compactions
            if c.step - 1 in done and not c.forced and c.real_before < self.threshold
        ]

    def __repr__(self) -> str:
        return f"Result({self.summary()})"

    def summary(self) -> str:
        outcome = "completed" if self.completed else (f"error: {self.error}" if self.error else self.failure)
        return (
            f"{self.scenario.name}: {len(self.accepted)} requests, {len(self.compactions)} compactions, "
            f"{self.rejections} rejections, max real {max((st.real for st in self.accepted), default=0):,} "
            f"/ window {self.window:,} (threshold {self.threshold:,}); {outcome}"
        )


@dataclass
class Baseline:
    """The same conversation with no guard: the real size of every request."""

    reals: list[int]
    threshold: int
    fixed_real: int  # the system prompt and tools alone, in real tokens

    @property
    def max_real(self) -> int:
        return max(self.reals, default=0)

    @property
    def needs_compaction(self) -> bool:
        return self.max_real >= self.threshold

    @property
    def impossible(self) -> bool:
        """The system prompt and tools alone reach the threshold: no compaction can help."""
        return self.fixed_real >= self.threshold


# ------------------------------------------------------------------------------ the runs


class _RecordingSummarizer:
    def __init__(self, counts: Callable[[Sequence[Message]], list[int]]) -> None:
        self.counts = counts
        self.inputs: list[int] = []

    def __call__(self, request: SummaryRequest) -> SummaryResult:
        self.inputs.append(sum(self.counts(request.messages)))
        return budget_summarizer(request)


@cache
def _script(s: Scenario) -> list[ScriptStep]:
    return build_script(s)


def baseline(s: Scenario) -> Baseline:
    guard = make_guard(s)
    system, tools = fixed_parts(s)
    counts = MessageCounts(guard, system, tools)
    reals: list[int] = []
    total = counts.fixed
    for step in _script(s):
        total += sum(counts.of(step.before))
        reals.append(int(total * s.ratio_at(step.turn)) + s.hidden)
        total += sum(counts.of(step.after))
    return Baseline(reals, guard.policy.threshold, int(counts.fixed * s.ratio) + s.hidden)


def run(s: Scenario, *, memo: bool | None = None) -> Result:
    """Drive the agent loop through the guard; never raises for a scenario outcome."""
    system, tools = fixed_parts(s)
    counter_holder: list[MessageCounts] = []
    recorder = _RecordingSummarizer(lambda msgs: counter_holder[0].of(msgs))
    guard = make_guard(s, recorder, memo=memo)
    counts = MessageCounts(guard, system, tools)
    counter_holder.append(counts)
    result = Result(s, guard.policy.threshold, s.window)
    events: list[Message] = []
    for step in _script(s):
        events.extend(step.before)
        if not _model_step(s, guard, counts, recorder, events, system, tools, step, result):
            return result
        events.extend(step.after)
        result.turns_done = step.turn
    result.completed = True
    result.turns_done = s.turns
    return result


def _model_step(
    s: Scenario,
    guard: ContextGuard,
    counts: MessageCounts,
    recorder: _RecordingSummarizer,
    events: list[Message],
    system: list[str],
    tools: list[ToolDef],
    step: ScriptStep,
    result: Result,
) -> bool:
    for attempt in range(MAX_RETRIES + 1):
        try:
            prepared: Prepared = guard.before_request(events, system, tools)
        except WindowTooSmallError as err:
            result.error = err
            return False
        sent = counts.request(prepared.messages)
        done = len(result.compactions)
        ratio = s.ratio_at(step.turn, done + int(prepared.compacted))
        real = int(sent * ratio) + s.hidden
        decided = prepared.after if prepared.compacted and prepared.after else prepared.decision
        accepted = real <= s.window
        result.steps.append(
            StepRecord(
                step.turn,
                step.label,
                attempt,
                sent,
                decided.estimate,
                decided.predicted,
                real,
                accepted,
                prepared.compacted,
                prepared.decision.forced,
            )
        )
        if prepared.compacted:
            result.compactions.append(
                CompactionRecord(
                    len(result.steps) - 1,
                    step.turn,
                    step.label,
                    prepared.decision.estimate,
                    sent,
                    int(prepared.decision.estimate * s.ratio_at(step.turn, done)) + s.hidden,
                    real,
                    prepared.decision.forced,
                    recorder.inputs[-1] if recorder.inputs else 0,
                )
            )
        if not accepted:
            result.rejections += 1
            guard.on_error(f"prompt is too long: {real} tokens > {s.window} maximum")
            continue
        if s.has_usage(step.turn):
            guard.after_response(real)
        return True
    result.failure = f"turn {step.turn} step {step.label}: refused {MAX_RETRIES + 1} times"
    return False
