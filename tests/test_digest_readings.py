"""The carry-on digest's cheap readings give what the full ones give.

Tool outputs and commands are read for values (addresses, branches) and failures; each reading
first checks for the words it needs, so that most texts skip the regular expressions. These
tests hold the skips to the full readings' answers, on the cases where a skip could go wrong.
"""

from __future__ import annotations

import random
import re
import shlex

import pytest

from ctxfold.providers.facts import gather
from ctxfold.providers.failures import failed
from ctxfold.providers.shellfiles import _words
from ctxfold.providers.standing import assess
from ctxfold.providers.values import _FOLDS, Values
from ctxfold.transcript.model import Message, TextPart, ToolCallPart, ToolResultPart


def _shlex_or_words(text: str) -> list[str]:
    try:
        return shlex.split(text, posix=True)
    except ValueError:  # an unclosed quote: the command's words as they stand
        return text.split()


def test_shell_words_split_as_shlex_splits_them() -> None:
    rnd = random.Random(20)
    alphabet = "ab c\t\n\r#;|&<>$()*?~=-_/.\x0b\x0c\xa0é'\"\\"
    for _ in range(20000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 24)))
        assert _words(text) == _shlex_or_words(text), repr(text)
    assert _words("sed -n '1,80p' 'my file.py'") == ["sed", "-n", "1,80p", "my file.py"]
    assert _words('echo "a \\"b\\" \\x" c\\ d \'\'') == ["echo", 'a "b" \\x', "c d", ""]
    assert _words("grep 'unclosed x.py") == ["grep", "'unclosed", "x.py"]


def _addresses(text: str) -> list[str]:
    values = Values()
    values.output(text, 1)
    return [v.text for v in values.items()]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r", "\u2028"])
def test_a_server_line_is_read_among_many_lines(newline: str) -> None:
    noise = [f"compiled module {k}" for k in range(30)]
    lines = [*noise, "  ➜  Local:   http://127.0.0.1:5173/", "Server LISTENING on localhost:3001"]
    assert _addresses(newline.join(lines)) == ["http://127.0.0.1:5173/", "127.0.0.1:5173", "localhost:3001"]
    assert _addresses(newline.join([*noise, *noise, *lines])) == []  # only the first 40 lines are read


def test_letters_that_fold_onto_the_words_are_read_as_before() -> None:
    # "ſ" folds onto "s" when matched ignoring case: a lower-cased substring check would miss it
    assert _addresses("ſerver up: https://example.com/app") == ["https://example.com/app"]


def test_lower_casing_finds_every_line_the_pattern_finds() -> None:
    # the substring scans stand in for the pattern unless the text has one of _FOLDS
    fold = re.compile("[a-z]", re.I)
    letters = (chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)
    assert {ch for ch in letters if fold.fullmatch(ch)} == set(_FOLDS)
    assert _addresses("→ Sérvice ✓\n  ➜  Server ready → http://localhost:3000 ✓") == [
        "http://localhost:3000",
        "localhost:3000",
    ]


def test_a_url_on_an_ipv6_address_keeps_its_bracket_and_a_log_gives_its_newest_commit() -> None:
    values = Values()
    values.command("python3 -c \"check('http://[2001:DB8::1]/', 'http://[::1]:8080/x')\"", 1)
    values.words("Open http://example.com/a] now.", 2)  # a bracket after a name ends the URL
    values.words("Allow [a-zA-Z0-9-] (A-Z0-9) as FW-005 does.", 2)  # a ticket, not a character class
    log = "Output: commit e7339bd44fcbe3e8a64c4a3ebd4e1942cbd2261b\nAuthor: A <a@b.c>\n\n    Baseline\n\n"
    values.output(log + "commit 0123456789abcdef0123456789abcdef01234567\nAuthor: A <a@b.c>\n", 3)
    assert [v.text for v in values.items()] == [
        "http://[2001:DB8::1]/",
        "http://[::1]:8080/x",
        "[::1]:8080",
        "http://example.com/a",
        "FW-005",
        "e7339bd44fcbe3e8a64c4a3ebd4e1942cbd2261b",
    ]


def test_a_url_with_a_placeholder_or_in_bold_is_read_right() -> None:
    # cut where the placeholder starts, it would read as an address that exists
    values = Values()
    values.words("Deploy URL: `https://dash-<TBD>.streamlit.app/`, then https://x.dev/{slug}/edit.", 1)
    values.words("Routes: http://localhost:3000/posts/[id] and [https://example.com/docs].", 2)
    values.words("[this code](https://play.example.org/?gist=8851afb5cabae5df91a979048f76560)", 2)
    values.words("The app is serving at **http://localhost:3001**.", 3)  # Markdown's bold is no part of it
    assert [v.text for v in values.items()] == [
        "https://example.com/docs",
        "localhost:3000",
        "https://play.example.org/?gist=8851afb5cabae5df91a979048f76560",  # and no commit of its id
        "http://localhost:3001",
        "localhost:3001",
    ]


def test_a_command_given_as_code_in_someones_words_is_a_value() -> None:
    values = Values()
    values.words("Next: serve the folder (e.g. `python -m http.server`), then `npm run build`.", 1)
    values.words("The `useTimer` hook and `open` it with `git` later.", 2)  # code, but no command line
    values.command("echo `npm run dev`", 3)  # a command the agent ran is read for addresses only
    assert [(v.kind, v.text) for v in values.items()] == [
        ("command", "python -m http.server"),
        ("command", "npm run build"),
    ]


def test_a_powershell_command_keeps_its_backslashes() -> None:
    """Codex on Windows runs PowerShell, where a backslash separates folders: read as POSIX
    words, `app\\page.tsx` was listed as `apppage.tsx` (a real Codex session)."""
    on_windows = {"workdir": "C:\\Users\\Y\\site"}
    read = ToolCallPart("r", "shell_command", {"command": "Get-Content app\\events\\page.tsx", **on_windows})
    cmdlet = ToolCallPart("s", "shell_command", {"command": 'Get-Content "C:\\Users\\Y\\.codex\\SKILL.md"'})
    bash = ToolCallPart("b", "Bash", {"command": "cat src\\a.py"})  # bash reads `src\\a.py` as `srca.py`
    files = gather([Message("assistant", (read, cmdlet, bash))]).files
    assert list(files) == ["app\\events\\page.tsx", "C:\\Users\\Y\\.codex\\SKILL.md", "srca.py"]
    pending = assess(
        [
            Message("user", (TextPart("Go"),)),
            Message("assistant", (ToolCallPart("w", "Write", {"file_path": "src/card.tsx"}),)),
        ]
    )
    assert pending.pending == ["Write `src/card.tsx`"]  # a pending file tool names its file


def _result(text: str) -> ToolResultPart:
    return ToolResultPart("c", (TextPart(text),), name="bash")


def test_a_build_error_in_the_tail_fails_a_command_that_did_not_exit_zero() -> None:
    out = "\n".join(["ok"] * 500 + ["src/a.ts(3,1): error TS2304: Cannot find name 'x'."] + ["done"] * 5)
    assert failed(_result(out), "bash", "ok")
    assert not failed(_result(out), "bash", "exit 0")
    assert not failed(_result(out.replace("error", "warning")), "bash", "ok")
    assert failed(_result("collected 4 items\n=== 1 failed, 3 passed in 0.2s ==="), "bash", "ok")
