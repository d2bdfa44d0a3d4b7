"""The profile's index gives the priors a scan of every learned session gives, as sessions are
learned, replaced and forgotten, and when the table is changed behind its back."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from ctxfold.engine import profile
from ctxfold.engine.calibration import Prior, median
from ctxfold.engine.profile import BUILTIN, MIN_SESSIONS, Observation, Profiles, default_prior, provider_of

FORMATS = ["claude-code", "claude-code/subagent", "codex", "pi", "openhands", "native"]
FAMILIES = ["claude-sonnet-4", "claude-opus-4", "gpt-4o", "gemini-2.5-pro", "some-model"]
PROVIDERS = ["anthropic", "openai", "google", "other"]


def scanned(table: dict[str, Any], key: str, provider: str, exclude: str | None, project: str | None,
            family: str | None) -> Prior:  # fmt: skip
    """The prior by its definition (``Profiles.prior``'s docstring), every session looked at."""
    fmt = key.split("|", 1)[0]

    def sessions(keys: list[str]) -> list[dict[str, Any]]:
        return [
            v
            for k in keys
            for s, v in table.get(k, {}).get("sessions", {}).items()
            if s != exclude and provider_of(k, v) in (provider, None)
        ]

    fmt_keys = [k for k in table if k.startswith(fmt + "|")]
    in_format = sessions(fmt_keys)
    here = [v for v in in_format if project and v.get("project") == project]
    pick = ("here", here) if here else None
    if not here:
        for name, obs in (("key", sessions([key])), ("format", in_format)):
            if obs:
                pick = (name, obs)
                if len(obs) >= MIN_SESSIONS:
                    break
    if pick is None or (not here and len(pick[1]) < MIN_SESSIONS and fmt in BUILTIN):
        if fmt in BUILTIN or provider in ("openai", "other"):
            return default_prior(fmt, provider)
        ratios = [
            v["ratio"]
            for k, e in table.items()
            for s, v in e.get("sessions", {}).items()
            if s != exclude and provider_of(k, v) == provider
        ]
        if len(ratios) < MIN_SESSIONS:
            return default_prior(fmt, provider)
        return Prior(
            0, float(median(ratios)), f"{provider} ratio of {len(ratios)} session(s) of other log formats"
        )
    name, obs = pick
    scope = {"here": f"{fmt} in this project", "key": key, "format": f"{fmt} (any {provider} model)"}[name]
    overhead = int(median(o["overhead"] for o in obs))
    first = float(median(o.get("first_ratio", o["ratio"]) for o in obs))
    ratio = float(median(o["ratio"] for o in obs))
    source = f"profile {scope}, {len(obs)} session(s)"
    if family is not None and not here:
        peers = [v["overhead"] for v in in_format if v.get("family") == family]
        overhead = int(median(peers)) if len(peers) >= MIN_SESSIONS else 0
        source += f"; {len(peers)} of its generation" if len(peers) >= MIN_SESSIONS else "; nothing beyond it"
    searched = [v["server_tool"] for v in in_format if isinstance(v.get("server_tool"), (int, float))]
    server = int(median(searched)) if searched else 0
    return Prior(overhead, ratio, source, None if first == ratio else first, server)


def _observation(rng: random.Random) -> Observation:
    ratio = rng.choice([1.0, 1.1, 1.25, 1.3, 1.3, 0.9])
    return Observation(
        overhead=rng.choice([0, 500, 1200, 1200, 3000, -400]),
        ratio=ratio,
        first_ratio=rng.choice([None, None, 1.05, ratio]),
        family=rng.choice([None, None, "cc-2", "cc-3"]),
        server_tool=rng.choice([None, None, 0, 800, 1500]),
    )


@pytest.mark.parametrize("seed", range(12))
def test_the_indexed_prior_is_the_scanned_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(profile, "MAX_SESSIONS", rng.choice([4, 7, 200]))  # forgetting too
    prof = Profiles(tmp_path / "profile.json")
    keys = [f"{rng.choice(FORMATS)}|{rng.choice(FAMILIES)}" for _ in range(6)]
    sessions = [f"s{i}" for i in range(14)]  # few: the same session learned under two keys
    projects = [None, "p1", "p2"]
    asked = 0
    for step in range(400):
        r = rng.random()
        if r < 0.45:
            prof.learn(rng.choice(keys), rng.choice(sessions), _observation(rng), rng.choice(projects),
                       rng.choice([None, *PROVIDERS]))  # fmt: skip
        elif r < 0.47 and prof.profiles:  # the table changed behind the index's back
            key = rng.choice(sorted(prof.profiles))
            kept = list(prof.profiles[key]["sessions"].items())[: rng.randrange(3)]
            prof.profiles[key]["sessions"] = dict(kept)
        else:
            args = (rng.choice(keys), rng.choice(PROVIDERS))
            kw = {
                "exclude": rng.choice([None, *sessions]),
                "project": rng.choice(projects),
                "family": rng.choice([None, "cc-2", "cc-3"]),
            }
            want = scanned(prof.profiles, *args, **kw)
            assert prof.prior(*args, **kw) == want, (seed, step)
            asked += want.source.startswith("profile")
    assert asked > 20  # the profile answered, not only the defaults


def test_a_profile_read_from_its_file_is_indexed_as_learned(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    prof = Profiles(path)
    for i in range(9):
        prof.learn(
            "claude-code|claude-sonnet-4", f"s{i}", Observation(100 * i, 1.2 + i / 100), "p", "anthropic"
        )
    prof.save()
    again = Profiles(path)
    for exclude in (None, "s3", "s8", "nobody"):
        got = again.prior("claude-code|claude-sonnet-4", "anthropic", exclude=exclude, project="p")
        assert got == prof.prior("claude-code|claude-sonnet-4", "anthropic", exclude=exclude, project="p")
        assert got == scanned(again.profiles, "claude-code|claude-sonnet-4", "anthropic", exclude, "p", None)
    # the median leaves the session out: 9 sessions, then 8 without s8 (mean of the middle two)
    assert again.prior("claude-code|claude-sonnet-4", "anthropic", project="p").overhead == 400
    assert again.prior("claude-code|claude-sonnet-4", "anthropic", exclude="s8", project="p").overhead == 350
