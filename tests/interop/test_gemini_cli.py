"""The real Gemini CLI resumes ctxfold's compacted sessions.

Two turns (the first reads a large file, the second a small one), ``ctxfold compact`` with the
summary of the head and the last turn kept verbatim, then a third turn resumed from the compacted
session: by its id (``--resume <uuid>``), as the latest session (``--resume latest``) and imported
from the written file (``--session-file``). What Gemini CLI sent is read off the scripted server.
Then once more on a session Gemini CLI had compressed itself (its automatic compression fires
when a reply reports a prompt over half the model's window).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxfold
from ctxfold.compaction.run import CompactOptions, compact_file
from ctxfold.formats.validate import validate
from ctxfold.providers.offline import OfflineSummarizer
from interop.genai_server import contents, genai_api, side_call
from interop.harness import Run, run
from interop.server import Recorded, Reply, ScriptedServer

MODEL = "gemini-2.5-flash"
SUMMARY = "CTXFOLD-SUMMARY: the user had notes.txt and small.txt read; small.txt says KIWI."
SETTINGS = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}
BIG = "".join(
    f"NOTES-LINE-{i:04d}: an entry of the project's notes, long enough to weigh.\n" for i in range(600)
)


class Lab:
    """A private home with Gemini CLI's settings, a project with two files, and the server."""

    def __init__(self, gemini: Path, home: Path, srv: ScriptedServer) -> None:
        self.gemini, self.home, self.srv = gemini, home, srv
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
        (home / "project" / "notes.txt").write_text(BIG)
        (home / "project" / "small.txt").write_text("small.txt says KIWI.\n")

    def gemini_run(self, *args: str, cwd: Path | None = None) -> Run:
        env = {"GEMINI_API_KEY": "lab-key", "GOOGLE_GEMINI_BASE_URL": self.srv.url}
        env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
        return run([self.gemini, "-m", MODEL, *args], home=self.home, env=env, cwd=cwd, timeout=120).check()

    def chats(self) -> Path:
        return self.home / ".gemini" / "tmp" / "project" / "chats"

    def session(self) -> Path:
        """The session file Gemini CLI wrote the turns to (a resume may leave a near-empty one)."""
        return max(self.chats().glob("session-*.jsonl"), key=lambda p: p.stat().st_size)

    def last_call(self) -> Recorded:
        return self.srv.model_calls()[-1]


@pytest.fixture
def lab(harness_bin: Callable[[str], Path], lab_home: Path) -> Iterator[Lab]:
    with ScriptedServer(genai_api, side=side_call) as srv:
        yield Lab(harness_bin("gemini"), lab_home, srv)


def _texts(call: Recorded) -> list[str]:
    return [str(p.get("text", "")) for c in contents(call) for p in c.get("parts", []) if "text" in p]


def _paired(call: Recorded) -> None:
    """Every function call is answered in the next turn, and every response answers one."""
    cs = contents(call)
    for i, c in enumerate(cs):
        asked = [p["functionCall"].get("id") for p in c.get("parts", []) if "functionCall" in p]
        if asked:
            nxt = cs[i + 1].get("parts", []) if i + 1 < len(cs) else []
            answered = [p["functionResponse"].get("id") for p in nxt if "functionResponse" in p]
            assert sorted(asked) == sorted(answered), f"calls {asked} answered by {answered}"
        for p in c.get("parts", []):
            if "functionResponse" in p:
                prev = cs[i - 1].get("parts", []) if i else []
                ids = [q["functionCall"].get("id") for q in prev if "functionCall" in q]
                assert p["functionResponse"].get("id") in ids, "a response that answers no call"


def _compact(lab: Lab, tmp: Path) -> Any:
    with OfflineSummarizer(scripted=[SUMMARY]) as summarizer:
        r = compact_file(
            str(lab.session()),
            summarizer,
            summarizer_window=None,
            options=CompactOptions(
                strategy="sliding-window", force=True, home=lab.home, install=True, out_dir=str(tmp)
            ),
        )
    assert r.status == "compacted", r.status
    return r


def _two_turns(lab: Lab) -> None:
    lab.srv.add(
        Reply(tool_calls=[("read_file", {"file_path": "notes.txt"})]),
        Reply("NOTES-ANSWER: the notes hold 600 entries."),
        Reply(tool_calls=[("read_file", {"file_path": "small.txt"})]),
        Reply("SMALL-ANSWER: small.txt says KIWI."),
    )
    lab.gemini_run("-p", "TURN-ONE: read notes.txt")
    lab.gemini_run("-r", "latest", "-p", "TURN-TWO: read small.txt")


def _carries_the_summary_not_the_folded_turns(call: Recorded, prompt: str) -> None:
    texts = "\n".join(_texts(call))
    assert SUMMARY in texts and prompt in texts
    sent = json.dumps(contents(call))
    for folded in ("TURN-ONE", "NOTES-LINE-0001", "NOTES-ANSWER"):
        assert folded not in sent, f"the folded turn's {folded} was sent"
    _paired(call)


def test_gemini_cli_resumes_the_compacted_session(lab: Lab, tmp_path: Path) -> None:
    _two_turns(lab)
    original = lab.session()
    before = original.read_bytes()
    r = _compact(lab, tmp_path / "out")
    carry = r.carry_on
    assert (
        carry.harness == "Gemini CLI"
        and carry.installed
        and carry.command == ("gemini", "--resume", carry.session_id)
    )
    assert carry.cwd == str(lab.home / "project") and carry.install_to.parent == lab.chats()
    assert carry.session_id not in before.decode()
    # ctxfold left the original as it was; checked now, because Gemini CLI's own start-up cleanup
    # may delete it at its next run when the second turn's resume fell in a later minute (below)
    assert original.read_bytes() == before

    lab.srv.add(Reply("THIRD-ANSWER"))
    lab.gemini_run("-r", carry.session_id, "-p", "TURN-THREE: and now?")
    call = lab.last_call()
    _carries_the_summary_not_the_folded_turns(call, "TURN-THREE")
    sent = json.dumps(contents(call))
    assert '"small.txt says KIWI.\\n"' in sent and "SMALL-ANSWER" in sent  # the kept call, result, answer

    # Gemini CLI wrote its turn into the compacted session: it still validates, names the model
    checked = validate(str(carry.install_to))
    assert checked.ok, checked.violations
    resumed = ctxfold.read(carry.install_to)
    assert MODEL in resumed.models and resumed.session_id == carry.session_id
    assert "THIRD-ANSWER" in resumed.messages[-1].text

    lab.srv.add(Reply("FOURTH-ANSWER"))
    lab.gemini_run("-r", "latest", "-p", "TURN-FOUR: still there?")
    call = lab.last_call()
    _carries_the_summary_not_the_folded_turns(call, "TURN-FOUR")
    assert "THIRD-ANSWER" in json.dumps(contents(call))

    # a resume leaves a near-empty session-<minute>-<id8>.jsonl that Gemini CLI's start-up cleanup
    # deletes with every file of that id; the installed compacted session is spared
    listed = lab.gemini_run("--list-sessions").stdout
    assert carry.session_id in listed and carry.install_to.exists()

    lab.srv.add(Reply("IMPORTED-ANSWER"))
    lab.gemini_run("--session-file", str(r.outputs.compacted), "-p", "TURN-IMPORTED: from the file")
    call = lab.last_call()
    _carries_the_summary_not_the_folded_turns(call, "TURN-IMPORTED")
    assert "THIRD-ANSWER" not in json.dumps(contents(call))


def test_gemini_cli_resumes_a_session_it_had_compressed_itself(lab: Lab, tmp_path: Path) -> None:
    lab.srv.add(
        Reply("HELLO-ANSWER: hello."),
        Reply(tool_calls=[("read_file", {"file_path": "notes.txt"})], input_tokens=600_000),
        Reply("NOTES-ANSWER: the notes hold 600 entries."),
        Reply(tool_calls=[("read_file", {"file_path": "small.txt"})]),
        Reply("SMALL-ANSWER: small.txt says KIWI."),
    )
    lab.gemini_run("-p", "TURN-ONE: hello")
    lab.gemini_run("-r", "latest", "-p", "TURN-ONE-B: read notes.txt")
    lab.gemini_run("-r", "latest", "-p", "TURN-TWO: read small.txt")
    assert any(c.side and "state_snapshot" in c.text for c in lab.srv.requests), "Gemini CLI did not compress"
    compressed = ctxfold.read(lab.session())
    assert any(e.kind == "compaction" and e.trigger == "compress" for e in compressed.entries)

    carry = _compact(lab, tmp_path / "out").carry_on
    lab.srv.add(Reply("THIRD-ANSWER"))
    lab.gemini_run("-r", carry.session_id, "-p", "TURN-THREE: and now?")
    call = lab.last_call()
    _carries_the_summary_not_the_folded_turns(call, "TURN-THREE")
    assert not any(t.lstrip().startswith("<state_snapshot>") for t in _texts(call))
    checked = validate(str(carry.install_to))
    assert checked.ok, checked.violations
    assert MODEL in ctxfold.read(carry.install_to).models
