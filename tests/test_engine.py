"""The decision engine: the seeds' rules, calibrators, state, watermark and the overflow-error path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxfold.compaction.guard import ContextGuard
from ctxfold.engine.calibration import (
    GrowthCalibrator,
    Prior,
    SeedCalibrator,
    make_calibrator,
    median,
    slope,
    split_first,
)
from ctxfold.engine.policy import compute_buffer, make_policy, parse_buffer
from ctxfold.engine.profile import BUILTIN, Observation, Profiles, observe_session
from ctxfold.engine.state import KEYS, JsonFileStore, MemoryStore
from ctxfold.errors import ConfigError, UsageError, WindowTooSmallError
from ctxfold.strategies.summary import SUMMARY_OPEN
from ctxfold.tokens.session import Request
from ctxfold.transcript.model import Message, TextPart


@pytest.mark.parametrize(
    ("window", "buffer", "threshold"),
    [
        (200_000, 20_000, 180_000),
        (199_999, 39_999, 160_000),
        (1_000_000, 20_000, 980_000),
        (8_000, 1_600, 6_400),
        (4_000, 800, 3_200),
    ],
)
def test_buffer_rule(window: int, buffer: int, threshold: int) -> None:
    assert compute_buffer(window)[0] == buffer
    policy = make_policy(window)
    assert policy.threshold == threshold
    assert policy.summary_budget == buffer // 2


def test_max_tokens_and_explicit_buffer() -> None:
    # the seeds' WithMaxTokens(180000) workaround: 180k < 200k → 20 % buffer → threshold 144k
    assert make_policy(200_000, max_tokens=180_000).threshold == 144_000
    assert make_policy(100_000, buffer="10%").buffer == 10_000
    assert make_policy(100_000, buffer="15,000").threshold == 85_000
    for bad in ("lots", "150%", "-5"):
        with pytest.raises(UsageError):
            parse_buffer(bad, 100_000)


def test_seed_rule_matches_the_seeds_worked_examples() -> None:
    cal = SeedCalibrator(Prior(0, 2.5))
    assert cal.predict(10_000).tokens == 25_000  # no real count: default factor 2.5
    cal.observe(70_000, 140_000)  # step N: heuristic 70k, real 140k → correction 2.0
    assert cal.predict(90_000).tokens == 180_000  # TestTimingGap_CalibratedHeuristicPreventsOverflow
    assert cal.predict(50_000).tokens == 140_000  # never under the last real count
    cal.observe(10_000, 100_000)  # correction 10 → capped at 5
    assert cal.predict(30_000).tokens == 150_000
    cal.observe(100_000, 50_000)  # correction 0.5 → floored at 1
    assert cal.predict(120_000).tokens == 120_000
    cal.reset()
    assert cal.predict(1_000).tokens == 2_500


def test_growth_calibrator() -> None:
    cal = GrowthCalibrator(Prior(20_000, 1.25, "test"))
    assert cal.predict(1_000).tokens == 21_250  # hidden 20k + 1,000 × 1.25
    cal.observe(1_000, 22_000)
    assert cal.predict(3_000).tokens == 22_000 + int(
        2_000 * 1.25
    )  # a 1k-of-22k point says nothing of a ratio
    # one mostly visible point cannot split hidden overhead from ratio either: the larger reading wins
    assert GrowthCalibrator(Prior(0, 1.0), history=[(4_000, 8_000)]).predict(5_000).tokens == 8_000 + 2_000
    assert (
        GrowthCalibrator(Prior(0, 1.25), history=[(10_000, 11_000)]).predict(12_000).tokens == 11_000 + 2_500
    )
    cal.observe(5_000, 28_000)  # slope (28000−22000)/(5000−1000) = 1.5
    assert cal.predict(6_000).tokens == 28_000 + 1_500
    cal.reset()  # what the segment taught survives as the prior, not as a stale factor
    assert cal.prior.ratio == 1.5 and cal.prior.overhead == 22_000 - 1_500
    assert cal.predict(2_000).tokens == 20_500 + 3_000


@given(st.lists(st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6)), min_size=1))
def test_median_is_the_one_statistics_gives(values: list[float]) -> None:
    import statistics

    assert median(values) == statistics.median(values)
    assert median(iter(values)) == statistics.median(values)  # a generator, as profile.py gives it


def test_median_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        median([])


def test_unknown_calibration_suggests() -> None:
    with pytest.raises(UsageError, match="did you mean 'growth'"):
        make_calibrator("grwth")


def _events(n: int, words: int = 300) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out.append(Message("user", (TextPart(f"request {i}: " + "word " * words),)))
        out.append(Message("assistant", (TextPart("answer " * 50),)))
    return out


def test_guard_watermark_strips_what_the_summary_covers() -> None:
    store = MemoryStore()
    guard = ContextGuard("gpt-4o", window=8_000, store=store)
    events = _events(25)
    prepared = guard.before_request(events)
    assert prepared.compacted and len(prepared.messages) == 2
    assert prepared.messages[0].text.startswith(SUMMARY_OPEN)
    assert "request 24" in prepared.messages[1].text  # the continuation quotes the latest request
    assert guard.state.watermark == len(events)
    for key in KEYS:
        assert guard.state.key(key) in store.data or key in ("real_tokens",)
    events += [Message("user", (TextPart("one more thing"),))]
    again = guard.before_request(events)
    assert not again.compacted
    # the compacted request plus what came after: a stable prefix, not the whole history again
    assert again.messages[:2] == prepared.messages
    assert [m.text for m in again.messages[2:]] == ["one more thing"]


def test_guard_ignores_partials_and_learns_real_counts() -> None:
    guard = ContextGuard("gpt-4o", window=128_000)
    events = _events(2)
    first = guard.before_request(events)
    guard.after_response(999_999, final=False)
    assert not guard.calibrator.history
    guard.after_response(first.decision.estimate * 2)
    assert guard.calibrator.history == [(first.decision.estimate, first.decision.estimate * 2)]


def test_overflow_error_teaches_and_forces_compaction() -> None:
    guard = ContextGuard("claude-sonnet-4-5", window=200_000)
    events = _events(3, words=20_000)  # ~60k counted; the provider says 200,819
    guard.before_request(events)
    assert not guard.on_error("500 internal server error")
    assert guard.on_error(
        '400 {"type":"error","error":{"message":"prompt is too long: 200819 tokens > 200000 maximum"}}'
    )
    assert guard.state.get("real_tokens") == 200_819
    prepared = guard.before_request(events)
    assert prepared.compacted and prepared.decision.forced


def test_window_too_small_is_a_clear_error_not_a_loop() -> None:
    guard = ContextGuard("gpt-4o", window=4_000)
    system = ("You are an agent. " + "Follow every rule. " * 1200,)
    with pytest.raises(WindowTooSmallError, match="system prompt and tools alone"):
        guard.before_request(_events(1, 10), system=system)


def test_refused_again_after_compaction_stops() -> None:
    guard = ContextGuard("claude-sonnet-4-5", window=200_000)
    events = _events(3, words=20_000)
    guard.before_request(events)
    guard.on_error("prompt is too long: 210000 tokens > 200000 maximum")
    assert guard.before_request(events).compacted
    guard.on_error("prompt is too long: 205000 tokens > 200000 maximum")
    with pytest.raises(WindowTooSmallError, match="refused even the compacted request"):
        guard.before_request(events)


def test_json_store_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    g1 = ContextGuard("gpt-4o", window=8_000, store=JsonFileStore(path))
    events = _events(25)
    g1.before_request(events)
    g1.after_response(1_234)
    g2 = ContextGuard("gpt-4o", window=8_000, store=JsonFileStore(path))
    assert g2.state.watermark == len(events)
    assert g2.calibrator.history  # calibration points reloaded
    assert orjson.loads(path.read_bytes())["__context_guard_real_tokens_default"] == 1_234
    path.write_text("{broken")
    with pytest.raises(ConfigError, match="unreadable engine state"):
        JsonFileStore(path)


def test_profile_learns_per_source_and_leaves_one_out(tmp_path: Path) -> None:
    prof = Profiles(tmp_path / "p.json")
    # nothing learned yet: the format's shipped prior, or the provider's ratio for a format without one
    assert prof.prior("claude-code|claude-opus-4", "anthropic").source.startswith("built-in claude-code")
    assert prof.prior("claude-code|claude-opus-4", "anthropic").overhead == BUILTIN["claude-code"][0]
    assert prof.prior("litellm|claude-opus-4", "anthropic") == Prior(
        0, 1.3, "anthropic default, no profile yet"
    )
    prof.learn("claude-code|claude-opus-4", "a", Observation(26_000, 1.3))
    prof.learn("claude-code|claude-opus-4", "b", Observation(30_000, 1.5))
    # one or two sessions from elsewhere (a bundled fixture, say) do not displace the shipped prior
    assert prof.prior("claude-code|claude-opus-4", "anthropic").overhead == BUILTIN["claude-code"][0]
    prof.learn("claude-code|claude-sonnet-4", "c", Observation(16_000, 1.2))
    # two opus sessions are too few on their own: every model of the source speaks
    p = prof.prior("claude-code|claude-opus-4", "anthropic")
    assert (p.overhead, p.ratio) == (26_000, 1.3) and "any anthropic model" in p.source
    prof.learn("claude-code|claude-opus-4", "d", Observation(34_000, 1.6))
    p = prof.prior("claude-code|claude-opus-4", "anthropic")
    assert (p.overhead, p.ratio) == (30_000, 1.5) and p.source.startswith("profile claude-code|claude-opus-4")
    assert prof.prior("claude-code|claude-opus-4", "anthropic", exclude="d").overhead == 26_000
    assert prof.prior("claude-code|claude-haiku-4", "anthropic").overhead == 28_000  # any model of the source
    prof.save()
    assert Profiles(tmp_path / "p.json").profiles == prof.profiles
    old = {
        "version": 1,
        "profiles": {"claude-code|claude-opus-4": {"sessions": {"x": {"overhead": 1, "ratio": 1}}}},
    }
    (tmp_path / "p.json").write_bytes(orjson.dumps(old))
    assert Profiles(tmp_path / "p.json").profiles == {}  # learned under other counting rules: set aside
    (tmp_path / "p.json").write_text("not json")
    corrupt = Profiles(tmp_path / "p.json")  # a cache gone bad is ignored, with a warning
    assert corrupt.profiles == {} and "profile reset" in corrupt.warnings[0]


def test_the_keys_a_profile_keeps_are_those_earlier_versions_wrote() -> None:
    """A learned profile outlives upgrades: its keys are the sha256 they always were, whichever
    module computes it."""
    import hashlib

    from ctxfold.engine.profile import project_key, session_key

    assert project_key("/home/me/app") == hashlib.sha256(b"/home/me/app").hexdigest()[:16]
    assert session_key("x", "2f1c") == hashlib.sha256(b"2f1c").hexdigest()[:16]


def test_sessions_of_the_same_project_come_first(tmp_path: Path) -> None:
    """Sessions run in the same directory share its memory files, MCP servers and hooks: one of
    them says more about the next one's hidden prompt than the harness's median does."""
    from ctxfold.engine.profile import project_key

    prof = Profiles(tmp_path / "p.json")
    here, there = project_key("/home/me/app"), project_key("/home/me/other")
    for name, hidden in (("a", 20_000), ("b", 21_000), ("c", 22_000)):
        prof.learn("claude-code|claude-opus-4", name, Observation(hidden, 1.3), there, "anthropic")
    prof.learn("claude-code|claude-sonnet-4", "d", Observation(36_000, 1.2), here, "anthropic")
    prof.learn("claude-code|gpt-5", "e", Observation(9_000, 1.0), here, "openai")  # other tokens: not used
    p = prof.prior("claude-code|claude-opus-4", "anthropic", project=here)  # another model, same project
    assert (p.overhead, p.ratio) == (
        36_000,
        1.2,
    ) and p.source == "profile claude-code in this project, 1 session(s)"
    assert prof.prior("claude-code|claude-opus-4", "anthropic", project=there).overhead == 21_000
    assert prof.prior("claude-code|claude-opus-4", "anthropic").overhead == 21_000  # no project known
    # leaving the project's only session out falls back to the source's sessions
    assert prof.prior("claude-code|claude-opus-4", "anthropic", project=here, exclude="d").overhead == 21_000
    prof.save()
    assert "/home/me" not in (tmp_path / "p.json").read_text()  # the profile names no path


def test_a_new_format_borrows_the_providers_ratio_not_its_overhead(tmp_path: Path) -> None:
    """A request log of a Claude model has no session of its format yet: the Claude sessions of
    other harnesses lend their tokenizer ratio (the tokenizer's), not their hidden prompt (the
    harness's); OpenAI keeps 1.0 (o200k is its own tokenizer)."""
    prof = Profiles(tmp_path / "p.json")
    for name, ratio in (("a", 1.20), ("b", 1.25), ("c", 1.50)):
        prof.learn("claude-code|claude-opus-4", name, Observation(23_000, ratio), None, "anthropic")
    prof.learn("codex|gpt-5", "x", Observation(5_000, 1.1), None, "openai")
    p = prof.prior("litellm|claude-sonnet-4", "anthropic")
    assert (p.overhead, p.ratio) == (0, 1.25) and "3 session(s) of other log formats" in p.source
    assert prof.prior("litellm|claude-sonnet-4", "anthropic", exclude="b").ratio == 1.3  # 2: too few
    assert prof.prior("native|gpt-4o", "openai") == Prior(0, 1.0, "openai default, no profile yet")
    # a format of its own borrows nothing: its shipped prior until three of its sessions are learned
    assert prof.prior("codex|gpt-5", "openai").overhead == BUILTIN["codex"][0]


def test_a_format_of_any_model_keeps_providers_apart(tmp_path: Path) -> None:
    """ctxfold's own format and request logs carry any model: a GPT session's ratio (in o200k,
    its own tokens) says nothing of a Claude session read from the same format."""
    prof = Profiles(tmp_path / "p.json")
    for name in "abc":
        prof.learn("native|gpt-4o", name, Observation(0, 1.0), None, "openai")
    p = prof.prior("native|claude-sonnet-4", "anthropic")
    assert p.ratio == 1.3 and p.source == "anthropic default, no profile yet"
    prof.learn("native|claude-opus-4", "d", Observation(0, 1.22), None, "anthropic")
    p = prof.prior("native|claude-sonnet-4", "anthropic")
    assert p.ratio == 1.22 and p.source == "profile native (any anthropic model), 1 session(s)"
    # sessions learned before the provider was stored: the model family in the key tells it
    prof.profiles["native|gpt-4o"]["sessions"] = {k: {"overhead": 0, "ratio": 1.0} for k in "abc"}
    assert prof.prior("native|claude-sonnet-4", "anthropic").ratio == 1.22


@pytest.mark.parametrize(
    ("rel", "cwd"),
    [  # jq: first .cwd of a line (Claude Code), .payload.cwd of session_meta (Codex), header .cwd (pi)
        ("claude-code/raze-short.jsonl", "/Users/uzaxirr/work/raze"),
        ("codex/fundwise.jsonl", "/Users/sarthiborkar/Build/FundWise"),
        ("pi/large-session.jsonl", "/Users/badlogic/workspaces/pi-mono"),
    ],
)
def test_the_project_a_log_names(rel: str, cwd: str) -> None:
    from conftest import real

    from ctxfold.tokens.estimate import estimate_file

    assert estimate_file(real(rel)).replay.project == cwd


def test_observe_session_uses_the_first_request_and_the_slope() -> None:
    reqs = [
        Request(0, 1_000, 1, real=26_300, real_source="usage"),
        Request(1, 11_000, 5, real=39_300, real_source="usage"),
    ]
    obs = observe_session(reqs, "anthropic")
    assert obs is not None and obs.ratio == 1.3 and obs.overhead == 25_000
    assert obs.first_ratio is None


def test_a_fully_logged_first_request_keeps_its_own_ratio(tmp_path: Path) -> None:
    """A request log shows everything sent: real 4,400 for an estimate of 4,000 is a 1.1 ratio
    on the first request, not a negative hidden prompt under the growth ratio 1.3."""
    assert split_first(4_000, 4_400, 1.3) == (0, 1.1)
    assert split_first(1_000, 26_300, 1.3) == (25_000, None)
    reqs = [
        Request(0, 4_000, 1, real=4_400, real_source="usage"),
        Request(1, 14_000, 5, real=17_400, real_source="usage"),  # slope 1.3
    ]
    obs = observe_session(reqs, "anthropic")
    assert obs == Observation(0, 1.3, 1.1)
    prof = Profiles(tmp_path / "p.json")
    prof.learn("litellm|claude-sonnet-4", "a", obs)
    prior = prof.prior("litellm|claude-sonnet-4", "anthropic")
    assert (prior.overhead, prior.ratio, prior.first_ratio) == (0, 1.3, 1.1)
    cal = GrowthCalibrator(prior)
    assert cal.predict(5_000).tokens == 5_500  # the first request: its own ratio
    cal.observe(5_000, 5_500)
    assert cal.predict(6_000).tokens == 5_500 + 1_300  # growth: the growth ratio
    cal.observe(8_000, 9_400)  # slope (9400 − 5500) / 3000 = 1.3
    cal.reset()  # the next segment starts from the same split
    assert (cal.prior.overhead, cal.prior.ratio, cal.prior.first_ratio) == (0, 1.3, 1.1)


def test_prediction_after_a_trailing_compaction_starts_from_the_summary(tmp_path: Path) -> None:
    """A log that ends with a recorded compaction: the next request is the summary, predicted
    with what the earlier segment taught (its ratio), never from the count the compaction made
    stale (the seed rule's ``max(real_prev, …)`` would still say 24,000)."""
    from conftest import write_jsonl

    from ctxfold.engine.now import predict_now
    from ctxfold.tokens.estimate import estimate_file

    big = "lorem ipsum dolor sit amet " * 2_000
    header = {"type": "header", "format": "ctxfold", "version": 1, "model": "gpt-4o"}
    user = {"type": "message", "role": "user", "parts": [{"type": "text", "text": big}]}
    answer = {
        "type": "message",
        "role": "assistant",
        "parts": [{"type": "text", "text": "ok"}],
        "usage": {"type": "usage", "prompt_tokens": 24_000},
    }
    marker = {"type": "compaction", "source": "ctxfold", "summary": "the summary"}
    summary = {"type": "message", "role": "user", "parts": [{"type": "text", "text": "the summary"}]}
    before = estimate_file(write_jsonl(tmp_path / "a.jsonl", [header, user, answer]))
    after = estimate_file(write_jsonl(tmp_path / "b.jsonl", [header, user, answer, marker, summary]))
    assert after.replay.segment == 1 and after.context_tokens < 100
    stale = predict_now(before, Prior())
    fresh = predict_now(after, Prior())
    assert stale.tokens >= 24_000
    ratio = 24_000 / before.requests[-1].estimate
    assert fresh.tokens == int(after.context_tokens * ratio) < 200, fresh
    assert predict_now(before, Prior(), "seed").tokens >= 24_000
    assert predict_now(after, Prior(), "seed").tokens == int(after.context_tokens * 1.5)


def test_the_readme_agent_loop_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's agent-loop example, run as written against a stand-in Anthropic client that
    first refuses the request as too long, then answers: the guard learns, compacts, sends the
    caller's own dicts and persists."""
    import sys
    from types import SimpleNamespace

    from conftest import ROOT

    monkeypatch.chdir(tmp_path)
    readme = (ROOT / "README.md").read_text()
    code = readme.split("### Use it in an agent loop", 1)[1].split("```python", 1)[1].split("```", 1)[0]

    class BadRequestError(Exception):
        pass

    class Done(Exception):
        pass

    sent: list[list[Any]] = []

    def create(*, messages: list[Any], **_: Any) -> SimpleNamespace:
        sent.append(list(messages))
        if len(sent) == 1:
            raise BadRequestError("Error code: 400 - prompt is too long: 250000 tokens > 200000 maximum")
        if len(sent) == 4:
            raise Done
        usage = SimpleNamespace(
            input_tokens=50, cache_read_input_tokens=30_000, cache_creation_input_tokens=100
        )
        return SimpleNamespace(usage=usage, content=[{"type": "text", "text": "done"}])

    client = SimpleNamespace(messages=SimpleNamespace(create=create))
    fake = SimpleNamespace(Anthropic=lambda: client, BadRequestError=BadRequestError)
    monkeypatch.setitem(sys.modules, "anthropic", fake)
    # 120k o200k tokens of task: predicted under the 180k threshold (× 1.3 for Claude), but the
    # provider counts 250k: the seeds' known limitation, a true ratio above the assumed one
    namespace = {"task": "lorem ipsum " * 60_000, "system_prompt": "You are a coding agent.", "tools": []}
    with pytest.raises(Done):
        exec(compile(code, "README.md", "exec"), namespace)
    assert len(str(sent[1])) < len(str(sent[0])) // 10  # compacted after the refusal
    assert sent[1][0]["content"].startswith(SUMMARY_OPEN) and sent[2][:2] == sent[1]
    assert sent[2][2] == {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    state = orjson.loads((tmp_path / "agent-state.json").read_bytes())
    assert state["__context_guard_real_tokens_default"] == 30_150  # input + cache reads and writes


def test_slope_is_not_moved_by_a_bump_of_unlogged_content() -> None:
    """Steps of 1.2 real tokens per estimated token, one of them carrying 8,600 tokens the log
    never showed (a server-side web search): the median step keeps 1.2; first-to-last would not."""
    points = [(10_000, 20_000)]
    for i in range(1, 6):
        e, r = points[-1]
        points.append((e + 2_000, r + 2_400 + (8_600 if i == 2 else 0)))
    assert slope(points) == pytest.approx(1.2)
    (e0, r0), (e1, r1) = points[0], points[-1]
    assert (r1 - r0) / (e1 - e0) > 2.0
    assert slope(points[:1]) is None
    assert slope([(0, 0), (1_000, 1_300)]) is None  # not enough growth yet
    small = [(i * 400, i * 520) for i in range(8)]  # only steps under 500: the run as a whole
    assert slope(small) == pytest.approx(1.3)
    calibrator = GrowthCalibrator()
    for e, r in points:
        calibrator.observe(e, r)
    assert calibrator.predict(points[-1][0] + 1_000).tokens == points[-1][1] + 1_200


def _slope_reference(points: list[tuple[int, int]], server: list[int]) -> float | None:
    """``slope``'s rule written out plainly, step by step from the points."""
    if len(points) < 2 or points[-1][0] - points[0][0] < 2_000:
        return None
    calls = server if len(server) == len(points) else [0] * len(points)
    steps = [
        (points[i + 1][0] - points[i][0], points[i + 1][1] - points[i][1], calls[i + 1] == calls[i])
        for i in range(len(points) - 1)
    ]
    ratios = sorted(dr / de for de, dr, clean in steps if clean and de >= 500)
    if ratios:
        n = len(ratios)
        ratio = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
    else:
        grown = sum(de for de, _, clean in steps if clean)
        if grown < 500:
            return None
        ratio = sum(dr for _, dr, clean in steps if clean) / grown
    return min(5.0, max(0.8, ratio))


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3_000), st.integers(-500, 4_000), st.sampled_from([0, 0, 0, 1]), st.booleans()
        ),
        min_size=34,
        max_size=100,
    ),
    st.dictionaries(st.integers(0, 99), st.sampled_from(["reset", "cleared", "restored"]), max_size=4),
)
def test_the_slope_kept_as_points_come_and_go_is_the_slope_of_the_points(
    points: list[tuple[int, int, int, bool]], others: dict[int, str]
) -> None:
    """A calibrator keeps its steps as it observes while asked for its slope in between (past
    32 points the first two steps become one), and steps afresh points observed without an ask
    or changed from outside (a guard's reset, a failed fold putting them back): whenever it is
    asked, its slope is the one worked out from the points."""
    cal = GrowthCalibrator()
    e = r = k = 0
    saved: list[tuple[int, int]] = []
    events: list[Any] = []
    for i, point in enumerate(points):
        events += [others[i], point] if i in others else [point]
    for ev in events:
        if ev == "reset":
            cal.reset()
        elif ev == "cleared":
            saved = list(cal.history)
            cal.history.clear()  # as ContextGuard.reset does
        elif ev == "restored":
            cal.history[:] = saved  # as a failed fold does
        else:
            de, dr, dk, ask = ev
            e, r, k = e + de, max(0, r + dr), k + dk
            cal.observe(e, r, k)
            if not ask:
                continue
        want = _slope_reference(cal.history, cal.server)
        assert cal.session_slope() == want
        assert slope(cal.history, cal.server) == want


def test_a_request_counted_empty_and_billed_nothing_is_no_ratio() -> None:
    """A point of no tokens either way (estimate 0, real 0) reads no tokenizer ratio off itself:
    it divided by zero, predicting and at a compaction."""
    cal = GrowthCalibrator(Prior(100, 1.2))
    cal.observe(0, 0)
    assert cal.predict(1_000).tokens == 1_200
    cal.reset()
    assert cal.prior.ratio == 1.2


def test_after_a_compaction_the_prior_runs_through_the_first_and_latest_counts() -> None:
    """A segment whose latest steps grew at 1.0 but whose whole span grew at 1.25: the prior
    carried over must reproduce both real counts, not read the difference as hidden prompt."""
    cal = GrowthCalibrator(Prior(2_000, 1.25))
    points = [(20_000, 27_000)] + [(20_000 + 4_000 * i, 27_000 + 5_000 * i) for i in range(1, 20)]
    points += [(points[-1][0] + 1_000 * i, points[-1][1] + 1_000 * i) for i in range(1, 40)]
    for e, r in points:
        cal.observe(e, r)
    cal.reset()
    (e0, r0), (e1, r1) = points[0], points[-1]
    assert cal.prior.overhead + cal.prior.ratio * e0 == pytest.approx(r0, abs=1)
    assert cal.prior.overhead + cal.prior.ratio * e1 == pytest.approx(r1, abs=1)


def test_the_hidden_prompt_carried_over_a_compaction_is_never_more_than_the_smallest_request() -> None:
    """Every request sends the system prompt and tools: none can be larger than the session's
    smallest real count. A segment that starts with an overflow error's count over a context the
    log shows as 127 tokens (fixtures/pi/v3-tree.jsonl) read 200,661 tokens of hidden prompt, and
    compact said "the system prompt and tools alone are predicted at 200,786 tokens"."""
    cal = GrowthCalibrator(Prior(2_100, 1.242))
    cal.observe(13, 115)  # the session's first request
    cal.reset()  # the log's own compaction
    cal.observe(127, 200_819)  # "prompt is too long: 200819 tokens > 200000 maximum"
    cal.reset()  # ctxfold's fold
    assert cal.prior.overhead <= 115
    assert cal.predict(200).tokens < 1_000


def test_the_profile_is_a_cache_written_without_fsync_the_state_file_with_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    prof = Profiles(tmp_path / "p.json")
    prof.learn("claude-code|claude-opus-4", "a", Observation(26_000, 1.3))
    prof.save()
    assert Profiles(tmp_path / "p.json").profiles == prof.profiles and synced == []
    store = JsonFileStore(tmp_path / "state.json")
    store.set("k", 1)
    assert len(synced) == 1  # the watermark state is the user's data: it survives a crash
