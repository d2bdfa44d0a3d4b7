"""Per-source profiles: what a log never shows, learned from the logs ctxfold has read.

Claude Code, Codex and most harnesses send a system prompt and tool schemas that the session
log does not record (16–37k tokens for Claude Code), and Claude counts ~1.2–1.35 tokens per
o200k token. Before a session's first real count nothing inside it can tell; but every other
session of the same source and model can. For each (log format, model family) the profile
keeps, per session read, the hidden overhead (``real − ratio × estimate`` of its first request)
and its tokenizer ratio (the slope of real counts over estimates); the prior is their median.

Stored as JSON in the user cache dir, written atomically; ``--no-profile`` ignores it. Until it
holds a session of a log format, the shipped prior of that format (``BUILTIN``) stands in.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ctxfold.atomic import write_atomic
from ctxfold.engine.calibration import (
    MAX_RATIO,
    MIN_RATIO,
    PROVIDER_RATIO,
    SLOPE_MIN_SPAN,
    Prior,
    median,
    split_first,
)
from ctxfold.engine.profile_index import Bucket, ProfileIndex
from ctxfold.errors import ConfigError, OutputError
from ctxfold.paths import profile_path
from ctxfold.tokens.models import lookup
from ctxfold.tokens.session import Request

# 2: Claude Code attachment lines, summarized thinking and ToolSearch references are counted, so
# what version 1 learned (hidden overhead ~2–4k too high, ratios) no longer fits; a profile of
# another version is set aside, not mixed in.
# 3: the harness's own prompt is measured per version (tokens/harness_prompts.py); the overhead
# learned is what a session sent beyond it.
VERSION = 3
MAX_SESSIONS = 200  # per key; the oldest are forgotten
MIN_SESSIONS = 3  # a key with fewer sessions borrows from its log format's other models


# Shipped priors (hidden overhead, tokenizer ratio, sessions behind them) for log formats whose
# harness sends a system prompt and tool schemas the log does not record: the medians of the
# observations on the real sessions of ../shared/fixtures-real (`python bench/calibration.py
# --observations` prints them). Formats that log the whole request need none.
BUILTIN: dict[str, tuple[int, float, int]] = {
    "claude-code": (0, 1.294, 7),
    "codex": (0, 1.106, 4),
    "pi": (0, 1.272, 2),
}


def default_prior(source_format: str, provider: str) -> Prior:
    """What is assumed with nothing learned: the format's shipped prior, else the provider's ratio."""
    if source_format in BUILTIN:
        overhead, ratio, n = BUILTIN[source_format]
        return Prior(overhead, ratio, f"built-in {source_format} prior ({n} real sessions)")
    return Prior(0, PROVIDER_RATIO.get(provider, 1.0), f"{provider} default, no profile yet")


def source_of(source_format: str, agent: str | None = None) -> str:
    """A log source: its format, or ``format/subagent`` for a sub-agent's own transcript (its own
    system prompt and tools), which neither borrows from nor skews its harness's main sessions."""
    return f"{source_format}/subagent" if agent else source_format


def key_for(source_format: str, model: str | None, agent: str | None = None) -> str:
    """``source|model family``."""
    info = lookup(model)
    family = info.family if info else (model or "unknown")
    return f"{source_of(source_format, agent)}|{family}"


@dataclass(frozen=True)
class Observation:
    overhead: int
    ratio: float
    first_ratio: float | None = None  # see Prior.first_ratio
    # the measured prompt's variant and harness generation (HarnessPrompt.family) the overhead
    # was learned beyond; sessions of the same family are the peers of a new one
    family: str | None = None
    server_tool: int | None = None  # real tokens a server-side tool call (web search) added


def observe_session(
    requests: Sequence[Request], provider: str, prompt: int = 0, family: str | None = None
) -> Observation | None:
    """What one session teaches: its hidden overhead and tokenizer ratio (segment 0 only).

    ``prompt`` is the measured part of the first request the log does not show (the harness's
    system prompt and tools for its version, ``FileEstimate.harness_prompt``): the overhead
    learned is then what the session sent beyond it (its memory files, MCP servers, hooks),
    which may be less than nothing when the user's setup sends less than the measured default."""
    counted = [r for r in requests if r.segment == 0 and r.real is not None and r.real_source == "usage"]
    points = [(r.estimate, r.real) for r in counted if r.real is not None]  # (each has one)
    if not points:
        return None
    # The first-to-last slope, not the calibrator's median step: what the profile needs is the
    # split of the first request into hidden overhead and ratio × estimate, and on the real
    # sessions the whole-session slope predicts the next session's first request better
    # (leave-one-out, 15 of 20 within 15 % against 13 with the median step).
    ratio = PROVIDER_RATIO.get(provider, 1.0)
    (e0, r0), (e1, r1) = points[0], points[-1]
    if e1 - e0 >= SLOPE_MIN_SPAN:
        ratio = min(MAX_RATIO, max(MIN_RATIO, (r1 - r0) / (e1 - e0)))
    server = _server_tool(counted, ratio)
    if prompt:
        return Observation(int(r0 - ratio * (e0 + prompt)), round(ratio, 4), None, family, server)
    hidden, first = split_first(e0, r0, ratio)
    return Observation(max(0, hidden), round(ratio, 4), first, None, server)


def _server_tool(counted: Sequence[Request], ratio: float) -> int | None:
    """The median of what each server-side tool call (web search) added to the real count
    beyond the tokenizer's growth, over the steps that made such calls; None without any."""
    per_call = [
        (b.real - a.real - ratio * (b.estimate - a.estimate)) / (b.server_tools_after - a.server_tools_after)
        for a, b in itertools.pairwise(counted)
        if a.real is not None and b.real is not None and b.server_tools_after > a.server_tools_after
    ]
    return max(0, round(median(per_call))) if per_call else None


class Profiles:
    """The profile file, loaded once; ``learn`` then ``save`` to update it."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or profile_path()
        self.data: dict[str, Any] = {"version": VERSION, "profiles": {}}
        # A corrupt file is a cache gone bad, not a reason to fail every command: it is ignored
        # (said here, for the caller to show) and the next ``save`` replaces it.
        self.warnings: list[str] = []
        self.writable = True
        self.changed = False  # something was learned since the file was read: save() writes it
        self._idx: ProfileIndex | None = None
        if self.path.is_dir():  # not ours to replace: learning stops until it is removed
            self.writable = False
            self.warnings.append(
                f"{self.path} is a folder, not a profile file: ignored, and nothing is learned until "
                "it is removed"
            )
            return
        if not self.path.exists():
            return
        try:
            loaded = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as err:
            self._set_aside(str(err))
            return
        if not isinstance(loaded, dict):
            self._set_aside(f"a JSON {type(loaded).__name__}, not an object")
        elif loaded.get("version") == VERSION:  # another version's was learned under other rules
            problem = self._problem(loaded.get("profiles"))
            if problem:
                self._set_aside(problem)
            else:
                self.data = loaded

    def _set_aside(self, reason: str) -> None:
        self.warnings.append(
            f"{self.path}: corrupt profile ({reason}), ignored: the shipped priors stand in and "
            "the next session learned starts a new one; `ctxfold profile reset` clears it now"
        )

    @staticmethod
    def _problem(profiles: Any) -> str | None:
        """What is wrong with a loaded ``profiles`` table, or None: what ``learn`` writes and
        ``prior`` reads, i.e. per key a table of sessions with numeric overhead and ratio."""

        def number(x: Any) -> bool:
            return isinstance(x, (int, float)) and not isinstance(x, bool)

        if not isinstance(profiles, dict):
            return "no table of profiles"
        for key, entry in profiles.items():
            sessions = entry.get("sessions", {}) if isinstance(entry, dict) else None
            if not isinstance(sessions, dict):
                return f"profile {key!r} is not a table of sessions"
            for v in sessions.values():
                if not (
                    isinstance(v, dict)
                    and number(v.get("overhead"))
                    and number(v.get("ratio"))
                    and number(v.get("first_ratio", 0))
                    and number(v.get("server_tool", 0))
                    and all(isinstance(v.get(k, ""), str) for k in ("provider", "project"))
                ):
                    return f"a session of {key!r} is malformed"
        return None

    @property
    def profiles(self) -> dict[str, dict[str, Any]]:
        profiles: dict[str, dict[str, Any]] = self.data["profiles"]
        return profiles

    def learn(
        self,
        key: str,
        session: str,
        obs: Observation,
        project: str | None = None,
        provider: str | None = None,
    ) -> None:
        """Keep what ``session`` of ``key`` showed (replacing what it showed before), the
        oldest sessions of ``key`` forgotten past ``MAX_SESSIONS``. The table is changed
        through here, so that the index of :meth:`prior` follows it."""
        index = self._index()
        entry = self.profiles.setdefault(key, {"sessions": {}})
        sessions: dict[str, Any] = entry.setdefault("sessions", {})
        record: dict[str, Any] = {"overhead": obs.overhead, "ratio": obs.ratio}
        if obs.first_ratio is not None:
            record["first_ratio"] = obs.first_ratio
        if provider is not None:
            record["provider"] = provider  # overhead and ratio are in its tokens
        if project is not None:
            record["project"] = project
        if obs.family is not None:
            record["family"] = obs.family
        if obs.server_tool is not None:
            record["server_tool"] = obs.server_tool
        index.changed(key, session, sessions.pop(session, None), record)
        sessions[session] = record
        self.changed = True
        while len(sessions) > MAX_SESSIONS:
            oldest = next(iter(sessions))
            index.changed(key, oldest, sessions.pop(oldest), None)
        index.settled()

    def _index(self) -> ProfileIndex:
        """The index of the sessions learned, built again if the table was changed otherwise
        than by :meth:`learn` (a key's sessions replaced)."""
        if self._idx is None or not self._idx.fits(self.profiles):
            self._idx = ProfileIndex(self.profiles)
        return self._idx

    def prior(
        self,
        key: str,
        provider: str,
        *,
        exclude: str | None = None,
        project: str | None = None,
        family: str | None = None,
    ) -> Prior:
        """The median of the sessions of the same source run in the same ``project`` (its
        memory files, MCP servers and hooks are the rest of the hidden prompt) with a model of
        the same provider (counts are in its tokens), when there is one; else of the sessions of
        ``key`` when it has at least ``MIN_SESSIONS`` of them, else of every model of the
        provider read from the same log format (a hidden prompt belongs to the harness more than to the model: one or
        two sessions of a model say less than many of its harness); fewer than ``MIN_SESSIONS``
        of those do not displace the format's shipped prior. Else the provider's ratio learned
        from other formats (:meth:`_provider_prior`).

        For a log whose harness prompt is measured (``family`` given: the variant and generation
        of the measured version), the overhead is what the sessions sent beyond their own measured
        prompt, and outside the project it comes only from sessions of the same ``family``
        (at least ``MIN_SESSIONS``), else none is assumed: what a user adds beyond the harness
        (memory files, MCP servers, plugins) varies too much between users and harness
        generations for sessions of others to say more than the measurement."""
        fmt = key.split("|", 1)[0]
        index = self._index()
        in_format = index.bucket(("format", fmt, provider))
        chosen: tuple[str, Bucket, int] | None = None
        here = index.bucket(("project", fmt, provider, project)) if project else None
        if here is not None and here.count(exclude):
            chosen = (f"{fmt} in this project", here, here.count(exclude))
        else:
            here = None
            for scope, b in (
                (key, index.bucket(("key", key, provider))),
                (f"{fmt} (any {provider} model)", in_format),
            ):
                n = b.count(exclude)
                if n:
                    chosen = (scope, b, n)
                    if n >= MIN_SESSIONS:
                        break
        if chosen is None or (here is None and chosen[2] < MIN_SESSIONS and fmt in BUILTIN):
            # one or two sessions from elsewhere (a test fixture, a stray log) say less than the
            # shipped prior, the median of real sessions of the format
            return self._provider_prior(fmt, provider, exclude)
        scope, obs, n = chosen
        overhead = int(obs.median("overhead", exclude))
        ratio = float(obs.median("ratio", exclude))
        first = float(obs.median("first", exclude))
        source = f"profile {scope}, {n} session(s)"
        if family is not None and here is None:
            peers = index.bucket(("family", fmt, provider, family))
            enough = peers.count(exclude) >= MIN_SESSIONS
            overhead = int(peers.median("overhead", exclude)) if enough else 0
            beyond = f"{peers.count(exclude)} of its generation" if enough else "nothing beyond it"
            source += f"; {beyond}"
        searched = in_format.count(exclude, "server_tool")
        server = int(in_format.median("server_tool", exclude)) if searched else 0
        return Prior(overhead, ratio, source, None if first == ratio else first, server)

    def _provider_prior(self, fmt: str, provider: str, exclude: str | None) -> Prior:
        """A format never read yet: its shipped prior, else no hidden overhead and the tokenizer
        ratio of the provider's sessions read from other formats. The ratio belongs to the
        provider's tokenizer, not to the harness (the overhead does), so it carries across.
        Not for OpenAI (o200k is its own tokenizer: a harness's ratio above 1 is the harness's)
        nor for "other" (models of unrelated tokenizers)."""
        if fmt in BUILTIN or provider in ("openai", "other"):
            return default_prior(fmt, provider)
        ratios = self._index().bucket(("provider", provider))
        n = ratios.count(exclude)
        if n < MIN_SESSIONS:
            return default_prior(fmt, provider)
        source = f"{provider} ratio of {n} session(s) of other log formats"
        return Prior(0, float(ratios.median("ratio", exclude)), source)

    def save(self) -> None:
        """Write what was learned, once per run however many sessions it read: atomically, but
        without fsync, as the count cache is written. The profile is a cache too (a torn file
        after a crash is set aside, and the shipped priors stand in), and an fsync waits for the
        data the filesystem writes before it: 2–15 ms here after the count cache's 7 MB entry,
        0.19 s when a 200 MB log had just been written (a fifth of that re-run)."""
        if not (self.writable and self.changed):
            return
        try:
            write_atomic(self.path, orjson.dumps(self.data, option=orjson.OPT_INDENT_2), sync=False)
        except OutputError as err:
            raise ConfigError(f"{err}; the profile is not saved (--no-profile leaves it alone)") from None

    def reset(self) -> bool:
        existed = self.path.exists()
        if self.path.is_dir():
            raise ConfigError(f"{self.path} is a folder, not a profile file: remove it yourself")
        if existed:
            try:
                self.path.unlink()
            except OSError as err:
                raise ConfigError(f"{self.path}: cannot remove ({err.strerror or err})") from None
        self.data = {"version": VERSION, "profiles": {}}
        return existed


def provider_of(key: str, session: dict[str, Any]) -> str | None:
    """The provider whose tokens a learned session is in: stored with it, or (a session learned
    before that was stored) the provider of the model family in its key, if known."""
    stored = session.get("provider")
    if isinstance(stored, str):
        return stored
    info = lookup(key.split("|", 1)[-1])
    return info.provider if info else None


def project_key(cwd: str | None) -> str | None:
    """A working directory as the profile keeps it: hashed, so the file names no path."""
    return _digest(cwd) if cwd else None


def session_key(path: str, session_id: str | None, agent: str | None = None) -> str:
    """Identify a session so reading it twice does not count it twice (a sub-agent's transcript
    shares its parent's session id, so its agent id is part of it)."""
    basis = session_id or (str(Path(path).resolve()) if path != "-" else "stdin")
    if agent:
        basis += f"/{agent}"
    return _digest(basis)


def _digest(text: str) -> str:
    from ctxfold.hashes import sha256

    return str(sha256(text.encode()).hexdigest()[:16])
