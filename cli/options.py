"""Options shared by several commands (typer ``Annotated`` aliases)."""

from __future__ import annotations

from typing import Annotated

import typer

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
    str | None,
    typer.Option(
        "--buffer",
        help="Buffer in tokens or percent (default: 20,000 for windows of 200k or more, else 20%).",
    ),
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        help="Decide as if the window were this many tokens (overflows still count against the model's).",
    ),
]
NoProfileOpt = Annotated[
    bool, typer.Option("--no-profile", help="Ignore (and do not update) the learned profile.")
]
ByOpt = Annotated[
    str | None,
    typer.Option(
        "--by",
        help="Totals per day, project or session (tokens by how they are billed, cost) instead of the replay.",
    ),
]
BY_CHOICES = ("day", "project", "session")


def check_by(by: str | None, *, brief: bool, all_rows: bool) -> None:
    from ctxfold.errors import UsageError
    from ctxfold.names import did_you_mean

    if by is None:
        return
    if by not in BY_CHOICES:
        hint = did_you_mean(by, list(BY_CHOICES)).split(" (known")[0]
        raise UsageError(f"--by takes day, project or session, not {by!r}{hint}")
    if brief or all_rows:
        raise UsageError(
            f"--by prints a table of totals; --{'brief' if brief else 'all'} another view: give one"
        )
