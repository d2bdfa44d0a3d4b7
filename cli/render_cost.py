"""The cost lines of ``report``: the session's bill as recorded, and with compaction simulated.
Plain strings for :func:`ctxfold.cli.render.print_facts`; core computes every figure."""

from __future__ import annotations

from typing import Any


def usd(x: float) -> str:
    """$1,234 / $12.35 / $0.0042: cents where they matter, four places under a cent."""
    if x >= 1000:
        return f"${x:,.0f}"
    return f"${x:.2f}" if x >= 0.01 or x == 0 else f"${x:.4f}"


def recorded(cost: dict[str, Any]) -> str:
    """``$13.51 for 184 calls (cache reads $6.98, cache writes $5.40, output $1.10, input $0.03)``,
    with the calls no price covers named."""
    calls, unpriced = cost["calls"], cost["unpriced_calls"]
    if not calls:
        return "no usage recorded: nothing to price"
    bill = cost["recorded"]
    missing = f'no price for {", ".join(cost["unpriced_models"])}: add [prices."NAME"] to ctxfold.toml'
    if bill is None:
        return missing
    text = f"{usd(bill['total'])} for {_calls(calls - unpriced)} ({_parts(bill)})"
    return f"{text}; {_calls(unpriced)} not priced ({missing})" if unpriced else text


def simulated(cost: dict[str, Any]) -> str | None:
    """``$13.59 with compaction (+0.6%; the summarizer $0.41)``, or None without a simulated bill."""
    before, after = cost["recorded"], cost["simulated"]
    if before is None or after is None:
        return None
    change = after["total"] / before["total"] - 1 if before["total"] else 0.0
    share = f"; the summarizer {usd(after['summarizer'])}" if after.get("summarizer") else ""
    return f"{usd(after['total'])} with compaction ({change:+.1%} against the log{share})"


def _parts(bill: dict[str, Any]) -> str:
    names = {"input": "input", "cache_write": "cache writes", "cache_read": "cache reads", "output": "output"}
    parts = sorted(names, key=lambda k: -bill[k])
    return ", ".join(f"{names[k]} {usd(bill[k])}" for k in parts if bill[k] or k in ("input", "output"))


def _calls(n: int) -> str:
    return f"{n:,} call{'' if n == 1 else 's'}"


def billed(u: dict[str, Any]) -> str:
    """``184 calls, 2026-04-26 21:55 → 23:18: input 687, output 107,597, cache writes 438,575,
    cache reads 13,959,878``: every billed call's tokens, by how they are billed, and when."""
    from ctxfold.engine.usage import parse_time

    if not u["calls"]:
        return "no usage recorded"
    span = ""
    first, last = (parse_time(u[k]) if u[k] else None for k in ("first", "last"))
    if first is not None and last is not None:
        end = last.strftime("%H:%M" if last.date() == first.date() else "%Y-%m-%d %H:%M")
        span = f", {first:%Y-%m-%d %H:%M} → {end}"
    return (
        f"{u['calls']:,} call{'' if u['calls'] == 1 else 's'}{span}: input {u['input_tokens']:,}, "
        f"output {u['output_tokens']:,}, cache writes {u['cache_write_tokens']:,}, "
        f"cache reads {u['cache_read_tokens']:,}"
    )
