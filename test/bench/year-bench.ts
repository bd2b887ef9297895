// SPEC "Cost", a year of use: two agent folders holding the same library of 1,000 skills with their
// backups at backupCap, one of them also holding a year of heavy use (20,000 audit lines, 480 decided
// and 20 pending proposals, 100,000 recorded uses), all written through the store's own functions.
// pi's start-up, /selfskills, list, a patch, history and /selfskills doctor are timed on both, in turn.
// With git "commit", history on a repository of 5,000 commits is timed and reported apart.
import { execFileSync } from "node:child_process";
import { lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import { realFs, type FsOps } from "../../src/base/fs-ops.ts";
import { createBackupStore } from "../../src/store/backup-store.ts";
import { appendAudit, type ChangeRecord } from "../../src/store/audit.ts";
import { recordUse } from "../../src/store/usage.ts";
import { decideProposal, fileProposal, takeDecisions } from "../../src/store/proposals.ts";
import { handleCommand, type CommandDeps } from "../../src/face/command.ts";
import { createBenchEnv, expectOk, MARK_A, skillText, writeSkill, type BenchEnv } from "./fixtures.ts";
import { createPiSide, runPiOnce, type PiSide } from "./startup-bench.ts";
import { summarize, timeOnce, type Sample } from "./stats.ts";

/** One commit in this many changes the skill (git history bench): 200 of 5,000. */
const SKILL_EVERY = 25;

export const YEAR = { audit: 20_000, decided: 480, pending: 20, uses: 100_000, skills: 1000, backupCap: 10 };

/** The store's writes without fsync: a year is written in seconds; what is read afterwards is the same. */
const quickFs: FsOps = { ...realFs, fsync: () => {}, fsyncAll: async () => {} };

interface Arm {
	readonly bench: BenchEnv;
	readonly side: PiSide;
	readonly deps: CommandDeps;
	readonly ctx: ExtensionCommandContext;
}

const skillName = (i: number) => `skill-${String(i).padStart(5, "0")}`;

/** The library, and backupCap backups of every SKILL.md (each a different earlier version). */
function buildLibrary(bench: BenchEnv): void {
	const root = bench.roots[0];
	const store = createBackupStore(quickFs, bench.env.agentDir);
	for (let i = 0; i < YEAR.skills; i++) {
		const name = skillName(i);
		writeSkill(root, name, 600);
		for (let v = 0; v < YEAR.backupCap; v++)
			store.store({ name, dir: join(root, name) }, "SKILL.md", Buffer.from(skillText(name, 600 + v)));
	}
}

/** A year of heavy use, written the way the package writes it (audit appends, usage records, proposals). */
function addYear(bench: BenchEnv): void {
	const { agentDir, projectDir } = bench.env;
	const start = Date.UTC(2026, 0, 1);
	for (let i = 0; i < YEAR.audit; i++) {
		const record: ChangeRecord = {
			time: new Date(start + i * 1_500_000).toISOString(),
			cwd: projectDir,
			action: "patch",
			skill: skillName(i % YEAR.skills),
			file: "SKILL.md",
			oldHash: "a".repeat(64),
			newHash: "b".repeat(64),
			backup: `20260101-000000.000-${String(i).padStart(10, "0")}.md`,
			reason: "the deploy step named a flag the CLI dropped in its last release",
		};
		appendAudit(quickFs, agentDir, [record]);
	}
	for (let i = 0; i < YEAR.uses; i++)
		recordUse(quickFs, agentDir, skillName(i % YEAR.skills), new Date(start + i * 300_000));
	for (let i = 0; i < YEAR.decided + YEAR.pending; i++) {
		const name = skillName(i % YEAR.skills);
		const path = join(bench.roots[0], name, "SKILL.md");
		const { proposal } = fileProposal(quickFs, agentDir, {
			cwd: projectDir,
			action: "patch",
			skills: [name],
			args: { action: "patch", skill: name, old_string: MARK_A, new_string: `Marker: proposal ${i}.` },
			reason: "the health check moved to /healthz",
			targets: [{ path, skill: name, file: "SKILL.md", before: "c".repeat(64), after: "d".repeat(64) }],
			diff: `--- a/SKILL.md\n+++ b/SKILL.md\n@@ -6 +6 @@\n-${MARK_A}\n+Marker: proposal ${i}.\n`,
			added: 1,
			removed: 1,
			mode: "propose",
		});
		if (i < YEAR.decided)
			decideProposal(quickFs, agentDir, proposal, i % 3 === 0 ? "approved" : "rejected", undefined);
	}
	takeDecisions(quickFs, agentDir, projectDir);
}

export async function createArm(withYear: boolean): Promise<Arm> {
	const bench = createBenchEnv({ backupCap: YEAR.backupCap });
	buildLibrary(bench);
	if (withYear) addYear(bench);
	const side = await createPiSide(bench.env, true);
	await bench.handPiSkillFiles();
	const deps: CommandDeps = { ...bench.deps, knownSkills: [], send: () => {} };
	const ctx = { cwd: bench.env.projectDir, hasUI: true, ui: { notify() {} } } as unknown as ExtensionCommandContext;
	return { bench, side, deps, ctx };
}

/** Both arms live in one process: the package reads pi's agent folder from the environment. */
export function enter(arm: Arm): void {
	const { home, agentDir, runtimeDir } = arm.bench.env;
	Object.assign(process.env, { HOME: home, PI_CODING_AGENT_DIR: agentDir, XDG_RUNTIME_DIR: runtimeDir });
}

/** Bytes under `path` (a file or a folder, recursively); 0 when absent. */
function bytesUnder(path: string): number {
	try {
		const stat = lstatSync(path);
		if (!stat.isDirectory()) return stat.size;
		return readdirSync(path).reduce((sum, name) => sum + bytesUnder(join(path, name)), 0);
	} catch {
		return 0;
	}
}

/** What the store holds after the year, by part (bytes): what backupCap bounds, and what it does not. */
export interface YearDisk {
	readonly audit: number;
	readonly usage: number;
	readonly proposals: number;
	readonly backups: number;
}

function measureDisk(agentDir: string): YearDisk {
	const store = join(agentDir, "selfskills");
	const names = readdirSync(store);
	return {
		audit: names.filter((n) => /^audit.*\.jsonl$/.test(n)).reduce((sum, n) => sum + bytesUnder(join(store, n)), 0),
		usage: bytesUnder(join(store, "usage.jsonl")),
		proposals: bytesUnder(join(store, "proposals")),
		backups: bytesUnder(join(store, "backups")),
	};
}

export interface YearFigure {
	readonly what: string;
	readonly year: Sample;
	readonly fresh: Sample;
	/** Median of the paired ratios, year / fresh. */
	readonly ratio: number;
}

export async function benchYearOfUse(
	pairs: number,
	startupPairs: number,
): Promise<{ figures: YearFigure[]; disk: { year: YearDisk; fresh: YearDisk } }> {
	const saved = { ...process.env };
	const fresh = await createArm(false);
	const year = await createArm(true);
	const disk = { year: measureDisk(year.bench.env.agentDir), fresh: measureDisk(fresh.bench.env.agentDir) };
	try {
		const markers = new Map<Arm, { current: string; step: number }>();
		for (const arm of [fresh, year]) {
			enter(arm);
			await expectOk(arm.bench, { action: "read", skill: skillName(7) });
			markers.set(arm, { current: MARK_A, step: 0 });
		}
		const ops: Array<[string, number, (arm: Arm) => Promise<unknown>]> = [
			["pi start-up (pi -p, one prompt)", startupPairs, (arm) => runPiOnce(arm.side, "hello")],
			["/selfskills (status)", pairs, (arm) => handleCommand(arm.deps, "", arm.ctx)],
			["list", pairs, (arm) => expectOk(arm.bench, { action: "list" })],
			[
				"a patch",
				pairs,
				(arm) => {
					const m = markers.get(arm) ?? { current: MARK_A, step: 0 };
					const from = m.current;
					m.current = `Marker: step ${++m.step}.`;
					return expectOk(arm.bench, {
						action: "patch",
						skill: skillName(7),
						old_string: from,
						new_string: m.current,
					});
				},
			],
			["history (backups)", pairs, (arm) => expectOk(arm.bench, { action: "history", skill: skillName(7) })],
			["/selfskills doctor", pairs, (arm) => handleCommand(arm.deps, "doctor", arm.ctx)],
		];
		const figures: YearFigure[] = [];
		for (const [what, n, run] of ops) {
			const times: [number[], number[]] = [[], []];
			for (const arm of [year, fresh]) {
				enter(arm);
				await run(arm);
			}
			for (let i = 0; i < n; i++) {
				const order = i % 2 === 0 ? ([0, 1] as const) : ([1, 0] as const);
				for (const k of order) {
					const arm = [year, fresh][k];
					enter(arm);
					times[k].push(await timeOnce(() => run(arm)));
				}
			}
			const ratio = summarize(times[0].map((t, i) => t / times[1][i])).median;
			figures.push({ what, year: summarize(times[0]), fresh: summarize(times[1]), ratio });
		}
		return { figures, disk };
	} finally {
		for (const arm of [fresh, year]) arm.bench.cleanup();
		for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
		Object.assign(process.env, saved);
	}
}

const git = (cwd: string, ...args: string[]) =>
	execFileSync("git", args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });

/**
 * history with git "commit" on a repository of `commits` commits in which the skill was last changed
 * long ago (the worst case for git's walk back): its time, and how many commits it lists.
 */
export async function benchGitHistory(commits: number, runs: number): Promise<{ time: Sample; listed: number }> {
	const bench = createBenchEnv({ git: "commit" });
	try {
		const skills = bench.roots[1];
		const repo = bench.env.projectDir;
		git(repo, "init", "-q");
		git(repo, "config", "user.email", "bench@example.invalid");
		git(repo, "config", "user.name", "bench");
		writeSkill(skills, "deploy-checks", 1200);
		mkdirSync(join(repo, "src"), { recursive: true });
		git(repo, "add", "-A");
		git(repo, "commit", "-q", "-m", "skill");
		// One fast-import stream: `commits` commits, each changing a file of the project; every
		// SKILL_EVERY-th changes the skill too, as git: "commit" records each skill change.
		const skillFile = relative(repo, join(skills, "deploy-checks", "SKILL.md"));
		const stream: string[] = [];
		for (let i = 0; i < commits; i++) {
			const files = [["src/work.txt", `change ${i}\n`]];
			if (i % SKILL_EVERY === 0) files.push([skillFile, skillText("deploy-checks", 1200 + i)]);
			const message = `work ${i}\n`;
			stream.push(
				"commit refs/heads/main",
				`committer bench <bench@example.invalid> ${1767225600 + i * 60} +0000`,
				`data ${Buffer.byteLength(message)}`,
				message,
				...(i === 0 ? ["from HEAD"] : []),
				...files.flatMap(([path, data]) => [`M 100644 inline ${path}`, `data ${Buffer.byteLength(data)}`, data]),
			);
		}
		const branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD").trim();
		execFileSync("git", ["fast-import", "--quiet"], { cwd: repo, input: `${stream.join("\n")}\n` });
		git(repo, "checkout", "-q", "-B", branch, "main");
		await bench.handPiSkillFiles();
		const first = await expectOk(bench, { action: "history", skill: "deploy-checks" });
		const listed = (first.text.match(/^\s*(?:git:)?[0-9a-f]{7,40}\b/gm) ?? []).length;
		const times: number[] = [];
		for (let i = 0; i < runs; i++)
			times.push(await timeOnce(() => expectOk(bench, { action: "history", skill: "deploy-checks" })));
		return { time: summarize(times), listed };
	} finally {
		bench.cleanup();
	}
}

/** Stand-alone: `npx tsx test/bench/year-bench.ts [pairs]`. */
if (process.argv[1]?.endsWith("year-bench.ts")) {
	const pairs = Number(process.argv[2] ?? 10);
	writeFileSync(1, `${JSON.stringify(await benchYearOfUse(pairs, pairs), null, 1)}\n`);
	writeFileSync(1, `${JSON.stringify(await benchGitHistory(5000, 5), null, 1)}\n`);
}
