"""The ``compact --json`` document: what a compaction did, or would do, as plain data."""

from __future__ import annotations

from typing import Any

from ctxfold.compaction.run import CompactResult


def compact_doc(r: CompactResult) -> dict[str, Any]:
    s = r.summary
    return {
        "status": r.status,
        "path": r.path,
        "format": r.format,
        "written_format": r.outputs.written_format,
        "incremental": r.incremental,
        "strategy": r.strategy,
        "threshold": r.policy.threshold,
        "window": r.policy.window,
        "tokens_before": r.tokens_before,
        "tokens_after": r.tokens_after,
        "estimate_before": r.estimate_before,
        "estimate_after": r.estimate_after,
        "messages_before": r.messages_before,
        "messages_after": r.messages_after,
        "outputs": None
        if r.status != "compacted"
        else {
            "compacted": str(r.outputs.compacted),
            "summary": str(r.outputs.summary),
            "state": str(r.outputs.state),
        },
        "would_write": None
        if r.status == "compacted" or not r.outputs.named
        else {
            "compacted": str(r.outputs.compacted),
            "summary": str(r.outputs.summary),
            "state": str(r.outputs.state),
        },
        "summarizer": None if s is None else {"provider": s.provider, "model": s.model, "usage": s.usage},
        "carry_on": None
        if r.carry_on is None
        else {
            "harness": r.carry_on.harness,
            "session_id": r.carry_on.session_id,
            "cwd": r.carry_on.cwd,
            "command": list(r.carry_on.command),
            "install_to": str(r.carry_on.install_to) if r.carry_on.install_to else None,
            "installed": r.carry_on.installed,
        },
        "notes": r.notes,
        "warnings": [*r.warnings, *(s.warnings if s else [])],
        "skipped_lines": r.skipped,
    }
