"""ctxfold's LangChain middleware against LangChain's own ``SummarizationMiddleware``, side by
side on the same scripted long conversation.

    python bench/adapters.py                      # 30 turns, 3 tool calls each, a 16k limit
    python bench/adapters.py --turns 60 --limit 32000 --seed 2

A real LangChain agent (``create_agent``, its tool node, an in-memory checkpointer) runs the same
user turns against a scripted chat model: each turn it calls ``read_file`` three times (outputs
of a seeded random 150-2,000 words) and then answers. The model counts each request its own way
and refuses one above the limit with ``ContextOverflowError``, as LangChain's provider packages
raise it; a turn whose error reaches the caller is counted as failed and the next turn goes on.
Two counting rules are run: the request's JSON characters / 3 (dense text, as code and JSON are
for Claude's tokenizer) and / 4 (what LangChain's approximate counter assumes). The model
reports each count as usage and names its provider, so LangChain's counter may scale itself by
the reported usage as it does with a real provider package.

Columns: ctxfold's ``ContextGuardMiddleware`` (threshold = window − 20 %, the offline digest as
its summary, and again with a summary written by the model), and ``SummarizationMiddleware``
with its trigger at 80 % of the limit, keeping its default 20 messages, and keeping 2,000 tokens.
Nothing is asserted and no time is measured: the figures are counts of the same run. "Summaries
made" counts ctxfold's distinct summaries at the head of its requests (the digest needs no model
call) and SummarizationMiddleware's summary calls; "requests extending the last" counts agent
requests that begin with the whole previous request, the ones a provider's prompt cache serves.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfold.adapters.langchain import ContextGuardMiddleware
from ctxfold.providers.base import SummaryRequest, SummaryResult
from ctxfold.strategies.summary import SUMMARY_OPEN

WORDS = [
    "parse",
    "token",
    "window",
    "summary",
    "request",
    "agent",
    "tool",
    "result",
    "cache",
    "context",
    "fold",
    "guard",
]
SUMMARY_WORDS = 250  # what the model writes when asked for a summary, for every contestant


@dataclass
class Tally:
    requests: int = 0  # agent model calls (refused ones included)
    refused: int = 0
    summaries: int = 0  # model calls spent writing a summary
    failed_turns: int = 0
    tokens: int = 0  # the provider's count of everything sent, summaries and refusals included
    largest: int = 0
    heads: set[str] = field(default_factory=set)  # ctxfold's summaries seen at a request's head
    extends: int = 0  # agent requests that start with the whole previous request (a cache hit)
    last: list[Any] = field(default_factory=list)


class Scripted(BaseChatModel):
    """Three ``read_file`` calls per user turn, then an answer; a summary when asked for one."""

    limit: int
    chars_per_token: int
    tally: Tally
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        return {**super()._get_ls_params(stop=stop, **kwargs), "ls_provider": "scripted"}

    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
        return self

    def count(self, payload: Any) -> int:
        n = len(json.dumps(payload, default=str)) // self.chars_per_token
        self.tally.tokens += n
        self.tally.largest = max(self.tally.largest, n)
        if n > self.limit:
            raise ContextOverflowError(f"prompt is too long: {n} tokens > {self.limit} maximum")
        return n

    def summary(self, text: str) -> str:
        self.tally.summaries += 1
        self.count(text)
        return f"Summary {self.tally.summaries}: " + " ".join(
            WORDS[i % len(WORDS)] for i in range(SUMMARY_WORDS)
        )

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        sent = convert_to_openai_messages(messages)
        if "Context Extraction Assistant" in json.dumps(sent):  # SummarizationMiddleware's prompt
            text = self.summary(json.dumps(sent))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
        self.tally.requests += 1
        try:
            n = self.count(sent)
        except ContextOverflowError:
            self.tally.refused += 1
            raise
        body = [m for m in sent if m["role"] != "system"]
        if body and str(body[0].get("content", "")).startswith(SUMMARY_OPEN):
            self.tally.heads.add(str(body[0]["content"]))
        self.tally.extends += bool(self.tally.last) and sent[: len(self.tally.last)] == self.tally.last
        self.tally.last = sent
        if self.calls < 3:
            self.calls += 1
            k = self.tally.requests
            reply = AIMessage(
                content="",
                tool_calls=[{"name": "read_file", "args": {"path": f"src/f{k}.py"}, "id": f"call_{k}"}],
            )
        else:
            self.calls = 0
            reply = AIMessage(content="Done: read the three files and noted what matters.")
        reply.usage_metadata = {"input_tokens": n, "output_tokens": 12, "total_tokens": n + 12}
        reply.response_metadata = {"model_provider": "scripted"}
        return ChatResult(generations=[ChatGeneration(message=reply)])


def model_summarizer(model: Scripted) -> Callable[[SummaryRequest], SummaryResult]:
    """ctxfold's summary written by the same model: it is sent the folded conversation's text."""

    def summarize(request: SummaryRequest) -> SummaryResult:
        text = "\n".join(f"{m.role}: {m.text}" for m in request.messages)
        return SummaryResult(model.summary(text), provider="scripted")

    return summarize


def run(name: str, limit: int, cpt: int, turns: int, seed: int) -> Tally:
    tally = Tally()
    model = Scripted(limit=limit, chars_per_token=cpt, tally=tally)
    sizes = random.Random(seed)
    outputs: dict[str, str] = {}

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        if path not in outputs:
            words = sizes.randint(150, 2_000)
            outputs[path] = " ".join(WORDS[sizes.randrange(len(WORDS))] for _ in range(words))
        return outputs[path]

    trigger = ("tokens", int(limit * 0.8))
    middleware: Any = {
        "ctxfold, digest": lambda: ContextGuardMiddleware("gpt-4o", window=limit),
        "ctxfold, model summary": lambda: ContextGuardMiddleware(
            "gpt-4o", window=limit, summarizer=model_summarizer(model), summarizer_window=limit
        ),
        "Summ., keep 20 msgs": lambda: SummarizationMiddleware(model, trigger=trigger),
        "Summ., keep 2k tokens": lambda: SummarizationMiddleware(
            model, trigger=trigger, keep=("tokens", 2_000)
        ),
    }[name]()
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt="You are a careful coding agent.",
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": name}}
    for i in range(turns):
        model.calls = 0
        try:
            agent.invoke(
                {"messages": [{"role": "user", "content": f"Task {i}: read the next three files."}]}, config
            )
        except ContextOverflowError:
            tally.failed_turns += 1
    return tally


NAMES = ["ctxfold, digest", "ctxfold, model summary", "Summ., keep 20 msgs", "Summ., keep 2k tokens"]
ROWS = [
    ("agent requests", lambda t: t.requests),
    ("requests that overflowed", lambda t: t.refused),
    ("turns that failed", lambda t: t.failed_turns),
    ("summaries made", lambda t: len(t.heads) or t.summaries),
    ("model calls for summaries", lambda t: t.summaries),
    ("tokens sent in total", lambda t: t.tokens),
    ("largest request (tokens)", lambda t: t.largest),
    ("requests extending the last", lambda t: t.extends),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--limit", type=int, default=16_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    anchor = NAMES[2]
    for cpt in (3, 4):
        print(
            f"\n{args.turns} turns x 3 tool calls, provider limit {args.limit:,} tokens, provider counts JSON chars / {cpt}"
        )
        tallies = {n: run(n, args.limit, cpt, args.turns, args.seed) for n in NAMES}
        print(f"{'':28}" + "".join(f"{n:>24}" for n in NAMES))
        for label, get in ROWS:
            print(f"{label:28}" + "".join(f"{get(tallies[n]):>24,}" for n in NAMES))
        base = tallies[anchor].tokens or 1
        print(f"{'tokens sent vs anchor':28}" + "".join(f"{tallies[n].tokens / base:>24.2f}" for n in NAMES))
    print(f"\nanchor: {anchor} (SummarizationMiddleware as configured by default, trigger at 80 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
