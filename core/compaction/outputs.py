"""The three outputs of ``compact`` and how they are written.

``NAME.compacted.jsonl`` (the input's own format), ``NAME.summary.md`` and ``NAME.ctxfold.json``
go next to the input, in ``--out-dir``, or next to ``-o OUT``. All three are rendered in memory
first and then each is written atomically, so a failure anywhere leaves no partial file; an
existing output is replaced only with ``force`` (or when it belongs to this state file's run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxfold.atomic import write_atomic
from ctxfold.compaction.statefile import State
from ctxfold.errors import OutputError, UsageError
from ctxfold.formats.registry import writer
from ctxfold.transcript.model import Transcript


@dataclass(frozen=True)
class Outputs:
    compacted: Path
    summary: Path
    state: Path
    written_format: str | None = None
    named: bool = True  # False for stdin without -o: there is no name to write them under


def outputs_for(path: str, *, out_dir: str | None = None, output: str | None = None) -> Outputs:
    if output:
        if output.endswith(("/", "\\")) or Path(output).is_dir():
            raise UsageError(f"-o {output} is a folder: -o names the compacted file, --out-dir a folder")
        out = Path(output)
        base = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
        base = base[: -len(".compacted")] if base.endswith(".compacted") else base
        outs = Outputs(out, out.with_name(f"{base}.summary.md"), out.with_name(f"{base}.ctxfold.json"))
    else:
        src = Path(path)
        stem = src.name[: -len(".jsonl")] if src.name.endswith(".jsonl") else src.stem
        folder = Path(out_dir) if out_dir else src.parent
        if out_dir and folder.exists() and not folder.is_dir():
            raise UsageError(f"--out-dir {out_dir} is a file, not a folder")
        outs = Outputs(
            folder / f"{stem}.compacted.jsonl",
            folder / f"{stem}.summary.md",
            folder / f"{stem}.ctxfold.json",
            named=path != "-",
        )
    if path != "-":
        for out_path in (outs.compacted, outs.summary, outs.state):
            if _same_file(out_path, Path(path)):
                raise OutputError(f"{out_path} is the input itself: ctxfold never writes to its input")
    return outs


def _same_file(a: Path, b: Path) -> bool:
    """The same file, also through a symlink, a hard link or another spelling of the path."""
    try:
        return a.samefile(b)
    except OSError:  # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def render_transcript(t: Transcript, to: str | None = None) -> tuple[str, bytes]:
    """The transcript in its own format (or ``to``'s), and the format it was written in."""
    fmt, module = writer(to or t.source_format)
    return fmt, b"".join(line + b"\n" for line in module.write(t))


def render_summary(state: State, compacted: Path, fmt: str) -> bytes:
    last = state.passes[-1]
    lines = [
        f"# ctxfold summary of {state.source_name}",
        "",
        f"- format: {state.source_format} (compacted transcript written as {fmt}: `{compacted.name}`)",
        f"- session: {state.session_id or '—'}",
        f"- strategy: {state.strategy}; summarizer: {state.provider}{' / ' + state.model if state.model else ''}"
        if state.summary.strip()
        else f"- strategy: {state.strategy}; no summarizer was called",
        f"- request size: {last.tokens_before:,} → {last.tokens_after:,} predicted tokens",
        f"- covers the first {state.watermark:,} entries of the source (pass {len(state.passes)})",
        "",
        state.summary.strip() or "_(no summary: the strategy did not call a summarizer)_",
        "",
    ]
    return "\n".join(lines).encode()


def ensure_writable(outs: Outputs, *, force: bool) -> None:
    existing = [p for p in (outs.compacted, outs.summary, outs.state) if p.exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise OutputError(f"{names} already exist(s); pass --force to replace")


def write_outputs(
    outs: Outputs, compacted: Transcript, state: State, *, force: bool, to: str | None = None
) -> Outputs:
    ensure_writable(outs, force=force)
    fmt, transcript_bytes = render_transcript(compacted, to)
    summary_bytes = render_summary(state, outs.compacted, fmt)
    state_bytes = state.to_json()
    for path, data in (
        (outs.compacted, transcript_bytes),
        (outs.summary, summary_bytes),
        (outs.state, state_bytes),
    ):
        write_atomic(path, data)
    return Outputs(outs.compacted, outs.summary, outs.state, fmt)
