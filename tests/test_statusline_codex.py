"""``ctxfold statusline --codex``: the status line provider Codex (0.171+) starts and reads.

The server runs as Codex runs it: a process speaking newline-delimited JSON-RPC (MCP) on stdin and
stdout, with ``CODEX_HOME`` holding the rollouts, read with the snapshot Codex sends (the shape
its ``create-statusline`` skill documents and the pinned 0.171.0 was seen to send). The real
Codex drawing the line is ``tests/interop/test_codex_statusline.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, real_files

from ctxfold.cli.codex_statusline import READING, STATE, URI, Lines, payload, ui_tree
from ctxfold.cli.statusline import line_for
from ctxfold.formats.codex.settings import find_rollout

LAUNCH = "import sys; sys.argv = ['ctxfold', *sys.argv[1:]]; from ctxfold.cli.main import main; main()"
TID = "01a21320-4ecb-7de1-b309-e1b449249bae"  # lab-0169.jsonl's own session id
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def snapshot(tid: str = TID, window: int | None = 95_000, name: str = "GPT-5.1 Codex") -> dict[str, Any]:
    """What Codex 0.171.0 sends with each read (its fields, trimmed of those ctxfold ignores)."""
    context: dict[str, Any] = {"used_tokens": 40_000, "used_percentage": 42}
    if window is not None:
        context["context_window_size"] = window
    return {
        "account": {"rate_limits": []},
        "app": {"cli_version": "0.171.0", "display_mode": "standard"},
        "config": {"statusline_items": ["model-with-reasoning", "current-dir"]},
        "thread": {
            "id": tid,
            "name": "Say hello.",
            "agent": {"state": "ready"},
            "model": {"display_name": name, "id": "gpt-5.1-codex", "provider": "openai"},
            "workspace": {"cwd": "/home/user/project"},
            "usage": {"context": context},
        },
    }


def _home(tmp_path: Path, session: Path = FIXTURES / "codex" / "lab-0169.jsonl", tid: str = TID) -> Path:
    """A Codex home holding ``session`` where Codex keeps a thread's rollout."""
    home = tmp_path / "codex-home"
    day = home / "sessions" / "2026" / "11" / "25"
    day.mkdir(parents=True)
    shutil.copy(session, day / f"rollout-2026-11-25T14-33-34-{tid}.jsonl")
    return home


class Server:
    """``ctxfold statusline --codex`` in a process, spoken to one request at a time."""

    def __init__(self, codex_home: Path, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, "statusline", "--codex"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={
                **{k: v for k, v in os.environ.items() if k != "NO_COLOR"},
                "CODEX_HOME": str(codex_home),
                **env,
            },
        )
        self.next_id = 0

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        return dict(json.loads(self.proc.stdout.readline()))

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
            ).encode()
        )
        got = self.reply()
        assert got["id"] == self.next_id
        return got

    def read(self, state: dict[str, Any]) -> tuple[Any, float]:
        """The UI tree of one read, and how long the read took."""
        start = time.monotonic()
        got = self.call("resources/read", {"uri": URI, "_meta": {STATE: state}})
        took = time.monotonic() - start
        (content,) = got["result"]["contents"]
        assert content["uri"] == URI and content["mimeType"] == "application/json"
        return json.loads(content["text"]), took

    def settled(self, state: dict[str, Any], timeout: float = 60) -> Any:
        """Reads once a second, as Codex does, until the line is no longer being made."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tree, took = self.read(state)
            assert took < 1.0, f"a read took {took:.2f} s: Codex stops asking after one over a second"
            if tree != READING:
                return tree
            time.sleep(1)
        raise AssertionError("the line was never made")

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0
        return self.proc.stderr.read().decode()


@pytest.fixture
def server(tmp_path: Path) -> Any:
    made: list[Server] = []

    def start(codex_home: Path, **env: str) -> Server:
        made.append(Server(codex_home, **env))
        return made[-1]

    yield start
    for s in made:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_it_offers_codex_a_statusline_entrypoint(tmp_path: Path, server: Any) -> None:
    s = server(_home(tmp_path))
    init = s.call("initialize", {"protocolVersion": "2025-06-18", "clientInfo": {"name": "codex-mcp-client"}})
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert set(init["result"]["capabilities"]) == {"tools", "resources"}
    s.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')  # answered by nothing
    (tool,) = s.call("tools/list")["result"]["tools"]
    assert tool["_meta"]["openai/ui"]["entrypoints"] == [{"type": "statusline", "resourceUri": URI}]
    (resource,) = s.call("resources/list")["result"]["resources"]
    assert resource["uri"] == URI
    assert s.call("ping")["result"] == {}
    # what is not a request gets the JSON-RPC error for it, and the server carries on
    s.send(b"{not json")
    assert s.reply()["error"]["code"] == -32700
    assert s.call("prompts/list")["error"]["code"] == -32601
    assert s.call("resources/read", {"uri": "ui://other/footer"})["error"]["code"] == -32602
    assert s.call("tools/call", {"name": "other"})["error"]["code"] == -32602
    assert s.close() == ""


def test_the_line_is_the_statuslines_for_the_threads_rollout(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("CODEX_HOME", str(home))
    rollout = find_rollout(TID)
    assert rollout is not None and rollout.parent.parent.parent.parent == home / "sessions"
    s = server(home)
    s.call("initialize")
    tree = s.settled(snapshot())
    text = tree if isinstance(tree, str) else "".join(tree["children"])
    assert re.fullmatch(r"[\d.]+k/95k tokens \(\d+%\) · .* left before .*", text), text
    # the statusline's own line for that rollout, with the window Codex sends; of the two
    # thresholds ctxfold's comes first here (76k: 95k less 20 %), before Codex's 90 % of the
    # model's window (90k: Codex records and sends 95 % of it)
    monkeypatch.delenv("NO_COLOR", raising=False)
    same = line_for(payload(snapshot(), str(rollout)), color=True)
    assert ui_tree(same) == tree
    assert ANSI.sub("", same).endswith("left before the compaction threshold (76k)"), same
    s.close()


def test_codexs_own_limit_lowers_its_threshold(tmp_path: Path, server: Any) -> None:
    home = _home(tmp_path)
    (home / "config.toml").write_text('model = "gpt-5.1-codex"\nmodel_auto_compact_token_limit = 60000\n')
    s = server(home)
    tree = s.settled(snapshot())
    assert isinstance(tree, str) and tree.endswith("left before Codex's auto-compact (60k)"), tree
    (home / "config.toml").write_text("model_auto_compact_token_limit = 4000\n")  # read again at once
    tree = s.settled(snapshot())
    assert isinstance(tree, dict) and tree["props"] == {"color": "red"}, tree  # in Codex's red
    assert tree["children"][0].endswith("over Codex's auto-compact (4k): compaction due")
    s.close()


def test_colour_follows_no_color(tmp_path: Path, server: Any) -> None:
    home = _home(tmp_path)
    (home / "config.toml").write_text("model_auto_compact_token_limit = 4000\n")
    tree = server(home, NO_COLOR="1").settled(snapshot())
    assert isinstance(tree, str) and tree.endswith("compaction due"), tree


def test_a_thread_without_its_rollout_yet_and_a_snapshot_without_a_thread(
    tmp_path: Path, server: Any
) -> None:
    s = server(_home(tmp_path))
    other = "01a21320-0000-7000-8000-000000000000"
    assert s.read(snapshot(other))[0] == "ctxfold: no transcript yet (GPT-5.1 Codex)"
    assert s.read({})[0] == "ctxfold: no Codex thread in the snapshot"
    assert s.read(snapshot("../*"))[0] == "ctxfold: no transcript yet (GPT-5.1 Codex)"  # no glob
    # the thread's first turn: Codex writes its rollout, and the next read finds it
    rollout = next((tmp_path / "codex-home" / "sessions").glob("*/*/*/*.jsonl"))
    shutil.copy(rollout, rollout.with_name(f"rollout-2026-11-25T15-00-00-{other}.jsonl"))
    assert "tokens" in str(s.settled(snapshot(other)))
    s.close()


def test_a_read_never_waits_for_a_slow_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first read of a session is answered before its line is made; a later one gets it."""
    from ctxfold.cli import codex_statusline

    monkeypatch.setenv("CODEX_HOME", str(_home(tmp_path)))
    made = codex_statusline._line

    def slow(doc: dict[str, Any]) -> str:  # a line that takes a while, however busy the machine
        time.sleep(0.3)
        return made(doc)

    monkeypatch.setattr(codex_statusline, "_line", slow)
    lines = Lines(wait=0)
    assert lines.get(snapshot()) == READING
    deadline = time.monotonic() + 60
    got = READING
    while got == READING and time.monotonic() < deadline:
        time.sleep(0.05)
        got = lines.get(snapshot())
    assert "tokens" in got
    # a session that grows: the read that comes before its new line is made gets the previous one
    rollout = next(Path(os.environ["CODEX_HOME"]).glob("sessions/*/*/*/*.jsonl"))
    with rollout.open("ab") as f:
        f.write(rollout.read_bytes().splitlines(keepends=True)[-1])
    assert lines.get(snapshot()) == got


@pytest.mark.parametrize("session", real_files("codex")[:3], ids=lambda p: p.name)
def test_real_codex_sessions(
    tmp_path: Path, server: Any, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real rollouts, the window they record (a snapshot without one): the statusline's line."""
    tid = "01a21320-1111-7000-8000-000000000001"
    home = _home(tmp_path, session, tid)
    tree = server(home).settled(snapshot(tid, window=None))
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.delenv("NO_COLOR", raising=False)
    same = line_for(payload(snapshot(tid, window=None), str(find_rollout(tid))), color=True)
    assert tree == ui_tree(same) and "tokens" in ANSI.sub("", same), same


def test_codex_takes_no_other_option() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, "statusline", "--codex", "--json"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--codex" in done.stderr and "Traceback" not in done.stderr


def test_run_by_hand_on_a_terminal_it_says_what_it_is() -> None:
    leader, follower = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, "statusline", "--codex"],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 2 and done.stdout == ""
    assert "Codex's status line provider" in done.stderr and "Traceback" not in done.stderr


def test_codex_going_away_mid_reply_is_no_error(tmp_path: Path, server: Any) -> None:
    s = server(_home(tmp_path))
    s.call("initialize")
    assert s.proc.stdout is not None
    s.proc.stdout.close()  # Codex stopped reading
    with contextlib.suppress(BrokenPipeError):  # the server may be gone by the second
        for n in range(3):
            s.send(json.dumps({"jsonrpc": "2.0", "id": 90 + n, "method": "ping"}).encode())
    assert s.close() == ""


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found |= {int(c) for c in (task / "children").read_text().split()}
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to list a process's children")
def test_it_counts_without_helper_processes(tmp_path: Path, server: Any) -> None:
    """A helper forked while the main thread waits on stdin would hang (each child closes stdin,
    whose lock the waiting reader holds), so the provider never starts one, even for a session
    large enough for helpers and with CTXFOLD_WORKERS asking for two."""
    lines = (FIXTURES / "codex" / "lab-0169.jsonl").read_bytes().splitlines(keepends=True)
    big = tmp_path / "big.jsonl"
    with big.open("wb") as f:
        f.write(lines[0])
        while f.tell() < 9_000_000:  # over parallel.MIN_BYTES
            f.writelines(lines[1:])
    s = server(_home(tmp_path, big), CTXFOLD_WORKERS="2")
    assert s.proc.stdout is not None
    seen: set[int] = set()
    params = {"uri": URI, "_meta": {STATE: snapshot()}}
    deadline, tree = time.monotonic() + 60, READING
    while tree == READING and time.monotonic() < deadline:  # its children, watched throughout
        s.next_id += 1
        s.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": s.next_id, "method": "resources/read", "params": params}
            ).encode()
        )
        while not select.select([s.proc.stdout], [], [], 0.02)[0]:
            seen |= _children(s.proc.pid)
        tree = json.loads(s.reply()["result"]["contents"][0]["text"])
        pause = time.monotonic() + 0.3
        while time.monotonic() < pause:
            seen |= _children(s.proc.pid)
            time.sleep(0.02)
    assert "tokens" in str(tree), tree
    assert not seen, f"the provider started helper processes: {seen}"
    s.close()


def test_what_the_provider_loads_while_codex_starts_is_what_a_line_loads(tmp_path: Path) -> None:
    """The warm-up swallows its errors (a read says them), so a module renamed would leave it
    loading nothing: in a fresh process each of its names is loaded once it ran, and each is one
    that making a line loads (in another fresh process, without the warm-up)."""
    rollout = (
        real_files("codex")[0] if real_files("codex") else sorted((FIXTURES / "codex").glob("*.jsonl"))[0]
    )
    warmed = "from ctxfold.cli import codex_statusline as cs\ncs._warm()\n"
    made = (
        "from ctxfold.cli import codex_statusline as cs\n"
        f"cs.line_for({{'transcript_path': {str(rollout)!r}}}, color=False)\n"
    )
    check = "import sys\nprint([n for n in cs.WARM if n not in sys.modules])\n"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for code in (warmed, made):
        done = subprocess.run([sys.executable, "-c", code + check], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[]", code
