"""What a many-file ``report --brief`` showed of each file, kept for the next run of it.

Reporting a folder read before, the count cache answers every file, and what is left is per
file: reading its answer back, replaying it, pricing it (2,000 logs: 0.75 s in all). Yet the
line a file gets depends only on its bytes, the settings and the prior it was predicted from
before its first real count. So each file's line (``report_doc.Brief``) is kept here with what
it depended on:

* the file as its metadata showed it before it was read (``filecheck.unchanged``: the same
  size, times and inode, and no write since shortly before);
* the settings, in the memo's key: the count cache's (model, tokenizer, window, format, the
  config's models, ctxfold's code), the report's (calibration, buffer, ``--max-tokens``,
  ``--simulate-compaction``, ``--trigger``), the config file (its prices) and the inputs named;
* with the learned profile, the question its prior asked the profile and the answer: the
  profile changes as files are learned, so the line stands only if the profile answers the
  same now (then what the file taught the profile is taught again, in file order).

A file that fails any check is reported as without the memo, and its line kept for next time.
The memo is a cache: one file per key in ``~/.cache/ctxfold/reports``, written atomically,
checked by a CRC-32 (a damaged one is ignored, with a warning), the oldest removed past
``KEPT``.
"""

from __future__ import annotations

import contextlib
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from ctxfold.atomic import write_unsynced
from ctxfold.engine.calibration import Prior
from ctxfold.engine.profile import Observation, Profiles
from ctxfold.engine.replay import Report
from ctxfold.engine.report_doc import Brief, brief_of
from ctxfold.hashes import digest, file_identity
from ctxfold.paths import cache_dir
from ctxfold.tokens.estimate import FileEstimate
from ctxfold.tokens.filecheck import unchanged

MAGIC = b"ctxfold report memo\n"
VERSION = 1
KEPT = 16  # memos (commands with their settings and inputs) kept; the oldest go first


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


class ReportMemo:
    """The memo of one command (its settings and inputs): ``fresh`` and ``use`` read it,
    ``record`` adds to it, ``save`` writes it with the files of this run only."""

    def __init__(self, key: dict[str, Any], profiles: Profiles | None, folder: Path | None = None) -> None:
        self.profiles = profiles
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
        self, replayed: Callable[[FileEstimate], Report], work: Callable[..., FileEstimate]
    ) -> Callable[[Kept | Read], Brief]:
        """Each file's line, in file order: the memo's (:meth:`use`), else its report's
        (``replayed``; a file the memo held but the profile now answers otherwise is read
        again, here, with ``work``), kept for the next run."""

        def finish(got: Kept | Read) -> Brief:
            if isinstance(got, Kept):
                brief = self.use(got.path, got.entry)
                if brief is not None:
                    return brief
                got = read_seen(work, got.path)
            asked = self.asked(got.est)
            brief = brief_of(replayed(got.est))
            self.record(got.seen, got.est, brief, asked)
            return brief

        return finish

    def use(self, path: str, kept: dict[str, Any]) -> Brief | None:
        """``kept`` as ``path``'s line, if the profile gives its prior the same answer now
        (then what the file taught it is taught again); None: report the file afresh."""
        lesson = None
        try:
            question, answer, taught = kept["question"], kept["prior"], kept["lesson"]
            brief = Brief(path, tuple(kept["warnings"]), kept["summary"], tuple(kept["errors"]))
            if self.profiles is not None:
                if question is None or answer is None:
                    return None
                key, provider, session, project, family = question
                got = self.profiles.prior(key, provider, exclude=session, project=project, family=family)
                if list(_prior_row(got)) != answer:
                    return None
                if taught is not None:
                    key, session, obs, project, provider = taught
                    lesson = (key, session, Observation(**obs), project, provider)
        except (KeyError, TypeError, ValueError):  # a memo not as this code writes it
            return None
        if self.profiles is not None and lesson is not None:
            self.profiles.learn(*lesson)  # (checked first: taught whole or not at all)
        self.kept[os.path.abspath(path)] = kept
        return brief

    def asked(self, est: FileEstimate) -> tuple[Any, Prior | None]:
        """Before ``est`` is reported: the profile's question and answer, as ``use`` checks them."""
        from ctxfold.engine.now import base_prior, profile_question

        if self.profiles is None:
            return None, None
        return profile_question(est), base_prior(est, self.profiles, leave_out=True)

    def record(
        self, was: Seen | None, est: FileEstimate, brief: Brief, asked: tuple[Any, Prior | None]
    ) -> None:
        """Keep ``brief``, the line of ``est`` read from the file as ``was`` saw it, with the
        profile's question and answer (``asked``) and the lesson it taught."""
        from ctxfold.engine.now import lesson

        if was is None or est.path == "-":
            return
        taught = lesson(est) if self.profiles is not None else None
        question, answer = asked
        self.kept[os.path.abspath(est.path)] = {
            "stat": was.identity,
            "kept_ns": was.kept_ns,
            "warnings": [*est.model.warnings, *est.notes[est.cache_notes :]],
            "summary": brief.summary,
            "errors": list(brief.errors),
            "question": None if question is None else list(question),
            "prior": None if answer is None else list(_prior_row(answer)),
            "lesson": None if taught is None else [*taught[:2], asdict(taught[2]), *taught[3:]],
        }
        self.changed = True

    def save(self) -> None:
        """Write this run's lines (if any is new), then let the oldest memos go past ``KEPT``
        (by when they were last used: one used as it was is touched)."""
        if not self.changed and self.kept.keys() == self.files.keys():
            with contextlib.suppress(OSError):
                os.utime(self.path)
            return
        body = orjson.dumps(self.kept)
        header = orjson.dumps({"version": VERSION, "key": self.key, "crc32": zlib.crc32(body)})
        try:
            write_unsynced(self.path, (MAGIC, header, b"\n", body), prefix=".memo-", suffix=".tmp")
            memos = sorted(self.path.parent.glob("*.memo"), key=lambda p: p.stat().st_mtime_ns)
        except OSError:
            return  # a cache: not kept this time
        for old in memos[:-KEPT]:
            with contextlib.suppress(OSError):
                old.unlink()


def _prior_row(p: Prior) -> tuple[Any, ...]:
    return (p.overhead, p.ratio, p.source, p.first_ratio, p.server_tool)
