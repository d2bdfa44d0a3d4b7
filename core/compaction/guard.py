"""``ContextGuard``: the decision engine around each model call, for use in an agent loop.

    guard = ContextGuard("claude-sonnet-4-5", store=JsonFileStore("state.json"))
    while True:
        prepared = guard.before_request(events, system=system, tools=tools)
        try:
            response = client.messages.create(messages=prepared.messages, ...)
        except anthropic.BadRequestError as err:
            if guard.on_error(str(err)):   # "prompt is too long: 200819 tokens > 200000"
                continue                    # learned the real count; the next call compacts
            raise
        guard.after_response(response.usage)
        events.append(...)

``events`` is the agent's full, append-only history: OpenAI chat or Anthropic messages, Google
genai Contents (ADK's ``llm_request.contents``) or OpenAI Responses items, as dicts or SDK
objects (or ctxfold ``Message`` values); ``prepared.messages`` comes back in the same kind. The
guard never asks the caller to rewrite the history: after a compaction it remembers how many events
the summary covers (the watermark) and from then on sends ``[summary, continuation] +
events[watermark:]``, the seeds' fix for compaction that "had zero effect in production", with a
stable prefix for the provider's prompt cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ctxfold.compaction.fold import FoldInput, fold
from ctxfold.config import Config
from ctxfold.engine.calibration import (
    DEFAULT_CALIBRATOR,
    PROVIDER_RATIO,
    Calibrator,
    Prior,
    make_calibrator,
)
from ctxfold.engine.policy import Decision, Policy, decide, make_policy
from ctxfold.engine.state import AgentState, MemoryStore, StateStore
from ctxfold.errors import ConfigError, UsageError, WindowTooSmallError
from ctxfold.formats.base import is_overflow, parse_overflow
from ctxfold.formats.live import LiveReader
from ctxfold.formats.messages import prompt_tokens_of, system_prompt_texts, tools_from
from ctxfold.names import did_you_mean
from ctxfold.providers.base import Summarizer, SummaryResult
from ctxfold.providers.offline import OfflineSummarizer
from ctxfold.providers.registry import make_summarizer
from ctxfold.settings import effective
from ctxfold.strategies.base import get_strategy
from ctxfold.strategies.summary import UNLIMITED_WINDOW, summary_message
from ctxfold.tokens.counting import FRAMING, Counter
from ctxfold.tokens.models import resolve
from ctxfold.tokens.tokenizers import get_tokenizer
from ctxfold.transcript.model import Message, TextPart, ToolDef

__all__ = ["ContextGuard", "Decision", "Prepared", "WindowTooSmallError", "prompt_tokens_of"]


@dataclass(frozen=True)
class Prepared:
    """What to send: the messages (after the watermark and any compaction) and why.

    ``messages`` are of the kind the events were: the caller's own objects, with the summary and
    the continuation as user messages of that kind (see ``LiveReader.own``), or ``Message`` values.

    >>> guard = ctxfold.ContextGuard("gpt-4o", window=8_000)
    >>> prepared = guard.before_request([{"role": "user", "content": "Hello"}])
    >>> prepared.messages, prepared.compacted
    ([{'role': 'user', 'content': 'Hello'}], False)
    """

    messages: list[Any]
    decision: Decision
    compacted: bool = False
    after: Decision | None = None  # the decision on the compacted request
    summary: SummaryResult | None = None
    # how many of ``messages`` at the front are ctxfold's own (summary, continuation): the rest
    # are the caller's last events, so an adapter can map them back to its framework's objects
    own: int = 0


# A Message, or a message of any API ctxfold reads, as a dict or an SDK's pydantic object.
Event: TypeAlias = Message | Mapping[str, Any] | Any
# A ToolDef or a tool schema: OpenAI (nested or flat), Anthropic, genai Tool / FunctionDeclaration.
ToolSpec: TypeAlias = ToolDef | Mapping[str, Any] | Any
# A string, strings or text blocks, a genai Content (ADK's config.system_instruction), or None.
System: TypeAlias = str | Sequence[Any] | Any


class ContextGuard:
    """Decides before each model call whether the conversation must be compacted, and does it.

    ``summarizer`` is a callable (``OfflineSummarizer()``, ``make_summarizer(...)``, your own) or a
    provider spec such as ``"anthropic:claude-haiku-4-5,offline"``; by default the offline digest.
    One ``store`` (or one ``agent`` name in it) per conversation: the state remembers which
    conversation it belongs to and refuses another. No config file is read unless ``config``
    is given (``load_config()``): then its ``[models."NAME"]`` table and ``[defaults]`` apply
    where an argument is not given, after the ``CTXFOLD_*`` variables, as in the CLI.

    >>> guard = ctxfold.ContextGuard("gpt-4o", window=8_000)
    >>> history = [{"role": "user", "content": "Explain the parser."}]
    >>> guard.before_request(history, system="You are a coding agent.").compacted
    False
    >>> guard.after_response(300)  # the provider's usage: prompt tokens of that request
    >>> history += [
    ...     {"role": "assistant", "content": "The parser reads each line. " * 1200},
    ...     {"role": "user", "content": "Now fix the parser."},
    ... ]
    >>> prepared = guard.before_request(history, system="You are a coding agent.")
    >>> prepared.compacted, len(prepared.messages), prepared.after.predicted < 6_400
    (True, 2, True)
    >>> "`Now fix the parser.`. Continue working on this request" in prepared.messages[1]["content"]
    True
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        window: int | None = None,
        max_tokens: int | None = None,
        buffer: str | int | None = None,
        tokenizer: str | None = None,
        provider: str | None = None,
        calibration: str | None = None,
        prior: Prior | None = None,
        store: StateStore | None = None,
        agent: str = "default",
        summarizer: Summarizer | str | None = None,
        summarizer_window: int | None = None,
        config: Config | None = None,
    ) -> None:
        if config is not None:  # as the CLI: arguments, then CTXFOLD_* variables, then the file
            given = {"model": model, "window": window, "buffer": buffer, "calibration": calibration}
            found = effective({**given, "tokenizer": tokenizer}, config)
            model, window, buffer = found["model"].value, found["window"].value, found["buffer"].value
            calibration, tokenizer = found["calibration"].value, found["tokenizer"].value
        calibration = calibration or DEFAULT_CALIBRATOR
        sizes = (("window", window), ("max_tokens", max_tokens), ("summarizer_window", summarizer_window))
        for name, value in sizes:
            if value is not None and (not isinstance(value, int) or value < 1):
                raise UsageError(f"{name} must be a positive number of tokens, not {value!r}")
        if provider is not None and provider not in FRAMING:
            raise UsageError(f"unknown provider {provider!r}{did_you_mean(provider, list(FRAMING))}")
        resolved = resolve(
            model, window=window, tokenizer=tokenizer, config_models=config.models if config else None
        )
        self.model = resolved
        self.provider = provider or resolved.provider
        self.counter = Counter(get_tokenizer(resolved.tokenizer), self.provider)
        self.max_tokens, self.buffer = max_tokens, buffer
        self.state = AgentState(store if store is not None else MemoryStore(), agent)
        limit = self.state.get("window_limit")  # a smaller window a provider's refusal stated
        self.policy: Policy = make_policy(
            min(resolved.window, int(limit)) if limit else resolved.window,
            max_tokens=max_tokens,
            buffer=buffer,
        )
        if prior is None and resolved.tokenizer != "heuristic":
            prior = Prior(0, PROVIDER_RATIO.get(self.provider, 1.0), f"{self.provider} default")
        self.calibrator: Calibrator = make_calibrator(calibration, prior, resolved.tokenizer)
        for est, real in self.state.get("calibration", {}).get("points", []):
            self.calibrator.observe(int(est), int(real))
        if isinstance(summarizer, str):
            summarizer = make_summarizer(summarizer)
        self.summarizer: Summarizer = summarizer or OfflineSummarizer()
        if summarizer_window is None:  # a summarizer that declares no window reads any conversation
            declared = getattr(self.summarizer, "window", resolved.window)
            summarizer_window = declared if declared is not None else UNLIMITED_WINDOW
        self.summarizer_window = summarizer_window
        self.compactions = 0
        self.strategy = get_strategy("summary")  # the conversation becomes [summary, continuation]
        self._head: tuple[str, str, list[Message]] | None = None  # (summary, continuation) as messages
        self.live = LiveReader()  # the caller's events as messages, and ctxfold's back in their kind

    @property
    def warnings(self) -> tuple[str, ...]:
        """What was assumed about the model (an unknown name: generic framing, default window)."""
        return self.model.warnings

    # ------------------------------------------------------------------------ counting

    def messages_of(self, events: Sequence[Event], first: int = 1) -> list[Message]:
        """The events as ctxfold messages, one each; ``first`` numbers the first for errors."""
        return self.live.messages(events, first)

    def fixed_tokens(self, system: System, tools: Sequence[ToolSpec] | None) -> int:
        return (
            self.counter.count_system(system_prompt_texts(system))
            + self.counter.count_tools(tools_from(tools))
            + self.counter.framing.per_request
        )

    def estimate(
        self, messages: Sequence[Event], system: System = (), tools: Sequence[ToolSpec] | None = ()
    ) -> int:
        body = sum(c.total for c in self.counter.count_messages(self.messages_of(messages)))
        return body + self.fixed_tokens(system, tools)

    def decide(self, estimate: int) -> Decision:
        return decide(self.calibrator, self.policy, estimate, forced=self.forced)

    @property
    def forced(self) -> bool:
        """A refusal as too long was learned and no compaction has followed yet. Kept in the
        state, so a guard rebuilt from its store (as the framework adapters build one per call)
        still compacts the next request."""
        return bool(self.state.get("forced"))

    # ---------------------------------------------------------------------- the loop

    def _head_messages(self) -> list[Message]:
        summary, continuation = self.state.summary or "", self.state.get("continuation") or ""
        if self._head is None or self._head[:2] != (summary, continuation):
            head = [summary_message(summary)]
            if continuation:
                head.append(Message("user", (TextPart(continuation),), extra={"ctxfold": "continuation"}))
            self._head = (summary, continuation, head)  # the same objects every call: counted once
        return self._head[2]

    def view(self, events: Sequence[Event]) -> list[Message]:
        """The events the model should see, as messages: the summary replaces what it covers."""
        return self._view(events)[0]

    def _view(self, events: Sequence[Event]) -> tuple[list[Message], int]:
        """The view and how many of its messages are ctxfold's own (summary, continuation)."""
        self.live.keep(events)
        self._check_conversation(events)
        mark = self.state.watermark
        if self.state.summary is None or mark <= 0:
            return self.messages_of(events), 0
        head = self._head_messages()
        return [*head, *self.messages_of(events[mark:], mark + 1)], len(head)

    def before_request(
        self,
        events: Sequence[Event],
        system: System = (),
        tools: Sequence[ToolSpec] | None = (),
        *,
        instructions: str | None = None,
    ) -> Prepared:
        messages, head = self._view(events)
        decision = self.decide(self.estimate(messages, system, tools))
        if not decision.due:
            self.state.set("last_heuristic", decision.estimate)
            return Prepared(self.live.outgoing(events, messages, head), decision, own=head)
        if self._nothing_to_fold(events):
            if decision.forced:
                raise WindowTooSmallError(
                    f"the provider refused even the compacted request ({self.state.get('real_tokens') or 0:,} "
                    f"tokens in a {self.policy.window:,}-token window): the system prompt, tools and summary "
                    "alone are too large"
                )
            self.state.set("last_heuristic", decision.estimate)
            return Prepared(self.live.outgoing(events, messages, head), decision, own=head)
        folded = fold(
            FoldInput(
                messages=messages,
                strategy=self.strategy,
                counter=self.counter,
                policy=self.policy,
                calibrator=self.calibrator,
                fixed=self.fixed_tokens(system, tools),
                before=decision,
                summarizer=self.summarizer,
                summarizer_window=self.summarizer_window,
                instructions=instructions,
            )
        )
        summary = folded.summary
        if summary is None:  # the summary strategy always summarizes
            raise UsageError(f"the {self.strategy.name} strategy made no summary")
        self.state.delete("forced")
        self.state.set("summary", summary.text)
        self.state.set("continuation", folded.messages[1].text if len(folded.messages) > 1 else "")
        # the exchange under way stays verbatim: the watermark moves back over it, so those events
        # are sent as they are after [summary, continuation]
        self.state.set("contents_at_compaction", len(events) - folded.tail)
        self.state.set("summarized_at", decision.predicted)
        self.state.delete("real_tokens")
        self.state.set("calibration", {"name": self.calibrator.name, "points": []})
        self.state.set("last_heuristic", folded.after.estimate)
        self.compactions += 1
        own = len(folded.messages) - folded.tail
        out = self.live.outgoing(events, folded.messages, own)
        return Prepared(out, decision, compacted=True, after=folded.after, summary=summary, own=own)

    def _nothing_to_fold(self, events: Sequence[Event]) -> bool:
        """True right after a compaction: no event has arrived since the summary was made."""
        return self.state.summary is not None and self.state.watermark >= len(events)

    def _check_conversation(self, events: Sequence[Event]) -> None:
        """The state belongs to the conversation whose first event it saw: a store shared by
        two conversations would send one's summary with the other's events."""
        if not events:
            return
        first = self.messages_of(events[:1])[0]
        mark = hashlib.sha256(f"{first.role}\0{first.text}\0{first.tool_calls!r}".encode()).hexdigest()[:16]
        known = self.state.get("conversation")
        if known is None:
            self.state.set("conversation", mark)
        elif known != mark:
            raise ConfigError(
                f"the guard's state (agent {self.state.agent!r}) belongs to another conversation: its first "
                "event differs; use one store or agent name per conversation, or call reset()"
            )
        if self.state.summary is not None and self.state.watermark > len(events):
            raise ConfigError(
                f"the guard's state covers {self.state.watermark} events but only {len(events)} were given: "
                "pass the whole append-only history, or call reset() to start over"
            )

    def reset(self) -> None:
        """Forget this conversation: summary, watermark, counts, calibration points."""
        for name in KEYS_TO_RESET:
            self.state.delete(name)
        self.calibrator.history.clear()

    def after_response(self, usage: Any, *, final: bool = True) -> None:
        """Record the provider's prompt-token count (an int, or the SDK response's ``usage``);
        streaming partials (``final=False``) and responses without usage are ignored."""
        tokens = prompt_tokens_of(usage) if final else None
        if tokens is not None and tokens > 0:
            self._learn(tokens)

    def on_error(self, message: str | BaseException, *, overflow: bool = False) -> bool:
        """Learn from a refusal as too long. True when it was one: a stated count ("prompt is too
        long: N tokens > M maximum") is recorded, the window shrinks to a stated smaller limit
        (kept in the state), and the next ``before_request`` compacts whatever the prediction
        says; a refusal without numbers only forces the compaction. ``message`` may be the
        exception itself; ``overflow=True`` says the caller already knows it was a refusal as too
        long (a framework's own error class for it), whatever its words."""
        message = str(message)
        if not overflow and not is_overflow(message):
            return False
        parsed = parse_overflow(message)
        if parsed is not None:
            tokens, limit = parsed
            if limit < self.policy.window:
                self.policy = make_policy(limit, max_tokens=None, buffer=self.buffer)
                self.state.set("window_limit", limit)
            self._learn(tokens)
        self.state.set("forced", True)
        return True

    def _learn(self, real: int) -> None:
        last = self.state.get("last_heuristic")
        self.state.set("real_tokens", real)
        if last:
            self.calibrator.observe(int(last), real)
            self.state.set("calibration", {"name": self.calibrator.name, "points": self.calibrator.history})


KEYS_TO_RESET = (
    "summary",
    "continuation",
    "contents_at_compaction",
    "summarized_at",
    "real_tokens",
    "last_heuristic",
    "calibration",
    "conversation",
    "window_limit",
    "forced",
)
