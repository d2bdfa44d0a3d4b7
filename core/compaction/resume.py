"""The resume step of ``compact``: a state file from an earlier run is gone on from after its
watermark, its summary first, when it is this session's, its outputs are whole, and the choices
the decision depended on are the same; otherwise the session is decided afresh, or refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxfold.compaction.options import CompactOptions
from ctxfold.compaction.outputs import set_is_whole
from ctxfold.compaction.read import Read
from ctxfold.compaction.statefile import State, entry_sha256, file_hashes, settings_changes
from ctxfold.errors import ChangedPrefixError
from ctxfold.providers.base import Summarizer
from ctxfold.strategies.mask import Premasked
from ctxfold.strategies.masked import MaskedCount
from ctxfold.strategies.streamed import StreamedContext
from ctxfold.strategies.summary import summary_message
from ctxfold.tokens.estimate import FileEstimate
from ctxfold.transcript.context import Context, current_context
from ctxfold.transcript.model import Message


@dataclass(frozen=True)
class Resumed:
    """The context to decide on: after the state's watermark, its summary first (incremental),
    or the whole current context; ``digest`` is (sha256, size) of the input when known."""

    state: State | None
    ctx: Context
    messages: Sequence[Message]  # a list, or a long context's messages as they streamed by
    incremental: bool
    digest: tuple[str, int] | None
    changed: tuple[str, ...] = ()  # the settings that differ from the state's (it was set aside)


def decision_settings(est: FileEstimate, opts: CompactOptions, summarizer: Summarizer) -> dict[str, Any]:
    """What the user chose that the decision and the fold depend on (flags, environment, config
    file): recorded in the state, so a run with other choices (another window, model, strategy,
    summarizer…) is not "up to date". What the session itself decides (the model it switches to,
    the window its log records) is not a choice: a grown session stays incremental."""
    chosen_window = not (
        est.model.window_source in ("recorded in the log", "default")
        or est.model.window_source.startswith(("model registry", "the log's"))
    )
    chosen_model = est.model_source in ("--model", "--model over the log's", "settings")
    masks = "mask-observations" in opts.strategy
    return {
        "model": est.model.name if chosen_model else None,
        "window": est.model.window if chosen_window else None,
        "max_tokens": opts.max_tokens,
        "buffer": opts.buffer,
        "calibration": opts.calibration,
        "strategy": opts.strategy,
        "summarizer": getattr(summarizer, "spec", None) or type(summarizer).__name__,
        "instructions": opts.instructions,
        "keep_observations": opts.keep_observations if masks else None,
        "to": opts.to,
    }


def resume(read: Read, path: str, force: bool, settings: dict[str, Any] | None = None) -> Resumed:
    """The context to decide on. With ``force`` and nothing new since the state's summary, the
    whole session is folded again (``--force`` always redoes, never answers "up to date"); so it
    is when the state was written with other ``settings`` (its summary and outputs are not what
    this run asks for)."""
    outline = read.outline
    if outline is not None and read.state is None:  # a first pass: the context built as it read
        ctx = outline.context
        # a streamed, premasked or counted context is handed on as it is: what it is tells the strategy
        kept_as_read = isinstance(ctx.messages, (StreamedContext, Premasked, MaskedCount))
        messages = ctx.messages if kept_as_read else list(ctx.messages)
        return Resumed(None, ctx, messages, False, None)
    state, start, digest = read.state, 0, None
    changed: list[str] = []
    if state is not None and path != "-":
        state, start, digest = _resume_point(read, state, force)
        if state is not None and settings is not None:
            changed = settings_changes(state.settings, settings)
            if changed:
                state, start = None, 0
    ctx = _context(read, start)
    if force and state is not None and start > 0 and ctx.start == start and not ctx.messages:
        state, start = None, 0
        ctx = _context(read, 0)
    messages = list(ctx.messages)
    incremental = state is not None and start > 0 and ctx.start == start
    if incremental and state is not None:
        messages = [summary_message(state.summary), *messages]
    return Resumed(state, ctx, messages, incremental, digest, tuple(changed))


def _context(read: Read, start: int) -> Context:
    """The context from entry ``start`` on: built as the session was read (an outline holds it
    for every start the state allows), or from the entries kept whole."""
    if read.outline is not None:
        return read.outline.contexts[start]
    return current_context(read.transcript.entries, start)


def _resume_point(read: Read, state: State, force: bool) -> tuple[State | None, int, tuple[str, int] | None]:
    """The state to go on from (None: start over), where the new part starts, and (sha256,
    size) of the whole file as it is now. The same source is the file the state summarized, grown
    (its first bytes unchanged); a rewritten file of the same session is refused unless
    ``force``, which starts over; another session's state is refused even with ``force`` (its
    outputs are another session's: give this one another name or folder). A set whose outputs
    are not those the state was written with (it was never completed) starts over too."""
    t, outs = read.transcript, read.outs
    prefix, whole, size = file_hashes(str(t.path), state.prefix_bytes)
    if prefix != state.prefix_sha256 or size < state.prefix_bytes:
        if state.session_id and t.session_id:  # a renamed copy of the session is still the session
            other = state.session_id != t.session_id
        else:
            other = state.source_name != Path(str(t.path)).name
        if other:
            raise ChangedPrefixError(
                f"{outs.state} belongs to another session ({state.source_name}, session "
                f"{state.session_id or '?'}); give this one another --out-dir or -o"
            )
        if force:
            return None, 0, (whole, size)
        raise ChangedPrefixError(
            f"{t.path}: its first {state.prefix_bytes:,} bytes no longer match the state file's summary (the "
            "file was rewritten, not appended); pass --force to start over"
        )
    wm = state.watermark
    if not set_is_whole(outs, state) or not 0 < wm <= read.entries:
        return None, 0, (whole, size)
    last = read.outline.shas[wm - 1] if read.outline is not None else entry_sha256(t.entries[wm - 1])
    same_last = last == state.last_entry_sha256
    return state, (wm if same_last else wm - 1), (whole, size)
