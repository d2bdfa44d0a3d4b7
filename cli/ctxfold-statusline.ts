/**
 * ctxfold's status line in pi's footer.
 *
 * pi has no status-line command to configure, but an extension may set a status text in its
 * footer. This one runs `ctxfold statusline` (the command Claude Code runs as its statusLine)
 * when a session starts, after each turn, after a compaction and when the model changes, and
 * shows the one line it prints: the predicted tokens of the next request, its share of the
 * window, and what is left before compaction (ctxfold's threshold, or pi's own auto-compact
 * when that comes first), in pi's warning and error colours when near or over it.
 *
 * The command gets on stdin a JSON of the shape Claude Code sends: transcript_path (pi's session
 * file), session_id, cwd, model {id, display_name} and context_window {context_window_size}.
 * CTXFOLD_STATUSLINE_CMD, when set, is the shell command run instead of `ctxfold statusline`.
 * Nothing here throws into pi: a command that is missing, fails or takes longer than
 * TIMEOUT_MS leaves the status empty (a missing `ctxfold` says so in one short line).
 *
 * Installed into ~/.pi/agent/extensions/ by `ctxfold statusline --install-pi`; a copy of the
 * file shipped with ctxfold (cli/ctxfold-statusline.ts).
 */

import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";

const KEY = "ctxfold"; // the status's key: pi shows statuses sorted by key
const TIMEOUT_MS = 15_000; // a first call reads the whole session; later ones only what is new
const OUTPUT_LIMIT = 4096; // one line is expected; more is cut
const MISSING = "ctxfold: not found on PATH (set CTXFOLD_STATUSLINE_CMD)";
// every terminal escape sequence (colours, cursor moves, titles): pi's footer must get plain text
const ESCAPES = /\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-_])/g;

type Model = ExtensionContext["model"];

/** One run to do: the JSON for the command, and where to show its line. */
interface Pending {
	payload: string;
	ctx: ExtensionContext;
	generation: number;
}

export default function ctxfoldStatusLine(pi: ExtensionAPI): void {
	let generation = 0; // bumped when a session ends: a line computed for it is not shown
	let running = false;
	let next: Pending | undefined; // the newest request; older ones not yet run are dropped
	let current: Run | undefined; // the command running now

	/** Ask for a fresh line. Returns at once: pi's event handlers are awaited, and the
	 * command must not hold up the agent. */
	function refresh(ctx: ExtensionContext, model: Model = ctx.model): void {
		try {
			if (!ctx.hasUI) return; // print and JSON modes show no footer
			const file = ctx.sessionManager.getSessionFile();
			if (!file) return; // --no-session: there is no file to read
			const payload = JSON.stringify({
				session_id: ctx.sessionManager.getSessionId(),
				transcript_path: file,
				cwd: ctx.cwd,
				model: model ? { id: model.id, display_name: model.name || model.id } : undefined,
				context_window: model?.contextWindow ? { context_window_size: model.contextWindow } : undefined,
			});
			next = { payload, ctx, generation };
			if (!running) void drain();
		} catch {
			// a context gone stale (the session was replaced): nothing to refresh
		}
	}

	/** Run the requests one at a time, the newest only. */
	async function drain(): Promise<void> {
		running = true;
		try {
			while (next) {
				const job = next;
				next = undefined;
				current = startCommand(job.payload);
				const line = await current.line;
				current = undefined;
				if (job.generation === generation) show(job.ctx, line);
			}
		} catch {
			// never into pi
		} finally {
			running = false;
		}
	}

	pi.on("session_start", (_event, ctx) => refresh(ctx));
	pi.on("turn_end", (_event, ctx) => refresh(ctx)); // the turn's messages are in the file by now
	pi.on("agent_end", (_event, ctx) => refresh(ctx));
	pi.on("session_compact", (_event, ctx) => refresh(ctx));
	pi.on("session_tree", (_event, ctx) => refresh(ctx));
	pi.on("model_select", (event, ctx) => refresh(ctx, event.model)); // another window
	pi.on("session_shutdown", () => {
		generation++;
		next = undefined;
		current?.stop(); // pi is quitting or leaving this session: no one will see the line
	});
}

/** Set the status to the command's line, coloured by pi's theme as ctxfold coloured it
 * (yellow: near the threshold, red: over it); clear it when there is no line. */
function show(ctx: ExtensionContext, line: string | undefined): void {
	try {
		if (line === undefined) {
			ctx.ui.setStatus(KEY, undefined);
			return;
		}
		const tint = line.startsWith("\x1b[31m") ? "error" : line.startsWith("\x1b[33m") ? "warning" : "dim";
		const plain = line.replace(ESCAPES, "").replace(/[\x00-\x1f\x7f]/g, " ").trim();
		ctx.ui.setStatus(KEY, plain ? ctx.ui.theme.fg(tint, plain) : undefined);
	} catch {
		// a stale context or a UI without a theme: leave the footer as it is
	}
}

/** A run of the command: its line to come, and a way to stop it. */
interface Run {
	line: Promise<string | undefined>;
	stop(): void;
}

/** Start the command; its line is the first it prints, or undefined when it fails, prints
 * nothing, is too slow or is stopped. */
function startCommand(payload: string): Run {
	let finish: (line: string | undefined) => void = () => {};
	let stop = (): void => finish(undefined);
	const line = new Promise<string | undefined>((resolve) => {
		let done = false;
		let timer: ReturnType<typeof setTimeout> | undefined;
		finish = (text) => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			resolve(text);
		};
		const custom = process.env.CTXFOLD_STATUSLINE_CMD;
		const group = process.platform !== "win32"; // its own process group, to stop a shell's children too
		let child: ChildProcess;
		try {
			const options: SpawnOptions = { stdio: ["pipe", "pipe", "ignore"], detached: group, windowsHide: true };
			child = custom ? spawn(custom, { ...options, shell: true }) : spawn("ctxfold", ["statusline"], options);
		} catch {
			finish(undefined);
			return;
		}
		stop = () => {
			if (done) return;
			try {
				if (group && child.pid) process.kill(-child.pid, "SIGKILL");
				else child.kill("SIGKILL");
			} catch {
				// already gone
			}
			finish(undefined);
		};
		timer = setTimeout(stop, TIMEOUT_MS);
		let out = "";
		child.stdout?.setEncoding("utf8");
		child.stdout?.on("data", (chunk: string) => {
			if (out.length < OUTPUT_LIMIT) out += chunk;
		});
		child.stdin?.on("error", () => {}); // it exited before reading: its exit status tells
		child.on("error", (err: NodeJS.ErrnoException) => finish(!custom && err.code === "ENOENT" ? MISSING : undefined));
		child.on("close", (code: number | null) => {
			const first = out.split("\n", 1)[0].trim();
			finish(code === 0 && first ? first : undefined);
		});
		child.stdin?.end(payload);
	});
	return { line, stop: () => stop() };
}
