// One run of an eval: a fresh copy of the project and of the arm's skills, then one `pi -p --mode
// json` process of the running pi's CLI (no session, no extension but the named one, only the arm's
// skills, the person's model and thinking level), in the sandbox; then the check command in the
// same sandbox, or the expected text looked for in the final answer. Turns, tokens and cost are
// read from pi's own json events.

import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdirEnv } from "../guard/bwrap-args.ts";
import { materializeArm, type Arm } from "./arms.ts";
import type { PiCli } from "./pi-cli.ts";
import { type EvalSandbox, sandboxedArgv } from "./sandbox.ts";
import { copyProject } from "./workspace.ts";

/** What every run of one eval shares. */
export interface RunSetup {
	readonly cli: PiCli;
	readonly provider: string;
	readonly modelId: string;
	readonly thinking?: string;
	readonly extension?: string;
	readonly task: string;
	readonly pass: { readonly check: string } | { readonly expect: string };
	readonly timeoutMs: number;
	/** The project's root (copied) and the session's folder relative to it (where the run starts). */
	readonly projectRoot: string;
	readonly cwdInProject: string;
	/** Sandbox places; none: --no-sandbox. */
	readonly sandbox?: EvalSandbox;
	/** The environment the person's pi hands on (PATH, locale, proxies, the model's key). */
	readonly env: Readonly<Record<string, string>>;
	/** The agent folder's models.json for the run, when the person has one (or the key needs one). */
	readonly modelsJson?: string;
}

export type RunOutcome = "passed" | "failed" | "timed out" | "aborted" | "error";

export interface RunResult {
	readonly outcome: RunOutcome;
	readonly turns: number;
	readonly inputTokens: number;
	readonly outputTokens: number;
	readonly cost: number;
	readonly wallMs: number;
	/** Why it failed or erred, in a few words (bounded). */
	readonly note?: string;
}

interface Usage {
	input?: number;
	output?: number;
	cacheRead?: number;
	cacheWrite?: number;
	cost?: { total?: number };
}

interface AssistantMessage {
	role?: string;
	content?: Array<{ type?: string; text?: string }>;
	usage?: Usage;
	stopReason?: string;
	errorMessage?: string;
}

/** Reads pi's json events line by line: assistant replies make turns; their usage adds up. */
export class EventTally {
	turns = 0;
	inputTokens = 0;
	outputTokens = 0;
	cost = 0;
	finalText = "";
	error: string | undefined;
	private rest = "";

	feed(chunk: string): void {
		const lines = (this.rest + chunk).split("\n");
		this.rest = lines.pop() ?? "";
		for (const line of lines) this.line(line);
	}

	end(): void {
		this.line(this.rest);
		this.rest = "";
	}

	private line(line: string): void {
		if (!line.startsWith('{"type":"message_end"')) return;
		let message: AssistantMessage | undefined;
		try {
			message = (JSON.parse(line) as { message?: AssistantMessage }).message;
		} catch {
			return;
		}
		if (message?.role !== "assistant") return;
		this.turns++;
		const u = message.usage ?? {};
		this.inputTokens += (u.input ?? 0) + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0);
		this.outputTokens += u.output ?? 0;
		this.cost += u.cost?.total ?? 0;
		const text = (message.content ?? []).flatMap((c) => (c.type === "text" && c.text ? [c.text] : [])).join("\n");
		if (text) this.finalText = text;
		if (message.stopReason === "error") this.error = message.errorMessage ?? "the model returned an error";
	}
}

export interface Spawned {
	readonly code: number | null;
	readonly timedOut: boolean;
	readonly aborted: boolean;
	readonly stderr: string;
}

const MAX_STDERR = 4000;

export interface ProcessOptions {
	readonly cwd: string;
	readonly env: Record<string, string>;
	readonly deadline: number;
	readonly signal: AbortSignal;
	readonly onStdout?: (s: string) => void;
	/** Written to stdin, which is then closed; none: no stdin. */
	readonly input?: string;
}

/** Runs `command` (in its own process group), killed as a group at the deadline or on abort. */
export function runProcess(command: readonly string[], options: ProcessOptions): Promise<Spawned> {
	return new Promise((resolve) => {
		const child = spawn(command[0], command.slice(1), {
			cwd: options.cwd,
			env: options.env,
			stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
			detached: true,
		});
		child.stdin?.on("error", () => undefined).end(options.input);
		let stderr = "";
		let timedOut = false;
		let aborted = false;
		const kill = () => {
			try {
				if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
			} catch {
				// Already gone.
			}
		};
		const timer = setTimeout(
			() => {
				timedOut = true;
				kill();
			},
			Math.max(0, options.deadline - Date.now()),
		);
		const onAbort = () => {
			aborted = true;
			kill();
		};
		if (options.signal.aborted) onAbort();
		options.signal.addEventListener("abort", onAbort);
		child.stdout?.setEncoding("utf8").on("data", (chunk: string) => options.onStdout?.(chunk));
		child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
			if (stderr.length < MAX_STDERR) stderr += chunk.slice(0, MAX_STDERR - stderr.length);
		});
		const done = (code: number | null) => {
			clearTimeout(timer);
			options.signal.removeEventListener("abort", onAbort);
			resolve({ code, timedOut, aborted, stderr });
		};
		child.on("error", (error) => {
			stderr += error.message;
			done(null);
		});
		child.on("close", done);
	});
}

/** A run's own folders: project copy, agent folder (skills, models.json), home and temp. */
function prepareRunDir(setup: RunSetup, arm: Arm, runDir: string) {
	const project = join(runDir, "project");
	const agent = join(runDir, "agent");
	const home = join(runDir, "home");
	const tmp = join(runDir, "tmp");
	for (const dir of [agent, home, tmp]) mkdirSync(dir, { recursive: true });
	const binds = copyProject(setup.projectRoot, project);
	const skills = join(agent, "skills");
	materializeArm(arm, skills);
	if (setup.modelsJson !== undefined) writeFileSync(join(agent, "models.json"), setup.modelsJson, { mode: 0o600 });
	const env: Record<string, string> = {
		...setup.env,
		HOME: home,
		// The same $TMPDIR and caches the sandbox sets (and what a run without one gets).
		...tmpdirEnv(tmp),
		PI_CODING_AGENT_DIR: agent,
		PI_OFFLINE: "1",
		XDG_CONFIG_HOME: join(home, ".config"),
		XDG_DATA_HOME: join(home, ".local", "share"),
	};
	return { project, skills, binds, env, tmp, cwd: join(project, setup.cwdInProject) };
}

/** The command line wrapped in the sandbox when there is one. */
function wrapped(setup: RunSetup, runDir: string, dirs: ReturnType<typeof prepareRunDir>, argv: string[]): string[] {
	if (!setup.sandbox) return argv;
	return sandboxedArgv(setup.sandbox, { dir: runDir, tmpdir: dirs.tmp, cwd: dirs.cwd, binds: dirs.binds }, argv);
}

/** pi's arguments for one run: print mode, json events, no session, only the named extension and the arm's skills. */
function piArguments(setup: RunSetup, skillsDir: string): string[] {
	return [
		setup.cli.node,
		setup.cli.cliPath,
		"-p",
		"--mode",
		"json",
		"--no-session",
		"--no-extensions",
		...(setup.extension ? ["-e", setup.extension] : []),
		"--no-skills",
		"--skill",
		skillsDir,
		"--no-prompt-templates",
		"--no-themes",
		"--provider",
		setup.provider,
		"--model",
		setup.modelId,
		...(setup.thinking ? ["--thinking", setup.thinking] : []),
		// A task starting with "-" or "@" would read as a flag or a file to attach.
		/^[-@]/.test(setup.task) ? ` ${setup.task}` : setup.task,
	];
}

const firstLine = (text: string) =>
	text
		.split("\n")
		.map((l) => l.trim())
		.find(Boolean)
		?.slice(0, 200);

/** One run of `arm` in `runDir` (made here; removed by the caller with the whole workspace). */
export async function runOnce(setup: RunSetup, arm: Arm, runDir: string, signal: AbortSignal): Promise<RunResult> {
	const started = Date.now();
	const deadline = started + setup.timeoutMs;
	const dirs = prepareRunDir(setup, arm, runDir);
	const tally = new EventTally();
	const pi = await runProcess(wrapped(setup, runDir, dirs, piArguments(setup, dirs.skills)), {
		cwd: dirs.cwd,
		env: dirs.env,
		deadline,
		signal,
		onStdout: (chunk) => tally.feed(chunk),
	});
	tally.end();
	const counts = {
		turns: tally.turns,
		inputTokens: tally.inputTokens,
		outputTokens: tally.outputTokens,
		cost: tally.cost,
	};
	const result = (outcome: RunOutcome, note?: string): RunResult => ({
		outcome,
		...counts,
		wallMs: Date.now() - started,
		...(note ? { note } : {}),
	});
	if (pi.aborted) return result("aborted");
	if (pi.timedOut) return result("timed out", `over its ${Math.round(setup.timeoutMs / 1000)} s limit`);
	if (tally.turns === 0 || (pi.code !== 0 && tally.error === undefined))
		return result("error", firstLine(tally.error ?? pi.stderr) ?? `pi exited ${pi.code}`);
	if (tally.error !== undefined) return result("failed", `model error: ${firstLine(tally.error)}`);
	if ("expect" in setup.pass)
		return tally.finalText.includes(setup.pass.expect)
			? result("passed")
			: result("failed", "the final answer does not contain the expected text");
	const check = await runProcess(wrapped(setup, runDir, dirs, ["/bin/sh", "-c", setup.pass.check]), {
		cwd: dirs.cwd,
		env: dirs.env,
		deadline,
		signal,
	});
	if (check.aborted) return result("aborted");
	if (check.timedOut) return result("timed out", "the check command ran past the run's time limit");
	return check.code === 0 ? result("passed") : result("failed", `the check exited ${check.code ?? "by a signal"}`);
}
