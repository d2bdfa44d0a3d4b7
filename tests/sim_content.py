"""Deterministic content for the simulator: seeded texts in realistic styles (JSON records,
kubectl tables, logs, source code, SQL rows...) cached per (style, size, variant), and real
PNG/PDF payloads of a requested byte size, so o200k counts and image rules see real data."""

from __future__ import annotations

import base64
import io
import random
from collections.abc import Callable
from functools import cache

import orjson

# ------------------------------------------------------------------------------ texts


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_WORDS = _words(
    "the request pod node service deployment latency error retry cache queue worker config "
    "database index migration cluster replica shard timeout connection handler endpoint token "
    "session user account order invoice payment refund report metric alert dashboard trace span "
    "build test release branch commit review patch module function class method parameter value "
    "memory cpu disk network volume secret namespace label selector ingress gateway proxy upstream "
    "we should check whether this is caused by a recent change in how it handles that case and "
    "then fix it carefully so nothing else breaks while keeping backwards compatibility"
)
_NAMES = ("api", "web", "auth", "billing", "search", "worker", "scheduler", "ingest", "gateway", "cart")
_STATUS = ("Running", "Running", "Running", "Pending", "CrashLoopBackOff", "Completed", "Error")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")


_RARE = _words(
    "idempotency reconciliation backpressure observability throughput deduplication serialization "
    "misconfigured kube-proxy PgBouncer OOMKilled CrashLoopBackOff readinessProbe etcd Grafana "
    "Prometheus p99 SLO/SLI gRPC HTTP/2 TLS mTLS JWT OAuth2 SIGTERM cgroup v2 JSONB UUIDv7 Redis "
    "rate-limiter circuit-breaker feature-flag blue/green canary rollout webhook cron-job Terraform"
)


def _word(r: random.Random) -> str:
    k = r.random()
    if k < 0.12:
        return r.choice(_RARE)
    if k < 0.17:
        return f"`{r.choice(_WORDS)}_{r.choice(_WORDS)}()`"
    if k < 0.21:
        return str(r.choice((r.randint(2, 99), r.randint(100, 99_999), f"{r.random() * 100:.1f}%")))
    if k < 0.24:
        return f"{r.choice(_NAMES)}/{r.choice(_WORDS)}.py"
    return r.choice(_WORDS) + r.choice(("", "", "", "", ",", "s", "ed", "ing"))


def _sentence(r: random.Random) -> str:
    words = [_word(r) for _ in range(r.randint(6, 18))]
    line = " ".join(words)
    return line[0].upper() + line[1:] + r.choice((".", ".", ".", "?", ":"))


def _ts(r: random.Random) -> str:
    return f"2025-06-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999):03d}Z"


def _pod(r: random.Random) -> str:
    return f"{r.choice(_NAMES)}-{r.getrandbits(32):08x}-{r.getrandbits(20):05x}"


def _line_prose(r: random.Random) -> str:
    return " ".join(_sentence(r) for _ in range(r.randint(2, 5)))


def _line_markdown(r: random.Random) -> str:
    k = r.random()
    if k < 0.15:
        return f"## {_sentence(r).rstrip('.?:')}"
    if k < 0.6:
        return f"- {_sentence(r)} Use `{r.choice(_WORDS)}_{r.choice(_WORDS)}` when {_sentence(r).lower()}"
    return _line_prose(r)


def _line_json(r: random.Random) -> str:
    rec = {
        "id": f"{r.getrandbits(48):012x}",
        "name": f"{r.choice(_NAMES)}-{r.choice(_WORDS)}",
        "status": r.choice(_STATUS).lower(),
        "count": r.randint(0, 5000),
        "updated_at": _ts(r),
        "owner": {"team": r.choice(_NAMES), "email": f"{r.choice(_WORDS)}@example.com"},
        "tags": [r.choice(_WORDS) for _ in range(r.randint(1, 4))],
        "note": _sentence(r),
    }
    return orjson.dumps(rec).decode() + ","


def _line_kubectl(r: random.Random) -> str:
    return (
        f"{r.choice(_NAMES):<10} {_pod(r):<36} {r.randint(0, 2)}/{r.randint(1, 2)}   {r.choice(_STATUS):<17} "
        f"{r.randint(0, 40):<4} {r.randint(1, 30)}d{r.randint(0, 23)}h   10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(0, 255)}   "
        f"ip-10-0-{r.randint(0, 255)}-{r.randint(0, 255)}.ec2.internal"
    )


def _line_describe(r: random.Random) -> str:
    k = r.randint(0, 5)
    if k == 0:
        return f"Name:         {_pod(r)}\nNamespace:    {r.choice(_NAMES)}\nNode:         ip-10-0-{r.randint(0, 255)}-{r.randint(0, 255)}"
    if k == 1:
        return f'  Normal   Pulled     {r.randint(1, 59)}m   kubelet  Successfully pulled image "registry.example.com/{r.choice(_NAMES)}:v{r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)}"'
    if k == 2:
        return f"  Warning  BackOff    {r.randint(1, 59)}m   kubelet  Back-off restarting failed container {r.choice(_NAMES)} in pod {_pod(r)}"
    if k == 3:
        return f"    Limits:\n      cpu:     {r.randint(1, 4)}\n      memory:  {r.choice((256, 512, 1024, 2048))}Mi"
    return (
        f"    Environment:\n      {r.choice(_WORDS).upper()}_{r.choice(_WORDS).upper()}:  {r.choice(_WORDS)}"
    )


def _line_log(r: random.Random) -> str:
    return (
        f"{_ts(r)} {r.choice(_LEVELS):<5} [{r.choice(_NAMES)}] {_sentence(r)} "
        f"request_id={r.getrandbits(64):016x} duration_ms={r.randint(1, 9000)} status={r.choice((200, 200, 201, 404, 500, 503))}"
    )


def _line_code(r: random.Random) -> str:
    a, b, c = r.choice(_WORDS), r.choice(_WORDS), r.choice(_WORDS)
    templates = (
        f"def {a}_{b}(self, {c}: int, *, timeout: float = {r.randint(1, 60)}.0) -> dict[str, str]:",
        f"    {a} = self._{b}.get({c!r}, {r.randint(0, 100)})",
        f"    if {a} is None or {b} > {r.randint(1, 500)}:",
        f'        raise ValueError(f"{a} {b}: {{{c}}}")',
        f"    return {{'{a}': {b}, '{c}': str({a})}}",
        f"    # {_sentence(r)}",
        f"class {a.capitalize()}{b.capitalize()}({c.capitalize()}Base):",
        f"    for {a} in self.{b}s[{r.randint(0, 9)}:]:",
        f"        {a}.{b}({c}=True, retries={r.randint(0, 5)})",
        "",
    )
    return r.choice(templates)


def _line_diff(r: random.Random) -> str:
    k = r.randint(0, 3)
    if k == 0:
        return f"@@ -{r.randint(1, 900)},{r.randint(3, 20)} +{r.randint(1, 900)},{r.randint(3, 20)} @@"
    return r.choice(("-", "+", " ")) + _line_code(r)


def _line_tests(r: random.Random) -> str:
    if r.random() < 0.1:
        return f"E       AssertionError: assert {r.randint(0, 999)} == {r.randint(0, 999)}\nE        +  where {r.choice(_WORDS)} = {_sentence(r)}"
    return f"tests/test_{r.choice(_WORDS)}.py::test_{r.choice(_WORDS)}_{r.choice(_WORDS)}[{r.choice(_NAMES)}] {r.choice(('PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'))} [{r.randint(0, 100):3d}%]"


def _line_sql(r: random.Random) -> str:
    return (
        f"| {r.randint(1, 999999):>7} | {r.choice(_WORDS):<12} | {r.choice(_NAMES):<9} | {_ts(r)} | "
        f"{r.randint(0, 99999) / 100:>9.2f} | {r.choice(('shipped', 'pending', 'refunded', 'failed')):<8} |"
    )


def _line_metrics(r: random.Random) -> str:
    rec = {
        "metric": {
            "__name__": r.choice(
                ("http_requests_total", "http_request_duration_seconds_bucket", "container_memory_rss")
            ),
            "pod": _pod(r),
            "namespace": r.choice(_NAMES),
            "code": str(r.choice((200, 404, 500))),
        },
        "values": [[1_717_000_000 + r.randint(0, 86_400), f"{r.random() * 1000:.3f}"] for _ in range(3)],
    }
    return orjson.dumps(rec).decode() + ","


def _line_grep(r: random.Random) -> str:
    return f"src/{r.choice(_NAMES)}/{r.choice(_WORDS)}_{r.choice(_WORDS)}.py:{r.randint(1, 2000)}:{_line_code(r)}"


def _line_http(r: random.Random) -> str:
    if r.random() < 0.3:
        return f"{r.choice(('Content-Type', 'X-Request-Id', 'Cache-Control', 'Server'))}: {r.choice(_WORDS)}/{r.getrandbits(24):06x}"
    return _line_json(r)


def _line_prompt(r: random.Random) -> str:
    """A system prompt: instructions in markdown with code examples."""
    return _line_code(r) if r.random() < 0.75 else _line_markdown(r)


STYLES: dict[str, Callable[[random.Random], str]] = {
    "prompt": _line_prompt,
    "prose": _line_prose,
    "markdown": _line_markdown,
    "json": _line_json,
    "kubectl": _line_kubectl,
    "describe": _line_describe,
    "logs": _line_log,
    "code": _line_code,
    "diff": _line_diff,
    "tests": _line_tests,
    "sql": _line_sql,
    "metrics": _line_metrics,
    "grep": _line_grep,
    "http": _line_http,
}


@cache
def text(style: str, size: int, variant: int = 0) -> str:
    """Deterministic text of exactly ``size`` characters in one style (cached)."""
    if size <= 0:
        return ""
    r = random.Random(f"{style}:{size}:{variant}")
    line = STYLES[style]
    lines: list[str] = []
    total = 0
    while total < size:
        s = line(r)
        lines.append(s)
        total += len(s) + 1
    return "\n".join(lines)[:size]


# ------------------------------------------------------------------------------ media


def _dims(byte_size: int) -> tuple[int, int]:
    if byte_size <= 20_000:
        return 320, 240
    if byte_size <= 120_000:
        return 1024, 768
    return 1600, 1200


@cache
def png_b64(byte_size: int, variant: int = 0) -> str:
    """A real PNG (a gradient, dimensions by size) padded with a text chunk to ``byte_size``."""
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    w, h = _dims(byte_size)
    img = Image.linear_gradient("L").resize((w, h)).convert("RGB")
    buf = io.BytesIO()
    img.save(buf, "PNG")
    pad = max(0, byte_size - len(buf.getvalue()) - 32)
    info = PngInfo()
    r = random.Random(f"png:{byte_size}:{variant}")
    info.add_text("Comment", "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(pad)))
    buf = io.BytesIO()
    img.save(buf, "PNG", pnginfo=info)
    return base64.b64encode(buf.getvalue()).decode()


@cache
def pdf_b64(byte_size: int, pages: int) -> str:
    """A minimal PDF with ``pages`` pages, padded with comment lines to ``byte_size``."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    parts = [
        "%PDF-1.4",
        "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj",
        f"2 0 obj << /Type /Pages /Kids [{kids}] /Count {pages} >> endobj",
        *(
            f"{3 + i} 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj"
            for i in range(pages)
        ),
    ]
    body = "\n".join(parts) + "\n"
    tail = "trailer << /Root 1 0 R >>\n%%EOF\n"
    r = random.Random(f"pdf:{byte_size}:{pages}")
    pad_len = max(0, byte_size - len(body) - len(tail))
    pad_lines = []
    while pad_len > 0:
        n = min(78, pad_len - 2) if pad_len > 2 else 0
        pad_lines.append("%" + "".join(r.choice("0123456789abcdef") for _ in range(max(0, n))) + "\n")
        pad_len -= len(pad_lines[-1])
    return base64.b64encode((body + "".join(pad_lines) + tail).encode()).decode()


def _media_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")
