"""Run any published version of an agent harness against a recording model server on 127.0.0.1.

The bench scripts ``harness_prompts.py`` (what a harness sends in its first request) and
``harness_triggers.py`` (when it compacts by itself) share this: a version is installed from
the npm registry into a cache outside the repository (``CTXFOLD_HARNESS_VERSIONS``, default
``/work/.harness-versions``, else ``~/.cache/ctxfold-harness-versions``: one folder per
``package@version``), given a private HOME configured for the scripted server, and run headless
with one prompt. The Anthropic Messages server is the harness lab's (``tests/interop/server.py``);
the OpenAI Responses (Codex) and Google GenAI (Gemini CLI) handlers below are the minimal ones a
capture needs: they record every request and answer from the same script of replies.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.interop.harness import run  # noqa: E402
from tests.interop.server import (  # noqa: E402
    Recorded,
    Reply,
    Response,
    ScriptedServer,
    anthropic_api,
    rough_tokens,
)

OK, DONE = Reply("ok"), Reply("Done.")


def versions_cache() -> Path:
    env = os.environ.get("CTXFOLD_HARNESS_VERSIONS")
    if env:
        return Path(env)
    work = Path("/work/.harness-versions")
    return work if work.parent.is_dir() else Path.home() / ".cache" / "ctxfold-harness-versions"


# ------------------------------------------------------------------ OpenAI Responses (Codex)


class ResponsesApi:
    """``POST /v1/responses`` as server-sent events; ``GET /v1/models`` answers an empty list."""

    n = 0

    def handle(self, server: ScriptedServer, request: Recorded, out: Response) -> None:
        path = request.path.split("?", 1)[0]
        body = request.body if isinstance(request.body, dict) else {}
        if not path.endswith("/responses") or request.method != "POST":
            out.json(200, {"object": "list", "data": [], "models": []})
            return
        reply = server.reply_for(request)
        out.events(self.events(body, reply))

    def events(self, body: dict[str, Any], reply: Reply) -> Iterator[tuple[str | None, Any]]:
        ResponsesApi.n += 1
        rid = f"resp_lab{ResponsesApi.n:06d}"
        tokens = reply.input_tokens if reply.input_tokens is not None else rough_tokens(body)
        items: list[dict[str, Any]] = []
        if reply.text:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{rid}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for i, (name, args) in enumerate(reply.tool_calls):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{rid}_{i}",
                    "call_id": f"call_{rid}_{i}",
                    "name": name,
                    "arguments": json.dumps(args),
                    "status": "completed",
                }
            )
        base = {"id": rid, "object": "response", "model": body.get("model"), "status": "in_progress"}
        yield "response.created", {"type": "response.created", "response": {**base, "output": []}}
        for i, item in enumerate(items):
            yield (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": i, "item": item},
            )
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + reply.output_tokens,
        }
        done = {**base, "status": "completed", "output": items, "usage": usage}
        yield "response.completed", {"type": "response.completed", "response": done}


responses_api = ResponsesApi()


# ------------------------------------------------------------------ Google GenAI (Gemini CLI)


class GenaiApi:
    """``…:streamGenerateContent`` (events), ``…:generateContent`` (JSON) and ``…:countTokens``.

    Gemini CLI's model router asks a flash-lite model, with a JSON schema, which model should
    answer; that call is a side call answered with a routing choice, never taken from the script."""

    def handle(self, server: ScriptedServer, request: Recorded, out: Response) -> None:
        path = request.path.split("?", 1)[0]
        body = request.body if isinstance(request.body, dict) else {}
        if path.endswith(":countTokens"):
            out.json(200, {"totalTokens": rough_tokens(body)})
            return
        if not (path.endswith(":streamGenerateContent") or path.endswith(":generateContent")):
            out.json(404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}})
            return
        reply = server.reply_for(request)
        if request.side:
            # both routers Gemini CLI has had: a model choice, and a complexity score
            choice = {"reasoning": "simple", "model_choice": "flash"}
            text = json.dumps({**choice, "complexity_reasoning": "simple", "complexity_score": 10})
            reply = Reply(text, input_tokens=reply.input_tokens)
        chunk = self.chunk(body, reply)
        if path.endswith(":streamGenerateContent"):
            out.events(iter([(None, chunk)]))
        else:
            out.json(200, chunk)

    @staticmethod
    def chunk(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if reply.text:
            parts.append({"text": reply.text})
        for name, args in reply.tool_calls:
            parts.append({"functionCall": {"name": name, "args": args}})
        tokens = reply.input_tokens if reply.input_tokens is not None else rough_tokens(body)
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": tokens,
                "candidatesTokenCount": reply.output_tokens,
                "totalTokenCount": tokens + reply.output_tokens,
            },
            "modelVersion": "gemini-lab",
        }


genai_api = GenaiApi()


def genai_router_call(request: Recorded) -> bool:
    """Gemini CLI's routing call: a JSON-schema'd generateContent, not a turn of the agent."""
    body = request.body if isinstance(request.body, dict) else {}
    config = body.get("generationConfig") or {}
    return request.path.split("?", 1)[0].endswith(":generateContent") and bool(
        config.get("responseJsonSchema") or config.get("responseSchema") or config.get("responseMimeType")
    )


# ------------------------------------------------------------------ the harnesses


@dataclass(frozen=True)
class Harness:
    """How to install, configure and run one harness headless against the scripted server."""

    name: str  # ctxfold's format name for its logs
    package: str
    bin: str
    api: Any
    configure: Callable[[Path, str], dict[str, str]]  # (home, server url) → environment
    argv: Callable[[str], list[str]]  # prompt → arguments after the binary
    logs: str  # glob under HOME for the session logs it writes
    side: Callable[[Recorded], bool] = lambda r: False
    side_reply: Reply = OK


def _claude(home: Path, url: str) -> dict[str, str]:
    # Claude Code turns its tool search off (every tool's schema sent up front) when the base URL
    # is not Anthropic's own host; a user of the Anthropic API has it on (2.1.69 and later defer
    # most built-in tools behind it), so the lab turns it back on to send what users send
    return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "dummy", "ENABLE_TOOL_SEARCH": "true"}


def _claude_side(request: Recorded) -> bool:
    """Claude Code's calls that are no turn of the conversation: titles, topic checks, quota
    probes, sub-agent warm-ups, permission classifiers. A turn of an agent carries its tools."""
    body = request.body if isinstance(request.body, dict) else {}
    return body.get("max_tokens") == 1 or not body.get("tools")


def _codex(home: Path, url: str) -> dict[str, str]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model_provider = "lab"\n'
        "[model_providers.lab]\n"
        'name = "lab"\n'
        f'base_url = "{url}/v1"\n'
        'env_key = "LAB_API_KEY"\n'
        'wire_api = "responses"\n'
    )
    return {"CODEX_HOME": str(codex_home), "LAB_API_KEY": "dummy"}


def _pi(home: Path, url: str) -> dict[str, str]:
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    # every field pi has required of a custom model at one time or another (0.1x–0.4x: all of them)
    model = {
        "id": "claude-sonnet-4-5",
        "name": "Claude Sonnet 4.5",
        "reasoning": False,
        "input": ["text", "image"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 200000,
        "maxTokens": 8192,
    }
    provider = {"baseUrl": url, "api": "anthropic-messages", "apiKey": "dummy", "models": [model]}
    (agent / "models.json").write_text(json.dumps({"providers": {"lab": provider}}))
    settings = {
        "enableInstallTelemetry": False,
        "defaultProvider": "lab",
        "defaultModel": "claude-sonnet-4-5",
    }
    (agent / "settings.json").write_text(json.dumps(settings))
    # pi before custom providers (0.7.x) talks to Anthropic's host only: its installed copy is
    # pointed at the lab by CTXFOLD_LAB_ANTHROPIC_URL (see _pi_redirect), with the model chosen
    # by name
    return {"PI_OFFLINE": "1", "CTXFOLD_LAB_ANTHROPIC_URL": url, "ANTHROPIC_API_KEY": "dummy"}


def pi_redirect(binary: Path) -> None:
    """Let an installed pi that has no custom providers (0.7.x) reach the lab: its built-in
    Anthropic models take their base URL from ``CTXFOLD_LAB_ANTHROPIC_URL`` when it is set.
    This edits the copy in the versions cache, never anything in the repository."""
    models = binary.resolve().parent.parent.parent / "pi-ai" / "dist" / "models.generated.js"
    if not models.exists():
        models = binary.parent.parent / "@mariozechner" / "pi-ai" / "dist" / "models.generated.js"
    if not models.exists():
        return
    text = models.read_text()
    literal = 'baseUrl: "https://api.anthropic.com"'
    if literal in text:
        models.write_text(
            text.replace(
                literal, 'baseUrl: (process.env.CTXFOLD_LAB_ANTHROPIC_URL || "https://api.anthropic.com")'
            )
        )


def _gemini(home: Path, url: str) -> dict[str, str]:
    gem = home / ".gemini"
    gem.mkdir(parents=True, exist_ok=True)
    settings = {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    (gem / "settings.json").write_text(json.dumps(settings))
    return {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_CLI_TRUST_WORKSPACE": "true"}


HARNESSES: dict[str, Harness] = {
    "claude-code": Harness(
        "claude-code",
        "@anthropic-ai/claude-code",
        "claude",
        anthropic_api,
        _claude,
        lambda p: ["-p", p],
        ".claude/projects/*/*.jsonl",
        side=_claude_side,
        # the permission classifiers of 2.1.2xx+ ("auto mode") read a severity; other side calls
        # (titles, warm-ups) take any text
        side_reply=Reply("<severity>0</severity>"),
    ),
    "codex": Harness(
        "codex",
        "@openai/codex",
        "codex",
        responses_api,
        _codex,
        lambda p: ["exec", "--skip-git-repo-check", p],
        ".codex/sessions/**/rollout-*.jsonl",
    ),
    "pi": Harness(
        "pi",
        "@mariozechner/pi-coding-agent",
        "pi",
        anthropic_api,
        _pi,
        lambda p: ["-p", p],
        ".pi/agent/sessions/**/*.jsonl",
    ),
    "gemini-cli": Harness(
        "gemini-cli",
        "@google/gemini-cli",
        "gemini",
        genai_api,
        _gemini,
        lambda p: ["-p", p],
        ".gemini/tmp/**/chats/*",
        side=genai_router_call,
    ),
}


def install(h: Harness, version: str) -> Path:
    """The harness's binary at ``version``, installed from npm on first use."""
    target = versions_cache() / f"{h.package}@{version}"
    binary = target / "node_modules" / ".bin" / h.bin
    if binary.exists():
        return binary
    if not shutil.which("npm"):
        raise SystemExit("npm is needed to install harness versions")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    done = subprocess.run(
        [
            "npm",
            "install",
            "--prefix",
            str(partial),
            f"{h.package}@{version}",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"npm install {h.package}@{version} failed:\n{done.stderr[-2000:]}")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return binary


def installed_version(h: Harness, binary: Path) -> str:
    """The version npm installed (the package's own package.json)."""
    pkg = binary.parent.parent / h.package / "package.json"
    return str(json.loads(pkg.read_text())["version"])


@dataclass
class Session:
    """One headless run: every request the server saw, the logs the harness wrote, its output."""

    harness: str
    requests: list[Recorded]
    logs: list[Path]
    home: Path
    returncode: int
    stdout: str
    stderr: str


def run_session(
    h: Harness,
    binary: Path,
    script: list[Reply],
    prompt: str = "Say hello.",
    *,
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
    home: Path | None = None,
    timeout: float = 240,
    fallback: Reply | None = DONE,
    setup: Callable[[Path], None] | None = None,
) -> Session:
    """Run the harness once with ``prompt`` in an empty project folder of a private HOME."""
    home = home or Path(tempfile.mkdtemp(prefix=f"{h.name}-"))
    (home / "project").mkdir(parents=True, exist_ok=True)
    with ScriptedServer(h.api, script, side=h.side, side_reply=h.side_reply, fallback=fallback) as srv:
        full_env = h.configure(home, srv.url)
        if setup is not None:
            setup(home)
        full_env.update(env or {})
        node_bin = str(Path(shutil.which("node") or "node").parent)
        full_env["PATH"] = f"{node_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        done = run(
            [binary, *(args if args is not None else h.argv(prompt))],
            home=home,
            env=full_env,
            timeout=timeout,
        )
        requests = list(srv.requests)
    logs = sorted(p for p in home.glob(h.logs) if p.is_file())
    return Session(h.name, requests, logs, home, done.returncode, done.stdout, done.stderr)


def run_interactive(
    h: Harness,
    binary: Path,
    script: list[Reply],
    prompt: str = "Say hello.",
    *,
    env: dict[str, str] | None = None,
    home: Path,
    timeout: float = 90,
) -> Session:
    """Claude Code as a user runs it: the interactive terminal UI on a pseudo-terminal, the prompt
    given on the command line, stopped once the answer is in its log. Onboarding, the folder's
    trust dialog and the custom API key prompt are answered in ``~/.claude.json`` beforehand."""
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": ["dummy"], "rejected": []},
        # the fields 1.x read from a project's entry without checking them
        "projects": {
            str(project): {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
                "allowedTools": [],
                "mcpServers": {},
                "enabledMcpjsonServers": [],
                "disabledMcpjsonServers": [],
                "ignorePatterns": [],
                "projectOnboardingSeenCount": 1,
            }
        },
    }
    (home / ".claude.json").write_text(json.dumps(state))
    with ScriptedServer(h.api, script, side=h.side, side_reply=h.side_reply, fallback=Reply("Done.")) as srv:
        node_bin = str(Path(shutil.which("node") or "node").parent)
        full_env = {
            "PATH": f"{node_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **h.configure(home, srv.url),
            **(env or {}),
        }
        pid, fd = pty.fork()
        if pid == 0:  # the child: the harness on the terminal's other end
            os.chdir(project)
            os.execve(str(binary), [str(binary), prompt], full_env)
        screen = b""
        start = time.monotonic()
        answered: float | None = None
        try:
            while time.monotonic() - start < timeout:
                ready, _, _ = select.select([fd], [], [], 0.3)
                if ready:
                    try:
                        screen += os.read(fd, 65536)[-200_000:]
                    except OSError:
                        break
                main = [r for r in srv.requests if r.model_call and not r.side]
                if main and answered is None:
                    answered = time.monotonic()
                if answered is not None and (time.monotonic() - answered > 3 or _logged_answer(h, home)):
                    break
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        requests = list(srv.requests)
    logs = sorted(p for p in home.glob(h.logs) if p.is_file())
    return Session(h.name, requests, logs, home, 0, screen.decode("utf-8", "replace")[-3000:], "")


def _logged_answer(h: Harness, home: Path) -> bool:
    """The harness has written the scripted answer to its log."""
    for p in home.glob(h.logs):
        try:
            if '"type":"assistant"' in p.read_text(errors="replace"):
                return True
        except OSError:
            pass
    return False


def run_two_prompts(
    h: Harness,
    binary: Path,
    script: list[Reply],
    prompts: tuple[str, str],
    *,
    after_calls: int,
    env: dict[str, str] | None = None,
    home: Path,
    setup: Callable[[Path], None] | None = None,
    timeout: float = 120,
) -> Session:
    """Gemini CLI in its terminal UI (``-i``): the first prompt, then, once ``after_calls`` model
    calls are answered, a second prompt typed in. A harness that checks its count only when a
    user turn starts (Gemini CLI compresses then) needs that second turn."""
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    with ScriptedServer(h.api, script, side=h.side, side_reply=h.side_reply, fallback=DONE) as srv:
        node_bin = str(Path(shutil.which("node") or "node").parent)
        full_env = {
            "PATH": f"{node_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            **h.configure(home, srv.url),
        }
        if setup is not None:
            setup(home)
        full_env.update(env or {})
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(project)
            os.execve(str(binary), [str(binary), "-i", prompts[0]], full_env)
        screen = b""
        start = time.monotonic()
        typed: float | None = None
        try:
            while time.monotonic() - start < timeout:
                ready, _, _ = select.select([fd], [], [], 0.3)
                if ready:
                    try:
                        screen += os.read(fd, 65536)[-200_000:]
                    except OSError:
                        break
                answered = [r for r in srv.requests if r.model_call and not r.side]
                if typed is None and len(answered) >= after_calls:
                    time.sleep(3)  # let the answer render and the prompt come back
                    os.write(fd, prompts[1].encode())
                    time.sleep(0.5)
                    os.write(fd, b"\r")
                    typed = time.monotonic()
                if typed is not None and time.monotonic() - typed > 15:
                    break
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        requests = list(srv.requests)
    logs = sorted(p for p in home.glob(h.logs) if p.is_file())
    return Session(h.name, requests, logs, home, 0, screen.decode("utf-8", "replace")[-3000:], "")
