"""The three outputs of ``compact`` and how they are written: as one locked set.

``NAME.compacted.jsonl`` (the input's own format), ``NAME.summary.md`` and ``NAME.ctxfold.json``
go next to the input, in ``--out-dir``, or next to ``-o OUT``. One ``compact`` at a time holds
the set's lock (``.NAME.ctxfold.lock`` beside them) from the existence check to the last write,
so two runs never both write it. Each is written atomically (a temp file renamed when whole; the
transcript streams into its temp file as the writer yields its lines, hashed on the way), the
state last, naming the other two by their sha256: a reader that finds them disagreeing knows
the set was never completed, and a failure anywhere leaves no partial file.
An existing output is replaced only with ``force`` (or when it belongs to this state's run).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ctxfold.atomic import atomic_writer, write_atomic
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
    fmt, transcript_sha = write_transcript(outs.compacted, compacted, to)
    summary_bytes = render_summary(state, outs.compacted, fmt)
    hashes = {"compacted": transcript_sha, "summary": _sha256(summary_bytes)}
    state_bytes = replace(state, outputs=hashes).to_json()
    for path, data in ((outs.summary, summary_bytes), (outs.state, state_bytes)):
        write_atomic(path, data)
    return Outputs(outs.compacted, outs.summary, outs.state, fmt)


def write_transcript(path: Path, t: Transcript, to: str | None = None) -> tuple[str, str]:
    """Write ``t`` in its own format (or ``to``'s) line by line as the writer yields them, into
    a temp file renamed over ``path`` only when whole; the format and the file's sha256."""
    fmt, module = writer(to or t.source_format)
    digest = hashlib.sha256()
    try:
        with atomic_writer(path) as f:
            for line in module.write(t):
                data = line + b"\n"
                digest.update(data)
                f.write(data)
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}") from None
    return fmt, digest.hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def set_is_whole(outs: Outputs, state: State) -> bool:
    """The compacted transcript and summary on disk are the ones written with ``state`` (a state
    from before this check existed names none, and is taken at its word)."""
    if not state.outputs:
        return True
    for key, path in (("compacted", outs.compacted), ("summary", outs.summary)):
        try:
            if _sha256(path.read_bytes()) != state.outputs.get(key):
                return False
        except OSError:
            return False
    return True


LOCK_WAIT = 600.0  # seconds a second compact of the same outputs waits before it gives up


@contextlib.contextmanager
def locked(outs: Outputs, wait: float = LOCK_WAIT) -> Iterator[None]:
    """Hold the output set's lock: a second ``compact`` of the same outputs waits for the first
    (then finds them up to date), or after ``wait`` seconds fails saying why. The lock file is
    removed when released; a waiter that then holds a removed file's lock tries again."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Windows: no lock, as before
        yield
        return
    stem = outs.state.name.removesuffix(".ctxfold.json")
    lock = outs.state.with_name(f".{stem}.ctxfold.lock")
    deadline = time.monotonic() + wait
    while True:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as err:
            raise OutputError(f"{lock}: cannot lock the outputs: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() > deadline:
                raise OutputError(
                    f"another ctxfold has been writing {outs.state.parent}/{stem}.* for over {wait:.0f} s "
                    f"(lock {lock}); try again when it is done"
                ) from None
            time.sleep(0.05)
            continue
        if _same_inode(fd, lock):
            break
        os.close(fd)  # its holder removed it as we waited: lock the file that is there now
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(fd)


def _same_inode(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except OSError:
        return False
