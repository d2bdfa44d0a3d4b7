"""Infrastructure fixes: file modes of atomic writes, broken pipes, config-file checks, a corrupt
profile cache, and where the window of a report came from."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, write_jsonl
from typer.testing import CliRunner

from ctxfold.atomic import write_atomic
from ctxfold.cli.app import app
from ctxfold.cli.errors import EXIT_BROKEN_PIPE
from ctxfold.config import load_config
from ctxfold.engine.profile import VERSION, Observation, Profiles

runner = CliRunner()
SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# 1. atomic writes get the mode open() would give, not mkstemp's 0600


def test_atomic_write_follows_the_umask(tmp_path: Path, umask: None) -> None:
    write_atomic(tmp_path / "a.txt", b"x")
    assert mode(tmp_path / "a.txt") == 0o644
    os.umask(0o027)
    write_atomic(tmp_path / "b.txt", b"x")
    assert mode(tmp_path / "b.txt") == 0o640


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path, umask: None) -> None:
    for bits in (0o600, 0o664, 0o444):
        target = tmp_path / f"t{bits:o}"
        target.write_bytes(b"old")
        target.chmod(bits)
        write_atomic(target, b"new")
        assert target.read_bytes() == b"new" and mode(target) == bits


def test_a_temp_file_is_new_and_private(tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """``new_temp`` (``tempfile.mkstemp`` without its import) never opens a name that is
    there: a file, or a link (which it would follow elsewhere)."""
    from ctxfold import atomic

    draws = iter([b"\x01" * 6, b"\x02" * 6, b"\x03" * 6])
    monkeypatch.setattr(atomic.os, "urandom", lambda n: next(draws))
    taken = tmp_path / f".x.{'01' * 6}.tmp"
    taken.write_bytes(b"someone's")
    os.symlink(tmp_path / "elsewhere", tmp_path / f".x.{'02' * 6}.tmp")
    fd, name = atomic.new_temp(tmp_path, prefix=".x.", suffix=".tmp")
    os.close(fd)
    assert name == str(tmp_path / f".x.{'03' * 6}.tmp") and mode(Path(name)) == 0o600
    assert taken.read_bytes() == b"someone's" and not (tmp_path / "elsewhere").exists()


def test_compact_outputs_and_profile_are_readable_like_any_file(tmp_path: Path, umask: None) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["compact", str(SAMPLE), "--window", "8000", "--force", "--out-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    written = sorted(out.iterdir())
    assert len(written) == 3 and all(mode(p) == 0o644 for p in written), [
        (p.name, oct(mode(p))) for p in written
    ]
    profile = Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "profile.json"
    assert profile.is_file() and mode(profile) == 0o644


# 2. a reader that stops reading (| head) ends the command quietly with 141


def ctxfold_exe() -> Path:
    exe = Path(sys.executable).parent / "ctxfold"
    if not exe.is_file():
        pytest.skip("the ctxfold entry point is not installed next to this Python")
    return exe


def long_session(tmp_path: Path, turns: int = 3000) -> Path:
    rows = []
    for i in range(turns):
        rows += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    return write_jsonl(tmp_path / "long.jsonl", rows)


def test_the_whole_output_is_out_when_the_command_ends(tmp_path: Path) -> None:
    """The command ends without the interpreter's teardown (``cli/main.py``): what it printed,
    far more than a pipe holds, reaches the reader whole, and the exit status is the command's."""
    session = str(long_session(tmp_path))
    out = subprocess.run(
        [str(ctxfold_exe()), "report", session, "--json", "--model", "claude-sonnet-4-5"],
        capture_output=True,
        check=False,
    )
    assert out.returncode == 0 and out.stderr == b""
    doc = json.loads(out.stdout)
    assert len(out.stdout) > 1 << 16 and len(doc["files"][0]["requests"]) == 3000
    bad = subprocess.run([str(ctxfold_exe()), "estimate", str(tmp_path / "none.jsonl")], capture_output=True)
    assert bad.returncode == 1 and bad.stderr.decode().startswith("ctxfold: error:")
    usage = subprocess.run([str(ctxfold_exe()), "estimat"], capture_output=True)
    assert usage.returncode == 2 and b"estimate" in usage.stderr


def test_report_piped_into_head_exits_quietly(tmp_path: Path) -> None:
    """``ctxfold report FILE --all | head -1``: the report is far longer than a pipe holds, so
    ctxfold is still writing when its reader goes away."""
    command = [
        str(ctxfold_exe()),
        "report",
        str(long_session(tmp_path)),
        "--all",
        "--model",
        "claude-sonnet-4-5",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE, stderr
    assert b"long.jsonl" in first and stderr == ""


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--all"],  # text through Rich
        ["report", "--json"],  # a small document: still in Python's buffer when the command returns
        ["report", "--json", "--all"],  # a large one: written at once
        ["estimate"],
        ["config", "--json"],
    ],
)
def test_a_reader_gone_before_any_output(tmp_path: Path, args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [str(ctxfold_exe()), *args, *([str(SAMPLE)] if args[0] != "config" else [])],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == EXIT_BROKEN_PIPE and proc.stderr == b"", proc.stderr.decode()


# 3. the config file: unknown keys are warned about, a named file must exist


def test_unknown_config_keys_are_warned_about_with_the_file_and_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "ctxfold.toml"
    path.write_text(
        "[defaults]\nwindw = 5\nstrategy = 'summary'\nbuffer = '10%'\n"
        "[compact]\ntimout = 3\n"
        "[defualts]\nmodel = 'x'\n"
        "[models.'my-llm']\nwindow = 100\nmax_ouptut = 3\n"
    )
    config = load_config(path)
    assert config.defaults["buffer"] == "10%" and config.models["my-llm"]["window"] == 100
    assert all(w.startswith(f"{path}: ") for w in config.warnings)
    text = "\n".join(config.warnings)
    assert "unknown key 'windw' in [defaults], ignored; did you mean 'window'?" in text
    assert "unknown key 'timout' in [compact], ignored; did you mean 'timeout'?" in text
    assert "unknown table 'defualts', ignored; did you mean 'defaults'?" in text
    assert "'strategy' belongs in [compact], not [defaults]" in text
    assert "unknown key 'max_ouptut' in [models.\"my-llm\"], ignored; did you mean 'max_output'?" in text
    assert len(config.warnings) == 5
    # the README's example has none
    path.write_text(
        (Path(__file__).parent.parent / "README.md").read_text().split("```toml\n", 1)[1].split("```", 1)[0]
    )
    assert load_config(path).warnings == ()


def test_a_config_named_by_the_environment_must_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxfold.toml").write_text("[compact]\ntimeout = 5\n")  # not a fallback for it
    missing = tmp_path / "nowhere" / "ctxfold.toml"
    monkeypatch.setenv("CTXFOLD_CONFIG", str(missing))
    for command in (["config"], ["estimate", str(SAMPLE)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, result.output
        assert f"{missing}: no such config file (named by CTXFOLD_CONFIG)" in result.stderr
        assert "Traceback" not in result.stderr
    monkeypatch.setenv("CTXFOLD_CONFIG", str(tmp_path))
    result = runner.invoke(app, ["config"])
    assert result.exit_code == 1 and "not a file (named by CTXFOLD_CONFIG)" in result.stderr
    monkeypatch.setenv("CTXFOLD_CONFIG", str(tmp_path / "ctxfold.toml"))
    assert runner.invoke(app, ["config"]).exit_code == 0


# 4. a corrupt profile (a cache) is ignored with a warning instead of failing every command


def profile_file() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "ctxfold" / "profile.json"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"",
        b"[1, 2]",
        b'{"version": %d, "profiles": []}' % VERSION,
        b'{"version": %d, "profiles": {"claude-code|claude-sonnet-4": 5}}' % VERSION,
        b'{"version": %d, "profiles": {"k": {"sessions": {"s": {"overhead": "big", "ratio": 1.3}}}}}'
        % VERSION,
        b'{"version": %d, "profiles": {"k": {"sessions": {"s": {"overhead": 1, "ratio": 1.3, "project": 7}}}}}'
        % VERSION,
    ],
)
def test_a_corrupt_profile_is_ignored_with_a_warning(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "profile.json"
    path.write_bytes(content)
    profiles = Profiles(path)
    assert profiles.profiles == {}
    (warning,) = profiles.warnings
    assert warning.startswith(f"{path}: corrupt profile (") and "ignored" in warning
    assert "`ctxfold profile reset` clears it" in warning
    prior = profiles.prior("claude-code|claude-sonnet-4", "anthropic")
    assert prior.source.startswith("built-in claude-code")


def test_a_valid_profile_or_another_versions_loads_without_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    profiles = Profiles(path)
    profiles.learn("k|m", "s", Observation(1000, 1.25, 1.1), project="abc", provider="anthropic")
    profiles.save()
    again = Profiles(path)
    assert again.warnings == [] and again.profiles == profiles.profiles
    path.write_bytes(b'{"version": 1, "profiles": {"k": 5}}')  # learned under other rules: set aside quietly
    assert Profiles(path).warnings == [] and Profiles(path).profiles == {}


def test_commands_run_with_a_corrupt_profile_and_the_next_learning_replaces_it(tmp_path: Path) -> None:
    path = profile_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{truncated")
    dry = runner.invoke(
        app, ["compact", str(SAMPLE), "--dry-run", "--force", "--out-dir", str(tmp_path / "o")]
    )
    assert dry.exit_code == 0, dry.output
    assert path.read_bytes() == b"{truncated"  # a dry run writes nothing, the profile included
    for command in (["report", "--json", str(SAMPLE)], ["estimate", str(SAMPLE)], ["profile", "show"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, (command, result.output)
    assert Profiles(path).warnings == [] and Profiles(path).profiles  # replaced by what was learned
    path.write_bytes(b"{truncated")
    reset = runner.invoke(app, ["profile", "reset"])
    assert reset.exit_code == 0 and not path.exists()


def test_a_profile_path_that_is_a_folder_is_said_plainly(tmp_path: Path) -> None:
    """Not a traceback (reset) nor a bare 'Is a directory' (learning)."""
    path = profile_file()
    path.mkdir(parents=True)
    r = runner.invoke(app, ["profile", "reset"])
    assert r.exit_code == 1 and "is a folder" in r.stderr
    assert isinstance(r.exception, SystemExit)  # said and exited, not raised
    r = runner.invoke(app, ["estimate", str(SAMPLE)])
    assert r.exit_code == 0 and "is a folder" in r.stderr and "nothing is learned" in r.stderr
    assert path.is_dir() and not any(path.iterdir())


def test_a_reader_gone_in_the_middle_of_a_large_json_document(tmp_path: Path) -> None:
    """`ctxfold report big.jsonl --json | head -1`: the reader leaves after the first line of a
    document of more than one pipe buffer (64 KB); the rest must not be dropped as if written."""
    from conftest import real

    proc = subprocess.Popen(
        [
            str(ctxfold_exe()),
            "report",
            "--json",
            "--all",
            "--no-profile",
            str(real("pi/large-session.jsonl")),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"{"
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_BROKEN_PIPE and err == b"", err.decode()


@pytest.mark.parametrize("args", [["--help"], ["report", "--help"]])
def test_help_to_a_reader_gone_exits_quietly(args: list[str]) -> None:
    """Click prints help before any command runs: `ctxfold --help | head -1` is 141 too."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([str(ctxfold_exe()), *args], stdout=write, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)
    assert proc.returncode == EXIT_BROKEN_PIPE and proc.stderr == b"", proc.stderr.decode()
