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


@app.command()
@handle_errors
def estimate(
    files: Files,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = None,
    window: WindowOpt = None,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Estimate the tokens of the request the model sees now, next to the real counts."""
    from ctxfold.cli import render
    from ctxfold.cli.inputs import expand
    from ctxfold.core.config import load_config
    from ctxfold.core.tokens.estimate import estimate_file, estimate_to_dict

    config = load_config()
    results = []
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
    if json_out:
        render.emit_json(
            {"command": "estimate", "version": 1, "files": [estimate_to_dict(r) for r in results]}
        )
    else:
        render.estimate(results)


@app.command()
def version() -> None:
    """Print the version."""
    from ctxfold import __version__

    print(f"ctxfold {__version__}")


def main() -> None:
    app(prog_name="ctxfold")


if __name__ == "__main__":  # pragma: no cover
    main()
