// Pieces shared by the batch tests: skill_manage wired to a temp env with a replaceable filesystem
// and recorded effects (the events index.ts emits), a fault-injecting FsOps, and readers for the
// audit log and the journal folder.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentToolResult, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { normalizeArguments } from "../../src/arguments.ts";
import type { ChangeRecord } from "../../src/audit.ts";
import { getAuditPath } from "../../src/audit.ts";
import { realFs, type FsOps } from "../../src/fs-ops.ts";
import { getJournalDir } from "../../src/journal.ts";
import { createSessionState } from "../../src/session-state.ts";
import { executeSkillManage, type ToolDeps } from "../../src/tool.ts";
import { transpileTree } from "../crash/transpile.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import type { TempEnv } from "../support/temp-env.ts";

export type Result = AgentToolResult<Record<string, unknown>>;

export const skillText = (name: string, steps: string): string => `---\nname: ${name}\ndescription: Use when testing batches. The ${name} skill.\n---\n# ${name}\n\n${steps}`;

/** Writes <agentDir>/skills/<skill>/<relPath> and returns its path. */
export function writeFile(env: TempEnv, skill: string, relPath: string, text: string, mode = 0o644): string {
	const path = join(env.agentDir, "skills", skill, ...relPath.split("/"));
	mkdirSync(join(path, ".."), { recursive: true });
	writeFileSync(path, text);
	chmodSync(path, mode);
	return path;
}

export interface Harness {
	readonly events: ChangeRecord[];
	/** Replace to inject faults; the next call uses it. */
	fs: FsOps;
	call(args: Record<string, unknown>): Promise<Result>;
}

export function createHarness(env: TempEnv): Harness {
	const state = createSessionState();
	const events: ChangeRecord[] = [];
	const harness: Harness = {
		events,
		fs: realFs,
		call: (args) => {
			const deps: ToolDeps = { agentDir: () => env.agentDir, fs: harness.fs, state, effects: { onLanded: (record) => events.push(record) } };
			return executeSkillManage(deps, normalizeArguments(args), { cwd: env.projectDir } as unknown as ExtensionContext);
		},
	};
	return harness;
}

export const textOf = (r: Result): string => r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");

export function auditLines(env: TempEnv): Array<ChangeRecord & { operation?: number }> {
	const path = getAuditPath(env.agentDir);
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as ChangeRecord & { operation?: number });
}

export function journals(env: TempEnv): string[] {
	const dir = getJournalDir(env.agentDir);
	return existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith(".json")) : [];
}

export type FsCall = keyof FsOps;

/** realFs with `hook` run before every call; the hook may throw to make that call fail. */
export function faultyFs(hook: (name: FsCall, args: unknown[]) => void): FsOps {
	const out = { ...realFs } as Record<FsCall, (...args: unknown[]) => unknown>;
	for (const name of Object.keys(realFs) as FsCall[]) {
		const real = realFs[name] as (...args: unknown[]) => unknown;
		out[name] = (...args: unknown[]) => {
			hook(name, args);
			return real(...args);
		};
	}
	return out as unknown as FsOps;
}

export function errno(code: string, message: string): Error {
	return Object.assign(new Error(`${code}: ${message}`), { code });
}

export interface ChildRun {
	readonly signal: NodeJS.Signals | null;
	readonly code: number | null;
	readonly stdout: string;
}

/** Runs a plain-JS child script with bare node (no tsx, no pi hooks) and waits for it to end. */
export function runChild(script: string, args: readonly string[]): Promise<ChildRun> {
	const env = { ...process.env };
	delete env.NODE_OPTIONS; // the child is plain JS and imports no pi: keep it fast on either pi line
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, [script, ...args], { env, stdio: ["ignore", "pipe", "inherit"] });
		let stdout = "";
		child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
		child.on("error", reject);
		child.on("close", (code, signal) => resolve({ code, signal, stdout }));
	});
}

export interface CrashChild {
	/** A scratch folder for the describe block, removed after it. */
	readonly root: string;
	/** test/crash/commit-child.ts as plain JS, for runChild. */
	readonly script: string;
}

/** Mocha helper: the commit child transpiled once per describe block. Call inside `describe`. */
export function useCrashChild(): () => CrashChild {
	let current: CrashChild | undefined;
	before(() => {
		const root = mkdtempSync(join(tmpdir(), "selfskills-ops-"));
		current = { root, script: transpileTree(join(REPO_ROOT, "test/crash/commit-child.ts"), REPO_ROOT, join(root, "js")) };
	});
	after(() => current && rmSync(current.root, { recursive: true, force: true }));
	return () => {
		if (!current) throw new Error("useCrashChild(): used outside a test");
		return current;
	};
}
