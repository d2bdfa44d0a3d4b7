"""The ``compact``, ``validate`` and ``config`` commands (``app`` registers them)."""

from typing import TYPE_CHECKING, Annotated

import typer

from ctxfold.cli.errors import handle_errors
from ctxfold.cli.options import (
    BufferOpt,
    Files,
    FormatOpt,
    JobsOpt,
    JsonOpt,
    MaxTokensOpt,
    ModelOpt,
    NoProfileOpt,
    SkipOpt,
    WindowOpt,
)

if TYPE_CHECKING:
    from ctxfold.formats.validate import Validation


@handle_errors
def compact(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="The session to compact (or - for stdin, with -o).")
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Where the compacted session goes; the summary and state go beside it.",
            show_default="NAME.compacted.jsonl beside the input",
        ),
    ] = None,
    out_dir: Annotated[
        str | None, typer.Option("--out-dir", metavar="DIR", help="Folder for the three outputs.")
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            "-s",
            metavar="[summary|sliding-window|mask-observations]",
            help="How to fold: a summary of it all, a summary of the head with the latest turns kept, "
            "or old tool output replaced by a placeholder (no model); a+b tries a, then b.",
            show_default="summary",
        ),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider",
            "-p",
            metavar="PROVIDER[,PROVIDER...]",
            help="Who writes the summary: offline (no model), anthropic[:MODEL], openai[:MODEL], "
            "openai-responses[:MODEL] or openai-compatible:MODEL (with --base-url); a comma list "
            "falls back along it, a provider named alone never does.",
            show_default="offline",
        ),
    ] = None,
    instructions: Annotated[
        str | None,
        typer.Option("--instructions", "-i", metavar="TEXT", help="What the summary should focus on."),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", metavar="URL", help="The server of openai-compatible (or a proxy)."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            metavar="KEY",
            help="The provider's API key; never shown or written.",
            show_default="ANTHROPIC_API_KEY or OPENAI_API_KEY",
        ),
    ] = None,
    tool_results: Annotated[
        str | None,
        typer.Option(
            "--tool-results",
            metavar="[elide|head:N]",
            help="What the summarizer sees of tool output: a one-line mention, or its first N lines.",
            show_default="elide",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.1,
            metavar="SECONDS",
            help="Time allowed per summarizer call.",
            show_default="60",
        ),
    ] = None,
    max_retries: Annotated[
        int | None,
        typer.Option(
            "--max-retries", min=0, metavar="N", help="Retries per summarizer call.", show_default="2"
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Stop at the first provider that fails, even in a chain.")
    ] = False,
    keep_observations: Annotated[
        int | None,
        typer.Option(
            "--keep-observations",
            min=0,
            metavar="N",
            help="Recent tool results mask-observations leaves whole.",
            show_default="10",
        ),
    ] = None,
    model: ModelOpt = None,
    window: WindowOpt = None,
    buffer: BufferOpt = None,
    max_tokens: MaxTokensOpt = None,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    no_profile: NoProfileOpt = False,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Read the whole session before deciding (default: decide from the counts kept by "
            "earlier runs, and read for the summary only when due; CTXFOLD_NO_CACHE=1 does the same).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be done; call and write nothing.")
    ] = False,
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="FORMAT",
            help="Write the compacted session for another harness (claude-code, codex, pi, gemini-cli, ...).",
            show_default="the input's format",
        ),
    ] = None,
    install: Annotated[
        bool,
        typer.Option(
            "--install",
            help="Also place the compacted session where its harness looks for it (never over a file).",
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Compact even if not due; replace existing outputs.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Fold a session into a shorter one when it is due, and say how to carry on with it.

    Writes NAME.compacted.jsonl in the input's own format, NAME.summary.md and the state
    NAME.ctxfold.json (beside the input, or in --out-dir); the input is never modified. Run again
    on the grown session, it folds only what was appended.
    """
    from ctxfold.cli import render, render_compact
    from ctxfold.cli.errors import attributed
    from ctxfold.compaction.doc import compact_doc
    from ctxfold.compaction.run import CompactOptions, compact_file
    from ctxfold.config import load_config
    from ctxfold.engine.profile import Profiles
    from ctxfold.errors import MissingKeyError
    from ctxfold.providers.registry import make_summarizer
    from ctxfold.settings import effective
    from ctxfold.strategies.base import get_strategy

    config = load_config()
    profiles = None if no_profile else Profiles()
    notes = render.notes(config.warnings, profiles.warnings if profiles else [], json_out=json_out)
    flags = {
        "strategy": strategy,
        "provider": provider,
        "base_url": base_url,
        "tool_results": tool_results,
        "timeout": timeout,
        "max_retries": max_retries,
        "keep_observations": keep_observations,
        "model": model,
        "window": window,
        "buffer": buffer,
    }
    settings = effective(flags, config)
    conf = {k: v.value for k, v in settings.items()}
    with attributed(settings):  # a bad value from the environment or the file says so
        chosen = get_strategy(conf["strategy"])  # a typo fails before anything is read
        summarizer = make_summarizer(
            conf["provider"] if chosen.uses_summarizer else "offline",
            api_key=api_key,
            base_url=conf["base_url"],
            timeout=conf["timeout"],
            max_retries=conf["max_retries"],
            tool_results=conf["tool_results"],
            strict=strict,
        )
        missing: MissingKeyError | None = None
        if chosen.uses_summarizer:
            try:  # a provider that cannot be called is said now, before anything is read or written
                summarizer.check_keys()
            except MissingKeyError as err:
                source = settings["provider"].source
                whence = f"; provider from {source}" if source not in ("flag", "default") else ""
                if not dry_run:
                    raise MissingKeyError(err.provider, err.env_var, f"nothing written{whence}") from None
                missing = err  # a dry run calls nothing: it says so and goes on
        result = compact_file(
            file,
            summarizer,
            summarizer_window=summarizer.window,
            options=CompactOptions(
                strategy=conf["strategy"],
                instructions=instructions,
                model=model,  # the environment's and the file's model only stand in when the log names none
                window=window,  # the environment's and the file's window are read with the model
                buffer=conf["buffer"],
                max_tokens=max_tokens,
                fmt=fmt,
                skip_invalid=skip_invalid,
                out_dir=out_dir,
                output=output,
                dry_run=dry_run,
                force=force,
                keep_observations=conf["keep_observations"],
                to=to,
                install=install,
                cache=not no_cache,
            ),
            config=config,
            profiles=profiles,
        )
    if missing is not None:
        result.warnings.append(f"{missing} (the dry run calls nothing; a real run would stop here)")
    if json_out:
        doc = compact_doc(result)
        render.emit_json({"command": "compact", "version": 1, **doc, "warnings": [*notes, *doc["warnings"]]})
    else:
        render_compact.compact(result)


@handle_errors
def validate(
    files: Files,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    jobs: JobsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check sessions against their format's rules.

    One line per file and per violation (FILE:LINE: what is wrong); exit 1 if any rule is broken.
    """
    from functools import partial

    from ctxfold.cli import render, render_compact
    from ctxfold.cli.errors import EXIT_FAILURE
    from ctxfold.cli.inputs import expand
    from ctxfold.cli.jobs import read_files

    work = partial(_check, fmt=fmt, skip_invalid=skip_invalid)
    results, failed = read_files(expand(files), work, lambda v: v, jobs=jobs, progress=not json_out)
    if json_out:
        docs = [v.to_dict() for v in results]
        render.emit_json({"command": "validate", "version": 1, "files": docs, "failed": failed})
    else:
        render_compact.validation(results)
        render.failed(failed, len(results))
    if failed or any(not v.ok for v in results):
        raise SystemExit(EXIT_FAILURE)


def _check(path: str, *, fmt: str | None, skip_invalid: bool, on_progress: object = None) -> "Validation":
    """One file's check, in whichever process reads it (``jobs.read_files``, which offers a
    large file's byte bar as ``on_progress``: a check draws none)."""
    from ctxfold.formats.validate import validate as check

    return check(path, fmt, skip_invalid=skip_invalid)


@handle_errors
def show_config(json_out: JsonOpt = False) -> None:
    """Show the settings in effect and where each comes from.

    Flags, then CTXFOLD_* variables, then ctxfold.toml, then the defaults; API keys redacted.
    """
    from ctxfold.cli import render, render_compact
    from ctxfold.config import load_config
    from ctxfold.paths import config_candidates
    from ctxfold.settings import effective, keys

    config = load_config()
    settings = effective({}, config)
    doc = {
        "command": "config",
        "config_file": str(config.path) if config.path else None,
        "searched": [str(p) for p in config_candidates()],
        "settings": {k: {"value": v.value, "source": v.source} for k, v in settings.items()},
        "models": config.models,
        "prices": config.raw.get("prices", {}),
        "keys": {k: {"value": v.value, "source": v.source} for k, v in keys().items()},
        "warnings": list(config.warnings),
    }
    if json_out:
        render.emit_json(doc)
    else:
        render_compact.config(doc)
