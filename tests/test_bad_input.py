"""Bad input: one line naming file, line and problem; exit 1 (2 for misuse); no traceback."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.errors import EmptyInputError, LineError, UnknownFormatError
from ctxfold.formats.loader import load, open_transcript

runner = CliRunner()

HEADER = {"type": "header", "format": "ctxfold", "version": 1, "model": "gpt-4o"}
USER = {"type": "message", "role": "user", "parts": [{"type": "text", "text": "hello"}]}


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def jl(*objs: object) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


CASES = {
    "not-json": (jl(HEADER) + b"{not json}\n" + jl(USER), 2, "not valid JSON"),
    "missing-field": (jl(HEADER, {"type": "message", "parts": []}), 2, "missing required field(s): role"),
    "wrong-type": (
        jl(HEADER, {"type": "message", "role": "user", "parts": "x"}),
        2,
        "'parts' should be a list",
    ),
    "bad-role": (jl(HEADER, {"type": "message", "role": "robot", "parts": []}), 2, "role should be"),
    "invalid-utf8": (
        jl(HEADER) + b'{"type":"message","role":"user","parts":[{"type":"text","text":"\xff\xfe"}]}\n',
        2,
        "invalid UTF-8",
    ),
    "not-an-object": (jl(HEADER) + b"[1, 2]\n", 2, "expected a JSON object"),
    "binary-data": (jl(HEADER) + b"\x00\x01\x02\xffPNG", 2, "binary data, not JSON text (NUL byte at byte 0"),
    # no newline after it, but not cut short either: plainly not JSON, not half written
    "garbage-last-line": (jl(HEADER) + b"hello world", 2, "not valid JSON"),
}
# A half-written last line is no error (a session being written ends so): tests/test_first_hour.py


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_line_names_file_and_line(tmp_path: Path, case: str) -> None:
    data, line, words = CASES[case]
    path = write(tmp_path, f"{case}.jsonl", data)
    with pytest.raises(LineError) as info:
        load(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert words in str(info.value)

    result = runner.invoke(app, ["estimate", str(path)])
    assert result.exit_code == 1
    assert f"{path}:{line}:" in result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--skip-invalid" in result.stderr  # the way past a bad line


@pytest.mark.parametrize("case", sorted(CASES))
def test_skip_invalid_reports_and_goes_on(tmp_path: Path, case: str) -> None:
    data, line, _ = CASES[case]
    path = write(tmp_path, f"{case}.jsonl", data)
    opened = open_transcript(path, skip_invalid=True)
    entries = list(opened.entries)
    assert [e.line for e in opened.skipped] == [line]
    assert entries  # the header (and good lines) still came through
    result = runner.invoke(app, ["estimate", "--skip-invalid", str(path)])
    assert result.exit_code == 0, result.stderr
    assert f"skipped {path}:{line}" in result.stderr
    for command in ("report", "compact"):  # compact: not due, or too small; either way it says so
        args = [command, "--skip-invalid", str(path)] + (
            ["--dry-run", "--force"] if command == "compact" else []
        )
        result = runner.invoke(app, args)
        assert f"skipped {path}:{line}" in result.stderr, (command, result.stderr)
        result = runner.invoke(app, [*args, "--json"])
        if result.exit_code == 0:
            doc = orjson.loads(result.stdout)
            assert (doc if command == "compact" else doc["files"][0])["skipped_lines"], command


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "empty.jsonl", b"\n\n  \n")
    with pytest.raises(EmptyInputError, match="empty file"):
        load(path)
    result = runner.invoke(app, ["estimate", str(path)])
    assert result.exit_code == 1 and "empty file" in result.stderr


def test_byte_order_mark_and_crlf_are_read_like_plain_lines(tmp_path: Path) -> None:
    """Some Windows tools start a file with a UTF-8 BOM or end lines with CRLF: same transcript."""
    data = jl(HEADER, USER)
    plain = load(write(tmp_path, "plain.jsonl", data))
    for name, variant in (("bom", b"\xef\xbb\xbf" + data), ("crlf", data.replace(b"\n", b"\r\n"))):
        assert load(write(tmp_path, f"{name}.jsonl", variant)).entries == plain.entries, name
    # a BOM anywhere else is still a bad line
    with pytest.raises(LineError, match="not valid JSON"):
        load(write(tmp_path, "late-bom.jsonl", jl(HEADER) + b"\xef\xbb\xbf" + jl(USER)))


def test_unknown_format(tmp_path: Path) -> None:
    path = write(tmp_path, "weird.jsonl", jl({"foo": 1}, {"bar": [2]}))
    with pytest.raises(UnknownFormatError, match="unknown format"):
        load(path)
    result = runner.invoke(app, ["estimate", str(path)])
    assert result.exit_code == 1 and "unknown format" in result.stderr


def test_fifty_megabyte_line(tmp_path: Path) -> None:
    big = "x" * 50_000_000
    good = write(tmp_path, "big.jsonl", jl(HEADER, {**USER, "parts": [{"type": "text", "text": big}]}))
    t = load(good)
    assert len(t.messages[0].text) == 50_000_000
    bad = write(
        tmp_path, "bigbad.jsonl", jl(HEADER) + b'{"type":"message","text":"' + big.encode() + b"\n" + jl(USER)
    )
    with pytest.raises(LineError) as info:
        load(bad)
    assert info.value.line == 2 and "50.0 MB line" in str(info.value)


def test_misuse_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.jsonl", jl(HEADER, USER))
    for args in (
        ["estimate", "--tokenizer", "o200", str(path)],
        ["estimate", "--format", "claude", str(path)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, args
        assert "did you mean" in result.stderr
    assert runner.invoke(app, ["estimate", "--window", "0", str(path)]).exit_code == 2
    assert runner.invoke(app, ["estimate", "--no-such-flag", str(path)]).exit_code == 2


def test_missing_file_and_empty_directory(tmp_path: Path) -> None:
    result = runner.invoke(app, ["estimate", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 1 and "no such file" in result.stderr
    result = runner.invoke(app, ["estimate", str(tmp_path)])
    assert result.exit_code == 1 and "no session logs" in result.stderr


def test_input_is_never_modified(tmp_path: Path) -> None:
    data = jl(HEADER, USER)
    path = write(tmp_path, "ro.jsonl", data)
    path.chmod(0o444)
    assert runner.invoke(app, ["estimate", str(path)]).exit_code == 0
    assert path.read_bytes() == data


@pytest.mark.parametrize("command", ["estimate", "report"])
def test_one_bad_file_in_a_folder_does_not_cost_the_others(tmp_path: Path, command: str) -> None:
    """`ctxfold report ~/.claude/projects/ --brief`: a broken or empty log among many is named,
    the others are shown, and the exit status says not everything could be read."""
    from conftest import FIXTURES

    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a-good.jsonl").write_bytes((FIXTURES / "ctxfold" / "coding-session.jsonl").read_bytes())
    (folder / "b-empty.jsonl").write_bytes(b"")
    (folder / "c-broken.jsonl").write_bytes(b'{"role": "user", "content": "hi"}\n{"role": \n')
    r = runner.invoke(app, [command, str(folder), "--json"])
    assert r.exit_code == 1
    doc = orjson.loads(r.stdout)
    assert [Path(f["path"]).name for f in doc["files"]] == ["a-good.jsonl"]
    assert [Path(f["path"]).name for f in doc["failed"]] == ["b-empty.jsonl", "c-broken.jsonl"]
    assert "empty" in doc["failed"][0]["error"] and "c-broken.jsonl:2" in doc["failed"][1]["error"]
    r = runner.invoke(app, [command, str(folder)])
    assert r.exit_code == 1 and "a-good.jsonl" in r.stdout
    assert "b-empty.jsonl" in r.stderr and "c-broken.jsonl:2" in r.stderr and "Traceback" not in r.stderr
    # one file alone: its error is the command's, as before
    r = runner.invoke(app, [command, str(folder / "b-empty.jsonl"), "--json"])
    assert r.exit_code == 1 and r.stdout == "" and "empty" in r.stderr


@pytest.mark.parametrize("command", ["estimate", "report", "validate"])
def test_a_missing_path_among_several_is_named_and_the_rest_are_read(tmp_path: Path, command: str) -> None:
    from conftest import FIXTURES

    good = tmp_path / "good.jsonl"
    good.write_bytes((FIXTURES / "ctxfold" / "coding-session.jsonl").read_bytes())
    (tmp_path / "empty-dir").mkdir()
    args = [command, str(tmp_path / "nope.jsonl"), str(tmp_path / "empty-dir"), str(good), "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 1
    doc = orjson.loads(r.stdout)
    assert [Path(f["path"]).name for f in doc["files"]] == ["good.jsonl"]
    assert ["no such file" in f["error"] or "no session logs" in f["error"] for f in doc["failed"]] == [
        True,
        True,
    ]


@pytest.mark.parametrize(
    "command", [["estimate"], ["report"], ["report", "--brief"]]
)  # validate lists each file itself
def test_when_no_file_can_be_read_nothing_pretends_otherwise(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"")
    (tmp_path / "b.jsonl").write_bytes(b"not json\n")
    r = runner.invoke(app, [*command, str(tmp_path)])
    assert r.exit_code == 1 and r.stdout == "", r.stdout
    assert "2 file(s) could not be read; there is nothing to show" in r.stderr
