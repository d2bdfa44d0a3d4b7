"""``ctxfold statusline`` on pi sessions, as ctxfold's pi extension runs it, and the extension's
installer (``ctxfold statusline --install-pi``).

The payload is the one the extension builds (Claude Code's shape: ``transcript_path``,
``session_id``, ``cwd``, ``model``, ``context_window``); pi's settings are written where pi reads
them (``~/.pi/agent/settings.json``, the project's ``.pi/settings.json``). The sessions are the real
pi ones of ``../shared/fixtures-real`` and the bundled one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT, real_files
from test_statusline import LAUNCH, run

from ctxfold.cli.pi_extension import EXTENSION, install
from ctxfold.cli.statusline import _k
from ctxfold.engine.now import predict_now, prior_for
from ctxfold.formats.pi.settings import PiCompaction, compaction_settings
from ctxfold.tokens.estimate import estimate_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SESSIONS = [*real_files("pi"), FIXTURES / "pi" / "v3-tree.jsonl"]


def pi_payload(session: Path, cwd: Path | str = "/home/user/project", window: int | None = None) -> str:
    """What the extension sends: pi's session file, its id, pi's cwd and model."""
    doc: dict[str, Any] = {
        "session_id": "01a21441-ac24-778f-aca4-23127b46f988",
        "transcript_path": str(session),
        "cwd": str(cwd),
        "model": {"id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5"},
    }
    if window:
        doc["context_window"] = {"context_window_size": window}
    return json.dumps(doc)


def _settings(folder: Path, compaction: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"compaction": compaction}))


def _copy(src: Path, tmp_path: Path) -> Path:
    target = tmp_path / "session.jsonl"
    target.write_bytes(src.read_bytes())
    return target


@pytest.mark.parametrize("src", SESSIONS, ids=lambda p: p.name)
def test_a_pi_session_gets_the_engines_numbers(src: Path, tmp_path: Path) -> None:
    target = _copy(src, tmp_path)
    out = run(pi_payload(target, window=1_000_000))
    assert out.returncode == 0 and out.stderr == ""
    (line,) = out.stdout.splitlines()
    est = estimate_file(str(target), window=1_000_000, skip_invalid=True)
    assert est.format == "pi"
    predicted = predict_now(est, prior_for(est, None)).tokens
    assert line == (
        f"{_k(predicted)}/1M tokens ({predicted / 1_000_000:.0%}) · {_k(980_000 - predicted)} left before "
        "the compaction threshold (980k)"  # ctxfold's 980k comes before pi's 983,616
    )
    assert "Claude Code" not in line


def test_pis_own_threshold_when_it_comes_first(tmp_path: Path) -> None:
    target = _copy(SESSIONS[0], tmp_path)
    # a small window: pi's (window − 16,384 = 47,616) before ctxfold's (80 %: 51,200)
    assert "over pi's auto-compact (47.6k): compaction due" in run(pi_payload(target, window=64_000)).stdout
    # pi's reserve set in its global settings
    _settings(Path(os.environ["HOME"]) / ".pi" / "agent", {"reserveTokens": 30_000})
    line = run(pi_payload(target, window=1_000_000)).stdout.strip()
    assert line.endswith(" left before pi's auto-compact (970k)"), line
    # a project's settings win key by key, read in the cwd the payload names
    project = tmp_path / "project"
    _settings(project / ".pi", {"reserveTokens": 50_000})
    assert "pi's auto-compact (950k)" in run(pi_payload(target, project, 1_000_000)).stdout
    # pi's compaction turned off (globally, kept by a project that sets only the reserve): ctxfold's
    _settings(Path(os.environ["HOME"]) / ".pi" / "agent", {"reserveTokens": 30_000, "enabled": False})
    line = run(pi_payload(target, project, 1_000_000)).stdout.strip()
    assert line.endswith(" left before the compaction threshold (980k)"), line
    # $PI_CODING_AGENT_DIR moves pi's folder
    moved = tmp_path / "agent"
    _settings(moved, {"reserveTokens": 40_000})
    line = run(pi_payload(target, window=1_000_000), env={"PI_CODING_AGENT_DIR": str(moved)}).stdout
    assert "pi's auto-compact (960k)" in line


def test_pis_settings_are_merged_as_pi_merges_them(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    agent = home / ".pi" / "agent"
    assert compaction_settings(project, home) == compaction_settings(None, home)  # no files: defaults
    assert compaction_settings(None, home) == PiCompaction(enabled=True, reserve=None)
    _settings(agent, {"enabled": False, "reserveTokens": 20_000})
    _settings(project / ".pi", {"reserveTokens": 25_000})
    merged = compaction_settings(project, home)
    assert merged == PiCompaction(enabled=False, reserve=25_000)  # one level deep: enabled kept
    _settings(project / ".pi", None)  # a key's non-object value replaces the global object
    assert compaction_settings(project, home) == PiCompaction(enabled=True, reserve=None)
    (project / ".pi" / "settings.json").write_text("{not json")  # a broken file counts as empty
    assert compaction_settings(project, home).reserve == 20_000
    _settings(agent, {"reserveTokens": "many", "enabled": None})
    assert compaction_settings(None, home) == PiCompaction(enabled=True, reserve=None)  # as pi's defaults


def test_no_pi_session_yet_and_the_light_path(tmp_path: Path) -> None:
    out = run(pi_payload(tmp_path / "not-yet.jsonl"))
    assert (out.returncode, out.stdout.strip()) == (0, "ctxfold: no transcript yet (Claude Sonnet 4.5)")
    target = _copy(SESSIONS[0], tmp_path)
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", LAUNCH, "statusline"],
        input=pi_payload(target, tmp_path), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "tokens" in traced.stdout
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in traced.stderr.splitlines() if "import time:" in ln}
    assert "ctxfold.formats.pi.settings" in imported  # pi's branch ran
    assert not {m for m in imported if m.split(".")[0] in ("typer", "rich", "click")}


# ---------------------------------------------------------------- the extension and its installer


def test_the_extension_ships_with_the_package() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert EXTENSION.parent == ROOT / "cli" and any(
        EXTENSION.match(pattern) for pattern in conf["package-data"]["ctxfold.cli"]
    )
    text = EXTENSION.read_text()
    # what it relies on: the command, its override, pi's status API, the events it refreshes on
    for needed in ("CTXFOLD_STATUSLINE_CMD", '"statusline"', "setStatus", "turn_end", "session_start"):
        assert needed in text, needed


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, *args], capture_output=True, text=True, check=False,
        env={**os.environ, **(env or {})}, timeout=60,
    )  # fmt: skip


def test_install_pi_never_replaces_a_users_file_unasked(tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    target = home / ".pi" / "agent" / "extensions" / EXTENSION.name
    first = _cli("statusline", "--install-pi")
    assert first.returncode == 0 and f"installed ctxfold's status line for pi: {target}" in first.stdout
    assert target.read_bytes() == EXTENSION.read_bytes()
    again = _cli("statusline", "--install-pi")
    assert again.returncode == 0 and "already installed, unchanged" in again.stdout
    target.write_text("// the user's own extension\n")
    refused = _cli("statusline", "--install-pi")
    assert (
        refused.returncode == 1 and str(target) in refused.stderr and "--force replaces it" in refused.stderr
    )
    assert target.read_text() == "// the user's own extension\n" and "Traceback" not in refused.stderr
    forced = _cli("statusline", "--install-pi", "--force")
    assert forced.returncode == 0 and f"replaced {target} (it differed)" in forced.stdout
    assert target.read_bytes() == EXTENSION.read_bytes()
    assert [p.name for p in target.parent.iterdir()] == [EXTENSION.name]  # no temp file left
    alone = _cli("statusline", "--force")
    assert alone.returncode == 2 and "--force goes with --install-pi" in alone.stderr
    # (the command given, so no hint that ctxfold is not on PATH joins the notes)
    as_json = _cli(
        "statusline", "--install-pi", "--json", env={"CTXFOLD_STATUSLINE_CMD": "ctxfold statusline"}
    )
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout) == {
        "command": "statusline --install-pi",
        "path": str(target),
        "action": "unchanged",
        "notes": ["pi shows it in its footer from its next start (/reload in a running pi)."],
    }
    assert _cli("statusline", "--json").returncode == 2


def test_install_pi_into_the_agent_dir_pi_uses_and_the_path_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = install(home=tmp_path / "home2")
    assert done.action == "installed"
    assert done.path == tmp_path / "home2" / ".pi" / "agent" / "extensions" / EXTENSION.name
    moved = tmp_path / "elsewhere"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(moved))
    assert install(home=tmp_path / "home2").path == moved / "extensions" / EXTENSION.name
    # ctxfold not on the PATH pi will search: the way to point the extension at it is printed
    out = _cli("statusline", "--install-pi", env={"PATH": "/nonexistent"})
    assert out.returncode == 0 and "already installed" in out.stdout
    assert "ctxfold is not on PATH here" in out.stdout and "CTXFOLD_STATUSLINE_CMD=" in out.stdout
    told = _cli("statusline", "--install-pi", env={"CTXFOLD_STATUSLINE_CMD": "ctxfold statusline"})
    assert told.returncode == 0 and "not on PATH" not in told.stdout
