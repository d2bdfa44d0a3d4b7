"""``ctxfold statusline --codex``: ctxfold's line in Codex's footer.

Codex (0.171 and later, with "Custom status line" on in its ``/experimental`` menu) draws its
footer from a status line provider: an MCP server on stdio (one JSON-RPC message per line) with a
tool that advertises a ``statusline`` entrypoint. About once a second Codex reads that entrypoint's
resource, sending a snapshot of the thread it shows (its id, model, working directory and the
window it counts against), and draws the text it gets back. This module is that server. It finds
the thread's rollout by its id under ``$CODEX_HOME/sessions`` and answers with the line ``ctxfold
statusline`` prints for it (``statusline.py``), in Codex's yellow or red where ctxfold colours it.

Codex gives each read one second and stops asking after a read that fails or runs late. So a read
waits at most ``WAIT`` seconds: the line is made on a thread of its own, and a read that comes
before it is ready gets the thread's previous line (or a note that the session is being read).
The next read, a second later, gets the new line. A session unchanged since the last read costs
a look at its size and ends (``status_memo.py``).

It counts in its own process, never in helper processes (``CTXFOLD_WORKERS=0``): a helper forked
while the main thread waits on stdin would hang for good, since each child closes stdin and the
waiting reader holds that stream's lock. A long session's first line takes longer for it (20 MB:
1.6 s, against 1.0 s with two helpers); what a session appends is counted in-process anyway.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from typing import Any

from ctxfold import __version__
from ctxfold.cli.statusline import RED, YELLOW, line_for, waiting
from ctxfold.tokens.parallel import WORKERS_ENV

URI = "ui://ctxfold/statusline"
STATE = "com.openai/codex-statusline-state"  # where a read's params carry Codex's snapshot
PROTOCOL = "2025-06-18"  # the MCP revision answered when the client names none
WAIT = 0.4  # seconds a read waits for a new line (Codex allows one: the rest is for a busy machine)
READING = "ctxfold: reading this session…"
USAGE = "ctxfold statusline --codex is Codex's status line provider: Codex starts it and talks to it"
TOOL = {
    "name": "statusline",
    "title": "ctxfold: context and compaction",
    "description": "Codex's footer line from ctxfold (not meant to be called).",
    "inputSchema": {"type": "object", "properties": {}},
    "_meta": {"openai/ui": {"entrypoints": [{"type": "statusline", "resourceUri": URI}]}},
}
COLORS = {YELLOW: "yellow", RED: "red"}
_TINTED = re.compile(r"\x1b\[(\d+)m(.*)\x1b\[0m", re.S)


def main() -> int:
    """Answer Codex until it closes stdin (run by hand on a terminal: say what it is, exit 2)."""
    if sys.stdin is None or sys.stdin.isatty():
        print(f'{USAGE} (see docs/commands.md, "In Codex")', file=sys.stderr)
        return 2
    os.environ[WORKERS_ENV] = "0"  # no helper processes: see above
    threading.Thread(target=_warm, name="ctxfold-codex-warm", daemon=True).start()
    lines = Lines()
    try:
        for raw in sys.stdin.buffer:
            reply = handle(raw, lines)
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")  # ASCII: whatever the locale
                sys.stdout.flush()
    except (OSError, KeyboardInterrupt):  # Codex went away mid-reply, or the user stopped it
        pass
    return 0


# what making a line loads first (with what they load, about 120 modules)
WARM = (
    "ctxfold.formats.codex.settings",
    "ctxfold.cli.status_memo",
    "ctxfold.engine.now",
    "ctxfold.engine.policy",
    "ctxfold.tokens.incremental",
)


def _warm() -> None:
    """Load ``WARM`` (0.1-0.2 s) while Codex starts, so that the first read of a thread (a turn
    later) does not pay for it within its second: 1.9 MB rollout, first read 0.27-0.31 s before,
    0.15-0.22 s after."""
    import importlib

    for name in WARM:
        try:
            importlib.import_module(name)
        except Exception:  # the read imports it again, and says what failed
            return


def handle(raw: bytes, lines: Lines) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message (None for a notification or a blank line)."""
    if not raw.strip():
        return None
    try:
        msg = json.loads(raw)
    except ValueError:
        return _error(None, -32700, "Parse error")
    if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
        if isinstance(msg, dict) and "id" in msg and ("result" in msg or "error" in msg):
            return None  # a reply: this server asks nothing, so there is nothing to match it to
        return _error(msg.get("id") if isinstance(msg, dict) else None, -32600, "Invalid request")
    if "id" not in msg:
        return None  # a notification (initialized, cancelled): nothing to answer
    params = msg.get("params")
    try:
        result = _respond(msg["method"], params if isinstance(params, dict) else {}, lines)
    except LookupError:
        return _error(msg["id"], -32601, f"Method not found: {msg['method']}")
    except ValueError as err:
        return _error(msg["id"], -32602, str(err))
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def _respond(method: str, params: dict[str, Any], lines: Lines) -> dict[str, Any]:
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if isinstance(asked, str) else PROTOCOL,
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "ctxfold", "version": __version__},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        if params.get("name") != TOOL["name"]:
            raise ValueError(f"no tool named {params.get('name')!r}")
        text = f"ctxfold draws Codex's footer from {URI}; the last line it made: {lines.last or 'none yet'}"
        return {"content": [{"type": "text", "text": text}]}
    if method == "resources/list":
        return {"resources": [{"name": "statusline", "uri": URI, "mimeType": "application/json"}]}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "resources/read":
        if params.get("uri") != URI:
            raise ValueError(f"no resource {params.get('uri')!r}")
        meta = params.get("_meta")
        state = meta.get(STATE) if isinstance(meta, dict) else None
        tree = ui_tree(lines.get(state if isinstance(state, dict) else {}))
        return {"contents": [{"uri": URI, "mimeType": "application/json", "text": json.dumps(tree)}]}
    raise LookupError(method)


def _error(id_: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def ui_tree(line: str) -> str | dict[str, Any]:
    """The line as Codex draws it: plain text, or in Codex's colour for ctxfold's."""
    tinted = _TINTED.fullmatch(line)
    if tinted is None or tinted.group(1) not in COLORS:
        return line
    return {"type": "text", "props": {"color": COLORS[tinted.group(1)]}, "children": [tinted.group(2)]}


def payload(state: dict[str, Any], rollout: str) -> dict[str, Any]:
    """Codex's snapshot as the status document ``statusline`` reads (Claude Code's shape)."""
    thread = _obj(state, "thread")
    model, workspace = _obj(thread, "model"), _obj(thread, "workspace")
    context = _obj(_obj(thread, "usage"), "context")
    doc: dict[str, Any] = {"transcript_path": rollout, "session_id": thread.get("id")}
    if isinstance(workspace.get("cwd"), str):
        doc["cwd"] = workspace["cwd"]
    doc["model"] = {k: model[k] for k in ("id", "display_name") if isinstance(model.get(k), str)}
    size = context.get("context_window_size")
    if isinstance(size, int) and size > 0:
        doc["context_window"] = {"context_window_size": size}
    return doc


def _obj(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


class Lines:
    """The latest line of each thread, made on a worker thread so that no read waits long."""

    def __init__(self, wait: float = WAIT) -> None:
        self.wait = wait
        self.last: str | None = None
        self._made: dict[str, str] = {}  # thread id -> its last line
        self._rollouts: dict[str, str] = {}  # thread id -> its rollout, once found
        self._wanted: tuple[int, str, dict[str, Any]] | None = None
        self._asked = self._done = 0
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None

    def get(self, state: dict[str, Any]) -> str:
        thread = _obj(state, "thread")
        tid = thread.get("id")
        if not isinstance(tid, str) or not tid:
            return "ctxfold: no Codex thread in the snapshot"
        rollout = self._rollout(tid)
        if rollout is None:
            name = _obj(thread, "model").get("display_name")
            return waiting(name if isinstance(name, str) else None)
        with self._cond:
            self._asked += 1
            ask = self._asked
            self._wanted = (ask, tid, payload(state, rollout))
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="ctxfold-codex-status", daemon=True)
                self._worker.start()
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._done >= ask, timeout=self.wait)
            return self._made.get(tid, READING)

    def _rollout(self, tid: str) -> str | None:
        from ctxfold.formats.codex.settings import find_rollout

        known = self._rollouts.get(tid)
        if known is not None and os.path.isfile(known):
            return known
        found = find_rollout(tid)  # a new thread's is looked for at each read until Codex writes it
        if found is None:
            self._rollouts.pop(tid, None)
            return None
        self._rollouts[tid] = str(found)
        return str(found)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._wanted is not None)
                assert self._wanted is not None
                (ask, tid, doc), self._wanted = self._wanted, None
            line = _line(doc)
            with self._cond:
                self._made[tid] = self.last = line
                self._done = ask
                self._cond.notify_all()


def _line(doc: dict[str, Any]) -> str:
    try:
        return line_for(doc, color=not os.environ.get("NO_COLOR"))
    except Exception as err:  # a bug must not blank Codex's footer, nor stop this server
        if os.environ.get("CTXFOLD_DEBUG"):
            raise
        return f"ctxfold: internal error ({type(err).__name__}; CTXFOLD_DEBUG=1 shows it)"
