"""What a model-written summary must carry, and the check that it did.

A model asked to summarize paraphrases: it turns "never commit .env" into "be careful with
secrets", drops a request it found minor, says "continue" when the last message was a question.
So the remote summarizers get the facts the offline digest extracts (where things stand, the
user's rules and requests verbatim, exact values, the last deliverable) in their prompt, and
their answer is checked against them: a rule or request missing from it is appended verbatim,
without another model call (the Gemini CLI checks its state snapshot with a second call; a
string check is free and cannot itself paraphrase).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ctxfold.providers.base import SummaryRequest
from ctxfold.providers.deliverable import first_and_last
from ctxfold.providers.facts import gather
from ctxfold.providers.rules import standing_rules
from ctxfold.providers.standing import WAITING, Standing, assess

REQUEST_CHARS = 600
VALUES = 40
KEPT_HEADING = "## Kept verbatim by ctxfold (missing from the summary above)"


@dataclass(frozen=True)
class Carry:
    standing: Standing
    rules: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # oldest first; the newest whole
    values: list[str] = field(default_factory=list)
    deliverable: str | None = None


def extract(request: SummaryRequest) -> Carry:
    facts = gather(request.messages)
    texts = [t for _, t in facts.requests]
    requests = [first_and_last(t, REQUEST_CHARS) for t in texts[:-1]] + texts[-1:]
    values = [v.text for v in facts.values.items()][-VALUES:]
    standing = assess(request.messages)
    deliverable = standing.deliverable[1] if standing.deliverable else None
    return Carry(standing, standing_rules(t for _, t in facts.said), requests, values, deliverable)


def facts_block(carry: Carry, deliverable_chars: int) -> str:
    """The facts as the prompt gives them to the model."""
    st = carry.standing
    lines = [f"Where things stand: {st.label} ({st.reason})."]
    if st.state == WAITING and st.question:
        lines.append(f"The question the user has not answered yet: {st.question}")
    if st.running:
        lines.append(
            "Still running in the background when the log ends (say so under Current State: a resumed "
            "session gets none of their notices): " + "; ".join(st.running)
        )
    if carry.rules:
        lines.append('The user\'s standing rules (quote each verbatim under "## User Rules (verbatim)"):')
        lines += [f"- {r}" for r in carry.rules]
    if carry.requests:
        lines.append(
            'Every user request, oldest first (quote each verbatim under "## User Requests (verbatim)"):'
        )
        lines += [f"- {' '.join(r.split())}" for r in carry.requests]
    if carry.values:
        lines.append("Exact values to keep as they are: " + ", ".join(f"`{v}`" for v in carry.values))
    if carry.deliverable:
        text = carry.deliverable
        if len(text) > deliverable_chars:
            text = text[:deliverable_chars].rsplit("\n", 1)[0] + "\n[… the rest is in the conversation]"
        earlier = (
            " (the answer to an earlier request, not to the newest one)" if st.earlier_deliverable else ""
        )
        lines.append(
            f'The last deliverable{earlier} (keep it whole under "## Last Deliverable (verbatim)" if it fits):\n{text}'
        )
    return "\n".join(lines)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[`*“”\"'>]", "", text).lower().split())


def complete(summary: str, carry: Carry) -> tuple[str, int]:
    """``summary`` with every rule and request it lacks appended verbatim, and how many were."""
    have = _norm(summary)
    missing_rules = [r for r in carry.rules if _norm(r) not in have]
    missing = [r for r in carry.requests if _norm(r)[:120] not in have]
    if not missing_rules and not missing:
        return summary, 0
    out = [summary.rstrip(), "", KEPT_HEADING]
    if missing_rules:
        out.append("- The user's rules:")
        out += [f"  - “{r}”" for r in missing_rules]
    if missing:
        out.append("- The user's requests, oldest first:")
        out += [
            "\n".join(f"    {ln}" if n else f"  - {ln}" for n, ln in enumerate(r.splitlines()))
            for r in missing
        ]
    return "\n".join(out) + "\n", len(missing_rules) + len(missing)
