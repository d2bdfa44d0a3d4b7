"""The ``ctxfold`` command line: parse arguments, call core, hand results to ``render``.

Core and Rich are imported inside the commands so ``ctxfold --help`` starts fast. No
``from __future__ import annotations`` here or in ``compact_cmds`` and ``report_cmd``: Typer
would then ``eval`` every parameter's annotation string as it builds the commands (20 ms of a
140 ms ``--help``).
"""

import copy
import sys
from typing import Annotated

import typer
from typer.main import get_command_name
from typer.models import CommandInfo

from ctxfold.cli import compact_cmds, report_cmd
from ctxfold.cli.errors import DEBUG_VAR, EXIT_FAILURE, handle_errors
from ctxfold.cli.help import HelpCommand, HelpGroup
from ctxfold.cli.options import (
    Files,
    FormatOpt,
    JobsOpt,
    JsonOpt,
    ModelOpt,
    NoCacheOpt,
    NoProfileOpt,
    SkipOpt,
    TokenizerOpt,
    WindowOpt,
)

app = typer.Typer(
    name="ctxfold",
    help="Keep LLM-agent conversations inside the model's context window.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # handle_errors prints one line; --debug the traceback
    rich_markup_mode=None,  # plain help and usage errors (cli/help.py), no Rich at start-up
    cls=HelpGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from ctxfold import __version__

        print(f"ctxfold {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show the traceback of an internal error (a bug) instead of one line."),
    ] = False,
) -> None:
    """Keep LLM-agent conversations inside the model's context window."""
    if debug:
        import os

        os.environ[DEBUG_VAR] = "1"


@app.command(cls=HelpCommand)
@handle_errors
def estimate(
    files: Files,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = None,
    window: WindowOpt = None,
    fmt: FormatOpt = None,
    skip_invalid: SkipOpt = False,
    no_profile: NoProfileOpt = False,
    no_cache: NoCacheOpt = False,
    jobs: JobsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Count the tokens of the next request and predict its real size.

    The context as it stands after the last line, split by part (system prompt, tools, user,
    assistant, tool calls and results, media), its largest messages, the last count the provider
    reported next to ctxfold's, and the next request's predicted size against the window.
    """
    from ctxfold.cli import render
    from ctxfold.cli.inputs import expand
    from ctxfold.cli.jobs import counting, read_files
    from ctxfold.config import load_config
    from ctxfold.engine.now import Estimate, estimate_doc, estimate_from
    from ctxfold.engine.profile import Profiles
    from ctxfold.settings import setting
    from ctxfold.tokens.estimate import FileEstimate

    config = load_config()
    profiles = None if no_profile else Profiles()
    notes = render.notes(config.warnings, profiles.warnings if profiles else [], json_out=json_out)
    work, pending = counting(
        model=model, tokenizer=tokenizer, window=window, fmt=fmt, skip_invalid=skip_invalid,
        config=config, cache=not no_cache,
    )  # fmt: skip

    def finish(est: FileEstimate) -> Estimate:  # here, in file order: the profile evolves as in one process
        return estimate_from(est, profiles)

    preload = setting("tokenizer", tokenizer, config).value or "o200k"
    results, failed = read_files(
        expand(files), work, finish, jobs=jobs, progress=not json_out, preload=preload, pending=pending
    )
    if profiles is not None:
        profiles.save()
    if json_out:
        files_doc = [estimate_doc(*r) for r in results]
        doc = {"command": "estimate", "version": 1, "warnings": notes, "files": files_doc, "failed": failed}
        render.emit_json(doc)
    else:
        if results:
            from ctxfold.cli import render_estimate

            render_estimate.estimate(results)
        render.failed(failed, len(results))
    if failed:
        raise SystemExit(EXIT_FAILURE)


app.command(cls=HelpCommand)(report_cmd.report)


profile_app = typer.Typer(
    help="What ctxfold learned from the sessions it read.\n\nPer log source and model: the size of "
    "the prompt the harness sends but does not log, and the tokenizer ratio.",
    cls=HelpGroup,
    rich_markup_mode=None,
)
app.add_typer(profile_app, name="profile")


@profile_app.command("show", cls=HelpCommand)
@handle_errors
def profile_show(json_out: JsonOpt = False) -> None:
    """Show what was learned, per log source and model."""
    from ctxfold.cli import render
    from ctxfold.engine.profile import BUILTIN, Profiles

    profiles = Profiles()
    if json_out:
        builtin = {f: {"overhead": o, "ratio": r, "sessions": n} for f, (o, r, n) in BUILTIN.items()}
        render.emit_json(
            {
                "command": "profile show",
                "path": str(profiles.path),
                **profiles.data,
                "builtin": builtin,
                "warnings": profiles.warnings,
            }
        )
    else:
        render.profile(profiles)


@profile_app.command("reset", cls=HelpCommand)
@handle_errors
def profile_reset(json_out: JsonOpt = False) -> None:
    """Forget everything learned."""
    from ctxfold.cli import render
    from ctxfold.engine.profile import Profiles

    profiles = Profiles()
    existed = profiles.reset()
    if json_out:
        render.emit_json({"command": "profile reset", "path": str(profiles.path), "removed": existed})
    else:
        render.out.print(f"profile {'removed' if existed else 'was already empty'}: {profiles.path}")


@app.command(cls=HelpCommand)
def version(json_out: JsonOpt = False) -> None:
    """Print the version."""
    from ctxfold import __version__

    if json_out:
        from ctxfold.cli import render

        render.emit_json({"command": "version", "version": __version__})
    else:
        print(f"ctxfold {__version__}")


@app.command(cls=HelpCommand)
def statusline(
    install_pi: Annotated[
        bool,
        typer.Option(
            "--install-pi",
            help="Install ctxfold's pi extension (~/.pi/agent/extensions/ctxfold-statusline.ts): "
            "pi then shows this line in its footer.",
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="With --install-pi: replace a different file of that name.")
    ] = False,
    codex: Annotated[
        bool,
        typer.Option(
            "--codex",
            help="Serve Codex's footer instead: a status line provider Codex starts and reads "
            '(see docs/commands.md, "In Codex").',
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Print the context's status line for Claude Code, pi or Codex.

    From the JSON Claude Code sends on stdin: the tokens in context, % of the window, and what
    is left before compaction, in colour when near it. In ~/.claude/settings.json:
    "statusLine": {"type": "command", "command": "ctxfold statusline"}. It always exits 0 with
    one line (Claude Code blanks the bar otherwise).
    For pi, --install-pi installs an extension that runs it after each turn (--json: what
    it did, as one JSON document). For Codex, --codex is the provider to register with
    `codex mcp add ctxfold -- ctxfold statusline --codex`.
    """
    if codex:
        _serve_codex(alone=not (install_pi or force or json_out))
    if install_pi or force or json_out:
        _install_pi(force=force, install_pi=install_pi, json_out=json_out)
        return
    from ctxfold.cli.statusline import main as run

    raise SystemExit(run())


@handle_errors
def _serve_codex(*, alone: bool) -> None:
    from ctxfold.errors import UsageError

    if not alone:
        raise UsageError("--codex runs Codex's provider; it takes no other option")
    from ctxfold.cli.codex_statusline import main as serve

    raise SystemExit(serve())


@handle_errors
def _install_pi(*, force: bool, install_pi: bool, json_out: bool) -> None:
    from ctxfold.cli.pi_extension import install, report
    from ctxfold.errors import UsageError

    if not install_pi:
        given = "--force" if force else "--json"
        raise UsageError(f"{given} goes with --install-pi (the status line itself is one line of text)")
    done = install(force=force)
    lines = report(done)
    if json_out:
        from ctxfold.cli import render

        render.emit_json(
            {
                "command": "statusline --install-pi",
                "path": str(done.path),
                "action": done.action,
                "notes": lines[1:],
            }
        )
        return
    for line in lines:
        print(line)


app.command(cls=HelpCommand)(compact_cmds.compact)
app.command(cls=HelpCommand)(compact_cmds.validate)
app.command("config", cls=HelpCommand)(compact_cmds.show_config)


def main() -> None:
    # help and usage text are printed by click, before any command's handle_errors
    handle_errors(for_args(sys.argv[1:]))(prog_name="ctxfold")


def for_args(args: list[str]) -> typer.Typer:
    """The application with only the command the arguments name, when they name one first
    (``--debug`` may come before it). Typer builds every command's parser from its signature
    before it parses anything: 25-45 ms of a small ``estimate``'s 0.3 s, for the one that runs.
    Anything else (no command, a misspelt one, the list of commands) gets the whole application."""
    first = next((a for a in args if a != "--debug"), "")
    commands = [c for c in app.registered_commands if _name(c) == first]
    groups = [g for g in app.registered_groups if g.name == first]
    if not commands and not groups:
        return app
    one = copy.copy(app)
    one.registered_commands, one.registered_groups = commands, groups
    return one


def _name(command: CommandInfo) -> str:
    """The name a command is called by, as Typer derives it."""
    if command.name:
        return command.name
    return get_command_name(command.callback.__name__) if command.callback is not None else ""


if __name__ == "__main__":  # pragma: no cover
    main()
