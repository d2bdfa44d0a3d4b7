"""`ctxfold.toml`, environment and flags: precedence, redaction, and bad files."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from ctxfold.cli.app import app

runner = CliRunner()
SAMPLE = FIXTURES / "ctxfold" / "coding-session.jsonl"


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def config_doc() -> dict:
    r = runner.invoke(app, ["config", "--json"])
    assert r.exit_code == 0, r.stderr
    return orjson.loads(r.stdout)


def test_defaults_without_a_file(in_tmp: Path) -> None:
    doc = config_doc()
    assert doc["config_file"] is None
    assert doc["settings"]["provider"] == {"value": "offline", "source": "default"}
    assert doc["settings"]["strategy"]["value"] == "summary"


def test_file_then_env_then_flag(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (in_tmp / "ctxfold.toml").write_text(
        '[compact]\nstrategy = "sliding-window"\ntimeout = 5\n[defaults]\nbuffer = "10%"\n'
    )
    doc = config_doc()
    assert doc["settings"]["strategy"]["value"] == "sliding-window"
    assert doc["settings"]["strategy"]["source"].startswith("file ")
    assert doc["settings"]["timeout"]["value"] == 5.0
    monkeypatch.setenv("CTXFOLD_STRATEGY", "mask-observations")
    assert config_doc()["settings"]["strategy"] == {
        "value": "mask-observations",
        "source": "env CTXFOLD_STRATEGY",
    }
    # the file's buffer reaches report; a flag beats it
    rep = orjson.loads(runner.invoke(app, ["report", "--json", str(SAMPLE)]).stdout)["files"][0]
    assert rep["buffer"] == 20_000 and rep["buffer_rule"] == "set explicitly (10%)"
    rep = orjson.loads(runner.invoke(app, ["report", "--json", "--buffer", "5000", str(SAMPLE)]).stdout)[
        "files"
    ][0]
    assert rep["buffer"] == 5_000


def test_model_window_from_the_file(in_tmp: Path) -> None:
    (in_tmp / "ctxfold.toml").write_text('[models."claude-sonnet-4-5"]\nwindow = 64000\n')
    doc = orjson.loads(runner.invoke(app, ["estimate", "--json", str(SAMPLE)]).stdout)["files"][0]
    assert doc["window"] == 64_000 and doc["window_source"] == "config file"


def _window_and_model(*args: str) -> dict[str, tuple]:
    """What estimate, report and compact (dry run) each decided against: (model, window, source)."""
    out = {}
    for cmd in ("estimate", "report", "compact"):
        extra = ("--dry-run", "--force") if cmd == "compact" else ()
        r = runner.invoke(app, [cmd, "--json", *extra, *args, str(SAMPLE)])
        assert r.exit_code == 0, r.stderr
        doc = orjson.loads(r.stdout)
        if cmd == "compact":
            out[cmd] = (None, doc["window"], None)
        else:
            f = doc["files"][0]
            out[cmd] = (f["model"], f["window"], f["window_source"])
    return out


def test_window_and_model_follow_one_precedence_in_every_command(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Window: flag > CTXFOLD_WINDOW > [defaults] > what the log and the model say, the same in
    estimate, report and compact. Model: --model overrides the log's; the environment's and the
    file's model only stand in for a log that names none (this one names claude-sonnet-4-5)."""
    (in_tmp / "ctxfold.toml").write_text('[defaults]\nwindow = 90000\nmodel = "gpt-4o"\n')
    file = str(in_tmp / "ctxfold.toml")
    assert set(_window_and_model().values()) <= {
        ("claude-sonnet-4-5", 90_000, f"file {file}"),
        (None, 90_000, None),
    }
    monkeypatch.setenv("CTXFOLD_WINDOW", "70000")
    monkeypatch.setenv("CTXFOLD_MODEL", "gpt-4o-mini")
    got = _window_and_model()
    assert got["estimate"] == got["report"] == ("claude-sonnet-4-5", 70_000, "env CTXFOLD_WINDOW")
    assert got["compact"][1] == 70_000
    got = _window_and_model("--window", "50000", "--model", "gpt-4o")
    assert got["estimate"] == got["report"] == ("gpt-4o", 50_000, "--window")
    assert got["compact"][1] == 50_000
    # a log that names no model takes the environment's
    bare = in_tmp / "bare.jsonl"
    lines = [orjson.loads(line) for line in SAMPLE.read_bytes().splitlines()]
    bare.write_bytes(b"\n".join(orjson.dumps({k: v for k, v in d.items() if k != "model"}) for d in lines))
    doc = orjson.loads(runner.invoke(app, ["estimate", "--json", str(bare)]).stdout)["files"][0]
    assert doc["model"] == "gpt-4o-mini"


def test_keys_are_redacted(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-ant-api03-VERYSECRETKEYVALUE0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 0
    assert key not in r.stdout and "sk-…(" in r.stdout
    assert key not in runner.invoke(app, ["config", "--json"]).stdout


def test_bad_file_is_a_clear_error(in_tmp: Path) -> None:
    (in_tmp / "ctxfold.toml").write_text("[compact\nstrategy = 1")
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 1 and "invalid TOML" in r.stderr and "Traceback" not in r.stderr
    (in_tmp / "ctxfold.toml").write_text("[compact]\ntimeout = 'soon'\n")
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 1 and "timeout should be float" in r.stderr
    (in_tmp / "ctxfold.toml").write_text('[models."x"]\nwindow = -3\n')
    assert "positive integer" in runner.invoke(app, ["config"]).stderr


def test_bad_numbers_from_the_environment_are_config_errors(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXFOLD_WINDOW", "-100")
    result = runner.invoke(app, ["estimate", str(SAMPLE)])
    assert result.exit_code == 1 and "CTXFOLD_WINDOW: window should be at least 1" in result.stderr
    monkeypatch.delenv("CTXFOLD_WINDOW")
    for value in ("0", "nan", "inf"):
        monkeypatch.setenv("CTXFOLD_TIMEOUT", value)
        result = runner.invoke(app, ["config"])
        assert result.exit_code == 1 and "CTXFOLD_TIMEOUT: timeout should be" in result.stderr, value


def test_bad_numbers_in_the_file_are_config_errors(in_tmp: Path) -> None:
    for line in ("keep_observations = true", "max_retries = 2.7"):
        (in_tmp / "ctxfold.toml").write_text(f"[compact]\n{line}\n")
        result = runner.invoke(app, ["config"])
        assert result.exit_code == 1 and "should be int" in result.stderr, line


def test_seed_calibration_keeps_a_chosen_tokenizer(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--calibration seed counts with len/4 unless a tokenizer was chosen (here by the environment)."""
    doc = orjson.loads(runner.invoke(app, ["report", "--json", "--calibration", "seed", str(SAMPLE)]).stdout)
    assert doc["files"][0]["tokenizer"] == "heuristic"
    monkeypatch.setenv("CTXFOLD_TOKENIZER", "o200k")
    doc = orjson.loads(runner.invoke(app, ["report", "--json", "--calibration", "seed", str(SAMPLE)]).stdout)
    assert doc["files"][0]["tokenizer"] == "o200k"


@pytest.mark.parametrize(
    ("where", "command", "expected"),
    [
        ("env", ["report", str(SAMPLE)], "(buffer from env CTXFOLD_BUFFER)"),
        ("file", ["report", str(SAMPLE)], "(buffer from file "),
        ("env", ["compact", str(SAMPLE), "--dry-run", "--force"], "(provider from env CTXFOLD_PROVIDER)"),
        ("file", ["compact", str(SAMPLE), "--dry-run", "--force"], "(provider from file "),
    ],
)
def test_a_bad_setting_from_the_environment_or_file_names_its_source(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, where: str, command: list[str], expected: str
) -> None:
    """The user typed no --buffer or --provider: the error says where the value came from."""
    name, value = ("buffer", "-5") if command[0] == "report" else ("provider", "bogus")
    if where == "env":
        monkeypatch.setenv(f"CTXFOLD_{name.upper()}", value)
    else:
        section = "defaults" if name == "buffer" else "compact"
        (in_tmp / "ctxfold.toml").write_text(f'[{section}]\n{name} = "{value}"\n')
    r = runner.invoke(app, command)
    assert r.exit_code == 2 and expected in r.stderr, r.stderr
    flag = runner.invoke(app, [*command, f"--{name}", value])
    assert flag.exit_code == 2 and "from" not in flag.stderr.split(value, 1)[1], flag.stderr
