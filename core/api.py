"""The library's four tasks as plain functions: read a session, estimate it, replay it, compact it.

Each is what the command of the same name does, without the printing: ``estimate`` and
``report`` return data, ``compact`` writes its three files and returns what it did. The
examples run in the tests from the repository's root, where ``fixtures/`` holds sample sessions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from ctxfold.compaction.run import CompactResult
    from ctxfold.config import Config
    from ctxfold.engine.now import Estimate
    from ctxfold.engine.profile import Profiles
    from ctxfold.engine.replay import Report
    from ctxfold.providers.base import Summarizer
    from ctxfold.transcript.model import Transcript


def read(
    source: str | Path | BinaryIO, *, format: str | None = None, skip_invalid: bool = False
) -> Transcript:
    """Read a session log, detecting its format from the first lines.

    ``source`` is a path, ``"-"`` for stdin, or a binary stream. A bad line raises
    :class:`LineError` naming the file and line; ``skip_invalid=True`` passes over it instead
    (see ``open_transcript(...).skipped``).

    >>> import io
    >>> t = ctxfold.read(io.BytesIO(b'{"role": "user", "content": "Fix the failing test"}\\n'))
    >>> t.source_format, t.messages[0].text
    ('openai-chat', 'Fix the failing test')
    """
    from ctxfold.formats.loader import load

    return load(source, fmt=format, skip_invalid=skip_invalid)


def estimate(
    path: str | Path,
    *,
    model: str | None = None,
    window: int | None = None,
    tokenizer: str | None = None,
    format: str | None = None,
    skip_invalid: bool = False,
    config: Config | None = None,
    profiles: Profiles | None = None,
    cache: bool = False,
) -> Estimate:
    """Count the request the model would see next and predict its real size.

    The prediction is calibrated with the log's own real counts (the provider's usage), or,
    before any, with ``profiles`` (what earlier sessions taught; none by default). ``config``
    (``load_config()``) applies ``ctxfold.toml``; without it no file is read. ``cache=True``
    keeps the counts in the user cache folder, so that the next call on the grown file reads
    only what was appended (the same result; what the ``estimate`` command does).

    >>> est = ctxfold.estimate("fixtures/real/claude-code-sidechains.jsonl")
    >>> est.counts.model.window, est.counts.context_tokens, est.predicted.tokens
    (200000, 5113, 21595)
    """
    from ctxfold.engine.now import estimate_session

    return estimate_session(
        str(path),
        profiles=profiles,
        model=model,
        tokenizer=tokenizer,
        window=window,
        fmt=format,
        skip_invalid=skip_invalid,
        config=config,
        cache=cache,
    )


def report(
    path: str | Path,
    *,
    model: str | None = None,
    window: int | None = None,
    tokenizer: str | None = None,
    format: str | None = None,
    skip_invalid: bool = False,
    calibration: str = "growth",
    max_tokens: int | None = None,
    buffer: str | None = None,
    simulate: bool = False,
    config: Config | None = None,
    profiles: Profiles | None = None,
    trigger: str | None = None,
    cache: bool = False,
) -> Report:
    """Replay a session request by request: what ctxfold predicted, what the provider counted,
    and where compaction would have fired (``simulate=True`` carries on as if it had);
    ``trigger="claude-code"`` (or ``codex``, ``pi``, ``gemini-cli``, with ``:SETTING=VALUE``)
    also shows where that harness's own rule would have compacted (``Report.trigger``);
    ``cache=True`` as for :func:`estimate`.

    >>> r = ctxfold.report("fixtures/real/claude-code-sidechains.jsonl", window=24_000)
    >>> r.policy.threshold, len(r.rows), r.first_fire.index
    (19200, 9, 5)
    """
    from ctxfold.engine.replay import report_file

    return report_file(
        str(path),
        model=model,
        tokenizer=tokenizer,
        window=window,
        fmt=format,
        skip_invalid=skip_invalid,
        calibration=calibration,
        max_tokens=max_tokens,
        buffer=buffer,
        simulate=simulate,
        profiles=profiles,
        config=config,
        trigger=trigger,
        cache=cache,
    )


def compact(
    path: str | Path,
    *,
    summarizer: Summarizer | str = "offline",
    out_dir: str | Path | None = None,
    output: str | Path | None = None,
    strategy: str = "summary",
    instructions: str | None = None,
    model: str | None = None,
    window: int | None = None,
    buffer: str | None = None,
    max_tokens: int | None = None,
    format: str | None = None,
    skip_invalid: bool = False,
    dry_run: bool = False,
    force: bool = False,
    keep_observations: int = 10,
    config: Config | None = None,
    profiles: Profiles | None = None,
    cache: bool = False,
) -> CompactResult:
    """Compact a session file when it is due (``force=True``: anyway) and write
    ``NAME.compacted.jsonl`` in the input's own format, ``NAME.summary.md`` and the state
    ``NAME.ctxfold.json`` — next to the input, in ``out_dir``, or beside ``output``. The input
    is never modified; a second run folds only what was appended since.

    ``summarizer`` is a provider spec (``"offline"``, ``"anthropic:claude-haiku-4-5,offline"``)
    or your own callable taking a :class:`SummaryRequest`. ``cache=True`` decides from the
    counts kept by :func:`estimate`'s cache first, so that a session not due is not read again
    for a summary.

    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> r = ctxfold.compact("fixtures/real/claude-code-sidechains.jsonl", window=24_000, out_dir=out)
    >>> r.status, r.tokens_before, r.tokens_after < 19_200, r.outputs.compacted.name
    ('compacted', 21595, True, 'claude-code-sidechains.compacted.jsonl')
    """
    from ctxfold.compaction.run import CompactOptions, compact_file
    from ctxfold.providers.registry import ChainSummarizer, make_summarizer
    from ctxfold.strategies.base import get_strategy

    made: Summarizer = summarizer if not isinstance(summarizer, str) else make_summarizer(summarizer)
    if isinstance(made, ChainSummarizer) and get_strategy(strategy).uses_summarizer:
        made.check_keys()  # a provider that cannot be called fails before anything is read
    return compact_file(
        str(path),
        made,
        summarizer_window=getattr(made, "window", None),
        options=CompactOptions(
            strategy=strategy,
            instructions=instructions,
            model=model,
            window=window,
            buffer=buffer,
            max_tokens=max_tokens,
            fmt=format,
            skip_invalid=skip_invalid,
            out_dir=str(out_dir) if out_dir is not None else None,
            output=str(output) if output is not None else None,
            dry_run=dry_run,
            force=force,
            keep_observations=keep_observations,
            cache=cache,
        ),
        config=config,
        profiles=profiles,
    )


def list_formats() -> dict[str, str]:
    """The transcript formats ctxfold reads, by name, with what each is.

    >>> formats = ctxfold.list_formats()
    >>> "claude-code" in formats and "codex" in formats
    True
    """
    from ctxfold.formats.registry import FORMATS, get

    return {name: str(get(name).DESCRIPTION) for name in FORMATS}


def list_tokenizers() -> list[str]:
    """The tokenizers a count can use (``get_tokenizer(name)`` builds one, offline).

    >>> ctxfold.list_tokenizers()
    ['o200k', 'cl100k', 'heuristic']
    """
    from ctxfold.tokens.tokenizers import TOKENIZERS

    return list(TOKENIZERS)


def list_strategies() -> list[str]:
    """The compaction strategies; ``a+b`` chains two (the second runs only if still needed).

    >>> ctxfold.list_strategies()
    ['summary', 'sliding-window', 'mask-observations']
    """
    from ctxfold.strategies.base import STRATEGIES

    return list(STRATEGIES)


def list_providers() -> list[str]:
    """The summarizers a spec may name, as ``NAME`` or ``NAME:MODEL``, comma-separated for a
    fallback chain (see :func:`make_summarizer`).

    >>> ctxfold.list_providers()
    ['offline', 'anthropic', 'openai', 'openai-responses', 'openai-compatible']
    """
    from ctxfold.providers.registry import PROVIDERS

    return list(PROVIDERS)
