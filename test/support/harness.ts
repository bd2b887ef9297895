// The one tool harness: skill_manage wired to a temp env the way pi drives it, with a replaceable
// filesystem and the landed-change events recorded, plus the result assertions every suite uses.
//
// Layout of test/: unit tests are named after the src module they test (test/unit/<module>.test.ts,
// test/unit/actions/<action>.test.ts for src/actions/); the cross-cutting suites stay grouped by kind
// (hardening: adversarial sweeps; ops: batches and crashes; ux: what the human sees; e2e: through a
// real pi); test/support/ holds the shared pieces (this harness, faulty-fs.ts, fixtures.ts, temp-env.ts).
import type { AgentToolResult, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { expect } from "chai";
import { ArgumentError, normalizeArguments } from "../../src/face/arguments.ts";
import type { ChangeRecord } from "../../src/store/audit.ts";
import { discoverSkills } from "../../src/policy/discovery.ts";
import { type FsOps, realFs } from "../../src/base/fs-ops.ts";
import { createSessionState, type SessionDeps, type SessionState } from "../../src/pipeline/session-state.ts";
import { loadSettings } from "../../src/policy/settings.ts";
import { executeSkillManage } from "../../src/face/tool.ts";

/** A new session over `agentDir` whose landings go nowhere: what /selfskills and a review run on. */
export function sessionDeps(agentDir: string, fs: FsOps = realFs): SessionDeps {
	return { agentDir: () => agentDir, fs, state: createSessionState(), effects: { onLanded() {} } };
}

/** The tool's result, with its text, ok flag and code read out for short assertions. */
export type Result = AgentToolResult<Record<string, unknown>> & {
	readonly text: string;
	readonly ok: boolean;
	readonly code: string | undefined;
};

export interface Harness {
	readonly state: SessionState;
	/** What the tool reported as landed (the events index.ts emits), oldest first. */
	readonly events: ChangeRecord[];
	/** Replace to inject faults; the next call uses it. */
	fs: FsOps;
	/** Runs one call; `cwd` defaults to the env's project folder. */
	call(args: Record<string, unknown>, cwd?: string): Promise<Result>;
}

/**
 * What index.ts does before each prompt in a real session: the skill files pi loaded (its system
 * prompt's list) handed to the session, each then a place the discovery cache stamps. The project
 * is taken as trusted.
 */
export async function handPiSkillFiles(
	session: { readonly state: SessionState },
	env: { readonly agentDir: string; readonly projectDir: string },
): Promise<void> {
	const { agentDir, projectDir: cwd } = env;
	const { settings } = loadSettings({ cwd, agentDir, trusted: true });
	const { skills } = await discoverSkills({ cwd, agentDir, trusted: true, settings });
	session.state.runtimeSkillFiles = skills.map((s) => s.filePath);
	session.state.runtimeSkillNames = new Map(skills.map((s) => [s.filePath, s.name]));
}

/** A session as pi runs one: pi's skill files handed over, its first discovery listed and kept. */
export async function startPiSession(
	env: { readonly agentDir: string; readonly projectDir: string },
	tool = createHarness(env),
): Promise<Harness> {
	await handPiSkillFiles(tool, env);
	expect((await tool.call({ action: "list" })).ok).to.equal(true);
	return tool;
}

/** A new session of the same pi as `session` (handed the same skill files), to hold a long session against. */
export function freshPiSession(
	env: { readonly agentDir: string; readonly projectDir: string },
	session: Harness,
): Harness {
	const fresh = createHarness(env);
	fresh.state.runtimeSkillFiles = session.state.runtimeSkillFiles;
	fresh.state.runtimeSkillNames = session.state.runtimeSkillNames;
	return fresh;
}

export function createHarness(
	env: { readonly agentDir: string; readonly projectDir: string },
	fs: FsOps = realFs,
): Harness {
	const state = createSessionState();
	const events: ChangeRecord[] = [];
	const harness: Harness = {
		state,
		events,
		fs,
		// Arguments go through the tool's own normalisation, as pi's prepareArguments would.
		call: async (args, cwd = env.projectDir) => {
			const deps: SessionDeps = {
				agentDir: () => env.agentDir,
				fs: harness.fs,
				state,
				effects: { onLanded: (record) => events.push(record) },
			};
			let raw: AgentToolResult<Record<string, unknown>>;
			try {
				raw = await executeSkillManage(deps, normalizeArguments(args), { cwd } as unknown as ExtensionContext);
			} catch (error) {
				if (!(error instanceof ArgumentError)) throw error;
				raw = {
					content: [{ type: "text", text: error.refusal.message }],
					details: { ok: false, code: error.refusal.code, ...error.refusal.data },
				};
			}
			const details = raw.details ?? {};
			return {
				...raw,
				text: textOf(raw),
				ok: details.ok === true,
				code: typeof details.code === "string" ? details.code : undefined,
			};
		},
	};
	return harness;
}

export const textOf = (r: AgentToolResult<Record<string, unknown>>): string =>
	r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
export const codeOf = (r: AgentToolResult<Record<string, unknown>>): unknown => r.details.code;

export function expectOk(r: AgentToolResult<Record<string, unknown>>): void {
	expect(r.details.ok, textOf(r)).to.equal(true);
}

/** Asserts a refusal with `code` whose text starts with the code. */
export function expectRefused(r: AgentToolResult<Record<string, unknown>>, code: string): void {
	expect(r.details.ok, textOf(r)).to.equal(false);
	expect(codeOf(r), textOf(r)).to.equal(code);
	expect(textOf(r).startsWith(`${code}: `), textOf(r)).to.equal(true);
}

export function expectSameTree(before: Map<string, string>, after: Map<string, string>, where: string): void {
	expect([...after.entries()], `${where} changed`).to.deep.equal([...before.entries()]);
}
