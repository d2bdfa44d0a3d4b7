"""The ``report`` command (``app`` registers it): sessions replayed request by request, one line
per file (``--brief``), or their usage totalled per day, project or session (``--by``).

A table of one line per file needs only that line of each: it is made as each file is read and
kept by the report memo (``engine/report_memo.py``) for the next run; the other views replay
every file whole. No ``from __future__ import annotations`` (see ``app``)."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxfold.cli.errors import EXIT_FAILURE, attributed, handle_errors
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
    from ctxfold.cli.inputs import expand
    from ctxfold.cli.jobs import counting, read_files
    from ctxfold.config import load_config
    from ctxfold.engine.calibration import make_calibrator, report_tokenizer
    from ctxfold.engine.profile import Profiles
    from ctxfold.errors import UsageError
    from ctxfold.paths import cache_off
    from ctxfold.settings import effective, setting
    from ctxfold.tokens.incremental import settings_key

    _check_flags(fail_on=fail_on, brief=brief, all_rows=all_rows, by=by)
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
    replayed = partial(
        _replayed, calibration=calibration, max_tokens=max_tokens, buffer=buffer,
        simulate=simulate_compaction or bool(plot),  # the plot draws the compacted run too
        profiles=profiles, config=config, rule=rule,
    )  # fmt: skip
    docs: list[dict[str, Any]] = []  # with --json, each file's, made as it is finished

    def finish(est: "FileEstimate") -> "Report":  # here, in file order: the profile evolves as in one process
        from ctxfold.engine.report_doc import summary

        rep = replayed(est)
        summary(rep)  # every output shows it: worked out now, while the workers read on
        if json_out:
            docs.append(_report_doc(rep, explain))  # so is its document
        return rep

    preload = setting("tokenizer", counted_with, config).value or "o200k"
    read = partial(read_files, expanded, jobs=jobs, preload=preload, pending=pending)
    # a table of one line per file (--brief's, or the calls --by totals) needs only that of each
    lines_of: Callable[[FileEstimate], Any] | None = None
    if brief and not plot:
        kind, lines_of = "brief", partial(_brief_line, replayed)
    elif by and not (json_out or fail_on or plot):  # no replay: the profile still learns
        kind, lines_of = "usage", partial(_sheet_of, profiles)
    lines: list[Any] | None = None
    reports: list[Report] = []
    with attributed(settings):
        if lines_of is None:
            reports, failed = read(work, finish, progress=not json_out)
        elif no_cache or cache_off() or "-" in expanded[0]:
            lines, failed = read(work, lines_of)
        else:  # a file's line is the memo's where the file, the settings (and the prior) are the same
            from ctxfold.engine.report_memo import read_seen

            memo = _report_memo(
                kind, files, profiles, notes, json_out=json_out, calibration=calibration, buffer=buffer,
                max_tokens=max_tokens, simulate=simulate_compaction, trigger=trigger, config=config,
                counts=settings_key(model=model, tokenizer=counted_with, window=window, fmt=fmt,
                                    skip_invalid=skip_invalid, config=config),
            )  # fmt: skip
            lines, failed = read(
                partial(read_seen, work), memo.finisher(lines_of, work), known=memo.known(expanded[0])
            )
            memo.save()
    if profiles is not None:
        profiles.save()
    if plot and reports and not reports[0].rows:
        render.warn(f"{reports[0].estimate.path}: no model request in this transcript: no plot written")
        plot = None
    if plot:
        from ctxfold.cli.plot import draw

        draw(reports[0], plot)
    if json_out and lines is not None:  # --brief's lines
        render.emit_json(_document(notes, [_brief_file(b) for b in lines], failed, lines))
    elif json_out:
        from ctxfold.engine.report_doc import brief_of
        from ctxfold.engine.usage import table_doc

        table = {"by": table_doc([r.estimate for r in reports], by, config.prices)} if by else {}
        render.emit_json(_document(notes, docs, failed, [brief_of(r) for r in reports], **table))
    else:
        _render(lines, reports, failed, brief=brief, by=by, all_rows=all_rows, explain=explain, plot=plot)
    if failed:
        raise SystemExit(EXIT_FAILURE)
    if fail_on:
        _fail_on(fail_on, lines, reports)


def _check_flags(*, fail_on: str | None, brief: bool, all_rows: bool, by: str | None) -> None:
    """Options that cannot go together, or a value not among the choices: before any file is read."""
    from ctxfold.cli.options import check_by
    from ctxfold.errors import UsageError
    from ctxfold.names import did_you_mean

    if fail_on not in (None, "compact", "overflow"):
        hint = did_you_mean(fail_on or "", ["compact", "overflow"])
        raise UsageError(f"--fail-on takes compact or overflow, not {fail_on!r}{hint.split(' (known')[0]}")
    if brief and all_rows:
        raise UsageError("--brief prints one line per file, --all every request of one: give one of them")
    check_by(by, brief=brief, all_rows=all_rows)


def _replayed(est: "FileEstimate", **settings: Any) -> "Report":
    # the report's own modules, first loaded here: while the workers read
    from ctxfold.engine.replay import report_from

    return report_from(est, **settings)


def _brief_line(replayed: "Callable[[FileEstimate], Report]", est: "FileEstimate") -> "Brief":
    """A file's ``--brief`` line, from its report (``replayed``)."""
    from ctxfold.engine.report_doc import brief_of

    return brief_of(replayed(est))


def _sheet_of(profiles: "Profiles | None", est: "FileEstimate") -> "Sheet":
    """What ``report --by`` totals of ``est``, the profile taught what it shows (as a report
    of it teaches it)."""
    from ctxfold.engine.usage import sheet

    if profiles is not None:
        from ctxfold.engine.now import learn_from

        learn_from(profiles, est)
    return sheet(est)


def _report_memo(
    kind: str,
    files: list[str],
    profiles: "Profiles | None",
    notes: list[str],
    *,
    json_out: bool,
    **settings: Any,
) -> "ReportMemo":
    """The memo of ``report``'s lines of ``kind`` over ``files`` with these ``settings`` (its
    key), its warnings (a damaged memo) said, or added to ``notes`` for the ``--json`` document."""
    import os

    from ctxfold.cli import render
    from ctxfold.engine.report_memo import ReportMemo

    config = settings.pop("config")
    key = {**settings, "config": config.raw, "profile": profiles is not None}
    memo = ReportMemo(kind, {**key, "inputs": [os.path.abspath(f) for f in files]}, profiles)
    notes.extend(render.notes(memo.warnings, json_out=json_out))
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


def _document(
    notes: list[str], files: list[dict[str, Any]], failed: Any, briefs: "list[Brief]", **more: Any
) -> dict[str, Any]:
    """The ``--json`` document: each file's (``files``), the totals of the run over their lines
    (``briefs``), and what else the view adds (``--by``'s table)."""
    from ctxfold.engine.report_doc import totals

    return {
        "command": "report",
        "version": 1,
        "warnings": notes,
        "files": files,
        "failed": failed,
        "totals": totals(briefs),
        **more,
    }


def _brief_file(b: "Brief") -> dict[str, Any]:
    """A file of ``--brief --json``: what its line in the table shows."""
    return {"path": b.path, "warnings": list(b.warnings), "summary": b.summary}


def _render(
    lines: list[Any] | None,
    reports: "list[Report]",
    failed: Any,
    *,
    brief: bool,
    by: str | None,
    all_rows: bool,
    explain: bool,
    plot: str | None,
) -> None:
    """The terminal's view: the table of lines (``--by``, ``--brief``) or each file's report."""
    from ctxfold.cli import render, render_report  # loaded once the files are read
    from ctxfold.engine.report_doc import brief_of

    if by and (lines or reports):
        from ctxfold.cli import render_usage
        from ctxfold.engine.usage import sheet

        render_usage.by(lines if lines is not None else [sheet(r.estimate) for r in reports], by)
    elif brief and (lines or reports):
        render_report.brief(lines if lines is not None else [brief_of(r) for r in reports])
    elif reports:
        render_report.report(reports, all_rows=all_rows, explain=explain, plot=plot)
    render.failed(failed, len(lines if lines is not None else reports))


def _fail_on(fail_on: str, lines: list[Any] | None, reports: "list[Report]") -> None:
    """Exit 3 when a file's replay fired (``compact``) or overflowed (``overflow``)."""
    from ctxfold.cli.errors import EXIT_CONDITION
    from ctxfold.engine.report_doc import summary

    sums = [b.summary for b in lines] if lines is not None else [summary(r) for r in reports]
    if fail_on == "compact" and any(s["first_fire"] is not None for s in sums):
        raise SystemExit(EXIT_CONDITION)
    if fail_on == "overflow" and any(s["overflows"] for s in sums):
        raise SystemExit(EXIT_CONDITION)
