// Pieces only the batch suites need: readers for the audit log and the journal folder, and the
// multi-file commit child (test/crash/commit-child.ts) run as plain JS in a real process.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChangeRecord } from "../../src/store/audit.ts";
import { getAuditPath, getJournalDir } from "../../src/base/paths.ts";
import { transpileTree } from "../crash/transpile.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import type { TempEnv } from "../support/temp-env.ts";

export function auditLines(env: TempEnv): Array<ChangeRecord & { operation?: number }> {
	const path = getAuditPath(env.agentDir);
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8")
		.trim()
		.split("\n")
		.filter(Boolean)
		.map((l) => JSON.parse(l) as ChangeRecord & { operation?: number });
}

export function journals(env: TempEnv): string[] {
	const dir = getJournalDir(env.agentDir);
	return existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith(".json")) : [];
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
		current = {
			root,
			script: transpileTree(join(REPO_ROOT, "test/crash/commit-child.ts"), REPO_ROOT, join(root, "js")),
		};
	});
	after(() => current && rmSync(current.root, { recursive: true, force: true }));
	return () => {
		if (!current) throw new Error("useCrashChild(): used outside a test");
		return current;
	};
}
