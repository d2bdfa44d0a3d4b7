"""Hand labels of what the next agent must know, per session, for the carry-on bench and tests.

Written once by reading each session (its current context: after the last compaction the
recording tool made), never fitted to what the summarizer happens to produce. For each session:

- ``state``: where things stand at the end: ``waiting`` (the last assistant message asked the
  user a question, offered options or asked for approval), ``in_progress`` (a step was under
  way, or the user's last request was not answered yet), ``done`` (the work asked for was
  delivered and nothing is pending) or ``stopped`` (the session ends with the user stopping
  the assistant mid-answer; none of the labelled sessions does);
- ``question``: for ``waiting``, words of the question the user must be asked again;
- ``next``: words naming the next step (``in_progress``), else None;
- ``requests``: a distinctive snippet of each request the user typed since the last compaction,
  oldest first (for a long one, words of its first sentence); the last is the newest, which must
  be kept whole. Harness text (system reminders, notifications, AGENTS.md, command output) is
  never a request; one-word acknowledgements ("ok", "yo") are left out as too short to check;
- ``rules``: instructions that hold for the rest of the session, in the user's words;
- ``values``: exact values the next agent needs (URLs, ports, commits, ids, versions, error text);
- ``paths``: files read, edited or created that the next agent needs;
- ``deliverable``: the first words of the last substantial assistant message that ended a turn
  (the review, report or answer the user was reading; 200 characters or more), which must be
  kept whole, or None when there is none.

Keys are paths relative to ``fixtures-real/`` (real sessions) or to the repository
(``fixtures/...``: bundled).
"""

from __future__ import annotations

from typing import Any

Label = dict[str, Any]

_CCVIEWER: Label = {
    "state": "done",
    "next": None,
    "requests": ["create TODO app by Next.js", "Please update CLAUDE.md for current changes"],
    "rules": [],
    "values": ["localhost:3001", "Next.js 14"],
    "paths": ["/path/to/Demo/CLAUDE.md"],
    "deliverable": "## ✅ TODO App Creation Complete",
}

_LITELLM: Label = {
    "state": "done",
    "next": None,
    "requests": ["Can you create a new Python file named hello.py that prints 'Hello, World!'?"],
    "rules": [],
    "values": ["print('Hello, World!')"],
    "paths": ["/Users/xingyaow/Projects/OpenHands/openhands-v1-dev/agent-sdk.worktree/telemetry/hello.py"],
    "deliverable": "The `hello.py` file already exists in your current directory",
}

LABELS: dict[str, Label] = {
    "claude-code/ccviewer-sample-v1.0.98-sidechains.jsonl": _CCVIEWER,
    "claude-code/fundwise.jsonl": {
        "state": "waiting",
        "question": "Want me to (a) pull the trigger on items 1+2",
        "next": None,
        "requests": [
            "one more feedback which i recently got that as we will also have a roadmap",
            "have everything indexed n the docs pls liek ow adr is chunked and indexed",
            "Pick up FW-005 first.",
        ],
        "rules": ["do not invent secrets", "without co-author trailers"],
        "values": ["f8e6fe0", "73f00b8", "FW-005", "FW-007", "ZERION_API_KEY", "bug-fix-01"],
        "paths": [
            "ROADMAP.md",
            "STATUS.md",
            "issues.md",
            "scripts/zerion-readiness.mjs",
            "docs/zerion-readiness.md",
            "docs/adr/0021-gtm-rollout-order-split-fundy-fund-mode-beta.md",
        ],
        "deliverable": "Both commits landed.",
    },
    "claude-code/posthog-impact-dashboard.jsonl": {
        "state": "done",
        "next": None,
        "requests": [
            "既然你抓好了，我想要請問以下的東西是否能查到",
            "https://posthog-impact-dashboard-np5m2h9hvlp9gqw5hrvsvd.streamlit.app/",
            "應該是都可以看到的",
            "我用無痕可以看到",
            "所以現在還差什麼？",
            '請你詳細分析這是如何界定"impactful的engineer"',
            "有什麼論文可以佐證這樣的impact matrix嗎？",
            "請結合以上所有的內容提供一段英文的approach summary",
            "就是這個session開始的時間",
            "1. 請直接輸出approach summary",
        ],
        "rules": [],
        "values": [
            "https://posthog-impact-dashboard-np5m2h9hvlp9gqw5hrvsvd.streamlit.app/",
            "c566cc2",
            "0c182e15-59de-4856-8a94-00f26880354c",
            "leolin84200704/posthog-impact-dashboard",
        ],
        "paths": ["SUBMISSION.md"],
        "deliverable": "**1. Approach summary (~30 words):**",
    },
    "claude-code/privacy-x402.jsonl": {
        "state": "done",
        "next": None,
        "requests": [
            "旧と新Vaultのアドレスなどをもとにこれまで何回デモのトランザクションが実行されたかを集計したいです。",
            "本当にそれだけ、、？",
        ],
        "rules": [],
        "values": [
            "6i5SyF8Hx2u5MZW2JgWGhdg5CJsAKeF7UaRAd9bERDDL",
            "3bR3ViL4aFHda95cfL2kKBrup1L2fUgbEfW6yw1BSrfc",
            "4AbbKCbwyfX8mzPowF6A5N2ZPfJCNtUZ83qkrowHvdFg",
            "f223c68952e1f2b6",
        ],
        "paths": ["/tmp/check_failed.mjs", "/tmp/count_demo.mjs", "scripts/demo/solana-kit.js"],
        "deliverable": "## 結論: live demo の実行数",
    },
    "claude-code/raze-short.jsonl": {
        "state": "in_progress",
        "next": "export-session.sh",
        "requests": ["help me apply for the agentic engineering grant by Superteam"],
        "rules": [],
        "values": ["https://superteam.fun/earn/grants/agentic-engineering", "apply-grant"],
        "paths": ["~/.claude/skills/apply-grant/export-session.sh"],
        "deliverable": None,
    },
    "claude-code/scout-images.jsonl": {
        "state": "done",
        "next": None,
        "requests": [
            "fix this ui in the video consultation.",
            "1)the chat ui is dark theme and weird",
            "now it is showing all blank only when video is off",
        ],
        "rules": ["it shud not look like a modal"],
        "values": ["bg-gray-900", "TrackMuted", "@livekit/components-styles"],
        "paths": [
            "apps/vet/src/routes/call/$consultationId.tsx",
            "apps/web/src/routes/appointments/call/$consultationId.tsx",
        ],
        "deliverable": "Three things fixed in both apps:",
    },
    "claude-code/solsmile-thirdparty-proxy.jsonl": {
        "state": "in_progress",
        "next": "deploy",
        "requests": [
            "# PolyDot — Complete Build Specification",
            "continue please and make sure u test deploy eveyrhting",
            "i have added my wallet withh pas in it i have 5k pas now deploy it",
            "deploy the ocntract i have updted env wiht tokens",
        ],
        "rules": ["make sure u test deploy eveyrhting"],
        "values": ["0x900", "claude-opus-4-6-thinking"],
        "paths": [
            "contracts/contracts/PolyDot.sol",
            "contracts/scripts/deploy.js",
            "contracts/hardhat.config.js",
        ],
        "deliverable": "Everything is complete. Here's the summary:",
    },
    "codex/edgerunner.jsonl": {
        "state": "in_progress",
        "next": "export-session.sh",
        "requests": [
            "for this hackathon i want to build a tradaing tool or agent which is extremely fast",
            "Implement the plan.",
            "focus on the backend frontend i will handle",
            "add a gitignore file",
            "help me apply for the agentic engineering grant by Superteam",
        ],
        "rules": ["focus on the backend frontend i will handle"],
        "values": [
            "http://127.0.0.1:8080",
            "/api/ready",
            "https://superteam.fun/earn/grants/agentic-engineering",
            "https://superteam.fun/earn/listing/trading-tools-and-agents",
        ],
        "paths": [
            ".gitignore",
            "/Users/akash/.codex/skills/apply-grant/export-session.sh",
            "crates/edgerunner-core/src/lib.rs",
        ],
        "deliverable": "Backend is implemented and running at **http://127.0.0.1:8080**.",
    },
    "codex/fundwise.jsonl": {
        "state": "in_progress",
        "next": "export-session.sh",
        "requests": ["use apply grant skill"],
        "rules": [],
        "values": ["/Users/sarthiborkar/.codex/skills/apply-grant/export-session.sh"],
        "paths": ["/Users/sarthiborkar/.codex/skills/apply-grant/export-session.sh"],
        "deliverable": None,
    },
    "codex/raze.jsonl": {
        "state": "done",
        "next": None,
        "requests": ["Review this implementation plan for adding multimodal support to the Knowledge class"],
        "rules": [],
        "values": ["supports_modalities", "embedding_inputs", "content_hash"],
        "paths": [
            "libs/agno/agno/knowledge/document/base.py",
            "libs/agno/agno/knowledge/knowledge.py",
            "libs/agno/agno/vectordb/pgvector/pgvector.py",
            "libs/agno/agno/vectordb/upstashdb/upstashdb.py",
            "libs/agno/agno/knowledge/embedder/base.py",
        ],
        "deliverable": "**Findings**",
    },
    "codex/rivo-multiturn.jsonl": {
        "state": "in_progress",
        "next": "agentic engineering",
        "requests": [
            "refine these message for pitch",
            "help me apply for the SolAUDD Grant Program by Superteam",
            "One-Liner Description",
            "can you fill the milestion date as according i fill completion of project date to may  09",
            "help me apply for the agentic engineering grant by Superteam",
        ],
        "rules": [],
        "values": [
            "https://superteam.fun/earn/grants/audd-grants",
            "May 9, 2026",
            "https://superteam.fun/earn/grants/agentic-engineering",
        ],
        "paths": ["solaudd-grant-application.md", "codex-session.jsonl"],
        "deliverable": "Updated [solaudd-grant-application.md]",
    },
    "pi/before-compaction.jsonl": {
        "state": "done",
        "next": None,
        "requests": [
            "can leave it",
            "npx tsx packages/coding-agent/src/cli.ts -c",
            "any other such pathing issues possibly?",
            "alright, where were we?",
            "so, i'm now in the new implementation, you still there?",
            "wow, it works",
            "jesus, everything works, you are a monster",
            "are we all commited?",
            "yes need to be fully clean",
            "alright, interactive-mode.ts, i feel like there's lots of code duplication",
            "like, can't we make this even better?",
            "ok, read the @packages/coding-agent/src/modes/interactive/interactive-mode.ts file in full please",
            "are we all commited? if yes, do it, if not commit first",
            "alright, let's tackle main-new.ts.",
            "- selectSession() function (TUI session picker)",
            "after you are done and commited, remoev the old remaining files",
            "move @packages/coding-agent/src/utils/config.ts to src/",
            "then we need to tackle this bash issue:",
            "continue investigate give me a root cause analysis and a plan on how to fix this",
            "sooo, why are we using appendMessage and not queueMessage for this?",
            "why are there 2 subscription handlers?",
            "wait, wtf this doesn't look right to me?",
            "sooo basically, if user does one or more bash things",
            "that would better indicate where in the session the bash result is shown, no?",
            "no, we want to put it in pendingMessageContainer",
            "what did i just execute?",
        ],
        "rules": [],
        "values": ["pendingMessageContainer", "appendMessage", "queueMessage", "refactor"],
        "paths": [
            "packages/coding-agent/src/modes/interactive/interactive-mode.ts",
            "packages/coding-agent/src/core/agent-session.ts",
            "packages/coding-agent/DEVELOPMENT.md",
        ],
        "deliverable": "You typed `ls` (without `!` prefix)",
    },
    "pi/large-session.jsonl": {
        "state": "in_progress",
        "next": "EditorTheme",
        "requests": [
            "read packages/coding-agent/docs/theme.md in full",
            "you fucked thet component up REAL fucking good.",
            "alright, i think there's only one file left to fix up, tui-renderer.ts",
            "ok, i manually removed almost all chalk uses",
            "we need to fix the tui test sources.",
            "ok, i think our themes need explicit tokens for the thinking level border of editor",
            "ok, i think the queued messages component doesn't adhere to the invariant",
            "truncated text must stop when it encounters a new line",
            "i don't tink the component invalidate works correctly.",
            "does it capture the theme variable imported at creation time?",
            "actually, it's the bg color of the tool exectuion shit that doesn't change",
            "any idea why the colors differ in the vs code terminal and ghostty?",
            "[theme] Detected truecolor mode (COLORTERM=truecolor, TERM=xterm-256color)",
            "no, that's not it, bot use the dark theme.",
            "some differences, muted and dim are the same in vs code terminal, wtf?",
            "omfg use fucking rgb values in the themes, no rgb indices!",
            "fucking hell, the vs code shit still looks the same for all gray levels",
            "omfg that's it, now shit renders the same.",
            "ok, make muted a little brighter",
            "ok, make the diff red and green a little less intense",
            "this is what we had before, can you please make it like that again?",
            "dude sleep 5 seconds via bash",
            "green diff is #b5bd68",
            "are you fucking stupid? what about the tool and user bgs??",
            "what color are the codeblocks using in markdown? should be 8ABeB7",
            "no, the block should stay as is",
            "wrie some code in markdown in chat",
            "#b5bd68 that's that the codeblock color was in markdown",
            "write some markdown here in chat, anything you can do in markdown",
            "markdown link text #b5bd68",
            "md link is actually 666666",
            "think then say hello",
            "that seems to be the old dim color",
            "no, dimGray should be that, no need for linkGray,",
            "what's footer using? should be dimmer, don't modify the theme, look into the footer sources",
            "bullet in markdown should be same as in line code in markdown.",
            "81a2be is what link text is in md in old pi.",
            "wait, do we only have a single link color?",
            "yes, in old pi link url as 666666",
            "ok write markdown, including code, tables, lists nested, etc. pp",
            "ok, the thinking level colors are too intense, adjust.",
            "thinking level off is now brighter than thinking level minimal",
            "ok, now we need to adjust the light theme accordingly.",
            "alright, we need a section on themes in README.md",
            "needs to be set to 1 for true colors",
            "+314 - Tips for creating harmonious themes",
            "i suppose the workflow would be write .json",
            "hmmmm could we havea  file watcher",
            "ok, copy the dark theme over to the .pi/agent/themes folder and let me try the live edit",
            "ok, what happens if you delete the theme?",
            "delete the file",
            "in the README.md on cusotm themes",
            "ok, let me try the light theme real quick",
            "in the system prompt make sure you know to read the README.md",
            "not the system prompt. see main.ts",
            "ok, create a new theme for me",
            "hmmm, the theme selector needs to push the theme update to the next tick",
            "yeah you can undo that, it was actually the console.logs/errors in theme.ts that did that fuck up",
            "i removed them all good",
            "create a custom theme for me then open it with the code command",
            "hm, i selected the theme while you were working and got a crash, that should never happen.",
            "remove the nord.json",
            "ok, create a new custom theme and open it with code command.",
            "my dude, this exploded when i restarted with -r.",
            "no conosle logs!",
            "delete the custom theme",
            "create a custom light theme i'll edit it in code.",
            "userMessageText is not used it seems?",
            "make sure toolText is also used.",
            "well, i think it should be toolTitle and toolOutput?",
            "create a custom dark theme, i'll edit it in vs code.",
            "did you update docs/theme.md as well with the new tokens?",
            "ok, README.md and CHANGELOG.md in order as well?",
            "**User Message Text Color**",
            "ok, i believe we are ready to release a new version, aren't we? know how to do it?",
            "read README.md that details everything",
            "minor, this is a big change",
            "yeah, do it all",
        ],
        "rules": [
            "invalid themes must NEVER explode",
            "no conosle logs!",
            "use fucking rgb values in the themes, no rgb indices!",
        ],
        "values": [
            "#b5bd68",
            "8abeb7",
            "81a2be",
            "666666",
            "toolTitle",
            "toolOutput",
            "has no exported member 'EditorTheme'",
            "v0.8.0",
            "45ffe0a",
        ],
        "paths": [
            "packages/coding-agent/src/theme/theme.ts",
            "packages/coding-agent/docs/theme.md",
            "packages/coding-agent/src/theme/dark.json",
            "packages/tui/src/components/truncated-text.ts",
            "CHANGELOG.md",
        ],
        "deliverable": "Perfect! Now ready for commit and tag.",
    },
    "litellm/openhands-sdk-sonnet4-requests.jsonl": _LITELLM,
    "openhands/multi-swe-bench-output.jsonl": {
        "state": "in_progress",
        "next": "libgtest-dev",
        "requests": ["I've uploaded a C code repository in the directory ponylang__ponyc__0.1."],
        "rules": [
            "you DON'T have to modify the testing logic or any of the tests in any way!",
            "make the minimal changes to non-test files in the /workspace directory",
        ],
        "values": [
            "E: Unable to locate package libgtest-dev",
            "e5398b7ab793e2b11f930aa375b9212887614b03",
            "-DLLVM_DIR=/usr/lib/llvm-14/cmake",
            "TK_MATCH_CAPTURE",
        ],
        "paths": ["src/libponyc/expr/match.c"],
        "deliverable": None,
    },
    # bundled with the repository
    "fixtures/real/claude-code-sidechains.jsonl": _CCVIEWER,
    "fixtures/real/litellm-sonnet4-requests.jsonl": _LITELLM,
    "fixtures/ctxfold/coding-session.jsonl": {
        "state": "in_progress",
        "next": "test_total_empty",
        "requests": [
            "The checkout total is wrong when prices have thousands separators like $1,299.00.",
            "Great. Now make total() round to cents and run the whole suite.",
        ],
        "rules": [],
        "values": ["$1,299.00", "TypeError: 'int' object is not subscriptable", "1 failed, 8 passed"],
        "paths": ["app/pricing.py", "tests/test_pricing.py"],
        "deliverable": None,
    },
}


# Held out: labelled by someone who had not seen ctxfold's summaries of these sessions (reading
# the raw chats only), and not asserted by the tests, so the bench can say how the summary does
# on sessions it was not built on. Gemini CLI's three real chats; none has a compression point.
# Their values include code lines from the agent's edits, which the summary does not aim to keep.
# the brief the three Pomodoro sessions (Gemini CLI, Claude Code, Codex) were given
_POMODORO = [
    "Build a simple Pomodoro timer web app using HTML, CSS, and JavaScript.",
    "add smooth transitions between states",
    "add a Pause/Resume feature",
]
_PURE_JS = "Don’t use any external frameworks — keep it pure HTML, CSS, and JS."

HELD_OUT: dict[str, Label] = {
    # Django URLValidator mixed-case IPv6 fix (task from TASK.md; the user typed only "hello",
    # which is left out as a one-word greeting). Done: failing test written, ipv6_re fixed, test
    # passes, last message says "The task is complete." (195 chars, so no deliverable).
    "gemini-cli/aim-control-pro.json": {
        "state": "done",
        "next": None,
        "requests": [],
        "rules": [],
        "values": [
            "ipv6_re = r'\\[[0-9a-fA-F:\\.]+\\]'",
            "http://[2001:DB8::1]/",
            "PYTHONPATH=django_repo python3 test_regex_bug.py",
            "PYTHONPATH=. python3 tests/runtests.py validators --parallel=1",
            "ValueError: '::1:2::3' does not appear to be an IPv4 or IPv6 address",
            "e7339bd44fcbe3e8a64c4a3ebd4e1942cbd2261b",
        ],
        "paths": [
            "/home/kingb/aim_benchmarks/django_control_pro/TASK.md",
            "django_repo/django/core/validators.py",
            "test_regex_bug.py",
            "test_ipv6.py",
        ],
        "deliverable": None,
    },
    # Gemini-Playground scaffold in ~ (folder, web files, /init GEMINI.md). Done: the last
    # question ("provide a link") was answered: no live link, open the local index.html.
    "gemini-cli/m-gemini-archive.json": {
        "state": "done",
        "next": None,
        "requests": [
            "create a new folder in my home directory called Gemini-Playground",
            "make your default folder to run in 'Gemini-Playground'",
            "provide a link to your Playground website please",
        ],
        "rules": ["make your default folder to run in 'Gemini-Playground'"],
        "values": [
            "/home/mischa/Gemini-Playground",
            "/home/mischa/Gemini-Playground/index.html",
            "cd Gemini-Playground &&",
            "/home/mischa",
        ],
        "paths": [
            "Gemini-Playground/index.html",
            "Gemini-Playground/script.js",
            "Gemini-Playground/style.css",
            "Gemini-Playground/README.md",
            "/home/mischa/Gemini-Playground/GEMINI.md",
        ],
        "deliverable": 'I cannot provide a live link to the "Playground website"',
    },
    # Pure HTML/CSS/JS Pomodoro timer, then transitions, pause/resume, progress bar + long
    # breaks. Done: last request implemented, last message ends "The task is complete."
    # (168 chars, so the deliverable is the earlier 470-char ideas list that ended a turn).
    "gemini-cli/pomodoro-timer.json": {
        "state": "done",
        "next": None,
        "requests": [
            *_POMODORO,
            "Anything else we should add?",
            "Add a visual progress bar and long breaks suggestions",
        ],
        "rules": [_PURE_JS],
        "values": [
            "start-pause",
            "toggleTimer",
            "sessionsSinceLongBreak === 4",
            "progressEl.style.width = `${100 - progress}%`;",
            "transition: background-color 0.5s ease;",
            "alert('Session ended!');",
        ],
        "paths": [
            "/Users/yoavfarhi/dev/pomodoro/gemini/index.html",
            "/Users/yoavfarhi/dev/pomodoro/gemini/style.css",
            "/Users/yoavfarhi/dev/pomodoro/gemini/script.js",
        ],
        "deliverable": "Here are a few ideas to enhance the app:",
    },
    # bundled: real sessions published under licences that allow it (fixtures/heldout/SOURCES.md)
    # Claude Code 2.1.77: pixel-art random-number page for Dominion nights (random.akerud.se), SFX,
    # crypto RNG, MIT LICENSE, git init + commit e2aec0d, then RNG questions. In progress: the
    # assistant found the session file and offered to copy it into the repo as `session.jsonl`
    # and commit; the user's "yes please" is the last line, still unanswered.
    "fixtures/heldout/claude-code/apanloco-random.jsonl": {
        "state": "in_progress",
        "next": "session.jsonl",
        "requests": [
            'were in a new folder called "random"',
            "can you add some sfx?",
            "i will host it on render.com now",
            "oh, can you make a LICENSE file with the MIT license?",
            "when did this session start? at what time?",
            "hos is the random number generated seeded?",
            "so now, when hosted on render.com, its likely /dev/urandom?",
            "it works perfectly, even hosted ok random.akerud.se now",
            "i think there's a session file somwhere for the whole session",
            "yes please",
        ],
        "rules": ["i need to be able to reason about its randomness"],
        "values": [
            "random.akerud.se",
            "crypto.getRandomValues()",
            "e2aec0d",
            "a263b894-c8c2-44af-8845-663362b5a201",
            "render.com",
            "/dev/urandom",
        ],
        "paths": [
            "/home/da/akerud/random/index.html",
            "/home/da/akerud/random/LICENSE",
            "/home/da/.claude/projects/-home-da-akerud-random/a263b894-c8c2-44af-8845-663362b5a201.jsonl",
        ],
        "deliverable": "Found it — it's a JSONL file at:",
    },
    # Claude Code 2.1.177 (Opus 4.6): Bhavana, fractional Indonesian property on Solana. Ideation,
    # competitor and "roast" skills, then an Anchor program, a hooks/lib integration layer and all
    # React components; the last request starts the apply-grant skill. In progress: the skill text
    # is loaded and its telemetry preamble ran; Phase 0 (run export-session.sh) has not started.
    "fixtures/heldout/claude-code/bhavana.jsonl": {
        "state": "in_progress",
        "next": "export-session.sh",
        "requests": [
            "What should I build in crypto?",
            "Think globally (Parcl, Homebase, RealT) and in Southeast Asia.",
            "Be completely brutal — what will fail",
            "Help me write a compelling one-paragraph pitch",
            "Focus on what they haven't solved yet.",
            "What are the weakest points of even this MVP?",
            "Build the complete Bhavana Anchor program on Solana devnet with:",
            "Wire the Bhavana Next.js frontend to the deployed Anchor program.",
            "Build all React components for Bhavana using the hooks already created",
            'claude "help me apply for the agentic engineering grant by Superteam. My project is Bhavana'
            " — a Solana dApp for fractional Indonesian property investment. I built: 1) Anchor smart"
            " contract with initialize_property, buy_shares, distribute_yield instructions, 2) Next.js"
            " frontend with wallet connect, property listing, buy flow, portfolio dashboard, 3) Full"
            " integration layer with hooks for on-chain data. I used Claude as my primary AI coding agent"
            " throughout the entire build via solana.new skills. Generate a complete grant application"
            ' response."',
        ],
        "rules": [
            "UI labels Indonesian, technical terms English",
            "Semua angka dalam format Rupiah menggunakan formatIDR()",
            "Keep the dark navy background",
        ],
        "values": [
            "https://superteam.fun/earn/grants/agentic-engineering",
            "bash ~/.claude/skills/apply-grant/export-session.sh .",
            "BhvnRWA1111111111111111111111111111111111111",
            "~/bhavana/anchor/target/idl/bhavana.json",
            "Rp 150.000/share",
            "#0F1923",
            "npm install buffer",
        ],
        "paths": [
            "/home/rizqymohammadz/bhavana/anchor/programs/bhavana/src/lib.rs",
            "/home/rizqymohammadz/bhavana/anchor/SETUP.md",
            "/home/rizqymohammadz/bhavana/src/lib/constants.ts",
            "/home/rizqymohammadz/bhavana/src/hooks/useBuyShares.ts",
            "/home/rizqymohammadz/bhavana/src/App.tsx",
            "/home/rizqymohammadz/bhavana/package.json",
        ],
        "deliverable": "Done. Here's everything that was created/updated:",
    },
    # Claude Code 2.0.24 (Sonnet 4.5): the same Pomodoro brief as the Gemini CLI held-out chat,
    # then transitions and Pause/Resume. Opens with the harness "Warmup" sidechain; ends with the
    # user's own `!open index.html` bash-mode lines (not requests). Done: the Pause/Resume summary
    # was the last answer.
    "fixtures/heldout/claude-code/ai-sessions-pomodoro.jsonl": {
        "state": "done",
        "next": None,
        "requests": _POMODORO,
        "rules": [_PURE_JS],
        "values": [
            "WORK_TIME = 25 * 60",
            "toggleBtn",
            "#667eea",
            "Web Audio API",
            "open index.html",
        ],
        "paths": [
            "/Users/yoavfarhi/dev/pomodoro/claude/index.html",
            "/Users/yoavfarhi/dev/pomodoro/claude/styles.css",
            "/Users/yoavfarhi/dev/pomodoro/claude/script.js",
        ],
        "deliverable": "Perfect! I've added a comprehensive Pause/Resume feature",
    },
    # Codex CLI 0.47.0 (gpt-5-codex) rollout of the same Pomodoro brief: plan, apply_patch files,
    # transitions, then a Pause button (one apply_patch verification failure, re-read, re-patched).
    # Done: the last turn ended with the pause/resume summary.
    "fixtures/heldout/codex/ai-sessions-pomodoro.jsonl": {
        "state": "done",
        "next": None,
        "requests": _POMODORO,
        "rules": [_PURE_JS],
        "values": [
            "019a085e-04c1-7f81-a09e-9555f6a1fb40",
            "WORK_DURATION = 25 * 60",
            "isPaused",
            "body.work-mode",
            "apply_patch verification failed: Failed to find expected lines",
            "python -m http.server",
        ],
        "paths": [
            "/Users/yoavfarhi/dev/pomodoro/codex/script.js",
            "index.html",
            "styles.css",
        ],
        "deliverable": "Added a dedicated pause control between Start and Reset",
    },
}
