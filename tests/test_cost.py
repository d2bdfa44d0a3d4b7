"""What a session cost: the price table, the bill read off usage records (checked against the
costs pi and LiteLLM record themselves, and against token sums read straight from the JSON), and
the bill under --simulate-compaction."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, real, write_jsonl
from typer.testing import CliRunner

from ctxfold.cli.app import app
from ctxfold.config import load_config
from ctxfold.engine.cost import Bill, Call, recorded_cost, simulated_cost
from ctxfold.engine.replay import report_file
from ctxfold.errors import ConfigError
from ctxfold.prices import Price, price_list
from ctxfold.tokens.estimate import estimate_file

runner = CliRunner()
SAMPLE = FIXTURES / "real" / "claude-code-sidechains.jsonl"


# ----------------------------------------------------------------------------- the price table


@pytest.mark.parametrize(
    ("model", "input_price"),
    [
        ("claude-opus-4-7", 5.0),
        ("claude-opus-4-20250514", 15.0),  # a dated snapshot is its model
        ("claude-opus-4-1-20250805", 15.0),
        ("claude-opus-4-6[1m]", 5.0),  # a bracketed variant too
        ("litellm_proxy/claude-sonnet-4-20250514", 3.0),  # a router's prefix is dropped
        ("claude-sonnet-4-5-20250929", 3.0),
        ("gpt-5.5", 5.0),
        ("gpt-5", 1.25),
        ("gpt-5-2025-08-07", 1.25),
        ("openai/gpt-5.4", 2.5),
    ],
)
def test_price_rows_apply_to_their_model_and_its_snapshots(model: str, input_price: float) -> None:
    price = price_list().price(model)
    assert price is not None and price.input == input_price


@pytest.mark.parametrize(
    "model",
    ["claude-opus-4-9", "gpt-5.6-sol", "gpt-5-mini", "claude-opus-4-6-thinking", "llama-4-maverick", None],
)
def test_a_model_without_a_row_is_unpriced_not_priced_as_a_cousin(model: str | None) -> None:
    # claude-opus-4-9 shares claude-opus-4's prefix but not its price ($15 against $5)
    assert price_list().price(model) is None


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ctxfold.toml"
    path.write_text(text)
    return path


def test_config_prices_add_and_override_rows(tmp_path: Path) -> None:
    conf = load_config(
        write_config(
            tmp_path,
            '[prices."gpt-5.6-sol"]\ninput = 10\noutput = 50\ncache_read = 1\n'
            '[prices."claude-opus-4-7"]\ninput = 4\noutput = 20\n',
        )
    )
    sol = conf.prices.price("gpt-5.6-sol")
    assert sol is not None and (sol.input, sol.output, sol.cache_read, sol.cache_write) == (10, 50, 1, None)
    opus = conf.prices.price("claude-opus-4-7-20260101")
    assert opus is not None and opus.input == 4 and "ctxfold.toml" in opus.source
    assert conf.warnings == ()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[prices."m"]\ninput = -1\noutput = 2\n', "prices.m.input must be a number"),
        ('[prices."m"]\ninput = "cheap"\noutput = 2\n', "prices.m.input must be a number"),
        ('[prices."m"]\ninput = 1\n', "needs input and output"),
        ("[prices]\nm = 3\n", '[prices."m"] must be a table'),
    ],
)
def test_a_bad_price_is_an_error_naming_it(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace(".", r"\.")):
        load_config(write_config(tmp_path, body))


def test_an_unknown_price_key_is_warned_about_with_did_you_mean(tmp_path: Path) -> None:
    conf = load_config(write_config(tmp_path, '[prices."m"]\ninput = 1\noutput = 2\ncache_reads = 0.1\n'))
    assert (
        len(conf.warnings) == 1 and "'cache_reads'" in conf.warnings[0] and "cache_read" in conf.warnings[0]
    )


# ------------------------------------------------------------------------------- the arithmetic


def test_a_call_is_billed_by_kind_of_token() -> None:
    p = Price(input=3, output=15, cache_read=0.3, cache_write=3.75, cache_write_1h=6)
    bill = Bill()
    # 1M read, 1M written of which 400k for an hour, 500k plain input, 100k output
    bill.add(
        Call(
            prompt=2_500_000,
            cache_read=1_000_000,
            cache_write=1_000_000,
            cache_write_1h=400_000,
            output=100_000,
        ),
        p,
    )
    assert bill.input == pytest.approx(0.5 * 3)
    assert bill.cache_read == pytest.approx(1.0 * 0.3)
    assert bill.cache_write == pytest.approx(0.6 * 3.75 + 0.4 * 6)
    assert bill.output == pytest.approx(0.1 * 15)


def test_without_cache_rates_cached_tokens_are_billed_as_input() -> None:
    bill = Bill()
    bill.add(
        Call(prompt=1_000_000, cache_read=600_000, cache_write=100_000, output=0), Price(input=2, output=8)
    )
    assert bill.total == pytest.approx(2.0)


def test_a_long_prompt_is_billed_whole_at_the_long_context_rates() -> None:
    p = Price(input=3, output=15, long_above=200_000, long_input=2, long_output=1.5)
    short, long = Bill(), Bill()
    short.add(Call(prompt=200_000, output=1_000), p)
    long.add(Call(prompt=200_001, output=1_000), p)
    assert short.total == pytest.approx(0.2 * 3 + 0.001 * 15)
    assert long.total == pytest.approx(0.200001 * 6 + 0.001 * 22.5)


def test_a_compacted_request_reads_its_unchanged_prefix_and_writes_the_rest() -> None:
    call = Call(prompt=90_000, cache_read=88_000, cache_write=2_000, cache_write_1h=2_000, output=300)
    assert call.replaced_by(30_000, 25_000, reads=True, writes=True) == Call(
        30_000, 25_000, 5_000, 5_000, 300
    )
    # automatic caching (OpenAI): the prefix is read, the rest is plain input, nothing is written
    assert call.replaced_by(30_000, 25_000, reads=True, writes=False) == Call(30_000, 25_000, 0, 0, 300)
    assert call.replaced_by(30_000, 25_000, reads=False, writes=False) == Call(30_000, output=300)


def test_removed_tokens_come_off_the_cache_reads_then_the_writes() -> None:
    call = Call(prompt=10_000, cache_read=6_000, cache_write=3_000, cache_write_1h=1_500, output=50)
    assert call.without(2_000) == Call(8_000, 4_000, 3_000, 1_500, 50)
    assert call.without(7_000) == Call(3_000, 0, 2_000, 1_000, 50)  # a cache miss: the write shrinks
    assert call.without(50_000) == Call(0, 0, 0, 0, 50)


# ---------------------------------------------------- recorded bills against the logs' own costs


def _pi_cost(path: Path) -> float:
    """pi writes what each response cost in its usage record, aborted ones included."""
    total = 0.0
    for line in path.read_bytes().splitlines():
        d = orjson.loads(line)
        m = d.get("message") or {}
        if d.get("type") == "message" and m.get("role") == "assistant" and m.get("usage"):
            total += (m["usage"].get("cost") or {}).get("total", 0.0)
    return total


@pytest.mark.parametrize("rel", ["pi/before-compaction.jsonl", "pi/large-session.jsonl"])
def test_the_bill_of_a_pi_session_is_the_cost_pi_recorded(rel: str) -> None:
    path = real(rel)
    cost = recorded_cost(estimate_file(path), price_list())
    assert cost.unpriced_calls == 0
    assert cost.bill.total == pytest.approx(_pi_cost(path), rel=1e-6)


def test_the_bill_of_a_litellm_log_is_the_cost_litellm_recorded() -> None:
    path = real("litellm/openhands-sdk-sonnet4-requests.jsonl")
    logged = sum(orjson.loads(line)["cost"] for line in path.read_bytes().splitlines())
    cost = recorded_cost(estimate_file(path), price_list())
    assert cost.bill.total == pytest.approx(logged, rel=1e-6)


def _claude_code_tokens(path: Path) -> dict[str, int]:
    """Billed tokens by kind read straight from the JSON: once per response (a response split
    over several lines repeats its message id and request id; the last line has the final
    counts), sub-agents' side chains included, Claude Code's synthetic messages left out."""
    last: dict[tuple[str, str], dict[str, int]] = {}
    for line in path.read_bytes().splitlines():
        d = orjson.loads(line)
        m = d.get("message") or {}
        if d.get("type") == "assistant" and m.get("usage") and m.get("model") != "<synthetic>":
            last[(m.get("id"), d.get("requestId"))] = m["usage"]
    out = dict.fromkeys(("input", "write", "write_1h", "read", "output"), 0)
    for u in last.values():
        out["input"] += u["input_tokens"]
        out["write"] += u.get("cache_creation_input_tokens", 0)
        out["write_1h"] += (u.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)
        out["read"] += u.get("cache_read_input_tokens", 0)
        out["output"] += u["output_tokens"]
    return out


@pytest.mark.parametrize(
    "rel",
    [
        "claude-code/posthog-impact-dashboard.jsonl",
        "claude-code/ccviewer-sample-v1.0.98-sidechains.jsonl",  # 161 of its calls are sub-agents'
        "claude-code/fundwise.jsonl",
        "claude-code/scout-images.jsonl",
    ],
)
def test_every_billed_claude_code_call_is_counted_once(rel: str) -> None:
    path = real(rel)
    est = estimate_file(path)
    calls = [Call.of(q.usage) for q in est.requests if q.usage] + [Call.of(u) for u in est.replay.other_calls]
    got = {
        "input": sum(c.uncached for c in calls),
        "write": sum(c.cache_write for c in calls),
        "write_1h": sum(c.cache_write_1h for c in calls),
        "read": sum(c.cache_read for c in calls),
        "output": sum(c.output for c in calls),
    }
    assert got == _claude_code_tokens(path)


# ------------------------------------------------------------------------------ the simulated bill


def test_a_session_that_never_fires_costs_what_it_recorded() -> None:
    report = report_file(str(SAMPLE), simulate=True)
    assert report.simulation is not None and not report.simulation.compactions
    rec, sim = recorded_cost(report.estimate, report.prices), simulated_cost(report, report.prices)
    assert sim is not None and rec.bill.total > 0
    assert sim.bill == rec.bill


def test_compaction_changes_only_the_calls_it_touches_and_adds_the_summarizer() -> None:
    report = report_file(str(real("pi/large-session.jsonl")), simulate=True, window=100_000)
    sim = report.simulation
    assert sim is not None and sim.compactions and sim.removed
    prices = report.prices
    rec, got = recorded_cost(report.estimate, prices), simulated_cost(report, prices)
    assert got is not None
    # every firing adds one summarizer call; the other calls are the same calls
    assert got.calls == rec.calls + len(sim.compactions)
    # rebuilt by hand: the untouched calls as recorded, each later one with its removed tokens
    # taken off the cache reads first, each firing one sent as its compacted request
    expected = Bill()
    price = prices.price("claude-sonnet-4-5")
    assert price is not None
    for q in report.estimate.requests:
        if q.usage is None:
            continue
        call = Call.of(q.usage)
        if q.index in sim.fired:
            f = sim.fired[q.index]
            # pi's session reads and writes a cache: the prefix is read, the summary written
            replaced = Call(f.sent, f.prefix, f.sent - f.prefix, 0, call.output)
            assert call.cache_write_1h == 0 and 0 < f.prefix < f.sent
            expected.add(replaced, price)
            expected.add(Call(f.summarizer_input, output=report.policy.summary_budget), price)
        else:
            expected.add(call.without(sim.removed.get(q.index, 0)), price)
    for u in report.estimate.replay.other_calls:
        expected.add(Call.of(u), price)
    assert got.bill.total == pytest.approx(expected.total)
    assert 0 < got.summarizer.total < got.bill.total
    # fewer tokens read and written than the log: every removal came off them
    assert got.bill.cache_read < rec.bill.cache_read


def test_the_summarizer_prompt_estimate_is_near_what_the_summarizer_is_sent() -> None:
    from ctxfold.engine.budget import SUMMARY_PROMPT_TOKENS
    from ctxfold.providers.base import SummaryRequest
    from ctxfold.providers.render import build_prompt
    from ctxfold.transcript.model import Message, TextPart

    empty = build_prompt(
        SummaryRequest(messages=[Message("user", (TextPart("x"),))], budget_tokens=8_000), window=200_000
    )
    assert 0.7 * SUMMARY_PROMPT_TOKENS <= empty.input_tokens <= 1.3 * SUMMARY_PROMPT_TOKENS


# ------------------------------------------------------------------------------------- the CLI


def test_report_json_and_terminal_show_the_bill() -> None:
    doc = orjson.loads(runner.invoke(app, ["report", "--json", str(SAMPLE)]).stdout)
    cost = doc["files"][0]["summary"]["cost"]
    assert cost["currency"] == "USD" and cost["unpriced_calls"] == 0
    bill = cost["recorded"]
    parts = bill["input"] + bill["cache_write"] + bill["cache_read"] + bill["output"]
    assert bill["total"] == pytest.approx(parts, abs=1e-3) and bill["total"] > 0
    assert doc["totals"]["cost"]["recorded"]["total"] == bill["total"]
    assert set(cost["prices"]) == {"claude-sonnet-4-20250514"}
    text = runner.invoke(app, ["report", str(SAMPLE)]).stdout
    assert f"${bill['total']:.2f} for {cost['calls']} calls" in text


def test_an_unpriced_model_is_named_with_how_to_price_it(tmp_path: Path) -> None:
    rows = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "hello",
            "model": "acme-1",
            "usage": {"prompt_tokens": 1000, "completion_tokens": 10},
        },
    ]
    path = write_jsonl(tmp_path / "chat.jsonl", rows)
    result = runner.invoke(app, ["report", str(path)])
    assert result.exit_code == 0
    assert 'no price for acme-1: add [prices."NAME"] to ctxfold.toml' in result.stdout
    conf = write_config(tmp_path, '[prices."acme-1"]\ninput = 2\noutput = 10\n')
    priced = runner.invoke(app, ["report", "--json", str(path)], env={"CTXFOLD_CONFIG": str(conf)})
    bill = orjson.loads(priced.stdout)["files"][0]["summary"]["cost"]["recorded"]
    assert bill["total"] == pytest.approx((1000 * 2 + 10 * 10) / 1e6)


def test_brief_has_a_cost_column() -> None:
    result = runner.invoke(
        app, ["report", "--brief", str(SAMPLE), str(FIXTURES / "anthropic" / "session.jsonl")]
    )
    assert result.exit_code == 0
    header = next(line for line in result.stdout.splitlines() if line.split()[:1] == ["file"])
    assert header.split()[-1] == "cost"


def test_config_shows_the_price_rows_of_the_file(tmp_path: Path) -> None:
    conf = write_config(tmp_path, '[prices."acme-1"]\ninput = 2\noutput = 10\n')
    env = {"CTXFOLD_CONFIG": str(conf)}
    doc = orjson.loads(runner.invoke(app, ["config", "--json"], env=env).stdout)
    assert doc["prices"] == {"acme-1": {"input": 2, "output": 10}}
    assert "price acme-1:" in runner.invoke(app, ["config"], env=env).stdout


def test_the_one_hour_cache_writes_survive_a_round_trip() -> None:
    from ctxfold.formats.anthropic.blocks import usage_from_anthropic
    from ctxfold.formats.anthropic.writer import usage_dict
    from ctxfold.transcript.model import Usage

    raw = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 900,
        "cache_read_input_tokens": 5_000,
        "output_tokens": 40,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 700},
    }
    u = usage_from_anthropic(raw, "claude-opus-4-7")
    assert (u.prompt_tokens, u.cache_write_tokens, u.cache_write_1h_tokens) == (5_903, 900, 700)
    assert usage_dict(u) == raw
    assert "cache_creation" not in usage_dict(Usage(100, cache_write_tokens=50))


def test_one_price_list_answers_each_model_as_a_fresh_one_every_time() -> None:
    # a report's list is asked once per request: what it remembers must not change an answer
    models = ["claude-opus-4-7", "claude-opus-4-9", "gpt-5", "openai/gpt-5.4", "gpt-5-mini", "gpt-5"]
    shared = price_list()
    for model in models + models[::-1]:
        assert shared.price(model) == price_list().price(model)
