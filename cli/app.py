"""The ``ctxfold`` command line: parse arguments, call core, hand results to ``render``.

Core and Rich are imported inside the commands so ``ctxfold --help`` starts fast. No
``from __future__ import annotations`` here or in ``compact_cmds``: Typer would then ``eval``
every parameter's annotation string as it builds the commands (20 ms of a 140 ms ``--help``).
"""

import copy
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.main import get_command_name
from typer.models import CommandInfo

from ctxfold.cli import compact_cmds
from ctxfold.cli.errors import DEBUG_VAR, EXIT_FAILURE, attributed, handle_errors
from ctxfold.cli.help import HelpCommand, HelpGroup
from ctxfold.cli.options import (
    BufferOpt,
    ByOpt,
    CalibrationOpt,
    Files,
    FormatOpt,
    JobsOpt,
    JsonOpt,
    MaxTokensOpt,
    ModelOpt,
    NoCacheOpt,
    NoProfileOpt,
    SkipOpt,
    TokenizerOpt,
    WindowOpt,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxfold.engine.profile import Profiles
    from ctxfold.engine.replay import Report
    from ctxfold.engine.report_doc import Brief
    from ctxfold.engine.report_memo import ReportMemo
    from ctxfold.engine.usage import Sheet
    from ctxfold.tokens.estimate import FileEstimate

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


@app.command(cls=HelpCommand)
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
    brief: Annotated[
        bool, typer.Option("--brief", help="One line per file, then the totals (for folders of sessions).")
    ] = False,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE",
            help="Draw the run, and the run with ctxfold compacting, to FILE (.svg, .png or .html).",
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="[compact|overflow]",
            help="Exit 3 when compaction fires (compact) or a request went over the window (overflow).",
        ),
    ] = None,
    trigger: Annotated[
        str | None,
        typer.Option(
            "--trigger",
            metavar="NAME[:SETTING=VALUE]",
            help="Also replay under a harness's own compaction rule: claude-code, codex, pi or "
            "gemini-cli, optionally NAME:SETTING=VALUE (claude-code:pct=80, codex:limit=200000, "
            "pi:reserve=30000, gemini-cli:threshold=0.7).",
        ),
    ] = None,
    by: ByOpt = None,
    no_cache: NoCacheOpt = False,
    jobs: JobsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Replay sessions request by request, or total their usage.

    For each request: ctxfold's count, its prediction, the provider's real count, the threshold
    and the decision; where compaction would first fire, late and early decisions, overflows and
    the cost. --by totals tokens and cost per day, project or session instead.
    """
    from functools import partial

    from ctxfold.cli import render
    from ctxfold.cli.errors import EXIT_CONDITION
    from ctxfold.cli.inputs import expand
    from ctxfold.cli.jobs import counting, read_files
    from ctxfold.cli.options import check_by
    from ctxfold.config import load_config
    from ctxfold.engine.calibration import make_calibrator, report_tokenizer
    from ctxfold.engine.profile import Profiles
    from ctxfold.errors import UsageError
    from ctxfold.names import did_you_mean
    from ctxfold.paths import cache_off
    from ctxfold.settings import effective, setting
    from ctxfold.tokens.estimate import FileEstimate
    from ctxfold.tokens.incremental import settings_key

    if fail_on not in (None, "compact", "overflow"):
        hint = did_you_mean(fail_on or "", ["compact", "overflow"])
        raise UsageError(f"--fail-on takes compact or overflow, not {fail_on!r}{hint.split(' (known')[0]}")
    if brief and all_rows:
        raise UsageError("--brief prints one line per file, --all every request of one: give one of them")
    check_by(by, brief=brief, all_rows=all_rows)
    rule = None
    if trigger:
        from ctxfold.engine.triggers import parse_trigger

        rule = parse_trigger(trigger)  # a typo fails before any file is read
    config = load_config()
    profiles = None if no_profile else Profiles()  # read once, saved once, for every file
    notes = render.notes(config.warnings, profiles.warnings if profiles else [], json_out=json_out)
    settings = effective({"calibration": calibration, "buffer": buffer}, config)
    calibration, buffer = settings["calibration"].value, settings["buffer"].value
    with attributed(settings):  # a bad value from the environment or the file says so
        make_calibrator(calibration)  # a typo fails before any file is read
    expanded = expand(files)
    if plot and len(expanded[0]) + len(expanded[1]) > 1:
        raise UsageError("--plot draws one session: give one file")

    counted_with = report_tokenizer(calibration, tokenizer, config)
    work, pending = counting(
        model=model, tokenizer=counted_with, window=window, fmt=fmt, skip_invalid=skip_invalid,
        config=config, cache=not no_cache,
    )  # fmt: skip

    docs: list[dict[str, Any]] = []  # with --json, each file's, made as it is finished

    def replayed(est: FileEstimate) -> "Report":
        # the report's own modules, first loaded here: while the workers read
        from ctxfold.engine.replay import report_from

        return report_from(
            est,
            calibration=calibration,
            max_tokens=max_tokens,
            buffer=buffer,
            simulate=simulate_compaction or bool(plot),  # the plot draws the compacted run too
            profiles=profiles,
            config=config,
            rule=rule,
        )

    def finish(est: FileEstimate) -> "Report":  # here, in file order: the profile evolves as in one process
        from ctxfold.engine.report_doc import summary

        rep = replayed(est)
        summary(rep)  # every output shows it: worked out now, while the workers read on
        if json_out:
            docs.append(_report_doc(rep, explain))  # so is its document
        return rep

    preload = setting("tokenizer", counted_with, config).value or "o200k"
    # a table of one line per file (--brief's, or the calls --by totals) needs only that of each
    lines_of: Callable[[FileEstimate], Any] | None = None
    if brief and not (json_out or plot):
        kind, lines_of = "brief", _briefly(replayed)
    elif by and not (json_out or fail_on or plot):  # no replay: the profile still learns
        kind, lines_of = "usage", partial(_sheet_of, profiles)
    lines: list[Any] | None = None
    reports: list[Report] = []
    with attributed(settings):
        if lines_of is None:
            reports, failed = read_files(
                expanded, work, finish, jobs=jobs, progress=not json_out, preload=preload, pending=pending
            )
        elif no_cache or cache_off() or "-" in expanded[0]:
            lines, failed = read_files(expanded, work, lines_of, jobs=jobs, preload=preload, pending=pending)
        else:  # a file's line is the memo's where the file, the settings (and the prior) are the same
            from ctxfold.engine.report_memo import read_seen

            memo = _report_memo(
                kind, files, profiles, calibration=calibration, buffer=buffer, max_tokens=max_tokens,
                simulate=simulate_compaction, trigger=trigger, config=config,
                counts=settings_key(model=model, tokenizer=counted_with, window=window, fmt=fmt,
                                    skip_invalid=skip_invalid, config=config),
            )  # fmt: skip
            lines, failed = read_files(
                expanded, partial(read_seen, work), memo.finisher(lines_of, work), jobs=jobs,
                preload=preload, pending=pending, known=memo.known(expanded[0]),
            )  # fmt: skip
            memo.save()
    if profiles is not None:
        profiles.save()
    if plot and reports and not reports[0].rows:
        render.warn(f"{reports[0].estimate.path}: no model request in this transcript: no plot written")
        plot = None
    if plot:
        from ctxfold.cli.plot import draw

        draw(reports[0], plot)
    from ctxfold.engine.report_doc import brief_of

    if json_out:
        from ctxfold.engine.report_doc import totals
        from ctxfold.engine.usage import table_doc

        render.emit_json(
            {
                "command": "report",
                "version": 1,
                "warnings": notes,
                "files": docs,
                "failed": failed,
                "totals": totals([brief_of(r) for r in reports]),
                **({"by": table_doc([r.estimate for r in reports], by, config.prices)} if by else {}),
            }
        )
    else:
        from ctxfold.cli import render_report  # loaded once the files are read

        if by and (lines or reports):
            from ctxfold.cli import render_usage
            from ctxfold.engine.usage import sheet

            render_usage.by(lines if lines is not None else [sheet(r.estimate) for r in reports], by)
        elif brief and (lines or reports):
            render_report.brief(lines if lines is not None else [brief_of(r) for r in reports])
        elif reports:
            render_report.report(reports, all_rows=all_rows, explain=explain, plot=plot)
        render.failed(failed, len(lines if lines is not None else reports))
    if failed:
        raise SystemExit(EXIT_FAILURE)
    if fail_on:
        from ctxfold.engine.report_doc import summary

        sums = [b.summary for b in lines] if lines is not None else [summary(r) for r in reports]
        if fail_on == "compact" and any(s["first_fire"] is not None for s in sums):
            raise SystemExit(EXIT_CONDITION)
        if fail_on == "overflow" and any(s["overflows"] for s in sums):
            raise SystemExit(EXIT_CONDITION)


def _briefly(replayed: "Callable[[FileEstimate], Report]") -> "Callable[[FileEstimate], Brief]":
    """A file's ``--brief`` line, from its report (``replayed``)."""

    def line(est: "FileEstimate") -> "Brief":
        from ctxfold.engine.report_doc import brief_of

        return brief_of(replayed(est))

    return line


def _sheet_of(profiles: "Profiles | None", est: "FileEstimate") -> "Sheet":
    """What ``report --by`` totals of ``est``, the profile taught what it shows (as a report
    of it teaches it)."""
    from ctxfold.engine.usage import sheet

    if profiles is not None:
        from ctxfold.engine.now import learn_from

        learn_from(profiles, est)
    return sheet(est)


def _report_memo(kind: str, files: list[str], profiles: "Profiles | None", **settings: Any) -> "ReportMemo":
    """The memo of ``report``'s lines of ``kind`` over ``files`` with these ``settings`` (its
    key), its warnings said (a damaged memo)."""
    import os

    from ctxfold.cli import render
    from ctxfold.engine.report_memo import ReportMemo

    config = settings.pop("config")
    key = {**settings, "config": config.raw, "profile": profiles is not None}
    memo = ReportMemo(kind, {**key, "inputs": [os.path.abspath(f) for f in files]}, profiles)
    render.notes(memo.warnings, json_out=False)
    return memo


def _report_doc(rep: "Report", explain: bool) -> dict[str, Any]:
    """One file's ``report --json`` document: its replay, its tokens by how they are billed (and
    dates), and with ``--explain`` the arithmetic of its last decision, as the terminal shows it."""
    from ctxfold.engine.report_doc import explain as explain_lines
    from ctxfold.engine.report_doc import to_dict
    from ctxfold.engine.usage import session_usage

    doc = to_dict(rep)
    doc["usage"] = session_usage(rep.estimate, rep.prices)
    if explain:
        doc["explain"] = [{"label": k, "text": v} for k, v in explain_lines(rep)]
    return doc


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
