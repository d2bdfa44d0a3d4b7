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

import base64
import io
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

import orjson

from ctxfold.core.engine.guard import ContextGuard, Prepared, WindowTooSmallError
from ctxfold.core.providers.base import SummaryRequest, SummaryResult, budget_summarizer
from ctxfold.core.tokens.tokenizers import Tokenizer
from ctxfold.core.transcript.model import (
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


# ------------------------------------------------------------------------------ texts


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_WORDS = _words(
    "the request pod node service deployment latency error retry cache queue worker config "
    "database index migration cluster replica shard timeout connection handler endpoint token "
    "session user account order invoice payment refund report metric alert dashboard trace span "
    "build test release branch commit review patch module function class method parameter value "
    "memory cpu disk network volume secret namespace label selector ingress gateway proxy upstream "
    "we should check whether this is caused by a recent change in how it handles that case and "
    "then fix it carefully so nothing else breaks while keeping backwards compatibility"
)
_NAMES = ("api", "web", "auth", "billing", "search", "worker", "scheduler", "ingest", "gateway", "cart")
_STATUS = ("Running", "Running", "Running", "Pending", "CrashLoopBackOff", "Completed", "Error")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")


_RARE = _words(
    "idempotency reconciliation backpressure observability throughput deduplication serialization "
    "misconfigured kube-proxy PgBouncer OOMKilled CrashLoopBackOff readinessProbe etcd Grafana "
    "Prometheus p99 SLO/SLI gRPC HTTP/2 TLS mTLS JWT OAuth2 SIGTERM cgroup v2 JSONB UUIDv7 Redis "
    "rate-limiter circuit-breaker feature-flag blue/green canary rollout webhook cron-job Terraform"
)


def _word(r: random.Random) -> str:
    k = r.random()
    if k < 0.12:
        return r.choice(_RARE)
    if k < 0.17:
        return f"`{r.choice(_WORDS)}_{r.choice(_WORDS)}()`"
    if k < 0.21:
        return str(r.choice((r.randint(2, 99), r.randint(100, 99_999), f"{r.random() * 100:.1f}%")))
    if k < 0.24:
        return f"{r.choice(_NAMES)}/{r.choice(_WORDS)}.py"
    return r.choice(_WORDS) + r.choice(("", "", "", "", ",", "s", "ed", "ing"))


def _sentence(r: random.Random) -> str:
    words = [_word(r) for _ in range(r.randint(6, 18))]
    line = " ".join(words)
    return line[0].upper() + line[1:] + r.choice((".", ".", ".", "?", ":"))


def _ts(r: random.Random) -> str:
    return f"2025-06-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999):03d}Z"


def _pod(r: random.Random) -> str:
    return f"{r.choice(_NAMES)}-{r.getrandbits(32):08x}-{r.getrandbits(20):05x}"


def _line_prose(r: random.Random) -> str:
    return " ".join(_sentence(r) for _ in range(r.randint(2, 5)))


def _line_markdown(r: random.Random) -> str:
    k = r.random()
    if k < 0.15:
        return f"## {_sentence(r).rstrip('.?:')}"
    if k < 0.6:
        return f"- {_sentence(r)} Use `{r.choice(_WORDS)}_{r.choice(_WORDS)}` when {_sentence(r).lower()}"
    return _line_prose(r)


def _line_json(r: random.Random) -> str:
    rec = {
        "id": f"{r.getrandbits(48):012x}",
        "name": f"{r.choice(_NAMES)}-{r.choice(_WORDS)}",
        "status": r.choice(_STATUS).lower(),
        "count": r.randint(0, 5000),
        "updated_at": _ts(r),
        "owner": {"team": r.choice(_NAMES), "email": f"{r.choice(_WORDS)}@example.com"},
        "tags": [r.choice(_WORDS) for _ in range(r.randint(1, 4))],
        "note": _sentence(r),
    }
    return orjson.dumps(rec).decode() + ","


def _line_kubectl(r: random.Random) -> str:
    return (
        f"{r.choice(_NAMES):<10} {_pod(r):<36} {r.randint(0, 2)}/{r.randint(1, 2)}   {r.choice(_STATUS):<17} "
        f"{r.randint(0, 40):<4} {r.randint(1, 30)}d{r.randint(0, 23)}h   10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(0, 255)}   "
        f"ip-10-0-{r.randint(0, 255)}-{r.randint(0, 255)}.ec2.internal"
    )


def _line_describe(r: random.Random) -> str:
    k = r.randint(0, 5)
    if k == 0:
        return f"Name:         {_pod(r)}\nNamespace:    {r.choice(_NAMES)}\nNode:         ip-10-0-{r.randint(0, 255)}-{r.randint(0, 255)}"
    if k == 1:
        return f'  Normal   Pulled     {r.randint(1, 59)}m   kubelet  Successfully pulled image "registry.example.com/{r.choice(_NAMES)}:v{r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)}"'
    if k == 2:
        return f"  Warning  BackOff    {r.randint(1, 59)}m   kubelet  Back-off restarting failed container {r.choice(_NAMES)} in pod {_pod(r)}"
    if k == 3:
        return f"    Limits:\n      cpu:     {r.randint(1, 4)}\n      memory:  {r.choice((256, 512, 1024, 2048))}Mi"
    return (
        f"    Environment:\n      {r.choice(_WORDS).upper()}_{r.choice(_WORDS).upper()}:  {r.choice(_WORDS)}"
    )


def _line_log(r: random.Random) -> str:
    return (
        f"{_ts(r)} {r.choice(_LEVELS):<5} [{r.choice(_NAMES)}] {_sentence(r)} "
        f"request_id={r.getrandbits(64):016x} duration_ms={r.randint(1, 9000)} status={r.choice((200, 200, 201, 404, 500, 503))}"
    )


def _line_code(r: random.Random) -> str:
    a, b, c = r.choice(_WORDS), r.choice(_WORDS), r.choice(_WORDS)
    templates = (
        f"def {a}_{b}(self, {c}: int, *, timeout: float = {r.randint(1, 60)}.0) -> dict[str, str]:",
        f"    {a} = self._{b}.get({c!r}, {r.randint(0, 100)})",
        f"    if {a} is None or {b} > {r.randint(1, 500)}:",
        f'        raise ValueError(f"{a} {b}: {{{c}}}")',
        f"    return {{'{a}': {b}, '{c}': str({a})}}",
        f"    # {_sentence(r)}",
        f"class {a.capitalize()}{b.capitalize()}({c.capitalize()}Base):",
        f"    for {a} in self.{b}s[{r.randint(0, 9)}:]:",
        f"        {a}.{b}({c}=True, retries={r.randint(0, 5)})",
        "",
    )
    return r.choice(templates)


def _line_diff(r: random.Random) -> str:
    k = r.randint(0, 3)
    if k == 0:
        return f"@@ -{r.randint(1, 900)},{r.randint(3, 20)} +{r.randint(1, 900)},{r.randint(3, 20)} @@"
    return r.choice(("-", "+", " ")) + _line_code(r)


def _line_tests(r: random.Random) -> str:
    if r.random() < 0.1:
        return f"E       AssertionError: assert {r.randint(0, 999)} == {r.randint(0, 999)}\nE        +  where {r.choice(_WORDS)} = {_sentence(r)}"
    return f"tests/test_{r.choice(_WORDS)}.py::test_{r.choice(_WORDS)}_{r.choice(_WORDS)}[{r.choice(_NAMES)}] {r.choice(('PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'))} [{r.randint(0, 100):3d}%]"


def _line_sql(r: random.Random) -> str:
    return (
        f"| {r.randint(1, 999999):>7} | {r.choice(_WORDS):<12} | {r.choice(_NAMES):<9} | {_ts(r)} | "
        f"{r.randint(0, 99999) / 100:>9.2f} | {r.choice(('shipped', 'pending', 'refunded', 'failed')):<8} |"
    )


def _line_metrics(r: random.Random) -> str:
    rec = {
        "metric": {
            "__name__": r.choice(
                ("http_requests_total", "http_request_duration_seconds_bucket", "container_memory_rss")
            ),
            "pod": _pod(r),
            "namespace": r.choice(_NAMES),
            "code": str(r.choice((200, 404, 500))),
        },
        "values": [[1_717_000_000 + r.randint(0, 86_400), f"{r.random() * 1000:.3f}"] for _ in range(3)],
    }
    return orjson.dumps(rec).decode() + ","


def _line_grep(r: random.Random) -> str:
    return f"src/{r.choice(_NAMES)}/{r.choice(_WORDS)}_{r.choice(_WORDS)}.py:{r.randint(1, 2000)}:{_line_code(r)}"


def _line_http(r: random.Random) -> str:
    if r.random() < 0.3:
        return f"{r.choice(('Content-Type', 'X-Request-Id', 'Cache-Control', 'Server'))}: {r.choice(_WORDS)}/{r.getrandbits(24):06x}"
    return _line_json(r)


def _line_prompt(r: random.Random) -> str:
    """A system prompt: instructions in markdown with code examples."""
    return _line_code(r) if r.random() < 0.75 else _line_markdown(r)


STYLES: dict[str, Callable[[random.Random], str]] = {
    "prompt": _line_prompt,
    "prose": _line_prose,
    "markdown": _line_markdown,
    "json": _line_json,
    "kubectl": _line_kubectl,
    "describe": _line_describe,
    "logs": _line_log,
    "code": _line_code,
    "diff": _line_diff,
    "tests": _line_tests,
    "sql": _line_sql,
    "metrics": _line_metrics,
    "grep": _line_grep,
    "http": _line_http,
}


@cache
def text(style: str, size: int, variant: int = 0) -> str:
    """Deterministic text of exactly ``size`` characters in one style (cached)."""
    if size <= 0:
        return ""
    r = random.Random(f"{style}:{size}:{variant}")
    line = STYLES[style]
    lines: list[str] = []
    total = 0
    while total < size:
        s = line(r)
        lines.append(s)
        total += len(s) + 1
    return "\n".join(lines)[:size]


# ------------------------------------------------------------------------------ media


def _dims(byte_size: int) -> tuple[int, int]:
    if byte_size <= 20_000:
        return 320, 240
    if byte_size <= 120_000:
        return 1024, 768
    return 1600, 1200


@cache
def png_b64(byte_size: int, variant: int = 0) -> str:
    """A real PNG (a gradient, dimensions by size) padded with a text chunk to ``byte_size``."""
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    w, h = _dims(byte_size)
    img = Image.linear_gradient("L").resize((w, h)).convert("RGB")
    buf = io.BytesIO()
    img.save(buf, "PNG")
    pad = max(0, byte_size - len(buf.getvalue()) - 32)
    info = PngInfo()
    r = random.Random(f"png:{byte_size}:{variant}")
    info.add_text("Comment", "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(pad)))
    buf = io.BytesIO()
    img.save(buf, "PNG", pnginfo=info)
    return base64.b64encode(buf.getvalue()).decode()


@cache
def pdf_b64(byte_size: int, pages: int) -> str:
    """A minimal PDF with ``pages`` pages, padded with comment lines to ``byte_size``."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    parts = [
        "%PDF-1.4",
        "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj",
        f"2 0 obj << /Type /Pages /Kids [{kids}] /Count {pages} >> endobj",
        *(
            f"{3 + i} 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj"
            for i in range(pages)
        ),
    ]
    body = "\n".join(parts) + "\n"
    tail = "trailer << /Root 1 0 R >>\n%%EOF\n"
    r = random.Random(f"pdf:{byte_size}:{pages}")
    pad_len = max(0, byte_size - len(body) - len(tail))
    pad_lines = []
    while pad_len > 0:
        n = min(78, pad_len - 2) if pad_len > 2 else 0
        pad_lines.append("%" + "".join(r.choice("0123456789abcdef") for _ in range(max(0, n))) + "\n")
        pad_len -= len(pad_lines[-1])
    return base64.b64encode((body + "".join(pad_lines) + tail).encode()).decode()


def _media_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


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
