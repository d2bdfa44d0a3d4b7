"""Build a large transcript from real sessions' lines, for the estimate benchmark.

Real sessions are a few MB at most, but the throughput and memory targets are about files of
hundreds of MB. Concatenating copies of real sessions keeps the real line shapes (block sizes,
images, tool outputs, usage lines) while every copy gets fresh ids (UUIDs, ``msg_``/``toolu_``/
``req_``/``call_``... ids), so readers that merge streaming duplicates by id or pair tool calls
with their results behave exactly as on the original: nothing merges across copies.

The result is cached by (format, target size, seed, source files' names/sizes/mtimes) in a temp
directory (or a given folder), so repeated benchmark runs do not rebuild it.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

GEN_VERSION = 1
MB = 1_000_000

# Ids that link lines together: UUIDs (uuid, parentUuid, sessionId, Codex session/turn ids) and
# the provider ids readers key on (message id, request id, tool call id, Responses item ids).
ID_RE = re.compile(
    rb"((?:msg|toolu|srvtoolu|req|call|fc|rs|ctc|ws|resp|item|chatcmpl)_[A-Za-z0-9]{8,}"
    rb"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)
_UUID_TAIL = 12  # hex digits of a UUID rewritten per copy


class Template:
    """One source session split at its ids, so a copy with fresh ids is one ``bytes.join``."""

    def __init__(self, path: Path) -> None:
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            data += b"\n"
        self.path = path
        self.size = len(data)
        self.pieces = ID_RE.split(data)  # text, id, text, id, ..., text
        self.ids = sorted(set(self.pieces[1::2]))

    def copy(self, k: int) -> bytes:
        """Copy ``k`` of the session (0 = the original bytes)."""
        if k == 0:
            return b"".join(self.pieces)
        new = {i: fresh_id(i, k) for i in self.ids}
        out = self.pieces[:]
        for j in range(1, len(out), 2):
            out[j] = new[out[j]]
        return b"".join(out)


def fresh_id(old: bytes, k: int) -> bytes:
    """The id ``old`` in copy ``k``: UUIDs keep their shape (tail XOR a per-copy mask); prefixed
    provider ids get a per-copy suffix. Distinct ids stay distinct within and across copies."""
    if len(old) == 36 and old[8:9] == b"-":
        mask = (k * 0x9E3779B97F4A7C15) & ((1 << (4 * _UUID_TAIL)) - 1) or 1
        tail = int(old[-_UUID_TAIL:], 16) ^ mask
        return old[:-_UUID_TAIL] + b"%012x" % tail
    return old + b"x" + _base36(k)


def _base36(n: int) -> bytes:
    digits = b"0123456789abcdefghijklmnopqrstuvwxyz"
    out = b""
    while True:
        n, r = divmod(n, 36)
        out = digits[r : r + 1] + out
        if n == 0:
            return out


def cache_key(fmt: str, sources: Sequence[Path], size_mb: float, seed: int) -> str:
    h = hashlib.sha256(f"v{GEN_VERSION}|{fmt}|{size_mb:g}|{seed}".encode())
    for p in sources:
        st = p.stat()
        h.update(f"|{p.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:12]


def default_dir() -> Path:
    return Path(tempfile.gettempdir()) / "ctxfold-bench"


def generate(
    fmt: str,
    sources: Sequence[Path],
    size_mb: float,
    *,
    seed: int = 0,
    out_dir: Path | None = None,
) -> tuple[Path, bool]:
    """Write (or reuse) a >= ``size_mb`` MB file of ``fmt`` sessions; return (path, reused).

    Each round writes every source session once, in an order shuffled by ``seed``; only the
    very first copy keeps its original ids, every later copy gets its own fresh ones.
    """
    if not sources:
        raise ValueError(f"no source sessions for {fmt}")
    out_dir = out_dir or default_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    key = cache_key(fmt, sources, size_mb, seed)
    path = out_dir / f"{fmt}-{size_mb:g}MB-seed{seed}-{key}.jsonl"
    if path.is_file() and path.stat().st_size >= size_mb * MB:
        return path, True
    for stale in out_dir.glob(f"{fmt}-{size_mb:g}MB-seed{seed}-*.jsonl"):  # built from older sources
        if stale != path:
            stale.unlink(missing_ok=True)
    templates = [Template(p) for p in sources]
    rng = random.Random(seed)
    target = int(size_mb * MB)
    tmp = path.with_suffix(".partial")
    written, n, first = 0, 0, True
    with open(tmp, "wb") as f:
        while written < target:
            order = templates[:]
            if not first:
                rng.shuffle(order)
            first = False
            for t in order:
                data = t.copy(n)
                n += 1
                f.write(data)
                written += len(data)
                if written >= target:
                    break
    os.replace(tmp, path)
    return path, False


def generate_folder(
    sources: Sequence[Path], files: int, max_kb: float, *, seed: int = 0, out_dir: Path | None = None
) -> tuple[Path, bool]:
    """A folder of ``files`` small logs (or reuse it): copies of the sources in a seeded order,
    each with fresh ids and cut after its last whole line under ``max_kb`` KB (a session's start
    is still a valid session), as a folder of many short sessions looks."""
    if not sources:
        raise ValueError("no source sessions for a folder")
    out_dir = out_dir or default_dir()
    key = cache_key("folder", sources, files * max_kb, seed)
    folder = out_dir / f"folder-{files}x{max_kb:g}KB-seed{seed}-{key}"
    done = folder / ".complete"
    if done.is_file():
        return folder, True
    folder.mkdir(parents=True, exist_ok=True)
    templates = [Template(p) for p in sources]
    rng = random.Random(seed)
    limit = int(max_kb * 1000)
    for n in range(files):
        t = rng.choice(templates)
        data = t.copy(n + 1)
        if len(data) > limit:
            cut = data.rfind(b"\n", 0, limit)
            data = data[: cut + 1] if cut > 0 else data[: data.find(b"\n") + 1]
        (folder / f"{n:05d}-{t.path.stem}.jsonl").write_bytes(data)
    done.write_text("ok\n")
    return folder, False
