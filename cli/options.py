"""Options shared by several commands (typer ``Annotated`` aliases), with the metavars, choices
and defaults their help shows (``cli/help.py`` renders them)."""

from __future__ import annotations

from typing import Annotated

import typer

# the format names, written out so that help needs no import of the registry (a test keeps them equal)
FORMAT_NAMES = (
    "claude-code",
    "codex",
    "pi",
    "gemini-cli",
    "litellm",
    "openhands",
    "openai-chat",
    "openai-responses",
    "anthropic",
    "genai",
    "ctxfold",
)

Files = Annotated[
    list[str],
    typer.Argument(
        metavar="FILE",
        help="Session logs, folders of them (every *.jsonl, and Gemini CLI's *.json chats), or - for stdin.",
        show_default=False,
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model", "-m", metavar="MODEL", help="Count and decide as this model.", show_default="the log's"
    ),
]
TokenizerOpt = Annotated[
    str | None,
    typer.Option(
        "--tokenizer",
        "-t",
        metavar="[o200k|cl100k|heuristic]",
        help="The tokenizer to count with (heuristic: characters / 4).",
        show_default="the model's",
    ),
]
WindowOpt = Annotated[
    int | None,
    typer.Option(
        "--window",
        min=1,
        metavar="N",
        help="The model's context window, in tokens.",
        show_default="the model's, or what the log records",
    ),
]
FormatOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        help=f"Read the files as this format: {', '.join(FORMAT_NAMES)}.",
        show_default="detected",
    ),
]
SkipOpt = Annotated[
    bool, typer.Option("--skip-invalid", help="Name bad lines on stderr, leave them out and read on.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else.")]
CalibrationOpt = Annotated[
    str | None,
    typer.Option(
        "--calibration",
        "-c",
        metavar="[growth|affine|seed]",
        help="How the real size is predicted from the count: the last real count plus the growth, a "
        "straight-line fit, or the ContextGuard reference design's rule (characters / 4).",
        show_default="growth",
    ),
]
BufferOpt = Annotated[
    str | None,
    typer.Option(
        "--buffer",
        metavar="N|P%",
        help="Room kept free under the window, in tokens or percent.",
        show_default="20,000 for windows of 200k or more, else 20%",
    ),
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        metavar="N",
        help="Decide as if the window were N tokens (overflows still count against the model's).",
    ),
]
NoProfileOpt = Annotated[
    bool,
    typer.Option("--no-profile", help="Ignore (and do not update) what was learned from other sessions."),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Read every file from its first line (default: a file read before is read on from where "
        "it ended; CTXFOLD_NO_CACHE=1 does the same).",
    ),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="Read several files in this many processes at once (default: CTXFOLD_WORKERS, else one per core).",
    ),
]
ByOpt = Annotated[
    str | None,
    typer.Option(
        "--by",
        metavar="[day|project|session]",
        help="Instead of the replay, a table of tokens and cost per day, project or session.",
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
