"""All terminal output: Rich tables on a terminal, plain text when piped, JSON on request.

With the ``render_*`` modules (the replay tables, usage, a compaction's report), the only
modules that import Rich, and only once something is printed with it: a ``--json`` run never
loads it, and a folder's report loads it once its files are read (not before its workers
fork). Warnings and progress go to stderr so stdout stays clean for ``--json`` and pipes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ctxfold.cli import plain

if TYPE_CHECKING:
    from rich.console import Console

    from ctxfold.engine.profile import Profiles
    from ctxfold.formats.loader import Opened

PROGRESS_MIN_BYTES = 5_000_000


class _LazyConsole:
    """A Rich console made on first use (Rich and what it imports cost 25 ms)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None
        self._plain_width: int | bool | None = False  # ``plain_width``'s, once asked (False: not yet)
        self._width: int | None = None

    @property
    def made(self) -> bool:
        return self._console is not None

    @property
    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    @property
    def width(self) -> int:
        """The console's width, found once: Rich works it out again at every ask (the terminal's
        size, the environment), and a folder's files ask thousands of times."""
        if self._width is None:
            self._width = self.real.width
        return self._width

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _real(console: Any) -> Console:
    """The Rich console itself, for Rich's own calls (a test may have put a real one in place)."""
    return console.real if isinstance(console, _LazyConsole) else console


# Piped output is not wrapped at 80 columns: a file or a pager can take long lines.
out = _LazyConsole(highlight=False, width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160)
err = _LazyConsole(stderr=True, highlight=False, soft_wrap=True)


def _stderr_terminal() -> bool:
    """``err.is_terminal``, without loading Rich for a stderr that is plainly no terminal (Rich
    takes one for a terminal only when it is a TTY or FORCE_COLOR or TTY_COMPATIBLE says so)."""
    made = not isinstance(err, _LazyConsole) or err.made
    if not made and plain.no_terminal(sys.stderr):
        return False
    return bool(err.is_terminal)


def emit_json(doc: Any) -> None:
    """The document, all of it, straight to the file descriptor: Python's text layer drops what a
    reader that went away mid-document did not take without raising, and the run would end 0."""
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's capture)
        sys.stdout.write(data.decode())
        return
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]  # BrokenPipeError when the reader is gone


def warn(message: str) -> None:
    from rich.text import Text

    # the message as written: "[defaults]" in it is a TOML table, not Rich markup
    err.print(Text.assemble(("warning:", "yellow" if err.is_terminal else ""), f" {message}"))


def failed(failures: list[dict[str, str]], shown: int) -> None:
    """The files of a several-file run that could not be read, after the ``shown`` others."""
    for f in failures:
        err.print(f"ctxfold: error: {f['error']}", markup=False)
    if failures:
        rest = "the rest are shown above" if shown else "there is nothing to show"
        err.print(f"ctxfold: {len(failures)} file(s) could not be read; {rest}", markup=False)


def notes(*groups: Sequence[str], json_out: bool) -> list[str]:
    """Warnings of the run itself (the config file, the profile), not of one file: on stderr
    now, or returned for the ``--json`` document's ``warnings``."""
    found = [w for g in groups for w in g]
    if not json_out:
        for w in found:
            warn(w)
    return found


@contextlib.contextmanager
def progress(path: str, enabled: bool = True) -> Iterator[Callable[[Opened], None] | None]:
    """A progress bar on stderr for large files when stderr is a terminal; else nothing."""
    size = os.path.getsize(path) if path != "-" and os.path.isfile(path) else 0
    if not (enabled and size >= PROGRESS_MIN_BYTES and _stderr_terminal()):
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=_real(err),
        transient=True,
    ) as bar:
        task = bar.add_task(os.path.basename(path), total=size)
        yield lambda opened: bar.update(task, completed=opened.bytes_read)


@contextlib.contextmanager
def files_progress(total: int, enabled: bool = True) -> Iterator[Callable[[], None]]:
    """A bar across the files of a run read by several processes, on a terminal's stderr; the
    callback it gives may be called from any thread. It draws when called, at most ten times a
    second, with no refresh thread of its own: the workers are forked while it shows."""
    if not (enabled and _stderr_terminal()):
        yield lambda: None
        return
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=_real(err),
        transient=True,
        auto_refresh=False,
    ) as bar:
        task = bar.add_task("files", total=total)
        drawn = [0.0]

        def advance() -> None:
            bar.advance(task)
            now = time.monotonic()
            if now - drawn[0] >= 0.1:
                drawn[0] = now
                bar.refresh()

        bar.refresh()
        yield advance


def plain_width() -> int | None:
    """The width piped output is built at without Rich (``plain.py``); None when Rich prints it
    (a terminal, a width Rich finds itself, or a test's console, which takes what Rich prints)."""
    if not isinstance(out, _LazyConsole):
        return None
    if out._plain_width is False:  # (worked out once a console: a folder's files each ask often)
        out._plain_width = plain.width(out._options.get("width"))
    return out._plain_width


def write_plain(text: str | None) -> bool:
    """Write ``text`` (built by ``plain.py``, no styles) to stdout as it is, unless it is None,
    has characters stdout's encoding may not take (Rich replaces them), or the console is a
    test's (it takes what Rich prints): False, Rich is to write it."""
    if text is None or not isinstance(out, _LazyConsole):
        return False
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    if not (text.isascii() or encoding == "utf8"):
        return False
    sys.stdout.write(text)
    return True


def blank() -> None:
    """An empty line (after a file's output)."""
    if not write_plain("\n"):
        out.print()


def heading(bold: str, rest: str = "") -> None:
    """A line that opens a file's output, ``bold`` in bold on a terminal: wrapped where Rich
    wraps it (a long path, then the rest on the next line), built by ``plain`` when nothing in
    it needs measuring, with the escapes Rich writes on a terminal."""
    width = plain_width()
    room = out.width if width is None else width
    text = bold + rest
    line = plain.line(text, room)
    lines = [text] if line is not None else plain.wrap(text, room, keep_spaces=True)
    if lines is not None:
        if width is not None:
            built: str | None = "".join(f"{x}\n" for x in lines)
        else:  # each line's part of ``bold`` between Rich's escapes for it
            built, at = "", 0
            for x in lines:
                at = text.index(x, at) if x else at
                cut = max(0, min(len(x), len(bold) - at))
                painted = _painted([(x[:cut], "bold"), (x[cut:], "")])
                if painted is None:
                    built = None
                    break
                built += painted + "\n"
                at += len(x)
        if write_plain(built):
            return
    from rich.text import Text

    out.print(Text.assemble((bold, "bold"), rest), soft_wrap=line is not None)  # (fits: no wrapping)


def print_rows(rows: list[list[str]], styles: Sequence[str | None] = ()) -> None:
    """A borderless table laid out by ``plain.table_rows``, printed as Rich prints it: where
    styles are written, its header bold and the cells of a column with a style (``styles[i]``)
    in it, each cell and the padding on its sides styled as Rich styles them, one by one; every
    other line as it is. Rich measures and pads each of a folder's thousands of cells as a
    renderable of its own (about a second for 2,000 lines); this takes milliseconds."""
    unstyled = rows
    if plain_width() is None and out.color_system is not None:  # (piped: no console needed)
        from rich.text import Text

        spans = _styled(rows[0], ["bold"] * len(rows[0]))
        unstyled = rows[1:]
        if any(styles):
            for row in unstyled:
                spans += [("\n", ""), *_styled(row, styles)]
            unstyled = []
        painted = _painted(spans)
        if painted is None or not write_plain(painted + "\n"):  # (it fits: no wrapping to work out)
            out.print(Text.assemble(*spans), soft_wrap=True)
    text = "".join("  ".join(row) + "\n" for row in unstyled)
    if text and not write_plain(text):
        out.out(text, highlight=False, end="")


def _painted(pieces: Sequence[tuple[str, str]]) -> str | None:
    """``pieces`` (text, style) as Rich's console writes them on one line that fits: each styled
    piece between the escapes Rich gives its style on this console (``_escapes``), the others as
    they are (None: Rich is to print them). Rich's own print of them costs about 150 µs, paid
    three times by each file of a folder printed to a terminal."""
    got = []
    for text, style in pieces:
        if style and text:
            around = _escapes(style)
            if around is None:
                return None
            text = around[0] + text + around[1]
        got.append(text)
    return "".join(got)


def _escapes(style: str) -> tuple[str, str] | None:
    """What Rich writes before and after a text in ``style`` on the console ``out``: asked of
    Rich itself, once per console and style (its colour system, NO_COLOR, its own rules). None
    when that is not escapes around the text."""
    con = _real(out)
    key = (con, style)
    if key not in _escape_codes:
        from rich.text import Text

        with con.capture() as captured:
            con.print(Text("X", style=style), end="", soft_wrap=True)
        before, x, after = captured.get().partition("X")
        plain_around = before + after
        escapes = not plain_around.replace("\x1b[", "").strip("0123456789;m")
        _escape_codes[key] = (before, after) if x and escapes else None
    return _escape_codes[key]


_escape_codes: dict[tuple[Any, str], tuple[str, str] | None] = {}


def _styled(row: list[str], styles: Sequence[str | None]) -> list[tuple[str, str]]:
    """A row's cells and the padding between them as Rich styles them: each cell's own style on
    it and on the space at each of its sides."""
    spans: list[tuple[str, str]] = []
    last = len(row) - 1
    for i, cell in enumerate(row):
        style = (styles[i] if i < len(styles) else None) or ""
        spans += [*([(" ", style)] if i else []), (cell, style), *([(" ", style)] if i < last else [])]
    return spans


def print_facts(facts: Sequence[tuple[str, str]], *, indent: int = 2, key_width: int = 12) -> None:
    """``key  value`` lines; a value too long for the terminal goes on under itself, not under
    the key. They have no styles: on a terminal too, Rich writes them as ``plain`` builds them
    (a report of 2,000 files printed its facts there in a second, not five)."""
    width = plain_width() or (out.width if isinstance(out, _LazyConsole) else None)
    if width is not None and write_plain(_facts_plain(facts, width, indent, key_width)):
        return
    from rich.text import Text

    con = _real(out)
    room, head = _fact_layout(con.width, indent, key_width)
    for key, value in facts:
        for i, line in enumerate(Text(value).wrap(con, room, overflow="fold")):
            line.rstrip()
            con.print(Text.assemble(head(key, i), line))


def _facts_plain(
    facts: Sequence[tuple[str, str]], width: int, indent: int = 2, key_width: int = 12
) -> str | None:
    """What ``print_facts`` prints with Rich, built without it; None when a line needs Rich."""
    room, head = _fact_layout(width, indent, key_width)
    got = []
    for key, value in facts:
        lines = plain.wrap(value, room)
        if lines is None:
            return None
        for i, text in enumerate(lines):
            line = plain.line(head(key, i) + text, width)
            if line is None:
                return None
            got.append(line)
    return "".join(got)


def _fact_layout(width: int, indent: int = 2, key_width: int = 12) -> tuple[int, Callable[[str, int], str]]:
    """``print_facts``' layout at ``width``: the room a value wraps in, and what goes before its
    line ``i`` (the key on the first, spaces under it after)."""
    lead = indent + key_width + 1 if key_width else indent

    def head(key: str, i: int) -> str:
        return f"{' ' * indent}{key:<{key_width}} " if key_width and i == 0 else " " * lead

    return max(20, width - lead), head


def num(x: int | None) -> str:
    return "—" if x is None else f"{x:,}"


def profile(profiles: Profiles) -> None:
    import statistics

    from rich.table import Table
    from rich.text import Text

    from ctxfold.engine.profile import BUILTIN

    for w in profiles.warnings:
        warn(w)
    out.print(Text(f"profile: {profiles.path}"))
    shipped = ", ".join(f"{f} {o:,} beyond the measured prompt × {r}" for f, (o, r, _) in BUILTIN.items())
    out.print(Text(f"  shipped priors, used until a source has a learned session: {shipped}"))
    if not profiles.profiles:
        out.print("  nothing learned yet: run estimate or report on a session")
        return
    t = Table(show_edge=False, pad_edge=False, box=None)
    # for a harness whose prompt is measured (tokens/harness_prompts.py), what its sessions sent
    # beyond that prompt: memory files, MCP servers, plugins
    for col in ("source | model family", "sessions", "hidden tokens (median)", "tokenizer ratio (median)"):
        t.add_column(col, justify="left" if col.startswith("source") else "right")
    for key, entry in sorted(profiles.profiles.items()):
        sessions = list(entry.get("sessions", {}).values())
        if sessions:
            t.add_row(
                key,
                str(len(sessions)),
                f"{int(statistics.median(s['overhead'] for s in sessions)):,}",
                f"{statistics.median(s['ratio'] for s in sessions):.3f}",
            )
    out.print(t)
