"""Files a shell command reads, writes or edits, and the lines it reads.

Codex and many other agents read and change files through a shell tool (``exec_command``,
``shell``, ``bash``): ``cat``, ``sed -n '1,80p'``, ``nl -ba f | sed -n …``, ``head``, ``rg … f``,
``sed -i``, redirections, ``tee``, ``cp``/``mv``/``rm``, heredocs. A summary that sees only file
tools misses every one of them. This is a reading of the common forms, not a shell parser: a
command it does not understand names no file.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterator

_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\n)\s*")
_PIPE = re.compile(r"\s*\|\s*")
_RANGE = re.compile(r"^(\d+)(?:,(\d+))?p$")
_READERS = {
    "cat",
    "nl",
    "head",
    "tail",
    "less",
    "more",
    "bat",
    "wc",
    "stat",
    "file",
    "sed",
    "awk",
    "get-content",
    "type",
}
_SEARCHERS = {"rg", "grep", "ag", "ack"}
_DRIVE = re.compile(r"^[A-Za-z]:(?=/)")
_FILEISH = re.compile(
    r"^(?:~|\.{1,2})?/?[\w.@$\[\]{}+-]+(?:/[\w.@$\[\]{}+-]+)*\.[A-Za-z0-9]{1,10}$|^[\w.-]*/[\w./@$-]+$"
)


# shlex's POSIX words (whitespace " \t\r\n", no comments) read by regular expressions, which
# is several times faster than its character loop: a word is a run of plain characters,
# backslash escapes, '…' and "…" (where a backslash escapes only " and itself)
_WORD = re.compile(r"""(?:[^ \t\r\n'"\\]+|\\[\s\S]|'[^']*'|"(?:[^"\\]|\\[\s\S])*")+""")
_PIECE = re.compile(r"""([^ \t\r\n'"\\]+)|\\([\s\S])|'([^']*)'|"((?:[^"\\]|\\[\s\S])*)\"""")
_IN_DOUBLE = re.compile(r'\\([\\"])')
_BLANK = " \t\r\n"


def _words(part: str) -> list[str]:
    """``shlex.split(part)``, or the whitespace-separated words when it cannot read it (an
    unclosed quote: a command cut short)."""
    words: list[str] = []
    end = 0
    for m in _WORD.finditer(part):
        if part[end : m.start()].strip(_BLANK):  # an open quote or a last lone backslash
            return _shlex_words(part)
        words.append("".join(_unquoted(m.group())))
        end = m.end()
    return _shlex_words(part) if part[end:].strip(_BLANK) else words


_WINDOWS_WORD = re.compile(r"""(?:[^\s'"]+|'[^']*'|"[^"]*")+""")
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def _windows_words(part: str) -> list[str]:
    """The words of a PowerShell or cmd command: quotes group, and a backslash is a character
    (``Get-Content app\\page.tsx``; read as POSIX words it would be ``apppage.tsx``)."""
    return [_QUOTED.sub(r"\1\2", w) for w in _WINDOWS_WORD.findall(part)]


def _unquoted(word: str) -> Iterator[str]:
    for plain, escaped, single, double in _PIECE.findall(word):
        yield plain or escaped or single or _IN_DOUBLE.sub(r"\1", double)


def _shlex_words(part: str) -> list[str]:
    try:
        return shlex.split(part, posix=True)
    except ValueError:
        return part.split()


def _fileish(word: str) -> bool:
    # a Windows path's drive and backslashes (C:\Users\a.md) read as a POSIX path's
    posix = _DRIVE.sub("", word.replace("\\", "/")) if "\\" in word or ":" in word else word
    return bool(word) and not word.startswith("-") and bool(_FILEISH.match(posix)) and "*" not in word


def _lines(words: list[str]) -> tuple[int, int] | None:
    """``sed -n 'A,Bp'`` → (A, B); ``head -n N`` → (1, N)."""
    if words and words[0] == "sed" and "-n" in words:
        for w in words:
            m = _RANGE.match(w)
            if m:
                return int(m[1]), int(m[2] or m[1])
    if words and words[0] == "head":
        for a, b in itertools.pairwise(words):
            if a == "-n" and b.isdigit():
                return 1, int(b)
    return None


def _one(
    words: list[str], piped_lines: tuple[int, int] | None
) -> list[tuple[str, str, tuple[int, int] | None]]:
    if not words:
        return []
    prog = words[0].rsplit("/", 1)[-1].lower()
    args = [w for w in words[1:] if _fileish(w)]
    out: list[tuple[str, str, tuple[int, int] | None]] = []
    if prog == "sed" and any(w == "-i" or w.startswith("-i") for w in words[1:]):
        return [(a, "edited", None) for a in args[-1:]]
    if prog in _READERS:
        lines = _lines(words) or piped_lines
        if prog == "sed":  # its script is an argument too: the file is the last word
            args = args[-1:] if len(words) > 2 else []
        return [(a, "read", lines) for a in args]
    if prog in _SEARCHERS:  # rg PATTERN [PATH…]: a named file (not a folder) was read
        rest = [w for w in words[1:] if not w.startswith("-")]
        return [(a, "read", None) for a in rest[1:] if _fileish(a) and "." in a.rsplit("/", 1)[-1]]
    if prog in ("touch",):
        return [(a, "written", None) for a in args]
    if prog in ("rm", "unlink"):
        return [(a, "deleted", None) for a in args]
    if prog in ("cp", "mv") and len(args) >= 2:
        moved: list[tuple[str, str, tuple[int, int] | None]] = [(args[-1], "written", None)]
        return moved + ([(a, "deleted", None) for a in args[:-1]] if prog == "mv" else [])
    if prog == "tee":
        return [(a, "written", None) for a in args]
    return out


_PS_CMDLET = re.compile(
    r"\b(Get-Content|Set-Content|Add-Content|Out-File|New-Item|Copy-Item|Move-Item|Remove-Item)\b([^;|}]*)",
    re.I,
)
_PS_TARGET = re.compile(
    r"-(Destination|Path|FilePath|LiteralPath)\s+(?:\(Join-Path (?:[^()]|\([^()]*\))*?'([^']+)'\)|'([^']+)'|\"([^\"$]+)\"|([^\s$()]+))",
    re.I,
)
_PS_ACTION = {"get-content": "read", "remove-item": "deleted", "add-content": "edited"}


def _powershell(command: str) -> list[tuple[str, str, tuple[int, int] | None]]:
    """PowerShell's file cmdlets (Codex on Windows): the ``-Path``/``-Destination`` they name."""
    out: list[tuple[str, str, tuple[int, int] | None]] = []
    for cmdlet in _PS_CMDLET.finditer(command):
        name, args = cmdlet.group(1).lower(), cmdlet.group(2)
        targets = [
            (t.group(1).lower(), next(g for g in t.groups()[1:] if g)) for t in _PS_TARGET.finditer(args)
        ]
        for flag, target in targets:
            if name in ("copy-item", "move-item") and flag != "destination":
                continue
            if _fileish(target.replace("\\", "/")):
                out.append((target, _PS_ACTION.get(name, "written"), None))
    return out


def shell_files(command: str, windows: bool = False) -> list[tuple[str, str, tuple[int, int] | None]]:
    """``(path, action, (first, last) line or None)`` for each file ``command`` touches
    (``windows``: it ran in PowerShell or cmd, where a backslash separates a path's folders)."""
    split = _windows_words if windows else _words
    out: list[tuple[str, str, tuple[int, int] | None]] = _powershell(command) if "-" in command else []
    body = command.split("<<", 1)[0] if "<<" in command else command
    for redirect in re.finditer(r"(?<![<>&\d])(>>?)\s*([^\s;&|<>]+)", body):
        target = redirect.group(2).strip("'\"")
        if _fileish(target) and not target.startswith("/dev/"):
            out.append((target, "written" if redirect.group(1) == ">" else "edited", None))
    for part in _SPLIT.split(body):
        stages = _PIPE.split(part)
        piped: tuple[int, int] | None = None
        for stage in reversed(stages[1:]):  # `nl -ba f | sed -n '1,80p'`: the range belongs to f
            piped = piped or _lines(split(stage))
        for i, stage in enumerate(stages):
            words = [w for w in split(re.sub(r"\d?>>?\s*\S+", "", stage)) if w]
            if words and words[0] in ("sudo", "command", "time", "env"):
                words = words[1:]
            out += _one(words, piped if i == 0 else None)
    return out
