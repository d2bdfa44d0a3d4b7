"""What ``compact_cmds``' commands print on a terminal: a compaction and the command that carries
on from it, a validation, the settings in force. Their ``--json`` documents are emitted by
``render.emit_json``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ctxfold.cli import render
from ctxfold.cli.errors import SKIP_HINT

if TYPE_CHECKING:
    from ctxfold.compaction.run import CompactResult
    from ctxfold.formats.base import CarryOn
    from ctxfold.formats.validate import Validation


def compact(r: CompactResult) -> None:
    from rich.text import Text

    from ctxfold.compaction.doc import compact_doc

    d = compact_doc(r)
    for w in d["warnings"]:
        render.warn(w)
    for s in d["skipped_lines"]:
        render.warn(f"skipped {s}")
    head = Text.assemble((r.path, "bold"), f"  ({r.format}{', incremental' if r.incremental else ''})")
    render.out.print(head)
    pred = f"{r.tokens_before:,} predicted tokens (counted {r.estimate_before:,}); threshold {r.policy.threshold:,}"

    def notes() -> None:
        for n in r.notes:
            render.out.print(Text(f"  note         {n}"))

    if r.status == "not-due":
        render.out.print(Text(f"  not due: {pred}. Nothing written (--force compacts anyway)."))
        notes()
        return
    if r.status == "up-to-date":
        render.out.print(
            Text(f"  up to date: nothing new since the last compaction ({r.outputs.state}). Nothing written.")
        )
        notes()
        return
    if r.status == "dry-run":
        render.out.print(Text(f"  would compact with {r.strategy}: {pred}, {r.messages_before:,} messages"))
        if r.tokens_after is not None:  # a pass that needs no summarizer was run: its result
            render.out.print(
                Text(f"  to {r.tokens_after:,} predicted tokens, {r.messages_after or 0:,} messages")
            )
        for k in ("compacted", "summary", "state"):
            if d["would_write"] is None:  # stdin without -o
                render.out.print(Text("  would write  nothing: compacting stdin needs -o/--output"))
                break
            render.out.print(Text(f"  would write  {d['would_write'][k]}"))
        notes()
        return
    after = r.tokens_after or 0
    render.out.print(
        Text(
            f"  compacted ({r.strategy}): {r.tokens_before:,} → {after:,} predicted tokens, "
            f"{r.messages_before:,} → {r.messages_after or 0:,} messages ({1 - after / max(1, r.tokens_before):.0%} smaller)"
        )
    )
    if d["summarizer"]:
        sm = d["summarizer"]
        usage = sm["usage"]
        used = (
            f"; used {usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out"
            if usage
            else ""
        )
        render.out.print(
            Text(f"  summarizer   {sm['provider']}{' / ' + sm['model'] if sm['model'] else ''}{used}")
        )
    notes()
    for k, label in (("compacted", "transcript"), ("summary", "summary"), ("state", "state")):
        render.out.print(Text(f"  {label:<12} {d['outputs'][k]}"))
    if r.carry_on is not None:
        carry_on(r.carry_on)


def carry_on(c: CarryOn) -> None:
    """The command that resumes the compacted session, runnable as printed."""
    import shlex

    from rich.text import Text

    command = shlex.join(c.command)
    if c.cwd:
        command = f"cd {shlex.quote(c.cwd)} && {command}"
    if c.installed:
        render.out.print(Text(f"  installed    {c.install_to} (session {c.session_id})"))
    render.out.print(Text(f"  carry on     {command}", style="bold"), soft_wrap=True)
    if not c.ready:
        render.out.print(
            Text(
                f"               after --install, which places it at {c.install_to} for {c.harness} to find"
            ),
            soft_wrap=True,
        )
    if c.cwd and not os.path.isdir(c.cwd):
        render.out.print(
            Text(
                f"               (the session ran in {c.cwd}, not a folder of this machine: "
                f"{c.harness} looks a session up by the folder it ran in)"
            ),
            soft_wrap=True,
        )


def validation(results: Sequence[Validation]) -> None:
    """One line per file, then one line per violation whatever the width (never wrapped, so
    ``grep`` and editors can take them as ``path:line: message``). A file that could not be
    read as a whole (empty, unknown format) is that one line, worded as the other commands'
    errors are."""
    from rich.text import Text

    def line(text: str) -> None:
        render.out.print(Text(text), soft_wrap=True)

    for v in results:
        for w in v.warnings:
            render.warn(f"{v.path}: {w}")
        for s in v.skipped:
            render.warn(f"skipped {s}")
        if v.ok:
            line(f"{v.path}: ok ({v.format}, {v.entries:,} entries)")
            continue
        if len(v.violations) == 1 and v.violations[0].line == 0:
            line(f"{v.path}: {v.violations[0].message}")
            continue
        line(f"{v.path}: {len(v.violations)} violation(s)" + (f" ({v.format})" if v.format else ""))
        for x in v.violations:
            line(f"  {v.path}{f':{x.line}' if x.line else ''}: {x.message}")
        if v.unread_from is not None:
            line(f"  nothing after line {v.unread_from} was checked ({SKIP_HINT})")


def config(doc: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    for w in doc["warnings"]:
        render.warn(w)
    render.out.print(
        Text(f"config file: {doc['config_file'] or 'none'} (searched: {', '.join(doc['searched'])})")
    )
    t = Table(show_edge=False, pad_edge=False, box=None)
    t.add_column("setting")
    t.add_column("value")
    t.add_column("from")
    for k, v in doc["settings"].items():
        t.add_row(k, "—" if v["value"] is None else str(v["value"]), v["source"])
    for k, v in doc["keys"].items():
        t.add_row(k, v["value"] or "—", v["source"])
    render.out.print(t)
    for name, conf in doc["models"].items():
        render.out.print(Text(f"model {name}: {conf}"))
    for name, conf in doc["prices"].items():
        render.out.print(Text(f"price {name}: {conf} (USD per million tokens)"))
