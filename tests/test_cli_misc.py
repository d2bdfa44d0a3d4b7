"""`validate` and `version` through the CLI (the other commands have their own test files)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, write_jsonl
from typer.testing import CliRunner

from ctxfold import __version__
from ctxfold.cli.app import app

runner = CliRunner()


def test_validate_ok_and_violations(tmp_path: Path) -> None:
    ok = runner.invoke(app, ["validate", str(FIXTURES / "anthropic" / "session.jsonl")])
    assert ok.exit_code == 0 and ": ok (anthropic" in ok.stdout
    bad = tmp_path / "bad.jsonl"
    lines = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "again"}]},
    ]
    write_jsonl(bad, lines)
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:3:" in result.stdout  # roles must alternate; the tool_use is never answered
    doc = orjson.loads(runner.invoke(app, ["validate", "--json", str(bad)]).stdout)
    f = doc["files"][0]
    assert f["ok"] is False and f["format"] == "anthropic" and all(v["line"] >= 2 for v in f["violations"])


def test_validate_unreadable_file_is_one_violation(tmp_path: Path) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{oops\n')
    result = runner.invoke(app, ["validate", "--json", str(path)])
    assert result.exit_code == 1
    violations = orjson.loads(result.stdout)["files"][0]["violations"]
    assert (
        violations == [{"line": 2, "message": violations[0]["message"]}]
        and "JSON" in violations[0]["message"]
    )


def test_version() -> None:
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"ctxfold {__version__}"
    assert orjson.loads(runner.invoke(app, ["version", "--json"]).stdout)["version"] == __version__
    for flag in ("--version", "-V"):
        result = runner.invoke(app, [flag])
        assert result.exit_code == 0 and result.stdout.strip() == f"ctxfold {__version__}"


def test_the_readme_quick_start_compacts_the_bundled_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's first command (its ctxfold part, as written) writes the three outputs, and a
    second run says they are up to date."""
    import shlex

    from conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    first = readme.split("## Quick start", 1)[1].split("```sh", 1)[1].split("\n")[1]
    command = shlex.split(first.split("&&", 1)[1])
    assert command[:2] == ["ctxfold", "compact"]
    out = tmp_path / command[command.index("--out-dir") + 1]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    result = runner.invoke(app, command[1:])
    assert result.exit_code == 0, result.output
    stem = Path(command[2]).name.removesuffix(".jsonl")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{stem}.{suffix}" for suffix in ("compacted.jsonl", "summary.md", "ctxfold.json")
    )
    again = runner.invoke(app, command[1:])
    assert again.exit_code == 0 and "up to date" in again.stdout


@pytest.mark.parametrize("command", ["estimate", "report"])
def test_a_json_run_never_loads_rich(command: str, tmp_path: Path) -> None:
    """Rich is loaded when something is printed with it: a --json run prints none of it (and a
    folder's run, where it is needed, loads it once its files are read)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    path = FIXTURES / "claude-code" / "subagent.jsonl"

    def imported(*extra: str) -> set[str]:
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ctxfold", command, str(path), *extra],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if "import time:" in line}

    assert "rich" in imported()  # the measure is real: the terminal's output needs it
    loaded = imported("--json")
    assert "ctxfold.tokens.session" in loaded and "rich" not in loaded


def test_the_commands_annotations_need_no_eval() -> None:
    """Typer reads each command's parameters from its annotations: written as strings (``from
    __future__ import annotations``), every one is compiled and evaluated at each start-up."""
    import typer.main

    from ctxfold.cli.app import app

    def callbacks(group: typer.Typer) -> list[object]:
        found = [info.callback for info in group.registered_commands]
        for sub in group.registered_groups:
            assert sub.typer_instance is not None
            found += callbacks(sub.typer_instance)
        return found

    commands = callbacks(app)
    assert len(commands) >= 8 and typer.main.get_command(app)  # every command, as Typer builds them
    written_as_text = [
        f"{getattr(f, '__qualname__', f)}: {name}"
        for f in commands
        for name, hint in getattr(f, "__annotations__", {}).items()
        if isinstance(hint, str)
    ]
    assert written_as_text == []


def _invocations() -> list[list[str]]:
    """Every command and group, its help and a usage error, with and without ``--debug``."""
    from typer.main import get_command

    names = sorted(get_command(app).commands)  # type: ignore[attr-defined]
    assert {"estimate", "report", "compact", "profile"} <= set(names)
    return [
        [*pre, name, *rest]
        for name in names
        for rest in (["--help"], ["--no-such-option"])
        for pre in ([], ["--debug"])
    ]


@pytest.mark.parametrize("args", _invocations(), ids=" ".join)
def test_the_application_built_for_one_command_answers_as_the_whole_one(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``main`` builds only the command the arguments name (``for_args``): its help, its usage
    errors and its exit status are the whole application's, word for word."""
    from ctxfold.cli.app import for_args
    from ctxfold.cli.errors import DEBUG_VAR

    monkeypatch.setenv(DEBUG_VAR, "")  # what ``--debug`` sets is undone after the test

    one = for_args(args)
    assert one is not app and len(one.registered_commands) + len(one.registered_groups) == 1
    whole, alone = runner.invoke(app, args), runner.invoke(one, args)
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert alone.output.strip()


@pytest.mark.parametrize("args", [[], ["--help"], ["estimat", "x"], ["--version"], ["-h", "estimate"]])
def test_anything_but_a_command_first_gets_the_whole_application(args: list[str]) -> None:
    from ctxfold.cli.app import for_args

    assert for_args(args) is app
