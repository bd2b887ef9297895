// Shared pieces of the crash and fault suites: the single-action scenarios (patch, write, delete,
// restore) with their old and new bytes, a fresh env per case, the old-or-new and backup-hash
// checks, and a child process that SIGKILLs itself before its N-th filesystem call.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { REPO_ROOT } from "../support/pi-line.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";
import { skillText, walkFiles, writeFile, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk } from "../support/harness.ts";

const run = promisify(execFile);
const CHILD = join(REPO_ROOT, "test", "hardening", "fixtures", "crash-child.ts");
export const OLD_SKILL = skillText("crashy");
export const NEW_SKILL = OLD_SKILL.replace("Run the build.", "Run npm run build.");
const OLD_NOTES = "# Notes\n\nold notes\n";
const NEW_NOTES = "# Notes\n\nnew notes\n";

export interface Scenario {
	readonly name: string;
	readonly reads: Array<Record<string, unknown>>;
	readonly action: Record<string, unknown>;
	readonly target: (env: TempEnv) => string;
	readonly old: string | null;
	readonly next: string | null;
	/** Extra setup in the parent (e.g. a backup to restore). */
	readonly setup?: (env: TempEnv) => Promise<void>;
}

export const skillDir = (env: TempEnv) => join(env.agentDir, "skills", "crashy");
export const readSkill = { action: "read", skill: "crashy" };
const readNotes = { action: "read", skill: "crashy", file: "references/notes.md" };

export const SCENARIOS: Scenario[] = [
	{
		name: "patch",
		reads: [readSkill],
		action: { action: "patch", skill: "crashy", old_string: "Run the build.", new_string: "Run npm run build." },
		target: (e) => join(skillDir(e), "SKILL.md"),
		old: OLD_SKILL,
		next: NEW_SKILL,
	},
	{
		name: "write",
		reads: [readSkill, readNotes],
		action: { action: "write", skill: "crashy", file: "references/notes.md", content: NEW_NOTES },
		target: (e) => join(skillDir(e), "references", "notes.md"),
		old: OLD_NOTES,
		next: NEW_NOTES,
	},
	{
		name: "delete",
		reads: [readSkill],
		action: { action: "delete", skill: "crashy", file: "references/notes.md" },
		target: (e) => join(skillDir(e), "references", "notes.md"),
		old: OLD_NOTES,
		next: null,
	},
	{
		name: "restore",
		reads: [],
		action: { action: "restore", skill: "crashy" },
		target: (e) => join(skillDir(e), "SKILL.md"),
		old: NEW_SKILL,
		next: OLD_SKILL,
		setup: async (env) => {
			const tool = createHarness(env);
			expectOk(await tool.call(readSkill));
			expectOk(
				await tool.call({
					action: "patch",
					skill: "crashy",
					old_string: "Run the build.",
					new_string: "Run npm run build.",
				}),
			);
		},
	},
];

export async function prepareEnv(scenario: Scenario): Promise<TempEnv> {
	const env = createTempEnv({ prefix: "selfskills-crash-" });
	writeSkill(join(env.agentDir, "skills"), "crashy", OLD_SKILL);
	writeSkill(join(env.agentDir, "skills"), "bystander");
	writeFile(join(skillDir(env), "references", "notes.md"), OLD_NOTES);
	await scenario.setup?.(env);
	return env;
}

const readOrNull = (path: string): string | null => (existsSync(path) ? readFileSync(path, "utf8") : null);

/** Every backup under selfskills/backups still matches the hash in its name. */
export function checkBackups(env: TempEnv): number {
	// Hidden temp files of a killed backup write are not backups: the store never lists them; nor
	// are the notes beside each skill's folder that say whose it is.
	const root = join(env.agentDir, "selfskills", "backups");
	const files = walkFiles(root).filter(
		(f) => !f.includes("__deleted__") && !basename(f).startsWith(".") && dirname(f) !== root,
	);
	for (const file of files) {
		const match = /-([0-9a-f]{10})(\.[^/]*)?$/.exec(file);
		expect(match, file).to.not.equal(null);
		const hash = createHash("sha256").update(readFileSync(file)).digest("hex");
		expect(hash.startsWith(match?.[1] ?? "?"), `${file} does not match its hash`).to.equal(true);
	}
	return files.length;
}

/**
 * Backups that are still hard links of a live skill file (a backup is linked to the file it was
 * taken of until that file is replaced): once a call has returned there must be none.
 */
export function sharedBackups(env: { agentDir: string; projectDir?: string }): string[] {
	const inode = (file: string) => `${lstatSync(file).dev}:${lstatSync(file).ino}`;
	const roots = [
		join(env.agentDir, "skills"),
		...(env.projectDir === undefined ? [] : [join(env.projectDir, ".pi", "skills")]),
	];
	const live = new Set(roots.flatMap(walkFiles).map(inode));
	return walkFiles(join(env.agentDir, "selfskills", "backups")).filter((file) => live.has(inode(file)));
}

/** The backup of `old` exists whenever the target already holds the new bytes. */
export function checkOldOrNew(env: TempEnv, scenario: Scenario, where: string): "old" | "new" {
	const now = readOrNull(scenario.target(env));
	expect([scenario.old, scenario.next], `${where}: target torn: ${JSON.stringify(now)}`).to.include(now);
	checkBackups(env);
	if (now === scenario.next && scenario.old !== null) {
		const held = walkFiles(join(env.agentDir, "selfskills", "backups")).map((f) => readFileSync(f, "utf8"));
		expect(held, `${where}: new bytes landed without a backup of the old`).to.include(scenario.old);
	}
	return now === scenario.old ? "old" : "new";
}

export function tempFiles(env: TempEnv): string[] {
	return walkFiles(join(env.agentDir, "skills"))
		.filter((f) => f.includes("selfskills-tmp-"))
		.map((f) => relative(env.agentDir, f));
}

export async function runChild(
	env: TempEnv,
	scenario: Scenario,
	killAt: number,
): Promise<{ killed: boolean; ops: string[] }> {
	const options = {
		cwd: REPO_ROOT,
		timeout: 60_000,
		// Every variable of this env named: kill points run two at a time, and process.env holds the env made last.
		env: {
			...process.env,
			HOME: env.home,
			PI_CODING_AGENT_DIR: env.agentDir,
			XDG_RUNTIME_DIR: env.runtimeDir,
			PI_OFFLINE: "1",
			PROJECT: env.projectDir,
			KILL_AT: String(killAt),
			READS: JSON.stringify(scenario.reads),
			ACTION: JSON.stringify(scenario.action),
		},
	};
	try {
		const { stdout } = await run(process.execPath, ["--import", "tsx", CHILD], options);
		const out = JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as { ok: boolean; ops: string[] };
		expect(out.ok, stdout).to.equal(true);
		return { killed: false, ops: out.ops };
	} catch (error) {
		const signal = (error as { signal?: string }).signal;
		expect(signal, String(error)).to.equal("SIGKILL");
		return { killed: true, ops: [] };
	}
}
