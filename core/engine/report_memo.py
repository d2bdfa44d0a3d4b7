"""What ``report --brief`` and ``report --by`` showed of each file, kept for the next run.

Reporting a folder read before, the count cache answers every file, and what is left is per
file: reading its answer back, replaying it, pricing it (2,000 logs: 0.75 s in all). Yet the
line a file gets in ``--brief``'s table (``report_doc.Brief``) depends only on its bytes, the
settings and the prior it was predicted from before its first real count, and its calls in
``--by``'s (``usage.Sheet``) on its bytes and the settings alone. So each file's line is kept
here with what it depended on:

* the file as its metadata showed it before it was read (``filecheck.unchanged``: the same
  size, times and inode, and no write since shortly before);
* the settings, in the memo's key: the count cache's (model, tokenizer, window, format, the
  config's models, ctxfold's code), the report's (calibration, buffer, ``--max-tokens``,
  ``--simulate-compaction``, ``--trigger``), the config file (its prices) and the inputs named;
* for ``--brief`` with the learned profile, the question its prior asked the profile and the
  answer: the profile changes as files are learned, so the line stands only if the profile
  answers the same now. What the file taught the profile is taught again, in file order.

A file that fails any check is reported as without the memo, and its line kept for next time.
The memo is a cache: one file per key in ``~/.cache/ctxfold/reports``, written atomically,
checked by a CRC-32 (a damaged one is ignored, with a warning), those used longest ago removed
past ``KEPT`` or ``MAX_BYTES``.
"""

from __future__ import annotations

import contextlib
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, astuple
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from ctxfold.atomic import write_unsynced
from ctxfold.engine.calibration import Prior
from ctxfold.engine.cost import Call
from ctxfold.engine.profile import Observation, Profiles
from ctxfold.engine.report_doc import Brief
from ctxfold.engine.usage import Billed, Sheet
from ctxfold.hashes import digest, file_identity
from ctxfold.paths import cache_dir
from ctxfold.tokens.estimate import FileEstimate
from ctxfold.tokens.filecheck import unchanged

MAGIC = b"ctxfold report memo\n"
VERSION = 1
KEPT = 16  # memos (commands with their settings and inputs) kept; the oldest go first
MAX_BYTES = 64 << 20  # and in all (2,000 logs' lines take 2-3 MB)


class Seen(NamedTuple):
    """A file as it was before it was read: when (ns), and its ``file_identity``."""

    kept_ns: int
    identity: list[int]


def seen(path: str) -> Seen | None:
    """The time and then the file's metadata: a write after it shows in both."""
    now = time.time_ns()
    try:
        return Seen(now, file_identity(os.stat(path)))
    except OSError:
        return None


class Kept(NamedTuple):
    """A file's line found in the memo (``ReportMemo.fresh``), not yet checked against the profile."""

    path: str
    entry: dict[str, Any]


class Read(NamedTuple):
    """A file read (``read_seen``), as it was seen before."""

    seen: Seen | None
    est: FileEstimate


def read_seen(work: Callable[..., FileEstimate], path: str, **kw: Any) -> Read:
    """``work(path, **kw)`` (``count_file``), with the file as it was seen first: a plain
    function of the file, as ``work`` is (it may run in a worker process)."""
    return Read(seen(path), work(path, **kw))


class BriefLines:
    """``--brief``'s lines (``report_doc.Brief``): their summary and errors, and the profile's
    question and answer they were predicted from."""

    name = "brief"

    @staticmethod
    def entry(line: Brief, asked: tuple[Any, Prior | None]) -> dict[str, Any]:
        question, answer = asked
        return {
            "summary": line.summary,
            "errors": list(line.errors),
            "question": None if question is None else list(question),
            "prior": None if answer is None else list(_prior_row(answer)),
        }

    @staticmethod
    def line(path: str, kept: dict[str, Any], profiles: Profiles | None) -> Brief | None:
        """The line, if the profile gives its prior the same answer now (None: made afresh)."""
        brief = Brief(path, tuple(kept["warnings"]), kept["summary"], tuple(kept["errors"]))
        if profiles is not None:
            from ctxfold.engine.now import profile_answer

            if kept["question"] is None or kept["prior"] is None:
                return None
            if list(_prior_row(profile_answer(profiles, kept["question"]))) != kept["prior"]:
                return None
        return brief


class UsageLines:
    """``--by``'s lines (``usage.Sheet``): a session's billed calls and its project."""

    name = "usage"

    @staticmethod
    def entry(line: Sheet, asked: tuple[Any, Prior | None]) -> dict[str, Any]:
        calls = [[b.model, b.timestamp, *astuple(b.call)] for b in line.calls]
        return {"project": line.project, "skipped": list(line.skipped), "calls": calls}

    @staticmethod
    def line(path: str, kept: dict[str, Any], profiles: Profiles | None) -> Sheet:
        calls = tuple(Billed(Call(*c[2:]), c[0], c[1]) for c in kept["calls"])
        return Sheet(path, kept["project"], calls, tuple(kept["warnings"]), tuple(kept["skipped"]))


KINDS = {k.name: k for k in (BriefLines, UsageLines)}


class ReportMemo:
    """The memo of one command (its settings and inputs) and kind of line (``KINDS``):
    ``fresh`` and ``use`` read it, ``record`` adds to it, ``save`` writes it with the files of
    this run only."""

    def __init__(
        self, kind: str, key: dict[str, Any], profiles: Profiles | None, folder: Path | None = None
    ) -> None:
        self.kind = KINDS[kind]
        self.profiles = profiles
        key = {**key, "kind": kind}
        canonical = orjson.dumps(key, option=orjson.OPT_SORT_KEYS, default=repr)
        self.path = (folder or cache_dir() / "reports") / f"{digest(canonical)}.memo"
        self.key = orjson.loads(canonical)
        self.warnings: list[str] = []
        self.files: dict[str, Any] = {}
        self.kept: dict[str, Any] = {}  # this run's, saved
        self.changed = False
        self._load()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return
        head, _, rest = data.partition(b"\n")
        line, _, body = rest.partition(b"\n")
        try:
            header = orjson.loads(line) if head + b"\n" == MAGIC else None
        except orjson.JSONDecodeError:
            header = None
        if isinstance(header, dict) and header.get("version") != VERSION:
            return  # another ctxfold's: replaced by this run's
        try:
            ok = isinstance(header, dict) and header.get("crc32") == zlib.crc32(body)
            files = orjson.loads(body) if ok else None
        except orjson.JSONDecodeError:
            files = None
        if not isinstance(header, dict) or header.get("key") != self.key or not isinstance(files, dict):
            self.warnings.append(f"the report memo {self.path} is damaged: ignored, and replaced")
            return
        self.files = files

    def fresh(self, path: str) -> dict[str, Any] | None:
        """The line kept for ``path``, if the file is the one it was kept for (the profile's
        answer is checked by :meth:`use`)."""
        kept = self.files.get(os.path.abspath(path))
        if not isinstance(kept, dict):
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        return kept if unchanged(kept, st) else None

    def known(self, paths: list[str]) -> dict[str, Kept]:
        """The paths whose line the memo holds for the file as it is now."""
        return {p: Kept(p, k) for p in paths if (k := self.fresh(p)) is not None}

    def finisher(
        self, make: Callable[[FileEstimate], Any], work: Callable[..., FileEstimate]
    ) -> Callable[..., Any]:
        """Each file's line, in file order: the memo's (:meth:`use`), else ``make``'s (which
        teaches the profile what the file shows; a file the memo held but the profile now
        answers otherwise is read again, here, with ``work``), kept for the next run."""

        def finish(got: Kept | Read) -> Any:
            if isinstance(got, Kept):
                line = self.use(got.path, got.entry)
                if line is not None:
                    return line
                got = read_seen(work, got.path)
            asked = self.asked(got.est)
            line = make(got.est)
            self.record(got.seen, got.est, line, asked)
            return line

        return finish

    def use(self, path: str, kept: dict[str, Any]) -> Any:
        """``kept`` as ``path``'s line, if it stands (``KINDS``' ``line``); then what the file
        taught the profile is taught again. None: report the file afresh."""
        lesson = None
        try:
            line = self.kind.line(path, kept, self.profiles)
            taught = kept["lesson"]
            if line is not None and self.profiles is not None and taught is not None:
                key, session, obs, project, provider = taught
                lesson = (key, session, Observation(**obs), project, provider)
        except (KeyError, TypeError, ValueError):  # a memo not as this code writes it
            return None
        if line is None:
            return None
        if self.profiles is not None and lesson is not None:
            self.profiles.learn(*lesson)  # (checked first: taught whole or not at all)
        self.kept[os.path.abspath(path)] = kept
        return line

    def asked(self, est: FileEstimate) -> tuple[Any, Prior | None]:
        """Before ``est`` is reported: the profile's question and answer, as ``use`` checks them."""
        from ctxfold.engine.now import base_prior, profile_question

        if self.profiles is None or self.kind is not BriefLines:
            return None, None
        return profile_question(est), base_prior(est, self.profiles, leave_out=True)

    def record(self, was: Seen | None, est: FileEstimate, line: Any, asked: tuple[Any, Prior | None]) -> None:
        """Keep ``line``, made from ``est`` read from the file as ``was`` saw it, with the
        profile's question and answer (``asked``) and the lesson it taught."""
        from ctxfold.engine.now import lesson

        if was is None or est.path == "-":
            return
        taught = lesson(est) if self.profiles is not None else None
        self.kept[os.path.abspath(est.path)] = {
            "stat": was.identity,
            "kept_ns": was.kept_ns,
            "warnings": [*est.model.warnings, *est.notes[est.cache_notes :]],
            "lesson": None if taught is None else [*taught[:2], asdict(taught[2]), *taught[3:]],
            **self.kind.entry(line, asked),
        }
        self.changed = True

    def save(self) -> None:
        """Write this run's lines (if any is new), then let the memos used longest ago go past
        ``KEPT`` of them or ``MAX_BYTES`` in all (one used as it was is touched)."""
        if not self.changed and self.kept.keys() == self.files.keys():
            with contextlib.suppress(OSError):
                os.utime(self.path)
            return
        body = orjson.dumps(self.kept)
        header = orjson.dumps({"version": VERSION, "key": self.key, "crc32": zlib.crc32(body)})
        try:
            write_unsynced(self.path, (MAGIC, header, b"\n", body), prefix=".memo-", suffix=".tmp")
            memos = [(e.stat(), e.path) for e in os.scandir(self.path.parent) if e.name.endswith(".memo")]
        except OSError:
            return  # a cache: not kept this time
        memos.sort(key=lambda m: m[0].st_mtime_ns, reverse=True)
        total = 0
        for i, (st, path) in enumerate(memos):
            total += st.st_size
            if i and (i >= KEPT or total > MAX_BYTES):
                with contextlib.suppress(OSError):
                    os.unlink(path)


def _prior_row(p: Prior) -> tuple[Any, ...]:
    return (p.overhead, p.ratio, p.source, p.first_ratio, p.server_tool)
