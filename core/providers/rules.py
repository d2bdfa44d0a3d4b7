"""The user's standing rules: instructions that hold for the rest of the session.

"Always …", "never …", "don't …", "use X, not Y", "reply in …", "make sure …": a summary that
trims them with the older requests lets the next agent break them. They are taken verbatim,
sentence by sentence, from the user's own words (requests, and reasons given when rejecting a
tool call or a plan); what the harness re-injects by itself (CLAUDE.md, AGENTS.md) is not the
user's words and is not repeated. A long pasted document (a spec, a log) contributes only its
emphasised rules (NEVER, ALWAYS, MUST, DO NOT…), a few at most: its text stays in the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_RULE = re.compile(
    r"\b(?:always|never|don'?t|do not|dont|must(?:n'?t| not)?|should(?:n'?t| not)|shud(?:n'?t| not)|"
    r"no more|stop \w+ing|avoid|make sure|be sure|remember to|from now on|going forward|"
    r"every time|each time|whenever|only use|prefer|instead of|rather than|reply in|respond in|"
    r"answer in|write in|speak in|keep (?:it|them|the|this|that|everything|using)|without\b|"
    r"(?:use|used?)\s+\S+(?:\s+\S+){0,4}?,?\s+not\b|not\s+\S+(?:\s+\S+)?,\s+(?:use|but)\b|"
    r"focus on|i will handle|i'll handle|leave (?:the|it)|do(?:n'?t| not) (?:touch|change|modify|use|add|commit|push))",
    re.I,
)
# words that look like a rule and only report: "I don't think…", "is defined but never invoked"
_NOT_RULE = re.compile(
    r"\b(?:i|we)\s+(?:do not|don'?t|dont)\s+(?:think|see|know|understand|get|remember|believe|mind|care)\b"
    r"|\bnever\s+\w+ed\b",
    re.I,
)
_EMPHASIS = re.compile(r"\b(?:NEVER|ALWAYS|MUST(?: NOT)?|MANDATORY|DO NOT|DON'T|FORBIDDEN|IMPORTANT)\b")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_QUESTION = re.compile(r"[?？][\s\"'”’»)\]]*$")  # a question, within quote marks or brackets too
RULE_CHARS = 300  # a longer "sentence" is a paragraph or a paste: not quoted as a rule
LONG_MESSAGE = 2_000  # past this, a message is a document: only its emphasised rules count
PER_DOCUMENT = 5


_QUOTE = re.compile(r"^\s*(?:>\s*)+")
_NEW_ITEM = re.compile(r"^(?:[-*•#]|\d+[.)])\s")


def _unwrapped(text: str) -> str:
    """Lines joined where the user's text only wrapped (a quoted reply, a hard-wrapped paragraph):
    a rule cut at a line end would be quoted from the middle of its sentence."""
    out: list[str] = []
    for line in (_QUOTE.sub("", raw).rstrip() for raw in text.splitlines()):
        prev = out[-1] if out else ""
        if prev and line and not _NEW_ITEM.match(line) and not re.search(r"[.!?:;。！？]$", prev):
            out[-1] = f"{prev} {line.lstrip()}"
        else:
            out.append(line)
    return "\n".join(out)


def sentences(text: str) -> list[str]:
    out = (s.strip().strip(" -*•\t") for s in _SENTENCE.split(_unwrapped(text)) if s)
    return [s for s in out if s]


# "don't" and "without" also describe ("New events do not appear", "not updating without a restart"):
# an instruction's "don't" opens its clause or follows one of these
_NEGATION = re.compile(r"^(?:do(?:n'?t| not)|dont)\b", re.I)
_LEAD_IN = frozenset(
    {"please", "pls", "plz", "and", "but", "so", "then", "also", "just", "ok", "okay", "now"}
    | {"i", "we", "you", "u", "really", "still", "again", "definitely"}
)
_CONDITION = frozenset({"if", "when", "whenever", "once", "after", "before", "unless", "until", "while"})
_NEEDED = re.compile(r"\s+(?:need|have to|want|require)\b", re.I)
_NEGATED_BEFORE = re.compile(r"(?:\bnot|n't|\bno)(?:\s+\S+){0,3}\s*$", re.I)


def _reports(s: str, m: re.Match[str]) -> bool:
    """Whether the marker ``m`` only describes: a "don't" after its own subject ("the tests don't
    pass"; after "please", "we" or at the clause's start it is still an instruction), or a
    "without" in a negated phrase ("X not updating without a restart")."""
    before = re.split(r"[,;:—(]", s[: m.start()])[-1].split()
    if _NEGATION.match(m.group()):
        if not before or before[-1].lower() in _LEAD_IN or _CONDITION.intersection(w.lower() for w in before):
            return False  # "please don't", "if it fails do not retry"
        return not _NEEDED.match(s[m.end() :])  # "the buttons don't need a border" asks all the same
    if m.group().lower() == "without":
        return bool(_NEGATED_BEFORE.search(" ".join(before)))
    return False


def _is_rule(s: str) -> bool:
    if s.endswith(":") and s.isupper() and len(s.split()) <= 3:
        return False  # a heading ("IMPORTANT:", "ALWAYS VISIBLE:"): the rules under it count on their own
    plain = _NOT_RULE.sub("", s)
    if any(not _reports(plain, m) for m in _RULE.finditer(plain)):
        return True
    marks = set(_EMPHASIS.findall(s))
    return bool(marks) and not (marks == {"IMPORTANT"} and len(s.split()) <= 3)  # "IMPORTANT LIMITS"


def rules_in(text: str) -> list[str]:
    """The rule sentences of one message of the user's, verbatim."""
    long = len(text) > LONG_MESSAGE
    out: list[str] = []
    for s in sentences(text):
        if len(s) > RULE_CHARS or len(s) < 8 or _QUESTION.search(s):
            continue
        if long and not _EMPHASIS.search(s):
            continue
        if _is_rule(s):
            out.append(s)
        if long and len(out) >= PER_DOCUMENT:
            break
    return out


def standing_rules(said: Iterable[str]) -> list[str]:
    """Every rule in the user's words, oldest first, each once."""
    seen: dict[str, str] = {}
    for text in said:
        for rule in rules_in(text):
            seen.setdefault(" ".join(rule.lower().split()), rule)
    return list(seen.values())
