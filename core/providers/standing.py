"""Where things stand at the end of a conversation: waiting for the user, in progress, or done.

The next agent acts on it. Told "continue" when the last message offered the user a choice,
it picks one for them; when the work was reported done, it redoes or extends it. So the state
is read from the last turns, not assumed:

- **in progress**: a tool call has no result yet, the agent was acting (tool results it has not
  answered), its last message announces a next step it never took or stops mid-sentence, or the
  user's newest request has no answer yet;
- **waiting**: the last message asks the user something (a question, options, a request for
  approval); the question is quoted;
- **done**: the last message delivers (a report, an answer) and asks nothing, or the agent
  called a finishing tool.

Harness text after the last message (reminders, notifications, a ``!command``'s output) does not
change the state; Claude Code's own "No response requested." is not the assistant's message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxfold.providers.background import Background
from ctxfold.providers.calls import inner_calls, tool_key
from ctxfold.providers.deliverable import SENTENCE_END
from ctxfold.providers.facts import file_actions, shell_command
from ctxfold.providers.harness import is_synthetic, user_words
from ctxfold.transcript.model import Message, ToolCallPart

WAITING, IN_PROGRESS, DONE, STOPPED = "waiting", "in_progress", "done", "stopped"
LABELS = {
    WAITING: "waiting for the user",
    IN_PROGRESS: "in progress",
    DONE: "done",
    STOPPED: "stopped by the user",
}
STOPPED_REASON = "the user stopped the assistant before it finished"
_INTERRUPT_NOTES = ("[Request interrupted by user", "<turn_aborted>")  # Claude Code's, Codex's: Esc pressed
FINISH_TOOLS = frozenset({"finish", "attemptcompletion", "taskcomplete", "complete", "submit", "done"})
SUBSTANTIAL = 200  # characters: a deliverable, not a one-line acknowledgement
REPLY_CHARS = 200  # a newest request this short may only make sense with the question it answers
_ASKS = re.compile(
    r"\b(?:want me to|should i|shall i|would you like|do you want|would you prefer|which (?:one|option|of these|approach)"
    r"|let me know (?:which|whether|if you want|if you'd like|when you want|how)|please (?:confirm|choose|pick|approve|review and)"
    r"|(?:can|could) you (?:confirm|tell me|share|provide|clarify)|your call|call it|approve|go ahead\?|ok to proceed|options?:"
    r"|waiting (?:for|on) (?:you|your)\b)",
    re.I,
)
_COURTESY = re.compile(
    r"(?:let me know if you (?:need|want|have) (?:anything|any|more|further|other)|if you have any (?:other )?questions"
    r"|anything else\??$|happy to help|feel free to)",
    re.I,
)
_ANNOUNCES = re.compile(
    r"^(?:now,? )?(?:let me|let's|i'll|i will|i'm going to|i am going to|next,? i(?:'ll| will)|now i(?:'ll| will)|going to)\b"
    r"|^(?:now|next),? (?!that\b|nothing\b)\w+ing\b",  # "Now fetching issues.": a step it has begun
    re.I,
)
_NOT_A_STEP = re.compile(r"\b(?:let me know|wait|leave|stop|keep (?:it|this|that)|hold off)\b", re.I)
_PARAGRAPH = re.compile(r"\n\s*\n")
# while a background task runs: waiting on it (not "waiting for your go-ahead"), or a progress
# report ("Chunk 9 done. 4 chunks of PRs left, then issues.")
_WAITS = re.compile(
    r"^(?:still )?waiting\b(?![^\n]*\b(?:you|your)\b)|\b[1-9]\d*\s+(?:[\w-]+\s+){0,3}(?:left|remaining|to go)\b",
    re.I,
)


@dataclass
class Standing:
    state: str
    reason: str
    question: str | None = None  # waiting: the words to put to the user again
    request: tuple[int, str] | None = None  # the newest request (index, text)
    reply: tuple[int, str] | None = None  # the assistant's last own words (index, text)
    deliverable: tuple[int, str] | None = None  # the last substantial message that ended a turn
    pending: list[str] = field(default_factory=list)  # tool calls with no result
    tail_start: int | None = None  # in progress: where the exchange under way starts
    answers: str | None = None  # in progress: the question a short newest request ("yes please") answers
    running: list[str] = field(default_factory=list)  # background tasks no notice has ended

    @property
    def label(self) -> str:
        return LABELS[self.state]

    @property
    def earlier_deliverable(self) -> bool:
        """The deliverable answered a request before the newest one, which it is not the answer to."""
        return (
            self.deliverable is not None
            and self.request is not None
            and self.deliverable[0] < self.request[0]
        )


def _described(call: ToolCallPart) -> str:
    """A call as the next agent needs to see it: its command line when it is a shell call, the
    file it writes or reads when it is a file tool ("Write `src/card.tsx`")."""
    cmd = next((shell_command(c) for c in inner_calls(call) if shell_command(c)), None)
    if cmd:
        return f"`{cmd[:200]}`"
    path = next((p for p, _ in file_actions(call)), None)
    return f"{call.name} `{path}`" if path else call.name


def _question(text: str) -> str | None:
    """The words that ask the user something, from the last paragraphs of ``text``."""
    paragraphs = [p.strip() for p in _PARAGRAPH.split(text.strip()) if p.strip()]
    asked: list[str] = []
    for p in paragraphs[-3:]:
        if p.startswith("```"):
            continue
        lines = [s for s in SENTENCE_END.split(p) if s.strip()]
        hits = [
            s
            for s in lines
            if (s.rstrip().endswith(("?", "？")) or _ASKS.search(s)) and not _COURTESY.search(s)
        ]
        if hits:
            asked.append(p if len(p) <= 700 else " ".join(hits))
    return "\n\n".join(asked) if asked else None


def answered_question(request: str, reply: tuple[int, str] | None) -> str | None:
    """The assistant's question that a short newest ``request`` answers ("yes please", "the
    second one"): without it the request means nothing to the next agent."""
    if reply is None or len(request) > REPLY_CHARS:
        return None
    return _question(reply[1])


def _unfinished(text: str) -> bool:
    """The message's last paragraph announces a step ("Let me check…", "Now I'll…") that no
    tool call followed: the agent stopped before taking it."""
    paragraphs = [p for p in _PARAGRAPH.split(text.strip()) if p.strip()]
    last = paragraphs[-1] if paragraphs else ""
    said = [s.strip() for line in last.splitlines() for s in SENTENCE_END.split(line) if s.strip()]
    return any(_ANNOUNCES.search(s) and not _NOT_A_STEP.search(s) for s in said)


def progress_note(m: Message) -> bool:
    """Codex marks the words an agent says between its tool calls (``phase: commentary``) apart
    from its answer (``final_answer``): a note is never the turn's last word."""
    return bool(m.extra) and m.extra.get("phase") == "commentary"


def aborted(m: Message) -> bool:
    """A response the user stopped as it streamed (pi's aborted one, a Gemini CLI turn whose
    request was cancelled): cut off, never a deliverable."""
    return m.role == "assistant" and m.stopped


def failed(m: Message) -> bool:
    """A response the harness sends no more that the user did not stop (pi's, when its stream
    was cut off or refused): none of its tool calls ran, and the model answers afresh."""
    return m.dropped and not m.stopped


def stops(m: Message, before: bool) -> bool:
    """Whether the conversation up to ``m`` ends with the user stopping the assistant (Claude
    Code's interruption note, Codex's ``<turn_aborted>`` developer message, a message the
    reader marks ``stopped``: pi's aborted response, Gemini CLI's cancelled request; tool
    results and harness text written after it keep it so), given ``before``, what this said of
    the conversation up to the message before."""
    if m.stopped:
        return True
    if m.role in ("user", "system"):
        return m.text.lstrip().startswith(_INTERRUPT_NOTES) or (before and not user_words(m))
    if m.role == "assistant":
        return False
    return before and bool(m.tool_results)


def stopped_short(text: str, running: bool, note: bool = False) -> str | None:
    """Why the assistant's last message ``text`` leaves its work under way, if it does: it is a
    progress ``note``, it announces a step it has not taken, or it waits on a background task
    still ``running``."""
    if note:
        return "the assistant's last message is a progress note between steps, not its answer"
    if _unfinished(text):
        return "the assistant's last message announces a step it has not taken"
    if running and _WAITS.search(text.strip().split("\n\n")[-1].strip()):
        return "the assistant is waiting on a background task it started"
    return None


def _turn_final(messages: Sequence[Message], i: int) -> bool:
    """No tool call in message ``i`` and none after it before the next request."""
    if messages[i].tool_calls and not any(tool_key(c.name) in FINISH_TOOLS for c in messages[i].tool_calls):
        return False
    for m in messages[i + 1 :]:
        if user_words(m):
            return True
        if m.role == "assistant" and m.tool_calls and not is_synthetic(m):
            return False
    return True


def assess(messages: Sequence[Message]) -> Standing:
    """Where the conversation in ``messages`` (main branch) stands at its end."""
    main = [(i, m) for i, m in enumerate(messages) if m.branch is None and not failed(m)]
    request = next(((i, t) for i, m in reversed(main) if (t := user_words(m))), None)
    own = [(i, m) for i, m in main if m.role == "assistant" and not is_synthetic(m)]
    reply = next(((i, m.text.strip()) for i, m in reversed(own) if m.text.strip()), None)
    deliverable = next(
        (
            (i, m.text.strip())
            for i, m in reversed(own)
            if len(m.text.strip()) >= SUBSTANTIAL
            and _turn_final(messages, i)
            and not _unfinished(m.text)
            and not progress_note(m)
            and not aborted(m)
        ),
        None,
    )
    answered = {r.call_id for _, m in main for r in m.tool_results}
    # the calls made (a response stopped as it streamed ran none), by message
    made = [(i, c) for i, m in own if not m.dropped for c in m.tool_calls]
    pending = [_described(c) for _, c in made if c.id not in answered]
    last_act = max((i for i, m in own if m.tool_calls or m.text.strip()), default=-1)
    results_after = any(m.tool_results for i, m in main if i > last_act)
    finished = any(tool_key(c.name) in FINISH_TOOLS for i, m in own if i == last_act for c in m.tool_calls)
    background, stopped = Background(), False
    for _, m in main:
        background.add(m)
        stopped = stops(m, stopped)
    running = [t.describe() for t in background.result()]
    s = Standing(
        DONE, "", request=request, reply=reply, deliverable=deliverable, pending=pending, running=running
    )
    if stopped:
        s.state, s.reason = STOPPED, STOPPED_REASON
        return s
    if request is not None and request[0] > last_act:
        s.state, s.reason = IN_PROGRESS, "the user's newest request has no answer yet"
        s.answers = answered_question(request[1], reply)
        return s
    start = max(request[0] + 1 if request else 0, 0)
    if finished:
        s.reason = "the assistant called its finishing tool"
        return s
    calls_open = bool(pending) and any(c.id not in answered for i, c in made if i >= start)
    if calls_open or results_after or (last_act >= 0 and messages[last_act].tool_calls):
        s.state = IN_PROGRESS
        s.reason = (
            "a tool call has no result yet" if calls_open else "the assistant was acting on tool results"
        )
        s.tail_start = _exchange_start(messages, start, last_act)
        return s
    if reply is None:
        s.state, s.reason = IN_PROGRESS, "the assistant has not answered yet"
        return s
    question = _question(reply[1])
    if question:
        s.state, s.reason, s.question = WAITING, "the assistant's last message asks the user", question
        return s
    short = stopped_short(reply[1], bool(s.running), progress_note(messages[reply[0]]))
    if short:
        s.state, s.reason = IN_PROGRESS, short
        s.tail_start = _exchange_start(messages, start, reply[0])
        return s
    s.reason = "the assistant's last message delivers and asks nothing"
    return s


def _exchange_start(messages: Sequence[Message], floor: int, last: int) -> int:
    """The last assistant message with words of its own at or before ``last`` (the step under
    way), not before the newest request; else the first message after the request."""
    for i in range(last, floor - 1, -1):
        m = messages[i]
        if m.role == "assistant" and m.text.strip() and not is_synthetic(m):
            return i
    return floor
