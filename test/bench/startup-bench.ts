// SPEC "Cost", start-up: the real `pi -p` CLI (one prompt, the faux model of test/fixtures/faux-cli-ext.ts),
// with the package installed vs without, run in turn A B A B … and timed from outside: wall time, and the
// peak resident memory of the pi process as the kernel accounts it (/usr/bin/time). Each side has its own
// TMPDIR, so its compiled-module cache (jiti's) is its own: filled for the warm runs, emptied for a cold one.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { FAUX_CLI_ARGS, piInstall } from "../support/pi-cli.ts";
import { getPiLineInfo, REPO_ROOT } from "../support/pi-line.ts";
import type { TempEnv } from "../support/temp-env.ts";
import { summarize, type Sample } from "./stats.ts";

const TIME_BINARY = "/usr/bin/time";

export interface PiRun {
	readonly wallMs: number;
	/** Peak resident set of the pi process, KiB. */
	readonly maxRssKiB: number;
	readonly stdout: string;
}

export interface PiSide {
	readonly env: TempEnv;
	/** This side's TMPDIR (jiti keeps its compiled modules in <TMPDIR>/jiti). */
	readonly tmpDir: string;
}

/** A side for one env: its own TMPDIR under the env root; `install` puts this checkout in its settings. */
export async function createPiSide(env: TempEnv, install: boolean): Promise<PiSide> {
	const tmpDir = join(env.root, "tmp");
	mkdirSync(tmpDir, { recursive: true });
	if (install) await piInstall(env, REPO_ROOT);
	return { env, tmpDir };
}

/** Empties the side's compiled-module cache: the next run is a cold start. */
export function clearModuleCache(side: PiSide): void {
	rmSync(join(side.tmpDir, "jiti"), { recursive: true, force: true });
}

/** One `pi -p --no-session` run with one prompt; `reply` is the faux model's only answer. */
export function runPiOnce(
	side: PiSide,
	prompt: string,
	options: { reply?: string; args?: string[] } = {},
): Promise<PiRun> {
	const { cliPath, nodeBinary } = getPiLineInfo();
	const { env, tmpDir } = side;
	const stamp = `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
	const script = join(env.root, `faux-${stamp}.json`);
	const timeOut = join(env.root, `time-${stamp}.txt`);
	writeFileSync(script, JSON.stringify([{ text: options.reply ?? "ok" }]));
	const args = ["-p", "--no-session", ...FAUX_CLI_ARGS, ...(options.args ?? []), prompt];
	const { NODE_OPTIONS: _dropped, ...inherited } = process.env;
	const childEnv = {
		...inherited,
		HOME: env.home,
		PI_CODING_AGENT_DIR: env.agentDir,
		PI_OFFLINE: "1",
		XDG_RUNTIME_DIR: env.runtimeDir,
		TMPDIR: tmpDir,
		FAUX_SCRIPT: script,
	};
	const start = performance.now();
	const child = spawn(TIME_BINARY, ["-f", "%M", "-o", timeOut, nodeBinary, cliPath, ...args], {
		cwd: env.projectDir,
		env: childEnv,
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
	child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
	return new Promise((resolve, reject) => {
		child.on("error", reject);
		child.on("close", (code) => {
			const wallMs = performance.now() - start;
			if (code !== 0) return reject(new Error(`pi exited ${code}: ${stderr.slice(0, 2000)}`));
			const maxRssKiB = Number(readFileSync(timeOut, "utf8").trim().split("\n").pop());
			rmSync(timeOut, { force: true });
			rmSync(script, { force: true });
			resolve({ wallMs, maxRssKiB, stdout });
		});
	});
}

export interface PairedStartup {
	readonly withPkg: { wall: Sample; rss: Sample };
	readonly without: { wall: Sample; rss: Sample };
	/** Median of the per-pair ratios (with / without): robust to a machine whose speed drifts. */
	readonly wallRatio: number;
	readonly rssRatio: number;
}

/** `pairs` warm runs of each side in turn (order turning every pair), after one warm-up each. */
export async function pairedStartup(a: PiSide, b: PiSide, pairs: number, prompt = "hello"): Promise<PairedStartup> {
	await runPiOnce(a, prompt);
	await runPiOnce(b, prompt);
	const runsA: PiRun[] = [];
	const runsB: PiRun[] = [];
	for (let i = 0; i < pairs; i++) {
		if (i % 2 === 0) {
			runsA.push(await runPiOnce(a, prompt));
			runsB.push(await runPiOnce(b, prompt));
		} else {
			runsB.push(await runPiOnce(b, prompt));
			runsA.push(await runPiOnce(a, prompt));
		}
	}
	const ratios = (pick: (r: PiRun) => number) => summarize(runsA.map((r, i) => pick(r) / pick(runsB[i]))).median;
	return {
		withPkg: { wall: summarize(runsA.map((r) => r.wallMs)), rss: summarize(runsA.map((r) => r.maxRssKiB)) },
		without: { wall: summarize(runsB.map((r) => r.wallMs)), rss: summarize(runsB.map((r) => r.maxRssKiB)) },
		wallRatio: ratios((r) => r.wallMs),
		rssRatio: ratios((r) => r.maxRssKiB),
	};
}

/** Cold starts: the module cache emptied before each run of either side, `runs` of each in turn. */
export async function coldStartup(a: PiSide, b: PiSide, runs: number): Promise<{ withPkg: Sample; without: Sample }> {
	const times: [number[], number[]] = [[], []];
	for (let i = 0; i < runs; i++) {
		for (const [k, side] of [a, b].entries()) {
			clearModuleCache(side);
			times[k].push((await runPiOnce(side, "hello")).wallMs);
		}
	}
	return { withPkg: summarize(times[0]), without: summarize(times[1]) };
}

export function hasTimeBinary(): boolean {
	return existsSync(TIME_BINARY);
}
