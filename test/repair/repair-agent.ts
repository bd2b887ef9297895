// A scripted agent that makes the typical skill_manage mistakes and repairs each one using only what
// the refusal told it (its code and data), the way seed 002 measures "repairable" errors. The same
// agent run against generic errors ("the call failed", no data) shows what the structure buys.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { writeSkill } from "../support/fixtures.ts";
import { createHarness } from "../support/harness.ts";
import type { TempEnv } from "../support/temp-env.ts";

export type Args = Record<string, unknown>;

export interface CallResult {
	readonly ok: boolean;
	readonly text: string;
	readonly details: Record<string, unknown>;
}

export type Caller = (args: Args) => Promise<CallResult>;

export const SKILL_TEXT =
	"---\nname: deploy-checks\ndescription: Use when deploying the app. Lists the checks to run.\n---\n" +
	"# Deploy checks\n\n1. Run npm build.\n2. Check the health page.\n3. Check the logs page.\n";

export function createCaller(env: TempEnv, generic: boolean): Caller {
	const tool = createHarness(env);
	return async (args) => {
		const { details, text } = await tool.call(args);
		const ok = details.ok !== false;
		if (generic && !ok) return { ok, text: "error: the call failed", details: {} };
		return { ok, text, details };
	};
}

export interface Scenario {
	readonly mistake: string;
	/** Files on disk before the agent starts; returns the paths it checks. */
	setup(env: TempEnv): void;
	/** Calls the agent makes before the mistaken one (reads), and a change by "someone else". */
	prepare(call: Caller, env: TempEnv): Promise<void>;
	readonly mistaken: Args;
	/** The repair a careful agent derives from the refusal's code and data, or undefined. */
	repair(refusal: CallResult, last: Args): Args | undefined;
	/** Whether the intended change is now on disk. */
	done(env: TempEnv): boolean;
}

const skillPath = (env: TempEnv, name = "deploy-checks") => join(env.agentDir, "skills", name, "SKILL.md");

function writeDeploySkill(env: TempEnv): void {
	writeSkill(join(env.agentDir, "skills"), "deploy-checks", SKILL_TEXT);
}

const readFirst = async (call: Caller) => {
	await call({ action: "read", skill: "deploy-checks" });
};
const fileHas = (env: TempEnv, text: string, name?: string) => {
	try {
		return readFileSync(skillPath(env, name), "utf8").includes(text);
	} catch {
		return false;
	}
};
const data = <T>(r: CallResult, key: string) => r.details[key] as T | undefined;

export const SCENARIOS: readonly Scenario[] = [
	{
		mistake: "stale read",
		setup: writeDeploySkill,
		async prepare(call, env) {
			await readFirst(call);
			writeFileSync(skillPath(env), SKILL_TEXT.replace("# Deploy checks", "# Deploy checks (v2)"));
		},
		mistaken: {
			action: "patch",
			skill: "deploy-checks",
			old_string: "Run npm build.",
			new_string: "Run npm run build.",
		},
		repair: (r, last) =>
			r.details.code === "stale" && String(data(r, "currentText") ?? "").includes(String(last.old_string))
				? last
				: undefined,
		done: (env) => fileHas(env, "Run npm run build.") && fileHas(env, "(v2)"),
	},
	{
		mistake: "non-unique match",
		setup: writeDeploySkill,
		prepare: readFirst,
		mistaken: { action: "patch", skill: "deploy-checks", old_string: "page.", new_string: "page (HTTP 200)." },
		repair(r, last) {
			const lines = data<number[]>(r, "lines");
			if (r.details.code !== "not_unique" || !lines) return undefined;
			// The agent meant the health page: it widens old_string to that line of its read copy.
			const line = SKILL_TEXT.split("\n")[lines[0] - 1];
			return {
				...last,
				old_string: line,
				new_string: line.replace(String(last.old_string), String(last.new_string)),
			};
		},
		done: (env) => fileHas(env, "2. Check the health page (HTTP 200).") && fileHas(env, "3. Check the logs page."),
	},
	{
		mistake: "typo'd old text",
		setup: writeDeploySkill,
		prepare: readFirst,
		mistaken: {
			action: "patch",
			skill: "deploy-checks",
			old_string: "1. Run npm biuld.",
			new_string: "1. Run npm run build.",
		},
		repair(r, last) {
			const closest = data<Array<{ line: number; text: string }>>(r, "closest");
			if (r.details.code !== "not_found" || !closest?.[0]) return undefined;
			return { ...last, old_string: closest[0].text };
		},
		done: (env) => fileHas(env, "1. Run npm run build."),
	},
	{
		mistake: "missing description",
		setup: writeDeploySkill,
		prepare: readFirst,
		mistaken: {
			action: "patch",
			skill: "deploy-checks",
			old_string: "description: Use when deploying the app. Lists the checks to run.\n",
			new_string: "summary: deploy checks\n",
		},
		repair(r, last) {
			const suggestion = data<string>(r, "suggestion");
			if (r.details.code !== "spec_violation" || !suggestion) return undefined;
			// The agent takes the frontmatter the refusal offers: its field outside the specification goes.
			const front = SKILL_TEXT.slice(0, SKILL_TEXT.indexOf("\n---", 3) + 4);
			return { ...last, old_string: front, new_string: suggestion };
		},
		done: (env) => !fileHas(env, "summary: deploy checks") && fileHas(env, "description:"),
	},
	{
		mistake: "wrong skill name",
		setup: writeDeploySkill,
		prepare: readFirst,
		mistaken: {
			action: "patch",
			skill: "deploy-check",
			old_string: "Run npm build.",
			new_string: "Run npm run build.",
		},
		repair(r, last) {
			const near = data<string[]>(r, "nearNames");
			return r.details.code === "unknown_skill" && near?.[0] ? { ...last, skill: near[0] } : undefined;
		},
		done: (env) => fileHas(env, "Run npm run build."),
	},
	{
		mistake: "read-only target",
		setup(env) {
			mkdirSync(join(env.home, ".agents", "skills", "deploy-checks"), { recursive: true });
			writeFileSync(join(env.home, ".agents", "skills", "deploy-checks", "SKILL.md"), SKILL_TEXT);
		},
		prepare: readFirst,
		mistaken: {
			action: "patch",
			skill: "deploy-checks",
			old_string: "Run npm build.",
			new_string: "Run npm run build.",
		},
		repair(r, last) {
			if (r.details.code !== "not_writable") return undefined;
			// The refusal says: leave it, or create a skill of your own, naming it as distinct from this one.
			return {
				action: "create",
				name: `${String(last.skill)}-local`,
				description: "Use when deploying the app. Local corrections to deploy-checks.",
				body: "1. Run npm run build.\n",
				distinct_from: [String(last.skill)],
				reason: "deploy-checks is read-only here; this holds the local build fix",
			};
		},
		done: (env) => fileHas(env, "Run npm run build.", "deploy-checks-local"),
	},
];

export interface Outcome {
	readonly mistake: string;
	readonly repaired: boolean;
	/** Calls after the mistaken one until the change landed (Infinity when it never did). */
	readonly extraCalls: number;
}

/** Runs one scenario: the mistaken call, then up to `budget` repairs derived from each refusal. */
export async function runScenario(scenario: Scenario, env: TempEnv, generic: boolean, budget = 3): Promise<Outcome> {
	scenario.setup(env);
	const call = createCaller(env, generic);
	await scenario.prepare(call, env);
	let args = scenario.mistaken;
	let result = await call(args);
	let extra = 0;
	while (!result.ok && extra < budget) {
		// Without data, the usual blind recovery: read the skill again and repeat the call.
		const next = scenario.repair(result, args) ?? (generic ? args : undefined);
		if (!next) break;
		if (generic) {
			await call({ action: "read", skill: String(args.skill ?? "deploy-checks") });
			extra++;
		}
		args = next;
		result = await call(args);
		extra++;
	}
	const repaired = result.ok && scenario.done(env);
	return { mistake: scenario.mistake, repaired, extraCalls: repaired ? extra : Number.POSITIVE_INFINITY };
}
