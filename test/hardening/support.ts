// Shared pieces of the adversarial suite: a tool wired to a temp env, a fault-injecting FsOps,
// skill fixtures, and a tree fingerprint that proves nothing outside a root changed.
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { AgentToolResult, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { expect } from "chai";
import { ArgumentError, normalizeArguments, type SkillManageArgs } from "../../src/arguments.ts";
import type { FsOps } from "../../src/fs-ops.ts";
import { realFs } from "../../src/fs-ops.ts";
import { createSessionState, type SessionState } from "../../src/session-state.ts";
import { executeSkillManage, type ToolDeps } from "../../src/tool.ts";
import type { TempEnv } from "../support/temp-env.ts";

export type Result = AgentToolResult<Record<string, unknown>>;

export const skillText = (name: string, body = "# Steps\n\n1. Run the build.\n2. Check the page.\n"): string =>
	`---\nname: ${name}\ndescription: Use when testing ${name}. Lists the steps.\n---\n${body}`;

export function writeSkill(root: string, name: string, text = skillText(name)): string {
	const dir = join(root, name);
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, "SKILL.md"), text);
	return join(dir, "SKILL.md");
}

export interface Harness {
	readonly deps: ToolDeps;
	readonly state: SessionState;
	call(args: Record<string, unknown>, cwd?: string): Promise<Result>;
}

export function createHarness(env: TempEnv, fs: FsOps = realFs): Harness {
	const state = createSessionState();
	const deps: ToolDeps = { agentDir: () => env.agentDir, fs, state, effects: { onLanded() {} } };
	return {
		deps,
		state,
		// Arguments go through the tool's own normalisation, as pi's prepareArguments would.
		call: async (args, cwd = env.projectDir) => {
			let normalized: SkillManageArgs;
			try {
				normalized = normalizeArguments(args);
			} catch (error) {
				if (error instanceof ArgumentError) return { content: [{ type: "text", text: error.refusal.message }], details: { ok: false, code: error.refusal.code, ...error.refusal.data } };
				throw error;
			}
			return executeSkillManage(deps, normalized, { cwd } as unknown as ExtensionContext);
		},
	};
}

export const textOf = (r: Result): string => r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
export const codeOf = (r: Result): unknown => r.details.code;

export function expectOk(r: Result): void {
	expect(r.details.ok, textOf(r)).to.equal(true);
}

/** Asserts a refusal with `code` whose text starts with the code. */
export function expectRefused(r: Result, code: string): void {
	expect(r.details.ok, textOf(r)).to.equal(false);
	expect(codeOf(r), textOf(r)).to.equal(code);
	expect(textOf(r).startsWith(`${code}: `), textOf(r)).to.equal(true);
}

/** path -> kind:content (or link target) of every entry under `root`, for before/after comparison. */
export function fingerprint(root: string): Map<string, string> {
	const out = new Map<string, string>();
	const walk = (dir: string) => {
		let names: string[];
		try {
			names = readdirSync(dir);
		} catch {
			return;
		}
		for (const name of names.sort()) {
			const path = join(dir, name);
			const stat = lstatSync(path);
			const rel = relative(root, path);
			if (stat.isSymbolicLink()) out.set(rel, `link:${readlinkSync(path)}`);
			else if (stat.isDirectory()) {
				out.set(rel, `dir:${(stat.mode & 0o777).toString(8)}`);
				walk(path);
			} else out.set(rel, `file:${(stat.mode & 0o777).toString(8)}:${stat.nlink}:${readFileSync(path).toString("base64")}`);
		}
	};
	walk(root);
	return out;
}

export function expectSameTree(before: Map<string, string>, after: Map<string, string>, where: string): void {
	expect([...after.entries()], `${where} changed`).to.deep.equal([...before.entries()]);
}

export type FaultPlan = Partial<Record<keyof FsOps, (args: unknown[], callIndex: number) => Error | undefined>>;

export function errno(code: string, message = code): NodeJS.ErrnoException {
	return Object.assign(new Error(`${code}: ${message}`), { code });
}

/** A FsOps that throws the planned error on chosen calls and logs every call. */
export function faultyFs(plan: FaultPlan): FsOps & { log: Array<{ op: string; args: unknown[] }> } {
	const log: Array<{ op: string; args: unknown[] }> = [];
	const counts = new Map<string, number>();
	const wrapped = { log } as FsOps & { log: typeof log };
	for (const key of Object.keys(realFs) as Array<keyof FsOps>) {
		const original = realFs[key] as (...a: unknown[]) => unknown;
		(wrapped as unknown as Record<string, unknown>)[key] = (...args: unknown[]) => {
			const index = counts.get(key) ?? 0;
			counts.set(key, index + 1);
			log.push({ op: key, args });
			const fault = plan[key]?.(args, index);
			if (fault) throw fault;
			return original(...args);
		};
	}
	return wrapped;
}
