"""The ``compact``, ``validate`` and ``config`` commands (``app`` registers them)."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxfold.cli.errors import handle_errors
from ctxfold.cli.options import (
    BufferOpt,
    Files,
    FormatOpt,
    JsonOpt,
    MaxTokensOpt,
    ModelOpt,
    NoProfileOpt,
    SkipOpt,
    WindowOpt,
)


@handle_errors
def compact(
    file: Annotated[str, typer.Argument(help="The session to compact (a file, or - with -o).")],
    output: Annotated[str | None, typer.Option("--output", "-o", help="Compacted transcript path.")] = None,
    out_dir: Annotated[str | None, typer.Option("--out-dir", help="Folder for the three outputs.")] = None,
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", "-s", help="summary, sliding-window, mask-observations, or a+b."),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider", "-p", help="offline, anthropic:M, openai:M, openai-compatible:M; a,b = fallback."
        ),
    ] = None,
    instructions: Annotated[
        str | None, typer.Option("--instructions", "-i", help="What the summary should focus on.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Server for openai-compatible (or a proxy).")
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", help="API key (default: the SDK's env var).", show_default=False),
    ] = None,
    tool_results: Annotated[
        str | None,
        typer.Option(
            "--tool-results", help="elide (default) or head:N: tool output shown to the summarizer."
        ),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.1, help="Seconds per summarizer call.")
    ] = None,
    max_retries: Annotated[
        int | None, typer.Option("--max-retries", min=0, help="Retries per summarizer call.")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail instead of falling back to the next provider.")
    ] = False,
    keep_observations: Annotated[
        int | None,
        typer.Option("--keep-observations", min=0, help="Recent tool results mask-observations keeps."),
    ] = None,
    model: ModelOpt = None,
    window: WindowOpt = None,
    buffer: BufferOpt = None,
    max_tokens: MaxTokensOpt = None,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    no_profile: NoProfileOpt = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be done; call and write nothing.")
    ] = False,
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="FORMAT",
            help="Write the compacted session for another harness (claude-code, codex, pi, ...).",
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
    """Compact a session: NAME.compacted.jsonl (same format), NAME.summary.md, NAME.ctxfold.json."""
    from ctxfold.cli import render
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
                if not dry_run:
                    raise MissingKeyError(err.provider, err.env_var, "nothing written") from None
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
        render.compact(result)


@handle_errors
def validate(
    files: Files,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Check transcripts against their format's rules; exit 1 if any rule is broken."""
    from ctxfold.cli import render
    from ctxfold.cli.errors import EXIT_FAILURE
    from ctxfold.cli.inputs import expand
    from ctxfold.formats.validate import validate as check

    paths, failed = expand(files)
    results = [check(path, fmt, skip_invalid=skip_invalid) for path in paths]
    if json_out:
        docs = [v.to_dict() for v in results]
        render.emit_json({"command": "validate", "version": 1, "files": docs, "failed": failed})
    else:
        render.validation(results)
        render.failed(failed, len(results))
    if failed or any(not v.ok for v in results):
        raise SystemExit(EXIT_FAILURE)


@handle_errors
def show_config(json_out: JsonOpt = False) -> None:
    """Print the effective settings and where each comes from (API keys redacted)."""
    from ctxfold.cli import render
    from ctxfold.config import candidates, load_config
    from ctxfold.settings import effective, keys

    config = load_config()
    settings = effective({}, config)
    doc = {
        "command": "config",
        "config_file": str(config.path) if config.path else None,
        "searched": [str(p) for p in candidates()],
        "settings": {k: {"value": v.value, "source": v.source} for k, v in settings.items()},
        "models": config.models,
        "prices": config.raw.get("prices", {}),
        "keys": {k: {"value": v.value, "source": v.source} for k, v in keys().items()},
        "warnings": list(config.warnings),
    }
    if json_out:
        render.emit_json(doc)
    else:
        render.config(doc)
