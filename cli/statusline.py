"""``ctxfold statusline``: one line for Claude Code's status bar, from the JSON it sends on stdin.

pi has no status command; the pi extension shipped beside this module (``ctxfold-statusline.ts``,
installed by ``ctxfold statusline --install-pi``: ``pi_extension.py``) runs this command after
each turn with a JSON of the same shape and shows the line in pi's footer. Codex reads a status
line provider, a server it starts once: ``statusline --codex`` (``codex_statusline.py``) serves
this module's line for the thread Codex shows.

Claude Code runs the command after each message (at most every 300 ms), shows the first line
of its stdout, and shows nothing at all when the command fails (exit status other than 0, no
output, too slow); stderr is not shown. So this command always prints one short line and exits
0, whatever happened (no session yet, a transcript it cannot read, JSON it does not know), and
it is quick: the transcript is read on from where the previous call ended (the count cache),
and neither Typer nor Rich is imported (``ctxfold.cli.main`` sends ``statusline`` here first).
Only run by hand with nothing piped in (a terminal on stdin) does it exit 2.

The line: the predicted size of the next request (what the model will read: the log's content
plus what the harness sends that the log leaves out), its share of the window, and what is left
before compaction: before the ContextGuard reference design's threshold (window less 20,000
tokens from 200,000 up, else less 20 %), or before the harness's own auto-compact (Claude Code's,
pi's) when that comes first. Yellow within 10 % of the window of it, red once it is reached; ``NO_COLOR`` turns colour
off.
"""

from __future__ import annotations

import os
import select
import sys
import time

TYPE_CHECKING = False  # typing's, without importing typing: this module must start fast
if TYPE_CHECKING:
    from typing import Any

STDIN_LIMIT = 1 << 20  # Claude Code's status JSON is a few hundred bytes
STDIN_WAIT = 1.0  # seconds: some versions leave stdin open after writing the JSON
NEAR = 0.10  # of the window: yellow when this close to the threshold
YELLOW, RED = "33", "31"  # the line's colours (ANSI codes): near the threshold, over it
USAGE = "ctxfold statusline reads the JSON Claude Code (or ctxfold's pi extension) sends on stdin"


def main() -> int:
    if sys.stdin is None or sys.stdin.isatty():
        print(f'{USAGE} (see docs/commands.md, "statusline")', file=sys.stderr)
        return 2
    try:
        line = status_line(_read_stdin(), color=not os.environ.get("NO_COLOR"))
    except Exception as err:  # a bug must not blank the user's status bar
        if os.environ.get("CTXFOLD_DEBUG"):
            raise
        line = f"ctxfold: internal error ({type(err).__name__}; CTXFOLD_DEBUG=1 shows it)"
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except OSError:
        pass  # Claude Code stopped reading: nothing to tell it
    return 0


def _read_stdin() -> bytes:
    """stdin up to EOF, or as soon as it holds a whole JSON document, or after ``STDIN_WAIT``.
    Read with the standard ``json``: a call answered with the line it kept needs no more JSON
    than this and that line, and ``orjson``'s import (dataclasses, uuid, datetime) is 15 ms."""
    import json

    fd = sys.stdin.fileno()
    buf = b""
    deadline = time.monotonic() + STDIN_WAIT
    while len(buf) < STDIN_LIMIT:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        try:
            json.loads(buf)
            break
        except ValueError:  # not yet a whole document (or not UTF-8: then read to the end)
            continue
    return buf


def status_line(raw: bytes, *, color: bool = False) -> str:
    """The line for Claude Code's status JSON ``raw``."""
    import json

    try:
        data = json.loads(raw)
    except ValueError:  # not JSON, or not UTF-8
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("transcript_path"), str):
        return "ctxfold: no session data on stdin"
    return line_for(data, color=color)


def line_for(data: dict[str, Any], *, color: bool = False) -> str:
    """The line for a status document already parsed, with a ``transcript_path`` (Claude Code's
    shape: pi's extension and the Codex provider, ``codex_statusline.py``, send it too)."""
    model = data.get("model")
    name = model.get("display_name") if isinstance(model, dict) else None
    name = name if isinstance(name, str) else None
    path = os.path.expanduser(data["transcript_path"])
    if not os.path.isfile(path):
        return waiting(name)
    from ctxfold.cli.status_memo import CLAUDE_CODE, inputs, recall, remember

    key = inputs(path, data, color, code=__file__)
    kept = recall(key)
    if kept is not None:  # unchanged, or grown by lines that change nothing (status_memo.py)
        line, grown = kept
        if grown and key is not None:
            remember(key, line, CLAUDE_CODE)
        return line
    from ctxfold.classcode import kept_class_code
    from ctxfold.errors import CtxfoldError

    try:
        with kept_class_code():  # a third of what is loaded below is dataclasses compiling methods
            line, fmt = _measure(path, data, color)
    except CtxfoldError as err:
        return f"ctxfold: {_short(str(err))}"
    if key is not None and inputs(path, data, color, code=__file__) == key:  # nothing moved meanwhile
        remember(key, line, fmt)
    return line


def waiting(name: str | None) -> str:
    """The line before the harness has written the session's first line (named by its model)."""
    return "ctxfold: no transcript yet" + (f" ({name})" if name else "")


def _measure(path: str, data: dict[str, Any], color: bool) -> tuple[str, str]:
    """The line for the transcript at ``path``, and the transcript's format."""
    from ctxfold.config import load_config
    from ctxfold.engine.now import predict_now, prior_for
    from ctxfold.engine.policy import make_policy
    from ctxfold.engine.profile import Profiles
    from ctxfold.settings import setting
    from ctxfold.tokens.incremental import count_file

    config = load_config()
    window = None
    sent = data.get("context_window")
    size = sent.get("context_window_size") if isinstance(sent, dict) else None
    if isinstance(size, int) and size > 0 and setting("window", None, config).source == "default":
        window = size  # what Claude Code itself counts against (a 1M-token window included)
    est = count_file(path, window=window, config=config, skip_invalid=True)
    profiles = None if os.environ.get("CTXFOLD_NO_PROFILE") else Profiles()  # read, never written
    predicted = predict_now(est, prior_for(est, profiles)).tokens
    win = est.model.window
    threshold, by = make_policy(win, buffer=setting("buffer", None, config).value).threshold, ""
    recorded = window is not None or (est.model.window_source or "").startswith("recorded")
    own = _harness_threshold(est.format, win, data, recorded)
    if own is not None and own[0] < threshold:
        threshold, by = own
    left = threshold - predicted
    where = by or "the compaction threshold"
    text = f"{_k(predicted)}/{_k(win)} tokens ({predicted / win:.0%})" if win else f"{_k(predicted)} tokens"
    if left > 0:
        text += f" · {_k(left)} left before {where} ({_k(threshold)})"
        tint = YELLOW if left <= NEAR * win else None
    else:
        text += f" · over {where} ({_k(threshold)}): compaction due"
        tint = RED
    return (f"\x1b[{tint}m{text}\x1b[0m" if color and tint else text), est.format


def _harness_threshold(fmt: str, win: int, data: dict[str, Any], recorded: bool) -> tuple[int, str] | None:
    """Where the harness that wrote the session compacts by itself, by its own settings:
    Claude Code's auto-compact (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` lowers it), pi's (its
    ``compaction`` settings, global and the project's in the payload's ``cwd``), Codex's (its
    ``model_auto_compact_token_limit``; ``recorded``: ``win`` is the window Codex records and
    sends, the 95 % of the model's it lets a request fill); None for others or when the
    harness's own compaction is off."""
    from ctxfold.engine.triggers import Trigger

    if fmt == "claude-code":
        pct = os.environ.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "")
        value = float(pct) if pct.replace(".", "", 1).isdigit() else None
        own = Trigger("claude-code", "pct" if value else None, value)
        return own.threshold(win), "Claude Code's auto-compact"
    if fmt == "pi":
        from ctxfold.formats.pi.settings import compaction_settings

        cwd = data.get("cwd")
        pi = compaction_settings(cwd if isinstance(cwd, str) else None)
        if not pi.enabled:
            return None
        reserve = pi.reserve
        trigger = Trigger("pi") if reserve is None else Trigger("pi", "reserve", reserve)
        return trigger.threshold(win), "pi's auto-compact"
    if fmt == "codex":
        from ctxfold.formats.codex.settings import auto_compact_limit

        limit = auto_compact_limit()
        rule = Trigger("codex") if limit is None else Trigger("codex", "limit", limit)
        return rule.threshold(rule.window_for(win, recorded)), "Codex's auto-compact"
    return None


def _k(n: int) -> str:
    """Tokens the way a status bar has room for: 950, 84.2k, 1.05M."""
    if abs(n) >= 999_500:
        return f"{n / 1e6:.2f}M".replace(".00M", "M")
    if abs(n) >= 1000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return str(n)


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
