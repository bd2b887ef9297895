// `/selfskills eval`: measures on the person's own task and model whether a pending proposal (or a
// skill) helps. It checks everything it can before the first run (target, task, check, model,
// sandbox, pi's CLI, the extension), says what the runs will cost and asks, then runs the two arms
// interleaved, one line per finished run, and keeps the report with the proposal or the skill.
// The throwaway folders go however it ends: done, refused, timed out, aborted (Esc, Ctrl-C), crashed.

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import type { ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import * as refusals from "../base/errors.ts";
import { isRefusal, type Refusal } from "../base/errors.ts";
import { expandHome, findProjectRoot, getHomeDir, isWithin, resolveReal } from "../base/paths.ts";
import { tmpdirEnv } from "../guard/bwrap-args.ts";
import { probeSandbox, type SandboxProbe } from "../guard/sandbox.ts";
import { createSessionCallContext } from "../pipeline/call-context.ts";
import { plannedChanges } from "../pipeline/mutate.ts";
import type { SessionDeps } from "../pipeline/session-state.ts";
import { recordSkillEval, type EvalRecord } from "../store/evals.ts";
import { isProposalId, readProposal, recordProposalEval } from "../store/proposals.ts";
import { refusalForHuman } from "./command-text.ts";
import { findProposal, previewApproval } from "./review.ts";
import { EVAL_USAGE, parseEvalArguments, splitWords, type EvalArguments } from "../eval/arguments.ts";
import { libraryOf, proposalArms, skillArms, type Arm } from "../eval/arms.ts";
import { findPiCli, type PiCli } from "../eval/pi-cli.ts";
import { evalReportText, runLine, summarizeArm, verdictOf } from "../eval/report.ts";
import { runOnce, runProcess, type RunResult, type RunSetup } from "../eval/run.ts";
import { hiddenPlaces, keptPlaces, nodePrefix, sandboxedArgv } from "../eval/sandbox.ts";
import { createWorkspace, removeTree, type Workspace } from "../eval/workspace.ts";

export interface EvalDeps extends SessionDeps {
	/** bubblewrap's probe, shared with pi's bash sandbox; none: probed here. */
	readonly sandbox?: () => SandboxProbe;
}

/** A confirmation, asked the way every /selfskills confirmation is (command.ts `confirmed`). */
export interface EvalConfirmation {
	readonly title: string;
	readonly question: string;
	readonly said?: string;
	readonly rerun: string;
	readonly declined?: string;
}

/** How the eval talks to the person: outputs, and the one confirmation before money is spent. */
export interface EvalIo {
	say(text: string, level?: "info" | "warning" | "error"): void;
	confirm(c: EvalConfirmation): Promise<boolean>;
}

/** Environment variables a run inherits: the shell's basics and proxies; nothing else of the person's. */
const PASSED_ENV = new RegExp(
	"^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|COLORTERM|NO_COLOR|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy|" +
		"SSL_CERT_(FILE|DIR)|NODE_EXTRA_CA_CERTS)$",
);
/** Where the key goes when no variable of pi's environment holds it: a models.json entry names it. */
const KEY_VARIABLE = "PI_SELFSKILLS_EVAL_API_KEY";
const MAX_TASK_BYTES = 100_000;
const STATUS_KEY = "selfskills-eval";

interface Prepared {
	readonly args: EvalArguments;
	readonly record: Pick<EvalRecord, "target" | "model" | "thinking" | "task" | "pass" | "runs" | "sandboxed">;
	readonly arms: readonly [Arm, Arm];
	readonly setup: RunSetup;
}

/** The session's thinking level: pi 1.6 says it on ctx; pi 0.73 records it in the session. */
function thinkingOf(ctx: ExtensionCommandContext): string | undefined {
	const direct = Reflect.get(ctx, "thinkingLevel");
	if (typeof direct === "string") return direct;
	const entries = ctx.sessionManager.getBranch() as ReadonlyArray<{ type?: string; thinkingLevel?: unknown }>;
	const last = [...entries].reverse().find((e) => e.type === "thinking_level_change");
	return typeof last?.thinkingLevel === "string" ? last.thinkingLevel : undefined;
}

function readTask(task: string, cwd: string): string | Refusal {
	if (!task.startsWith("@")) return task;
	const path = resolve(cwd, expandHome(task.slice(1)));
	try {
		if (statSync(path).size > MAX_TASK_BYTES)
			return refusals.evalRefused(`the task file ${path} is over ${MAX_TASK_BYTES} bytes`, "Shorten it.");
		const text = readFileSync(path, "utf8");
		if (text.trim() === "") return refusals.evalRefused(`the task file ${path} is empty`, "Write the task in it.");
		return text;
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code ?? "error";
		return refusals.evalRefused(
			`the task file ${path} cannot be read (${code})`,
			"Check the path (it is relative to the session's folder), or give the task as text.",
		);
	}
}

/** Why the check command cannot run (its first word is no command found from `cwd`), or undefined. */
function checkProblem(check: string, cwd: string, env: Record<string, string>): Refusal | undefined {
	const first = (splitWords(check) ?? []).find((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w));
	const found =
		first !== undefined &&
		spawnSync("/bin/sh", ["-c", 'command -v -- "$1" >/dev/null 2>&1', "sh", first], {
			cwd,
			env,
			timeout: 5000,
			stdio: "ignore",
		}).status === 0;
	if (found) return undefined;
	return refusals.evalRefused(
		`the check command ${JSON.stringify(check.slice(0, 200))} names no command found ` +
			`(${JSON.stringify(first ?? "")} is not on PATH nor a program in ${cwd})`,
		"Give a command that exits 0 when the task was done, e.g. --check 'npm test'.",
	);
}

/** Skill names that look like a typo of `name`: one holds the other, or they share their first 4 characters. */
function nearNames(name: string, names: readonly string[]): string[] {
	const lower = name.toLowerCase();
	const head = lower.slice(0, 4);
	return names
		.filter((n) => n.includes(lower) || lower.includes(n) || (head.length === 4 && n.startsWith(head)))
		.slice(0, 5);
}

/** The two arms: a proposal planned again on the files now (stale refused), or a skill's with/without. */
async function armsFor(
	deps: EvalDeps,
	ctx: ExtensionCommandContext,
	target: string,
): Promise<{ arms: [Arm, Arm]; target: EvalRecord["target"] } | Refusal> {
	if (isProposalId(target)) {
		const proposal = findProposal(deps, target);
		if (isRefusal(proposal)) return proposal;
		const preview = await previewApproval(deps, ctx, proposal);
		if (isRefusal(preview)) return preview;
		const changes = await plannedChanges(preview.ctx, preview.prepared, {
			batch: proposal.action === "operations",
			effects: deps.effects,
		});
		if (isRefusal(changes)) return changes;
		return {
			arms: proposalArms(libraryOf(preview.ctx.discovery.skills), changes),
			target: { proposal: proposal.id },
		};
	}
	const callCtx = await createSessionCallContext(deps, ctx);
	const library = libraryOf(callCtx.discovery.skills);
	if (!library.some((s) => s.name === target))
		return refusals.unknownSkill(
			target,
			nearNames(
				target,
				library.map((s) => s.name),
			),
		);
	return { arms: skillArms(library, target), target: { skill: target } };
}

/** The variables that carry the model's key to a run, and a models.json naming one where pi's environment has none. */
async function keyHandover(
	ctx: ExtensionCommandContext,
	agentDir: string,
	extension: string | undefined,
): Promise<{ env: Record<string, string>; modelsJson?: string }> {
	const model = ctx.model;
	let models: Record<string, unknown> | undefined;
	try {
		models = JSON.parse(readFileSync(join(agentDir, "models.json"), "utf8")) as Record<string, unknown>;
	} catch {
		models = undefined;
	}
	const auth = model ? await ctx.modelRegistry.getApiKeyAndHeaders(model).catch(() => undefined) : undefined;
	const key = auth?.ok ? auth.apiKey : undefined;
	const env: Record<string, string> = {};
	if (key) for (const [name, value] of Object.entries(process.env)) if (value === key) env[name] = value;
	// A key from pi's auth store (a login) reaches the run through one variable a models.json entry
	// names; auth.json itself is never copied. A provider the named extension registers brings its own.
	if (model && key && Object.keys(env).length === 0 && extension === undefined) {
		const providers = (models?.providers ?? {}) as Record<string, Record<string, unknown>>;
		const own = providers[model.provider] ?? {};
		models = {
			...models,
			providers: { ...providers, [model.provider]: { ...own, apiKey: KEY_VARIABLE, headers: own.headers ?? {} } },
		};
		env[KEY_VARIABLE] = key;
	}
	return { env, ...(models ? { modelsJson: `${JSON.stringify(models, null, 2)}\n` } : {}) };
}

/** The top `node_modules` folder holding pi (its dependencies sit beside it), or pi's own folder. */
function piInstallRoot(cli: PiCli): string {
	let root = cli.packageDir;
	for (let dir = cli.packageDir; dirname(dir) !== dir; dir = dirname(dir))
		if (basename(dir) === "node_modules") root = dir;
	return root;
}

/** The folder of an extension's package (its own node_modules), else its folder. */
function extensionRoot(path: string): string {
	for (let dir = dirname(path); dirname(dir) !== dir; dir = dirname(dir)) {
		try {
			statSync(join(dir, "package.json"));
			return dir;
		} catch {
			// up
		}
	}
	return dirname(path);
}

/** The models pi's RPC `get_available_models` answered with (those a run can reach with its key). */
function availableModels(stdout: string): Array<{ provider?: unknown; id?: unknown }> {
	for (const line of stdout.split("\n")) {
		if (!line.startsWith("{")) continue;
		try {
			const reply = JSON.parse(line) as { id?: unknown; success?: unknown; data?: { models?: unknown } };
			if (reply.id === "models" && reply.success === true && Array.isArray(reply.data?.models))
				return reply.data.models as Array<{ provider?: unknown; id?: unknown }>;
		} catch {
			// Not a reply.
		}
	}
	return [];
}

/**
 * Before anything costs money: pi in RPC mode, in the sandbox, with the extension and the
 * handed-over key, must list the person's model as available; else the extension does not load or
 * the key does not reach a run. No model is called.
 */
async function preflight(setup: RunSetup, workspace: Workspace, signal: AbortSignal): Promise<Refusal | undefined> {
	const dir = join(workspace.root, "preflight");
	for (const sub of ["agent", "home", "tmp"]) mkdirSync(join(dir, sub), { recursive: true });
	if (setup.modelsJson !== undefined)
		writeFileSync(join(dir, "agent", "models.json"), setup.modelsJson, { mode: 0o600 });
	const argv = [
		setup.cli.node,
		setup.cli.cliPath,
		"--mode",
		"rpc",
		"--no-session",
		"--no-extensions",
		...(setup.extension ? ["-e", setup.extension] : []),
		"--no-skills",
	];
	const places = { dir, tmpdir: join(dir, "tmp"), cwd: join(dir, "home"), binds: [] };
	let stdout = "";
	const run = await runProcess(setup.sandbox ? sandboxedArgv(setup.sandbox, places, argv) : argv, {
		cwd: places.cwd,
		env: { ...setup.env, HOME: places.cwd, ...tmpdirEnv(places.tmpdir), PI_CODING_AGENT_DIR: join(dir, "agent") },
		deadline: Date.now() + 60_000,
		signal,
		input: `${JSON.stringify({ id: "models", type: "get_available_models" })}\n`,
		onStdout: (chunk) => {
			stdout += chunk;
		},
	});
	if (availableModels(stdout).some((m) => m.provider === setup.provider && m.id === setup.modelId)) return undefined;
	const failed = run.stderr.split("\n").find((l) => /Failed to load extension/i.test(l));
	if (setup.extension && failed)
		return refusals.evalRefused(
			`the extension ${setup.extension} does not load in a run (${failed.trim().slice(0, 200)})`,
			"Fix it, or name another with --extension <path>.",
		);
	return refusals.evalRefused(
		`a run cannot use the model ${setup.provider}/${setup.modelId}: pi in the run does not list it as available` +
			`${setup.extension ? ` with the extension ${setup.extension}` : ""}`,
		setup.extension
			? "Check that the extension registers that provider and model."
			: "If a pi extension provides this model, name it with --extension <path>; else check its key with /login.",
	);
}

/** The session's model, when one is set up (pi 0.73 hands "unknown/unknown" that no registry knows otherwise). */
function modelOf(ctx: ExtensionCommandContext): { provider: string; id: string } | Refusal {
	const model = ctx.model;
	if (model && ctx.modelRegistry.find(model.provider, model.id)) return model;
	return refusals.evalRefused(
		`no model is configured in this session${model ? ` (pi names "${model.provider}/${model.id}")` : ""}`,
		"Choose one (/model, or --provider and --model when starting pi), then run the eval again.",
	);
}

/** The named extension's absolute path (relative to the session's folder), when it exists. */
function extensionOf(args: EvalArguments, cwd: string): string | undefined | Refusal {
	if (args.extension === undefined) return undefined;
	const path = resolve(cwd, expandHome(args.extension));
	try {
		statSync(path);
		return path;
	} catch {
		return refusals.evalRefused(
			`the extension path ${path} does not exist`,
			"Name the extension's file or folder with --extension <path>.",
		);
	}
}

/**
 * The sandbox's places for this pi and extension: bwrap as the boundary found and proved it (the same
 * probe, kept once it works, as pi's bash); a refusal with the probe's reason and fix when there is none.
 */
function sandboxOf(deps: EvalDeps, cli: PiCli, extension: string | undefined): RunSetup["sandbox"] | Refusal {
	const probe = deps.sandbox?.() ?? probeSandbox();
	if (!probe.available)
		return refusals.evalRefused(
			`the runs cannot be sandboxed here: ${probe.reason}`,
			`To sandbox them: ${probe.fix}. Or pass --no-sandbox to run without it ` +
				"(a skill under review could then read your home folder).",
		);
	const hidden = hiddenPlaces([getHomeDir(), homedir(), deps.agentDir(), tmpdir(), `/run/user/${process.getuid?.()}`]);
	// Programs on PATH inside the home folder (~/.local/bin, ~/.cargo/bin…) stay usable; the rest of home does not.
	const onPath = (process.env.PATH ?? "").split(":").filter((dir) => dir.startsWith("/"));
	const needed = [
		piInstallRoot(cli),
		nodePrefix(cli.node),
		...(extension ? [extensionRoot(extension)] : []),
		...onPath,
	];
	return { bwrap: probe.bwrap, hidden, keep: keptPlaces(needed, hidden) };
}

/** What the person asked, checked against the session: target, task, check, model. */
async function checkRequest(deps: EvalDeps, ctx: ExtensionCommandContext, text: string) {
	const args = parseEvalArguments(text);
	if (isRefusal(args)) return args;
	const arms = await armsFor(deps, ctx, args.target);
	if (isRefusal(arms)) return arms;
	const task = readTask(args.task, ctx.cwd);
	if (isRefusal(task)) return task;
	const env = Object.fromEntries(
		Object.entries(process.env).filter((e): e is [string, string] => PASSED_ENV.test(e[0]) && e[1] !== undefined),
	);
	const problem = args.check === undefined ? undefined : checkProblem(args.check, ctx.cwd, env);
	if (problem) return problem;
	const model = modelOf(ctx);
	if (isRefusal(model)) return model;
	return { args, arms, task, env, model };
}

/**
 * A project a run must not copy: the filesystem root, the home folder or an ancestor of it (pi
 * started outside any project would copy the whole home, ~/.ssh included, into every run).
 */
function projectTooBig(projectRoot: string): Refusal | undefined {
	const real = resolveReal(projectRoot);
	const home = resolveReal(getHomeDir());
	if (real !== "/" && !isWithin(real, home)) return undefined;
	const what = real === "/" ? "the filesystem root" : "your home folder or above it";
	return refusals.evalRefused(
		`the project to copy into each run would be ${real}, ${what}`,
		"Start pi in the project's folder (one inside a git repository, or the folder itself), then run the eval again.",
	);
}

const bounded = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 3)}...` : text);

/** Everything checked and laid out before the first run; a refusal when the eval cannot start. */
async function prepare(
	deps: EvalDeps,
	ctx: ExtensionCommandContext,
	text: string,
	workspace: () => Workspace,
): Promise<Prepared | Refusal> {
	const request = await checkRequest(deps, ctx, text);
	if (isRefusal(request)) return request;
	const { args, model, task } = request;
	const cli = findPiCli();
	if (!cli)
		return refusals.evalRefused(
			"the CLI of the running pi was not found in its package folder",
			"Run the eval from pi started by its CLI (`pi`).",
		);
	const extension = extensionOf(args, ctx.cwd);
	if (isRefusal(extension)) return extension;
	const sandbox = args.sandbox ? sandboxOf(deps, cli, extension) : undefined;
	if (isRefusal(sandbox)) return sandbox;
	const projectRoot = findProjectRoot(ctx.cwd);
	const tooBig = projectTooBig(projectRoot);
	if (tooBig) return tooBig;
	const key = await keyHandover(ctx, deps.agentDir(), extension);
	const setup: RunSetup = {
		cli,
		provider: model.provider,
		modelId: model.id,
		thinking: thinkingOf(ctx),
		...(extension ? { extension } : {}),
		task,
		pass: args.check !== undefined ? { check: args.check } : { expect: args.expect ?? "" },
		timeoutMs: args.timeoutSeconds * 1000,
		projectRoot,
		cwdInProject: relative(projectRoot, ctx.cwd),
		...(sandbox ? { sandbox } : {}),
		env: { ...request.env, ...key.env },
		...(key.modelsJson !== undefined ? { modelsJson: key.modelsJson } : {}),
	};
	const problem = await preflight(setup, workspace(), new AbortController().signal);
	if (problem) return problem;
	return {
		args,
		arms: request.arms.arms,
		setup,
		record: {
			target: request.arms.target,
			model: `${model.provider}/${model.id}`,
			...(setup.thinking ? { thinking: setup.thinking } : {}),
			task: bounded(task, 500),
			pass: bounded(args.check !== undefined ? `check: ${args.check}` : `expect: ${args.expect}`, 300),
			runs: args.runs,
			sandboxed: sandbox !== undefined,
		},
	};
}

/** Esc in the TUI, Ctrl-C in print mode: stops the eval (the run under way is killed). Returns the undo. */
function listenForAbort(ctx: ExtensionCommandContext, controller: AbortController): () => void {
	if (ctx.hasUI) {
		return ctx.ui.onTerminalInput((data) => {
			if (data !== "\x1b") return undefined;
			controller.abort();
			return { consume: true };
		});
	}
	const onSigint = () => controller.abort();
	process.on("SIGINT", onSigint);
	return () => process.removeListener("SIGINT", onSigint);
}

const clock = (ms: number) => {
	const s = Math.floor(ms / 1000);
	return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
};

/** The runs, interleaved (without, with, without, with…), one line per finished run. */
async function runArms(
	ctx: ExtensionCommandContext,
	io: EvalIo,
	p: Prepared,
	workspace: Workspace,
	signal: AbortSignal,
): Promise<[RunResult[], RunResult[]]> {
	const results: [RunResult[], RunResult[]] = [[], []];
	const started = Date.now();
	let current = "";
	const tick = () => {
		if (ctx.hasUI) ctx.ui.setStatus(STATUS_KEY, `eval: ${current}, ${clock(Date.now() - started)} (Esc stops)`);
	};
	const timer = setInterval(tick, 1000);
	try {
		for (let i = 1; i <= p.args.runs && !signal.aborted; i++) {
			for (const [index, arm] of p.arms.entries()) {
				if (signal.aborted) break;
				current = `${arm.label}, run ${i} of ${p.args.runs}`;
				tick();
				if (!ctx.hasUI) io.say(`eval: ${current} started (${clock(Date.now() - started)} elapsed)`);
				const runDir = join(workspace.root, `r${i}-${index}`);
				const result = await runOnce(p.setup, arm, runDir, signal);
				// One project copy on disk at a time.
				removeTree(runDir);
				if (result.outcome === "aborted") break;
				results[index].push(result);
				io.say(runLine(arm.label, i, p.args.runs, result));
			}
		}
	} finally {
		clearInterval(timer);
		if (ctx.hasUI) ctx.ui.setStatus(STATUS_KEY, undefined);
	}
	return results;
}

/** Keeps the report: with the proposal while it is pending, else in the skill's eval log. */
function keep(deps: EvalDeps, record: EvalRecord): string {
	const agentDir = deps.agentDir();
	if ("proposal" in record.target) {
		const pending = readProposal(deps.fs, agentDir, record.target.proposal);
		if (!pending) return `Not kept: proposal ${record.target.proposal} is no longer pending.`;
		recordProposalEval(deps.fs, agentDir, pending, record);
		return `Kept with proposal ${pending.id}: /selfskills show ${pending.id} and the approval dialog show it.`;
	}
	recordSkillEval(deps.fs, agentDir, record.target.skill, record);
	return `Kept in the skill's eval log: /selfskills history ${record.target.skill} shows it.`;
}

/** `/selfskills eval …`: `text` is everything after the word `eval`. */
export async function runEvalCommand(
	deps: EvalDeps,
	ctx: ExtensionCommandContext,
	text: string,
	io: EvalIo,
): Promise<void> {
	let workspace: Workspace | undefined;
	const ensureWorkspace = () => (workspace ??= createWorkspace());
	// A crash of pi mid-eval still removes the folders (a kill -9 leaves them to the next start's sweep).
	const onExit = () => workspace?.remove();
	process.once("exit", onExit);
	try {
		if (text.trim() === "") return io.say(`usage: ${EVAL_USAGE}`, "warning");
		const prepared = await prepare(deps, ctx, text, ensureWorkspace);
		if (isRefusal(prepared)) return io.say(refusalForHuman(prepared), "error");
		const { args, record } = prepared;
		const total = args.runs * 2;
		const cost =
			`${total} runs (${args.runs} per arm: ${prepared.arms[0].label} / ${prepared.arms[1].label}) ` +
			`on ${record.model}${record.thinking ? ` (thinking ${record.thinking})` : ""}, each up to ` +
			`${args.timeoutSeconds} s; every run calls your model and costs what its tokens cost.` +
			`${record.sandboxed ? "" : " NOT sandboxed (--no-sandbox): a run can read your home folder."}`;
		const asked = await io.confirm({
			title: "Run this eval?",
			question: cost,
			said: `eval: ${cost}`,
			rerun: `To run it, add --yes: /selfskills eval ${text.trim()} --yes`,
			declined: "eval cancelled; nothing ran",
		});
		if (!asked) return;
		const controller = new AbortController();
		const stopListening = listenForAbort(ctx, controller);
		let results: [RunResult[], RunResult[]];
		try {
			results = await runArms(ctx, io, prepared, ensureWorkspace(), controller.signal);
		} finally {
			stopListening();
		}
		// Only whole pairs count: an arm never shows a run the other arm did not get.
		const pairs = Math.min(results[0].length, results[1].length);
		const arms = [
			summarizeArm(prepared.arms[0].label, results[0].slice(0, pairs)),
			summarizeArm(prepared.arms[1].label, results[1].slice(0, pairs)),
		] as const;
		const stopped = controller.signal.aborted ? `stopped by you after ${pairs} of ${args.runs} pair(s)` : undefined;
		const full: EvalRecord = {
			time: new Date().toISOString(),
			...record,
			arms,
			verdict: verdictOf(arms[0], arms[1]),
			...(stopped ? { stopped } : {}),
		};
		if (pairs === 0) return io.say(`eval stopped before any pair of runs finished; nothing kept.`, "warning");
		io.say(`${evalReportText(full)}\n${keep(deps, full)}`);
	} finally {
		workspace?.remove();
		process.removeListener("exit", onExit);
	}
}
