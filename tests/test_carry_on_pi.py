"""Carrying a compacted pi session on: the command that resumes it, ``--install`` placing it in
the folder where ``pi -c``, ``pi --resume`` and ``pi --session ID`` look (under a name of pi's
own kind), outputs kept out of that folder, and the settings that move it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES

from ctxfold.compaction.carry_on import in_a_store
from ctxfold.compaction.run import CompactOptions, compact_file
from ctxfold.compaction.statefile import load_state
from ctxfold.errors import OutputError
from ctxfold.formats import loader
from ctxfold.formats.pi import resume, writer
from ctxfold.providers.offline import OfflineSummarizer

SAMPLE = FIXTURES / "real" / "claude-code-sidechains.jsonl"  # a session large enough to fold


def _compact(src: Path, home: Path, **opts: object) -> object:
    options = CompactOptions(window=24_000, home=home, to="pi", **opts)  # type: ignore[arg-type]
    return compact_file(str(src), OfflineSummarizer(), summarizer_window=None, options=options)


def _header(path: Path) -> dict[str, object]:
    return orjson.loads(path.read_bytes().split(b"\n", 1)[0])  # type: ignore[no-any-return]


def test_install_places_it_where_pi_finds_it(tmp_path: Path) -> None:
    r = _compact(SAMPLE, tmp_path / "home", out_dir=str(tmp_path / "out"), install=True)
    carry = r.carry_on  # type: ignore[attr-defined]
    head = _header(r.outputs.compacted)  # type: ignore[attr-defined]
    assert carry.harness == "pi" and carry.session_id == head["id"] and carry.cwd == "/path/to/Demo"
    assert carry.command == ("pi", "--session", head["id"])
    folder = tmp_path / "home" / ".pi" / "agent" / "sessions" / "--path-to-Demo--"
    stamp = str(head["timestamp"]).replace(":", "-").replace(".", "-")
    assert carry.install_to == folder / f"{stamp}_{head['id']}.jsonl"
    assert carry.installed and carry.install_to.read_bytes() == r.outputs.compacted.read_bytes()  # type: ignore[attr-defined]
    assert load_state(r.outputs.state).session_id != head["id"]  # type: ignore[attr-defined]


def test_the_session_folder_can_be_moved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``$PI_CODING_AGENT_DIR`` moves pi's folder; ``$PI_CODING_AGENT_SESSION_DIR`` and the
    ``sessionDir`` setting hold every directory's sessions in one folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert resume.store(home) == tmp_path / "agent" / "sessions"
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "settings.json").write_text('{"sessionDir": "~/all-sessions"}')
    assert resume.store(home) == home / "all-sessions"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "flat"))
    r = _compact(SAMPLE, home, out_dir=str(tmp_path / "out"))
    carry = r.carry_on  # type: ignore[attr-defined]
    assert carry.install_to.parent == tmp_path / "flat" and not carry.ready


@pytest.mark.parametrize(
    ("cwd", "folder"),
    [("/home/u/my proj", "--home-u-my proj--"), ("C:\\work\\app", "--C--work-app--"), ("/", "----")],
)
def test_folder_names(cwd: str, folder: str) -> None:
    assert resume.folder_for(cwd) == folder


def test_outputs_stay_out_of_pi_session_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pi -c`` takes the newest file of the folder: an output written there would be resumed."""
    home = tmp_path / "home"
    folder = home / ".pi" / "agent" / "sessions" / "--path-to-Demo--"
    folder.mkdir(parents=True)
    session = folder / "2026-01-02T10-00-00-000Z_s1.jsonl"
    session.write_bytes(b"".join(line + b"\n" for line in writer.write(loader.load(SAMPLE))))
    monkeypatch.chdir(tmp_path)
    assert in_a_store(folder, home) == "pi"
    options = CompactOptions(home=home, window=24_000, install=True)
    r = compact_file(str(session), OfflineSummarizer(), summarizer_window=None, options=options)
    assert r.outputs.compacted.parent.resolve() == (tmp_path / "ctxfold-out").resolve()
    assert sorted(folder.iterdir()) == sorted([session, r.carry_on.install_to])  # type: ignore[union-attr]


def test_a_file_pi_could_not_read_is_never_offered_to_it(tmp_path: Path) -> None:
    """pi takes a file whose first line is no session header for corrupt and starts a new
    session over it: such a file gets no command to resume it, and is not installed."""
    from ctxfold.transcript.model import Transcript

    bad = tmp_path / "x.jsonl"
    bad.write_text('{"type": "message"}\n')
    with pytest.raises(OutputError, match="no session header pi can read"):
        resume.plan(Transcript("pi", ()), bad, tmp_path)
    no_cwd = tmp_path / "y.jsonl"
    no_cwd.write_text('{"type": "session", "id": "s1"}\n')
    carry = resume.plan(Transcript("pi", ()), no_cwd, tmp_path)
    assert carry.command == ("pi", "--session", str(no_cwd)) and carry.install_to is None
