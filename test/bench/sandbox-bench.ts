// SPEC "Cost", a sandboxed bash call: pi's own bash tool in two in-process pi sessions with the package,
// one with a control on (a pin: bash then runs in the sandbox) and one without, each call timed from
// pi's tool_execution_start to its tool_execution_end (the package's tool_call and tool_result hooks
// included). Nothing here knows how the sandbox works: that the control holds is checked by its effect
// (a write into the agent folder fails with the control on and lands without it).
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";
import { summarize, type Sample } from "./stats.ts";

export const WRITE_1000 = "rm -rf out && mkdir out && for i in $(seq 1 1000); do echo $i > out/f$i; done";

interface Side {
	readonly env: TempEnv;
	readonly pi: PiSession;
	/** Milliseconds of each bash call, start to end, in order. */
	readonly times: number[];
}

const ENV_KEYS = ["HOME", "PI_CODING_AGENT_DIR", "XDG_RUNTIME_DIR"] as const;

/** Both sessions live in this process: the package reads pi's agent folder from the environment per call. */
function enter(side: Side): void {
	const { home, agentDir, runtimeDir } = side.env;
	Object.assign(process.env, { HOME: home, PI_CODING_AGENT_DIR: agentDir, XDG_RUNTIME_DIR: runtimeDir });
}

async function createSide(prefix: string, selfskills: Record<string, unknown>, base?: string): Promise<Side> {
	const env = createTempEnv({ prefix, base });
	const pi = await createPiSession({ env, packageDir: REPO_ROOT, settings: { selfskills } });
	const times: number[] = [];
	const started = new Map<string, number>();
	pi.session.subscribe((event) => {
		if (event.type === "tool_execution_start" && event.toolName === "bash")
			started.set(event.toolCallId, performance.now());
		if (event.type === "tool_execution_end" && started.has(event.toolCallId))
			times.push(performance.now() - (started.get(event.toolCallId) ?? 0));
	});
	return { env, pi, times };
}

async function bash(side: Side, command: string): Promise<{ ms: number; isError: boolean; text: string }> {
	enter(side);
	const run = await side.pi.run("go", [{ toolCall: { name: "bash", arguments: { command } } }, { text: "ok" }]);
	const result = run.toolResults.at(-1);
	return { ms: side.times.at(-1) ?? Number.NaN, isError: result?.isError ?? true, text: result?.text ?? "" };
}

export interface SandboxFigure {
	readonly command: string;
	readonly on: Sample;
	readonly off: Sample;
	/** Median of the paired differences on − off, ms. */
	readonly added: number;
}

/**
 * `pairs` paired calls of each command, the order turning every pair, after two warm-up calls each;
 * both sessions' folders (the project included) under `base`, the temp folder by default.
 * Undefined when the control does not hold here (no usable bubblewrap: the call is then refused or
 * matched, not sandboxed, and there is nothing to measure).
 */
export async function benchSandboxedBash(
	commands: readonly string[],
	pairs: number,
	base?: string,
): Promise<{ figures: SandboxFigure[] } | { skipped: string }> {
	const saved = new Map(ENV_KEYS.map((key) => [key, process.env[key]]));
	const on = await createSide("selfskills-bench-sbx-on-", { pinned: ["bench-pin"] }, base);
	const off = await createSide("selfskills-bench-sbx-off-", {}, base);
	try {
		const probe = (side: Side) => join(side.env.agentDir, "bench-probe.txt");
		const write = (side: Side) => bash(side, `echo x > ${JSON.stringify(probe(side))}`);
		await write(on);
		await write(off);
		if (existsSync(probe(on))) return { skipped: "the control did not hold (no usable bubblewrap here)" };
		if (!existsSync(probe(off))) throw new Error("bash without a control could not write its probe file");
		const figures: SandboxFigure[] = [];
		for (const command of commands) {
			for (let i = 0; i < 2; i++) for (const side of [on, off]) await expectOk(side, command);
			const times: [number[], number[]] = [[], []];
			for (let i = 0; i < pairs; i++) {
				const order = i % 2 === 0 ? ([0, 1] as const) : ([1, 0] as const);
				for (const k of order) times[k].push(await expectOk([on, off][k], command));
			}
			const added = summarize(times[0].map((t, i) => t - times[1][i])).median;
			figures.push({ command, on: summarize(times[0]), off: summarize(times[1]), added });
		}
		return { figures };
	} finally {
		for (const side of [on, off]) {
			side.pi.dispose();
			rmSync(side.env.root, { recursive: true, force: true });
		}
		for (const [key, value] of saved) {
			if (value === undefined) delete process.env[key];
			else process.env[key] = value;
		}
	}
}

async function expectOk(side: Side, command: string): Promise<number> {
	const result = await bash(side, command);
	if (result.isError) throw new Error(`bash failed (${command}): ${result.text.slice(0, 500)}`);
	return result.ms;
}

/** Stand-alone: `npx tsx test/bench/sandbox-bench.ts [pairs]`. */
if (process.argv[1]?.endsWith("sandbox-bench.ts")) {
	const pairs = Number(process.argv[2] ?? 20);
	const result = await benchSandboxedBash(["true", WRITE_1000], pairs, process.argv[3]);
	writeFileSync(1, `${JSON.stringify(result, null, 1)}\n`);
}
