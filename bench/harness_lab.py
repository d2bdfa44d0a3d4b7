"""Run any published version of an agent harness against a recording model server on 127.0.0.1.

The bench scripts ``harness_prompts.py`` (what a harness sends in its first request) and
``harness_triggers.py`` (when it compacts by itself) share this: a version is installed from
the npm registry into a cache outside the repository (``CTXFOLD_HARNESS_VERSIONS``, default
``/work/.harness-versions``, else ``~/.cache/ctxfold-harness-versions``: one folder per
``package@version``), given a private HOME configured for the scripted server, and run headless
with one prompt. The scripted servers are the harness lab's (``tests/interop/``: Anthropic
Messages for Claude Code and pi, OpenAI Responses for Codex, Google GenAI for Gemini CLI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the harness lab's modules import each other as interop.*

from interop.genai_server import genai_api  # noqa: E402
from interop.genai_server import side_call as genai_side_call  # noqa: E402
from interop.harness import run  # noqa: E402
from interop.responses_server import responses_api  # noqa: E402
from interop.server import Recorded, Reply, ScriptedServer, anthropic_api  # noqa: E402

OK, DONE = Reply("ok"), Reply("Done.")


def versions_cache() -> Path:
    env = os.environ.get("CTXFOLD_HARNESS_VERSIONS")
    if env:
        return Path(env)
    work = Path("/work/.harness-versions")
    return work if work.parent.is_dir() else Path.home() / ".cache" / "ctxfold-harness-versions"


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
        side=genai_side_call,
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
