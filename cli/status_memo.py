"""The statusline's line for an unchanged session: the one it got last time. Also for a Claude
Code session that grew only by bookkeeping lines its reader gives nothing for (``recall``).

Claude Code also runs its status command every ``refreshInterval`` seconds, and at events that
leave the transcript as it was. Such a call is answered with the line the last call made, without
loading the counting code: 0.03 s instead of 0.12. The line is kept against everything it is made
from: the transcript's and each file's identity, size and change times (and the transcript's
first and last bytes), the environment ctxfold reads, the payload's fields it uses, the working
directory, and ctxfold's own code. Kept in one small file for the last ``SESSIONS`` sessions;
``CTXFOLD_NO_CACHE`` turns it off with the count cache. This module imports nothing it does not
need: the standard ``json``, the paths, and Claude Code's line types.
"""

from __future__ import annotations

import contextlib
import os

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

FILE = "statusline.json"
SESSIONS = 32  # the sessions whose lines are kept, the last measured last
EDGE = 1 << 16  # bytes at each end of the transcript checked besides its size and times
CLAUDE_CODE = "claude-code"  # the format whose bookkeeping lines change nothing (lines.py)
GROWN_MAX = 1 << 20  # bytes appended since the kept line that are read to see they change nothing
ENV_PREFIXES = ("CTXFOLD_", "CLAUDE_", "PI_CODING_AGENT", "CODEX_HOME", "XDG_")
ENV_NAMES = ("NO_COLOR", "HOME")


def inputs(path: str, data: dict[str, Any], color: bool, *, code: str) -> list[Any] | None:
    """Everything the line for ``path`` is made from (``code``: the module that makes it), or
    None when no line is to be kept (the count cache is off, or the transcript cannot be read)."""
    from ctxfold.paths import cache_off, codex_config_file, config_candidates, pi_settings_files, profile_path

    if cache_off():
        return None
    from ctxfold.hashes import code_stamp

    transcript = _fingerprint(path)
    if transcript is None:
        return None
    sent = data.get("context_window")
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    read = [*config_candidates(), profile_path(), *pi_settings_files(cwd), codex_config_file()]
    return [
        os.path.realpath(path),
        transcript,
        sent.get("context_window_size") if isinstance(sent, dict) else None,
        cwd,
        os.getcwd(),
        color,
        sorted([k, v] for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES),
        [[str(p), _stat(p)] for p in read],
        code_stamp(),
        [_stat(code), _stat(__file__)],  # outside the package's stamp in a development install
    ]


def recall(key: list[Any] | None) -> tuple[str, bool] | None:
    """The line kept for these inputs, if any, and whether it was kept for fewer bytes of the
    transcript (then call ``remember`` with ``key``, so that the next call starts from here):
    for exactly these inputs, or for a Claude Code session that grew only by lines its reader
    gives nothing for (``_grown_by_nothing``)."""
    kept = _kept(key)
    line = kept.get("line") if kept is not None else None
    if key is None or kept is None or not isinstance(line, str):
        return None
    before, now = kept.get("inputs"), _plain(key)
    if before == now:
        return line, False
    if kept.get("format") == CLAUDE_CODE and _grown_by_nothing(key[0], before, now):
        return line, True
    return None


def _grown_by_nothing(path: str, before: Any, now: list[Any]) -> bool:
    """Whether all that changed between the kept inputs ``before`` and ``now`` is lines Claude
    Code appended that its reader gives nothing for (queue operations, snapshots, hook progress:
    a fifth to two fifths of a live session's lines, ``formats/claude_code/lines.py``): every
    input but the transcript the same, the transcript the same file grown from the kept size,
    its first bytes and the kept last ones unchanged, and only such complete lines after them."""
    if (
        not isinstance(before, list)
        or len(before) != len(now)
        or [before[0], *before[2:]] != [now[0], *now[2:]]
    ):
        return False
    old, new = before[1], now[1]  # _fingerprint's: size, mtime, inode, device, ctime, two CRC-32s
    if not isinstance(old, list) or len(old) != len(new) or old[2:4] != new[2:4] or old[5] != new[5]:
        return False
    size = old[0]
    if not isinstance(size, int) or not EDGE < size < new[0] or new[0] - size > GROWN_MAX:
        return False
    import zlib

    from ctxfold.formats.claude_code.lines import adds_nothing

    try:
        with open(path, "rb") as f:
            f.seek(size - EDGE)
            edge, added = f.read(EDGE), f.read(new[0] - size)
    except OSError:
        return False
    if zlib.crc32(edge) != old[6] or not added.endswith(b"\n"):
        return False
    return all(adds_nothing(raw) for raw in added.splitlines())


def _kept(key: list[Any] | None) -> dict[str, Any] | None:
    """What is kept for ``key``'s session (its inputs, line and format), if anything."""
    if key is None:
        return None
    import json

    try:
        kept = json.loads(_file().read_bytes())[key[0]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return kept if isinstance(kept, dict) else None


def _plain(key: list[Any] | None) -> Any:
    """``key`` as the kept file holds it (JSON: lists for tuples)."""
    import json

    return json.loads(json.dumps(key))


def remember(key: list[Any], line: str, fmt: str | None = None) -> None:
    """Keep ``line`` for ``key``'s session (whose transcript is in format ``fmt``); a folder
    that cannot be written only costs the next call its time."""
    import json

    from ctxfold.atomic import write_unsynced

    path = _file()
    try:
        kept = json.loads(path.read_bytes())
        kept = kept if isinstance(kept, dict) else {}
    except (OSError, ValueError):
        kept = {}
    kept.pop(key[0], None)
    kept[key[0]] = {"inputs": key, "line": line, "format": fmt}
    data = json.dumps(dict(list(kept.items())[-SESSIONS:])).encode()
    with contextlib.suppress(OSError):
        write_unsynced(path, (data,), prefix=f".{FILE}.", suffix=".tmp")


def _file() -> Path:
    from ctxfold.paths import cache_dir

    return cache_dir() / FILE


def _stat(path: str | os.PathLike[str]) -> list[int] | None:
    from ctxfold.hashes import file_identity

    try:
        return file_identity(os.stat(path))
    except OSError:
        return None


def _fingerprint(path: str) -> list[int] | None:
    """The transcript's ``_stat`` and a CRC-32 of its first and last ``EDGE`` bytes: file times
    move by the kernel's tick, so a rewrite of the same size within a few milliseconds could
    leave the stat as it was; not its bytes as well."""
    import zlib

    from ctxfold.hashes import file_identity

    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            head = f.read(EDGE)
            f.seek(max(0, st.st_size - EDGE))  # a seek and a read: Windows has no os.pread
            tail = f.read(EDGE) if st.st_size > EDGE else b""
    except OSError:
        return None
    return [*file_identity(st), zlib.crc32(head), zlib.crc32(tail)]
