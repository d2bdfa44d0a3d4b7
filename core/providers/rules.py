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

from ctxfold.providers.deliverable import SENTENCE_END

_RULE = re.compile(
    r"\b(?:always|never|don'?t|do not|dont|must(?:n'?t| not)?|should(?:n'?t| not)|shud(?:n'?t| not)|"
    r"no more|stop \w+ing|avoid|make sure|be sure|remember to|from now on|going forward|"
    r"every time|each time|whenever|only use|prefer|instead of|rather than|reply in|respond in|"
    r"answer in|write in|speak in|keep (?:it|them|the|this|that|everything|using)|without\b|"
    r"(?:use|used?)\s+\S+(?:\s+\S+){0,4}?,?\s+not\b|not\s+\S+(?:\s+\S+)?,\s+(?:use|but)\b|"
    r"focus on|i will handle|i'll handle|leave (?:the|it)|do(?:n'?t| not) (?:touch|change|modify|use|add|commit|push))",
    re.I,
)
# the same in the languages users most often write to a coding agent in; Chinese, Japanese and
# Korean have no spaces for \b to find, so their words match anywhere
_RULE_ELSEWHERE = re.compile(
    r"不要|請勿|请勿|禁止|必須|必须|務必|务必|一定要|千萬|千万|絕不|绝不|永遠不|永远不|總是|总是|始終|始终|"
    r"記得|记得|確保|确保|避免|不准|不許|不许|不可以|(?<![分特区區类類级級识識辨性告])别|(?<![分特区區类類级級识識辨性告])別|"
    r"しないで|ないでください|必ず|絶対に|決して|常に|してはいけ|"
    r"하지\s?마|마세요|반드시|항상|절대|금지|"
    r"\b(?:siempre|nunca|jamás|asegúrate|evita|en lugar de|no (?:uses|hagas|toques|cambies|borres|agregues)|"
    r"sempre|certifique-se|garanta|evite|em vez de|não (?:use|faça|mexa|mude|altere|apague)|"
    r"toujours|jamais|assure-toi|assurez-vous|évite[rz]?|au lieu de|ne (?:touche|modifie|change|supprime)|"
    r"immer|niemals|stelle sicher|achte darauf|vermeide|anstatt|statt|keine? \w+ verwenden|"
    r"jangan|selalu|harus|wajib|pastikan|hindari|tidak boleh)\b",
    re.I,
)
# words that look like a rule and only report: "I don't think…", "is defined but never invoked"
_NOT_RULE = re.compile(
    r"\b(?:i|we)\s+(?:do not|don'?t|dont)\s+(?:think|see|know|understand|get|remember|believe|mind|care)\b"
    r"|\bnever\s+\w+ed\b",
    re.I,
)
_EMPHASIS = re.compile(r"\b(?:NEVER|ALWAYS|MUST(?: NOT)?|MANDATORY|DO NOT|DON'T|FORBIDDEN|IMPORTANT)\b")
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
    lines = _unwrapped(text).splitlines()
    out = (s.strip().strip(" -*•\t") for line in lines for s in SENTENCE_END.split(line) if s)
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
    if any(not _reports(plain, m) for m in _RULE.finditer(plain)) or _RULE_ELSEWHERE.search(s):
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
