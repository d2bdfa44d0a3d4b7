"""The ``ctxfold`` command line: parse arguments, call core, hand results to ``render``.

Core and Rich are imported inside the commands so ``ctxfold --help`` starts fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ctxfold.cli.errors import handle_errors

app = typer.Typer(
    name="ctxfold",
    help="Keep LLM-agent conversations inside the model's context window.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

Files = Annotated[
    list[str], typer.Argument(help="Transcript files, directories (*.jsonl inside) or - for stdin.")
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model name (default: the one the log names).")
]
TokenizerOpt = Annotated[
    str | None, typer.Option("--tokenizer", "-t", help="o200k, cl100k or heuristic (default: the model's).")
]
WindowOpt = Annotated[
    int | None, typer.Option("--window", min=1, help="Context window in tokens (overrides all).")
]
FormatOpt = Annotated[str | None, typer.Option("--format", "-f", help="Input format (default: detected).")]
SkipOpt = Annotated[
    bool, typer.Option("--skip-invalid", help="Report and skip bad lines instead of failing.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else.")]
CalibrationOpt = Annotated[
    str | None,
    typer.Option("--calibration", "-c", help="growth (default), affine or seed (the reference rule, len/4)."),
]
BufferOpt = Annotated[
    str | None, typer.Option("--buffer", help="Buffer in tokens or percent (default: the seeds' rule).")
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option("--max-tokens", min=1, help="Use this as the window for the rule (seeds' WithMaxTokens)."),
]
NoProfileOpt = Annotated[
    bool, typer.Option("--no-profile", help="Ignore (and do not update) the learned profile.")
]


@app.command()
@handle_errors
def estimate(
    files: Files,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = None,
    window: WindowOpt = None,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    no_profile: NoProfileOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Estimate the tokens of the request the model sees now, next to the real counts."""
    from ctxfold.cli import render
    from ctxfold.cli.inputs import expand
    from ctxfold.core.config import load_config
    from ctxfold.core.engine.profile import Profiles
    from ctxfold.core.engine.replay import learn_from
    from ctxfold.core.tokens.estimate import estimate_file, estimate_to_dict

    config = load_config()
    results = []
    profiles = None if no_profile else Profiles()
    for path in expand(files):
        with render.progress(path, enabled=not json_out) as on_progress:
            results.append(
                estimate_file(
                    path,
                    model=model,
                    tokenizer=tokenizer,
                    window=window,
                    fmt=fmt,
                    skip_invalid=skip_invalid,
                    config=config,
                    on_progress=on_progress,
                )
            )
        if profiles is not None:
            learn_from(profiles, results[-1])
    if json_out:
        render.emit_json(
            {"command": "estimate", "version": 1, "files": [estimate_to_dict(r) for r in results]}
        )
    else:
        render.estimate(results)


@app.command()
@handle_errors
def report(
    files: Files,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = None,
    window: WindowOpt = None,
    buffer: BufferOpt = None,
    max_tokens: MaxTokensOpt = None,
    calibration: CalibrationOpt = None,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    no_profile: NoProfileOpt = False,
    simulate_compaction: Annotated[
        bool, typer.Option("--simulate-compaction", help="Replay as if ctxfold had compacted when it fired.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Print the full arithmetic of the last decision.")
    ] = False,
    all_rows: Annotated[
        bool, typer.Option("--all", help="List every request, not only the notable ones.")
    ] = False,
    plot: Annotated[
        str | None, typer.Option("--plot", help="Draw tokens over requests to OUT.svg, .png or .html.")
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on", help="Exit 3 when compaction fires (compact) or a request overflowed (overflow)."
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Replay sessions request by request: estimate, prediction, real count, threshold, decision."""
    from ctxfold.cli import render
    from ctxfold.cli.errors import EXIT_CONDITION
    from ctxfold.cli.inputs import expand
    from ctxfold.core.config import load_config
    from ctxfold.core.engine.calibration import make_calibrator
    from ctxfold.core.engine.replay import report_file
    from ctxfold.core.engine.report_doc import to_dict
    from ctxfold.core.errors import UsageError
    from ctxfold.core.settings import effective

    if fail_on not in (None, "compact", "overflow"):
        raise UsageError(f"--fail-on takes compact or overflow, not {fail_on!r}")
    config = load_config()
    settings = effective({"calibration": calibration, "buffer": buffer}, config)
    calibration, buffer = settings["calibration"].value, settings["buffer"].value
    make_calibrator(calibration)  # a typo fails before any file is read
    paths = expand(files)
    if plot and len(paths) > 1:
        raise UsageError("--plot draws one session: give one file")
    reports = []
    for path in paths:
        with render.progress(path, enabled=not json_out) as on_progress:
            reports.append(
                report_file(
                    path,
                    model=model,
                    tokenizer=tokenizer,
                    window=window,
                    fmt=fmt,
                    skip_invalid=skip_invalid,
                    calibration=calibration,
                    max_tokens=max_tokens,
                    buffer=buffer,
                    simulate=simulate_compaction,
                    use_profile=not no_profile,
                    config=config,
                    on_progress=on_progress,
                )
            )
    if plot:
        from ctxfold.cli.plot import draw

        draw(reports[0], plot)
    if json_out:
        render.emit_json({"command": "report", "version": 1, "files": [to_dict(r) for r in reports]})
    else:
        render.report(reports, all_rows=all_rows, explain=explain, plot=plot)
    if fail_on == "compact" and any(r.first_fire for r in reports):
        raise SystemExit(EXIT_CONDITION)
    if fail_on == "overflow" and any(r.count("overflow") for r in reports):
        raise SystemExit(EXIT_CONDITION)


profile_app = typer.Typer(help="The learned per-source profile (hidden prompt size and tokenizer ratio).")
app.add_typer(profile_app, name="profile")


@profile_app.command("show")
@handle_errors
def profile_show(json_out: JsonOpt = False) -> None:
    """Show what was learned per log source and model."""
    from ctxfold.cli import render
    from ctxfold.core.engine.profile import Profiles

    profiles = Profiles()
    if json_out:
        render.emit_json({"command": "profile show", "path": str(profiles.path), **profiles.data})
    else:
        render.profile(profiles)


@profile_app.command("reset")
@handle_errors
def profile_reset(json_out: JsonOpt = False) -> None:
    """Forget everything learned."""
    from ctxfold.cli import render
    from ctxfold.core.engine.profile import Profiles

    profiles = Profiles()
    existed = profiles.reset()
    if json_out:
        render.emit_json({"command": "profile reset", "path": str(profiles.path), "removed": existed})
    else:
        render.out.print(f"profile {'removed' if existed else 'was already empty'}: {profiles.path}")


@app.command()
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
    force: Annotated[
        bool, typer.Option("--force", help="Compact even if not due; replace existing outputs.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Compact a session: NAME.compacted.jsonl (same format), NAME.summary.md, NAME.ctxfold.json."""
    from ctxfold.cli import render
    from ctxfold.core.compaction.run import CompactOptions, compact_file
    from ctxfold.core.config import load_config
    from ctxfold.core.providers.registry import make_summarizer
    from ctxfold.core.settings import effective
    from ctxfold.core.strategies.base import get_strategy

    config = load_config()
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
    conf = {k: v.value for k, v in effective(flags, config).items()}
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
    result = compact_file(
        file,
        summarizer,
        summarizer_window=summarizer.window,
        provider_label=conf["provider"],
        options=CompactOptions(
            strategy=conf["strategy"],
            instructions=instructions,
            model=conf["model"],
            window=conf["window"],
            buffer=conf["buffer"],
            max_tokens=max_tokens,
            fmt=fmt,
            skip_invalid=skip_invalid,
            out_dir=out_dir,
            output=output,
            dry_run=dry_run,
            force=force,
            keep_observations=conf["keep_observations"],
            use_profile=not no_profile,
        ),
        config=config,
    )
    if json_out:
        render.emit_json({"command": "compact", "version": 1, **render.compact_dict(result)})
    else:
        render.compact(result)


@app.command()
@handle_errors
def validate(
    files: Files,
    fmt: FormatOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check transcripts against their format's rules; exit 1 if any rule is broken."""
    from ctxfold.cli import render
    from ctxfold.cli.errors import EXIT_FAILURE
    from ctxfold.cli.inputs import expand
    from ctxfold.core.formats.validate import validate as check

    results = [check(path, fmt) for path in expand(files)]
    if json_out:
        render.emit_json(
            {"command": "validate", "version": 1, "files": [render.validation_dict(v) for v in results]}
        )
    else:
        render.validation(results)
    if any(not v.ok for v in results):
        raise SystemExit(EXIT_FAILURE)


@app.command("config")
@handle_errors
def show_config(json_out: JsonOpt = False) -> None:
    """Print the effective settings and where each comes from (API keys redacted)."""
    from ctxfold.cli import render
    from ctxfold.core.config import candidates, load_config
    from ctxfold.core.settings import effective, keys

    config = load_config()
    settings = effective({}, config)
    doc = {
        "command": "config",
        "config_file": str(config.path) if config.path else None,
        "searched": [str(p) for p in candidates()],
        "settings": {k: {"value": v.value, "source": v.source} for k, v in settings.items()},
        "models": config.models,
        "keys": {k: {"value": v.value, "source": v.source} for k, v in keys().items()},
    }
    if json_out:
        render.emit_json(doc)
    else:
        render.config(doc)


@app.command()
def version() -> None:
    """Print the version."""
    from ctxfold import __version__

    print(f"ctxfold {__version__}")


def main() -> None:
    app(prog_name="ctxfold")


if __name__ == "__main__":  # pragma: no cover
    main()
