"""The multi-turn scenarios: the reference plugin's 91 (42 "Stress" + 49 "Brutal", seed 000's
tables, same names) and a few the seeds lack ("Extra").

Sizes are CHARACTERS of text (the seed's "10k-20k" tool responses), bytes for images and PDFs.
"4k", "8k", "200k", "1M" windows are 4,000 / 8,000 / 200,000 / 1,000,000 tokens (the seed's
buffer table: 8k → 20 % = 1.6k → threshold 6.4k). The ratio is the provider's real tokens per
ctxfold o200k token. Where the seed is vague, the chosen values are stated in ``note`` and
follow these defaults (see ``S``):

* system prompt: 600 chars (4k), 1,200 (8k), 6,000 (128k/200k), 8,000 (1M), markdown
  instructions (≈4.5 chars per o200k token) unless the scenario says otherwise;
* user message 300 chars, model response 120 chars (the seed's default);
* "minimal text": 20-char user message, 40-char response;
* tool calls in a "+" list are parallel (one step), a "→" list is sequential (one step each);
* tool definitions only where the seed lists them; "MCP tool" schemas are 2,000 chars unless given;
* images are PNGs of 320×240 (≤ 20 KB), 1024×768 (≤ 120 KB) or 1600×1200, padded to the byte size.
"""

from __future__ import annotations

from simulation import Scenario, Tool, Turn

K = 1_000
W4K, W8K, W200K, W1M = 4_000, 8_000, 200_000, 1_000_000
MINIMAL_USER, MINIMAL_RESPONSE = 20, 40
_SYSTEM = {W4K: 600, W8K: 1_200, 128_000: 6_000, W200K: 6_000, W1M: 8_000}


def S(group: str, name: str, window: int, turns: int, ratio: float, *pattern: Turn, **kw: object) -> Scenario:
    kw.setdefault("system", _SYSTEM[window])
    return Scenario(f"{group}/{name}", window, turns, ratio, pattern or (Turn(),), **kw)  # type: ignore[arg-type]


def tools(*sizes: int | tuple[int, int], name: str = "fetch_data", style: str = "json") -> tuple[Tool, ...]:
    return tuple(Tool(f"{name}_{i}" if len(sizes) > 1 else name, size, style) for i, size in enumerate(sizes))


def T(*t: Tool, seq: bool = False, **kw: object) -> Turn:
    return Turn(tools=t, sequential=seq, **kw)  # type: ignore[arg-type]


def minimal(*t: Tool, seq: bool = False) -> Turn:
    return Turn(user=MINIMAL_USER, tools=t, sequential=seq, response=MINIMAL_RESPONSE)


def kube(pods: int, describe: int, logs: int) -> tuple[Tool, ...]:
    return (
        Tool("kubectl_get_pods", pods, "kubectl"),
        Tool("kubectl_describe", describe, "describe"),
        Tool("kubectl_logs", logs, "logs"),
    )


def coding(read: int, edit: int, tests: int) -> tuple[Tool, ...]:
    return (
        Tool("read_file", read, "code"),
        Tool("edit_file", edit, "diff"),
        Tool("run_tests", tests, "tests"),
    )


PROM = "prometheus_query"


def debug(prom: int = 0, sql: int = 0, http: int = 0, grep: int = 0, grafana: int = 0) -> tuple[Tool, ...]:
    out = []
    for name, size, style in (
        (PROM, prom, "metrics"),
        ("grafana_panel", grafana, "json"),
        ("sql_query", sql, "sql"),
        ("http_get", http, "http"),
        ("grep", grep, "grep"),
    ):
        if size:
            out.append(Tool(name, size, style))
    return tuple(out)


ST, BR, EX = "Stress", "Brutal", "Extra"
PLAIN = Turn()
CHAT = Turn(user=1_500, response=1_500)  # "normal conversation": sizeable exchanges, no tools

# fmt: off
STRESS: tuple[Scenario, ...] = (
    S(ST, "200k_NormalConversation", W200K, 30, 2.0, CHAT, note="1.5k-char user messages and responses"),
    S(ST, "200k_ToolHeavy", W200K, 20, 2.0, T(*tools((10 * K, 20 * K), (10 * K, 20 * K), (10 * K, 20 * K)))),
    S(ST, "200k_SingleGiantToolResponse", W200K, 3, 2.0, PLAIN, T(Tool("read_file", 300 * K, "code")), PLAIN, note="a 300k-char source file (≈79k o200k tokens) in turn 2 of 3"),
    S(ST, "200k_ToolBurst_10Parallel", W200K, 3, 2.0, T(*tools(*[5 * K] * 10))),
    S(ST, "200k_NoUsageMetadata", W200K, 25, 2.5, T(*tools(8 * K)), usage=False),
    S(ST, "200k_LongRunning_50Turns", W200K, 50, 2.2, T(*tools(5 * K, 15 * K)), PLAIN, PLAIN),
    S(ST, "200k_HighTokenRatio", W200K, 15, 3.0, T(*tools(10 * K))),
    S(ST, "200k_VeryHighTokenRatio_4x", W200K, 10, 4.0, T(*tools(20 * K))),
    S(ST, "200k_LargeSystemPrompt", W200K, 20, 2.0, T(*tools(5 * K)), system=50 * K),
    S(ST, "200k_MassiveToolBurst", W200K, 2, 2.0, T(*tools(*[50 * K] * 15))),
    S(ST, "200k_RepeatedCompactions", W200K, 60, 2.0, T(*tools(30 * K, 10 * K)), PLAIN),
    S(
        ST, "200k_LateUsageMetadata", W200K, 25, 2.0, T(*tools((5 * K, 10 * K))),
        usage_from_turn=5, ratio_changes=((5, 2.5),), note="turns 0-4: ratio 2.0, no usage; turns 5-24: 2.5 with usage",
    ),
    S(
        ST, "200k_100Turns_MixedWorkload", W200K, 100, 2.3,
        T(Tool("search", 1 * K)), Turn(user=800, response=600), T(Tool("read_file", 50 * K, "code")),
        T(Tool("query_db", 5 * K, "sql"), Tool("fetch", 10 * K)), PLAIN,
        T(Tool("grep", 20 * K, "grep"), Tool("run_tests", 8 * K, "tests"), seq=True),
        note="6-turn cycle: 1k, chat, 50k read, 5k+10k parallel, plain, 20k→8k sequential",
    ),
    S(ST, "200k_KubeAgent", W200K, 20, 2.5, T(*kube(15 * K, 10 * K, 25 * K)), note="kubectl calls parallel"),
    S(
        ST, "200k_MixedDebugSession", W200K, 25, 2.2,
        T(*debug(prom=20 * K, http=500)), T(*debug(sql=15 * K)), T(*debug(grep=8 * K, http=500)),
        T(*debug(prom=20 * K, sql=15 * K, grep=8 * K)), PLAIN,
        note="5-turn cycle of tool subsets",
    ),
    S(ST, "200k_PureToolStorm", W200K, 30, 2.0, minimal(*tools(5 * K, 5 * K))),
    S(ST, "200k_CodingAgent", W200K, 15, 2.5, T(*coding(8 * K, 2 * K, 12 * K), seq=True)),
    S(ST, "1M_NormalConversation", W1M, 50, 2.0, T(*tools(10 * K))),
    S(
        ST, "1M_HeavyTools", W1M, 30, 2.0,
        T(Tool("read_file", 50 * K, "code"), Tool("grep", 20 * K, "grep"), Tool("run_tests", 30 * K, "tests")),
    ),
    S(ST, "4k_NormalConversation", W4K, 20, 1.8),
    S(ST, "4k_WithSmallTools", W4K, 10, 1.8, T(*tools(500))),
    S(ST, "8k_NormalConversation", W8K, 20, 1.8),
    S(ST, "8k_SmallToolCalls", W8K, 15, 1.8, T(*tools(1 * K))),
    S(ST, "8k_LargeToolResponse", W8K, 3, 1.8, PLAIN, T(*tools(20 * K)), PLAIN, note="the 20k response in turn 2 of 3"),
    S(ST, "8k_NoUsageMetadata", W8K, 25, 2.0, T(*tools(1_500)), usage=False),
    S(ST, "8k_LongRunning_40Turns", W8K, 40, 1.8),
    S(ST, "8k_ToolBurst", W8K, 3, 1.8, T(*tools(3 * K, 3 * K, 3 * K, 1 * K, 2 * K))),
    S(ST, "8k_HighTokenRatio", W8K, 20, 3.0, T(*tools(1 * K))),
    S(ST, "8k_LargeSystemPrompt", W8K, 15, 1.8, system=8 * K),
    S(ST, "8k_OnlyToolResponses", W8K, 10, 2.0, minimal(*tools(5 * K))),
    S(ST, "8k_RapidFireShortMessages", W8K, 80, 1.8, Turn(user=60, response=60), note="60-char messages"),
    S(ST, "8k_RepeatedCompactions", W8K, 40, 1.8, T(*tools(2 * K))),
    S(ST, "8k_AlternatingToolAndText", W8K, 30, 2.0, T(*tools(3 * K)), PLAIN),
    S(ST, "8k_KubeAgent", W8K, 10, 2.0, T(*kube(5 * K, 3 * K, 8 * K)), note="kubectl calls parallel"),
    S(
        ST, "8k_MixedDebugSession", W8K, 20, 1.8,
        T(*debug(prom=3 * K)), T(*debug(sql=2 * K, http=200)), PLAIN, T(*debug(http=200)),
        note="4-turn cycle of tool subsets",
    ),
    S(ST, "8k_PureToolStorm", W8K, 20, 1.8, minimal(*tools(2 * K))),
    S(ST, "8k_CodingAgent", W8K, 10, 2.0, T(*coding(3 * K, 1 * K, 4 * K), seq=True)),
    S(ST, "200k_HeavyToolDefinitions", W200K, 30, 2.0, T(*tools(5 * K, 8 * K)), tool_defs=20, tool_def_chars=2 * K),
    S(ST, "200k_InlineImages", W200K, 15, 2.0, Turn(images=(100 * K,))),
    S(ST, "8k_HeavyToolDefinitions", W8K, 20, 2.0, T(*tools(1_500)), tool_defs=10, tool_def_chars=1 * K),
    S(ST, "8k_InlineSmallImages", W8K, 10, 2.0, Turn(images=(10 * K,))),
    S(ST, "CompactionNoInfiniteLoop", W8K, 5, 2.5, system=12 * K, system_style="prompt", note="12k-char system prompt with code examples: above the threshold, inside the window"),
)

BRUTAL: tuple[Scenario, ...] = (
    S(BR, "8k_ToolResponseBiggerThanWindow", W8K, 3, 2.0, PLAIN, T(*tools(40 * K)), PLAIN, note="the 40k response in turn 2 of 3"),
    S(BR, "8k_EveryTurnExceedsWindow", W8K, 15, 2.0, T(*tools(15 * K), user=2 * K)),
    S(BR, "8k_NoUsageMetadata_HighRatio", W8K, 20, 2.0, T(*tools(1_500)), usage=False, note="1 tool/turn, 1.5k"),
    S(BR, "8k_NoUsageMetadata_BeyondDefault", W8K, 15, 3.0, T(*tools(1_500)), usage=False, note="1 tool/turn, 1.5k"),
    S(BR, "8k_150Turns", W8K, 150, 1.8),
    S(BR, "8k_SystemPromptLargerThanWindow", W8K, 10, 2.0, system=15 * K, system_style="json", note="15k-char system prompt of JSON examples ≈ 8.8k real: larger than the window"),
    S(BR, "8k_ToolChain_MultipleRoundtrips", W8K, 10, 2.0, T(*tools(*[2 * K] * 5))),
    S(BR, "8k_AlternatingHugeAndTiny", W8K, 30, 2.0, Turn(user=2, response=2), T(*tools(10 * K))),
    S(BR, "8k_CompactionEveryStep", W8K, 30, 2.0, T(*tools(4 * K), user=1_200), system=4 * K),
    S(BR, "8k_CorrectionFactorDrift", W8K, 20, 1.5, T(*tools(2 * K)), note="1 tool/turn, 2k"),
    S(BR, "8k_EmptyToolResponses", W8K, 25, 2.0, T(*tools(3, 6, 10))),
    S(BR, "8k_VeryLargeModelResponses", W8K, 20, 2.0, Turn(response=2 * K)),
    S(BR, "8k_JSON_Heavy_ToolResponses", W8K, 15, 3.5, T(*tools(3 * K)), note="1 JSON tool/turn, 3k"),
    S(BR, "200k_ConsecutiveMassiveBursts", W200K, 10, 2.5, T(*tools(80 * K, 30 * K))),
    S(BR, "200k_NoUsageMetadata_LongSession", W200K, 80, 2.5, T(*tools(8 * K)), usage=False, note="1 tool/turn, 8k"),
    S(BR, "200k_TokenRatio_5x", W200K, 10, 5.0, T(*tools(20 * K)), note="1 tool/turn, 20k"),
    S(BR, "200k_SingleTurnFillsWindow", W200K, 2, 2.0, T(*tools(*[30 * K] * 20))),
    S(
        BR, "200k_200Turns", W200K, 200, 2.2,
        T(Tool("read_file", 8 * K, "code")), PLAIN, T(Tool("grep", 5 * K, "grep"), Tool("run_tests", 12 * K, "tests")),
        T(Tool("fetch", 20 * K)), PLAIN, T(Tool("sql_query", 3 * K, "sql")),
        note="6-turn cycle: 8k read, plain, 5k+12k, 20k fetch, plain, 3k sql",
    ),
    S(
        BR, "200k_ToolDefinitionsDominateWindow", W200K, 20, 2.5, T(*tools(5 * K, 5 * K, 5 * K)),
        tool_defs=50, tool_def_chars=4 * K, note="3 calls × 5k per turn",
    ),
    S(
        BR, "200k_ToolDefinitionsHighRatio", W200K, 15, 3.5, T(*tools(5 * K, 5 * K)),
        tool_defs=30, tool_def_chars=3 * K, note="2 calls × 5k per turn",
    ),
    S(
        BR, "200k_LargeInlineDocuments", W200K, 3, 2.0, Turn(documents=((500 * K, 20), (300 * K, 12))),
        note="both PDFs every turn; 20 and 12 pages",
    ),
    S(BR, "200k_MultipleInlinePerTurn", W200K, 8, 2.0, Turn(images=(80 * K, 60 * K, 90 * K))),
    S(
        BR, "200k_ToolDefsAndInlineImages", W200K, 20, 2.5,
        T(*tools(5 * K, 8 * K), images=(100 * K,)), T(*tools(5 * K, 8 * K)), T(*tools(5 * K, 8 * K)),
        tool_defs=15, note="2k schemas; 2 calls (5k+8k)/turn; 100 KB image every 3rd turn",
    ),
    S(
        BR, "200k_ToolDefsAndInlineNoUsageMetadata", W200K, 15, 2.0,
        T(*tools(10 * K), images=(100 * K,)), T(*tools(10 * K)),
        tool_defs=10, usage=False, note="2k schemas; 1 call (10k)/turn; 100 KB image every 2nd turn",
    ),
    S(
        BR, "8k_ToolDefinitionsNoUsageMetadata", W8K, 15, 2.0, T(*tools(1 * K)),
        tool_defs=8, tool_def_chars=800, usage=False, note="1 call (1k)/turn",
    ),
    S(
        BR, "8k_ToolDefsAndInlineCombined", W8K, 20, 2.0, T(*tools(1 * K), images=(10 * K,)), T(*tools(1 * K)),
        tool_defs=5, tool_def_chars=800, usage=False, note="1 call (1k)/turn; 10 KB image every 2nd turn",
    ),
    S(BR, "200k_KubeAgent_30Rounds", W200K, 30, 2.5, T(*kube(20 * K, 15 * K, 40 * K)), note="kubectl calls parallel"),
    S(
        BR, "200k_MixedDebugSession_LongInvestigation", W200K, 50, 2.3,
        T(*debug(prom=30 * K, grafana=10 * K)), T(*debug(sql=20 * K)), T(*debug(http=1 * K, grep=8 * K)),
        T(*debug(prom=30 * K)), PLAIN,
        note="5-turn cycle; http 1k, grep 8k",
    ),
    S(
        BR, "200k_PureToolStorm_HugeResponses", W200K, 20, 2.0,
        minimal(Tool("fetch", 50 * K), Tool("process", 20 * K)),
    ),
    S(BR, "8k_PureToolStorm_50Turns", W8K, 50, 2.0, minimal(*tools(3 * K))),
    S(
        BR, "200k_CodingAgent_DeepRefactor", W200K, 25, 2.5,
        T(
            Tool("read_file", 20 * K, "code"), Tool("grep", 8 * K, "grep"), Tool("edit_file", 3 * K, "diff"),
            Tool("read_file", 20 * K, "code"), Tool("edit_file", 3 * K, "diff"), Tool("run_tests", 15 * K, "tests"),
            seq=True,
        ),
        note="20k read, 8k grep, 3k edit, 20k read, 3k edit, 15k tests",
    ),
    S(BR, "8k_CodingAgent_NoUsageMetadata", W8K, 15, 2.0, T(*coding(3 * K, 1 * K, 4 * K), seq=True), usage=False),
    S(BR, "4k_ToolResponseExceedsWindow", W4K, 3, 2.0, PLAIN, T(*tools(20 * K)), PLAIN, note="the 20k response in turn 2 of 3"),
    S(BR, "4k_EveryTurnExceedsWindow", W4K, 20, 2.0, T(*tools(8 * K), user=1 * K)),
    S(BR, "4k_KubeAgent", W4K, 10, 2.0, T(*kube(2 * K, 1 * K, 3 * K)), note="kubectl 2k + 1k + 3k parallel"),
    S(BR, "4k_CodingAgent", W4K, 10, 2.0, T(*coding(1_500, 500, 2 * K), seq=True), note="1.5k → 500 → 2k"),
    S(
        BR, "4k_MixedDebug", W4K, 15, 2.0, T(*debug(prom=1_500)), T(*debug(sql=1 * K, http=200)), T(*debug(http=200)),
        note="prometheus 1.5k, sql 1k, http 200 in a 3-turn cycle",
    ),
    S(BR, "4k_PureToolStorm", W4K, 20, 2.0, minimal(*tools(2 * K))),
    S(BR, "1M_KubeAgent_ExtremeLongevity", W1M, 100, 2.0, T(*kube(30 * K, 20 * K, 50 * K))),
    S(BR, "1M_PureToolStorm_MonsterResponses", W1M, 50, 2.0, minimal(*tools(100 * K))),
    S(BR, "1M_NoUsageMetadata", W1M, 40, 2.5, T(*tools(45 * K)), usage=False),
    S(
        BR, "200k_MagecProductionScenario", W200K, 30, 2.5,
        T(*tools(8 * K, 12 * K), images=(100 * K,)), T(*tools(5 * K, 10 * K, 15 * K)),
        T(*tools(4 * K, 6 * K, 8 * K, 10 * K)),
        tool_defs=25, note="2k schemas; 2, 3, 4 calls (4k-15k) in a 3-turn cycle; 100 KB image every 3rd turn",
    ),
    S(
        BR, "200k_MagecProductionScenario_NoUsageMetadata", W200K, 20, 2.5,
        T(*tools(8 * K, 12 * K), images=(100 * K,)), T(*tools(5 * K, 10 * K, 15 * K)),
        tool_defs=20, usage=False, note="2k schemas; 2-3 calls (5k-15k); 100 KB image every 2nd turn",
    ),
    S(BR, "200k_SequentialEscalatingSizes", W200K, 10, 2.0, T(*tools(2 * K, 5 * K, 20 * K, 40 * K, 60 * K), seq=True)),
    S(BR, "8k_SequentialEscalatingSizes", W8K, 10, 2.0, T(*tools(500, 1_500, 3 * K, 5 * K), seq=True)),
    S(BR, "4k_SequentialEscalatingSizes", W4K, 8, 2.0, T(*tools(300, 800, 2 * K), seq=True)),
    S(BR, "8k_SequentialToolChain", W8K, 8, 2.0, T(*tools(2 * K, 1_500, 2_500, 1 * K, 1_500), seq=True)),
    S(
        BR, "200k_SequentialToolChain_LargeResponses", W200K, 5, 2.0,
        T(*tools(40 * K, 20 * K, 30 * K, 15 * K, 5 * K), seq=True),
    ),
    S(BR, "8k_SequentialChain_NoUsageMetadata", W8K, 10, 2.0, T(*tools(1 * K, 800, 1_200), seq=True), usage=False),
)

EXTRA: tuple[Scenario, ...] = (
    S(
        EX, "4k_ToolDefinitionsAloneExceedWindow", W4K, 5, 1.5, T(*tools(500)),
        tool_defs=12, tool_def_chars=1_500, note="12 schemas × 1.5k ≈ 4.5k o200k tokens: more than the window",
    ),
    S(
        EX, "UnknownModel_DefaultWindow", 128_000, 30, 1.3, T(Tool("fetch", 10 * K), Tool("logs", 5 * K, "logs")),
        model="my-unknown-model", guard_window=False,
        note="the guard is not told the window: it assumes the stated 128k default, which is the provider's",
    ),
    S(
        EX, "200k_UsageDropsAfterCompaction", W200K, 40, 2.5, T(*tools(15 * K)), ratio_after_compaction=1.2,
        note="the provider counts 2.5× before the first compaction and 1.2× after it",
    ),
    S(
        EX, "1M_TwoMillionTokensInOneTurn", W1M, 4, 2.0, PLAIN, T(Tool("dump_table", 3_500 * K)), PLAIN,
        note="one 3.5M-char JSON result ≈ 1.0M o200k tokens ≈ 2.0M real tokens",
    ),
    S(
        EX, "200k_HiddenSystemPrompt", W200K, 30, 1.3, T(*tools(10 * K, 10 * K)), hidden=30_000,
        note="the provider adds 30k tokens the request does not show (a harness's own prompt)",
    ),
)

# fmt: on

SCENARIOS: tuple[Scenario, ...] = STRESS + BRUTAL + EXTRA
BY_NAME = {s.name: s for s in SCENARIOS}
