// `npm run bench`: what skill_manage costs against the pi built-ins it stands beside, measured in
// one run on one machine. Every figure is a median over repeated runs with min–max, and a ratio
// against its peer. BENCH_SCALE=0.2 scales repetitions down; BENCH_ONLY=cost,patch picks sections.
// The sessions are handed pi's skill files first, as index.ts hands them over in pi (each is a
// place the discovery cache stamps and a part of its key).

import {
	closeSync,
	copyFileSync,
	existsSync,
	fsyncSync,
	mkdirSync,
	openSync,
	readdirSync,
	readFileSync,
	renameSync,
	statSync,
	writeFileSync,
	writeSync,
} from "node:fs";
import { join } from "node:path";
import { createEditToolDefinition, loadSkills, type ExtensionContext } from "@mariozechner/pi-coding-agent";
import { MAX_OPERATIONS } from "../../src/pipeline/mutate.ts";
import { createPackageManager } from "../../src/policy/discovery.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { createSessionState } from "../../src/pipeline/session-state.ts";
import { createSideDoorGuard } from "../../src/guard/side-doors.ts";
import { findBashWrites, findSelfApproval } from "../../src/guard/bash-writes.ts";
import { normalizeForScan, PATTERNS, RISK_CATEGORIES, scanText } from "../../src/checks/risk-scan.ts";
import { executeSkillManage } from "../../src/face/tool.ts";
import type { OperationArgs } from "../../src/face/arguments.ts";
import { skillBackupDir } from "../support/backups.ts";
import { createTempEnv } from "../support/temp-env.ts";
import { cpuMs, shapeUnits, toMiB } from "../support/hostile.ts";
import { benchContentReview } from "./content-review-bench.ts";
import { createBenchEnv, expectOk, MARK_A, writeSkill, type BenchEnv } from "./fixtures.ts";
import { fmtChange, fmtMs, fmtRatio, printTable, reps, summarize, timeOnce, type GoalRow } from "./stats.ts";
import { coldStartup, createPiSide, hasTimeBinary, pairedStartup, runPiOnce } from "./startup-bench.ts";
import { measurePromptCost } from "./prompt-bench.ts";
import { benchSandboxedBash, WRITE_1000 } from "./sandbox-bench.ts";
import { benchGitHistory, benchYearOfUse, YEAR } from "./year-bench.ts";
import { HISTORY_COMMITS } from "../../src/base/git.ts";

const rows: GoalRow[] = [];
const TMPFS = "/dev/shm";
const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
const wants = (section: string) => !only || only.includes(section);

/**
 * Skills on a real disk are older than the few seconds in which the discovery cache compares a
 * just-changed entry by content (the file a patch just wrote always is): let a new tree age first.
 */
async function ageTree(): Promise<void> {
	await new Promise((done) => setTimeout(done, 3_500));
}

function heading(title: string): void {
	console.log(`\n== ${title}`);
}

/** read + replace + one fsynced temp file renamed over the target: the least a safe write costs. */
function floorWrite(path: string, from: string, to: string): void {
	const out = readFileSync(path, "utf8").replace(from, to);
	const temp = `${path}.tmp`;
	const fd = openSync(temp, "w");
	try {
		writeSync(fd, out);
		fsyncSync(fd);
	} finally {
		closeSync(fd);
	}
	renameSync(temp, path);
}

function fsyncDir(dir: string): void {
	const fd = openSync(dir, "r");
	try {
		fsyncSync(fd);
	} finally {
		closeSync(fd);
	}
}

/** The floor plus what the contract adds on disk: a durable backup first, and both folders synced. */
function durableFloorWrite(path: string, backupDir: string, from: string, to: string, n: number): void {
	const bytes = readFileSync(path);
	const backup = join(backupDir, `b${n % 10}`);
	const fd = openSync(`${backup}.tmp`, "w");
	try {
		writeSync(fd, bytes);
		fsyncSync(fd);
	} finally {
		closeSync(fd);
	}
	renameSync(`${backup}.tmp`, backup);
	fsyncDir(backupDir);
	floorWrite(path, from, to);
	fsyncDir(join(path, ".."));
}

/** A bench env in a tmpfs folder (/dev/shm): what a call costs in CPU, without the disk. */
function createTmpfsBenchEnv(settings: Record<string, unknown> = {}): BenchEnv {
	const saved = process.env.TMPDIR;
	process.env.TMPDIR = TMPFS;
	try {
		return createBenchEnv(settings);
	} finally {
		if (saved === undefined) delete process.env.TMPDIR;
		else process.env.TMPDIR = saved;
	}
}

async function benchPatch(size: number, tmpfs = false): Promise<void> {
	const label = `${size / 1024} KiB`;
	const where = tmpfs ? "tmpfs" : "disk";
	heading(`patch, SKILL.md of ${label} (20 other skills installed), ${where}`);
	const bench = tmpfs ? createTmpfsBenchEnv() : createBenchEnv();
	try {
		for (let i = 0; i < 20; i++) writeSkill(bench.roots[0], `other-skill-${i}`);
		const file = writeSkill(bench.roots[0], "bench-patch", size);
		await bench.handPiSkillFiles();
		const copies = ["edit", "floor", "durable", "durable-backups"].map((name) => join(bench.env.root, name));
		for (const dir of copies) mkdirSync(dir, { recursive: true });
		const [editFile, floorFile, durableFile] = copies.slice(0, 3).map((dir) => join(dir, "SKILL.md"));
		for (const copy of [editFile, floorFile, durableFile]) copyFileSync(file, copy);
		const edit = createEditToolDefinition(bench.env.projectDir);
		await ageTree();
		await expectOk(bench, { action: "read", skill: "bench-patch" });
		const times = { patch: [] as number[], edit: [] as number[], floor: [] as number[], durable: [] as number[] };
		// Timed once V8 has compiled the hot paths (with 5 warm-up rounds a patch here took 8.4 ms
		// while the backups section's 1,000 back-to-back patches took 5.7 ms).
		const warmup = reps(60, 2);
		const n = reps(40, 6);
		for (let i = 0; i < warmup + n; i++) {
			// Every patch makes content never seen before, so no check result can be reused across
			// an A/B/A cycle; each one still lands, so the ledger moves and no re-read is needed.
			const [from, to] = [i === 0 ? MARK_A : `Marker: step ${i}.`, `Marker: step ${i + 1}.`];
			const runners: Array<[keyof typeof times, () => Promise<unknown>]> = [
				[
					"patch",
					() => expectOk(bench, { action: "patch", skill: "bench-patch", old_string: from, new_string: to }),
				],
				[
					"edit",
					() =>
						edit.execute(
							"bench",
							{ path: editFile, edits: [{ oldText: from, newText: to }] },
							undefined,
							undefined,
							bench.ctx as ExtensionContext,
						),
				],
				["floor", async () => floorWrite(floorFile, from, to)],
				["durable", async () => durableFloorWrite(durableFile, copies[3], from, to, i)],
			];
			// The order turns every round, so each one follows each of the others equally often: the
			// disk work one leaves behind (journal commits, discards) is not always paid by the same one.
			for (let k = 0; k < runners.length; k++) {
				const [name, run] = runners[(i + k) % runners.length];
				const t = await timeOnce(run);
				if (i >= warmup) times[name].push(t);
			}
		}
		const same = [editFile, floorFile, durableFile].every((copy) => readFileSync(copy).equals(readFileSync(file)));
		if (!same) throw new Error("patch and its peers ended with different bytes");
		const [patch, editS, floor, durable] = [times.patch, times.edit, times.floor, times.durable].map(summarize);
		console.log(`skill_manage patch     ${fmtMs(patch)}`);
		console.log(`pi edit tool           ${fmtMs(editS)}   ratio ${fmtRatio(patch.median / editS.median)}`);
		console.log(
			`floor: read+replace+fsynced temp+rename          ${fmtMs(floor)}   ` +
				`patch/floor ${fmtRatio(patch.median / floor.median)}`,
		);
		console.log(
			`durable floor: + fsynced backup, both dirs synced ${fmtMs(durable)}   ` +
				`patch/durable ${fmtRatio(patch.median / durable.median)}`,
		);
		// Issue 17's goals: against the durable floor on disk; against edit on tmpfs (CPU only).
		const editGoal = !tmpfs ? undefined : size >= 1000 * 1024 ? 1.5 : size <= 4096 ? 2 : undefined;
		const floorGoal = undefined;
		const goal = (g: number | undefined) => (g === undefined ? "(info)" : `≤ ${g.toFixed(2)}×`);
		rows.push({
			figure: `patch ${label} / pi edit, ${where}`,
			value:
				`${fmtRatio(patch.median / editS.median)} ` +
				`(${patch.median.toFixed(2)} vs ${editS.median.toFixed(2)} ms)`,
			goal: goal(editGoal),
			met: editGoal === undefined || patch.median / editS.median <= editGoal,
		});
		rows.push({
			figure: `patch ${label} / durable floor, ${where}`,
			value: `${fmtRatio(patch.median / durable.median)} (floor ${durable.median.toFixed(2)} ms)`,
			goal: tmpfs ? goal(floorGoal) : "(reported)",
			met: floorGoal === undefined || patch.median / durable.median <= floorGoal,
			...(tmpfs ? {} : { cost: "report" as const }),
		});
	} finally {
		bench.cleanup();
	}
}

/** Spreads `count` skills over the four roots, round-robin. */
function buildTree(roots: readonly string[], count: number): void {
	for (let i = 0; i < count; i++) writeSkill(roots[i % roots.length], `skill-${String(i).padStart(5, "0")}`, 400);
}

/**
 * SPEC "Cost": one session's calls on a library of `count` skills (disk), each against what pi
 * itself does to load that library (its resolver finds the places, its loader reads them),
 * measured in one run, the runners alternating with the order turning every round.
 */
async function benchCost(count: number): Promise<void> {
	heading(`cost at ${count} skills across four roots, disk, against pi's resolve()+loadSkills`);
	const bench = createBenchEnv();
	try {
		buildTree(bench.roots, count - 1);
		const skill = "bench-patch";
		const dir = join(bench.roots[0], skill);
		writeSkill(bench.roots[0], skill, 4096);
		mkdirSync(join(dir, "notes"));
		writeFileSync(join(dir, "notes", "a.md"), "Note 0.\n");
		await bench.handPiSkillFiles();
		await ageTree();
		const { agentDir, projectDir } = bench.env;
		const piLoad = async () => {
			const { packageManager } = createPackageManager({ cwd: projectDir, agentDir, trusted: true });
			const resolved = await packageManager.resolve(async () => "skip");
			const skillPaths = resolved.skills.filter((r) => r.enabled).map((r) => r.path);
			return loadSkills({ cwd: projectDir, agentDir, skillPaths, includeDefaults: false });
		};
		if ((await piLoad()).skills.length !== count)
			throw new Error("pi's resolver and loader did not find every skill");
		await expectOk(bench, { action: "read", skill });
		await expectOk(bench, { action: "read", skill, file: "notes/a.md" });
		let current = MARK_A;
		let step = 0;
		const runners: Array<[string, () => Promise<unknown>]> = [
			["pi", piLoad],
			[
				"patch",
				() => {
					const from = current;
					current = `Marker: step ${++step}.`;
					return expectOk(bench, { action: "patch", skill, old_string: from, new_string: current });
				},
			],
			[
				"overwrite+read",
				async () => {
					await expectOk(bench, { action: "write", skill, file: "notes/a.md", content: `Note ${++step}.\n` });
					await expectOk(bench, { action: "read", skill, file: "notes/a.md" });
				},
			],
			[
				"create+list",
				async () => {
					// A word of its own per skill: near-copies of one description are refused (similar_exists).
					const word = `zk${String(++step).replace(/\d/g, (d) => "qwrtypsdfg"[Number(d)])}`;
					const name = word;
					await expectOk(bench, {
						action: "create",
						name,
						description: `Use when ${word}x jams the ${word}v of ${word}j.`,
						body: "# Steps\n",
					});
					await expectOk(bench, { action: "list" });
				},
			],
			[
				"first list",
				() => {
					// A new session, handed pi's skill files as index.ts hands them before the first prompt.
					const state = createSessionState();
					state.runtimeSkillFiles = bench.deps.state.runtimeSkillFiles;
					return executeSkillManage({ ...bench.deps, state }, { action: "list" }, bench.ctx);
				},
			],
		];
		const times = new Map(runners.map(([name]) => [name, [] as number[]]));
		// 24 rounds: at 12 the overwrite + read ratio moved 0.23–0.26 between runs of the same code.
		const n = reps(24, 3);
		for (let i = 0; i < n + 1; i++) {
			for (let k = 0; k < runners.length; k++) {
				const [name, run] = runners[(i + k) % runners.length];
				const t = await timeOnce(run);
				if (i > 0) times.get(name)?.push(t);
			}
		}
		const pi = summarize(times.get("pi") ?? []);
		console.log(`pi resolve()+loadSkills  ${fmtMs(pi)}`);
		const { hits, misses } = bench.deps.state.discoveryCache.stats;
		const goals: Array<[string, string, number | undefined]> = [
			["patch", "a patch", 0.25],
			["overwrite+read", "an overwrite of a bundled file + a read", 0.25],
			["create+list", "a create + a list", undefined],
			["first list", "a session's first list", undefined],
		];
		for (const [name, figure, goal] of goals) {
			const ours = summarize(times.get(name) ?? []);
			const ratio = ours.median / pi.median;
			console.log(`${name.padEnd(24)} ${fmtMs(ours)}   ratio ${fmtRatio(ratio)}`);
			rows.push({
				figure: `${figure}, ${count} skills / pi`,
				value: `${fmtRatio(ratio)} (${ours.median.toFixed(1)} vs ${pi.median.toFixed(1)} ms)`,
				goal: goal === undefined ? "(reported)" : `≤ ${goal.toFixed(2)}×`,
				met: goal === undefined || ratio <= goal,
				cost: goal === undefined ? "report" : "gate",
			});
		}
		console.log(`(the session's discovery cache: ${hits} hits, ${misses} misses)`);
	} finally {
		bench.cleanup();
	}
}

async function benchOperations(): Promise<void> {
	const count = 100;
	const chunk = Math.min(count, MAX_OPERATIONS);
	heading(
		`operations: ${count} patches across ${count} skills, ` +
			`batched (${Math.ceil(count / chunk)} call(s) of ≤ ${chunk}, MAX_OPERATIONS) vs ${count} separate calls`,
	);
	const bench = createBenchEnv();
	try {
		const names = Array.from({ length: count }, (_, i) => `ops-skill-${i}`);
		for (const name of names) writeSkill(bench.roots[0], name, 2048);
		await bench.handPiSkillFiles();
		for (const name of names) await expectOk(bench, { action: "read", skill: name });
		// Every round writes text never seen before, so no validation result can be reused.
		let current = MARK_A;
		let version = 0;
		const flip = () => {
			const from = current;
			current = `Marker: version ${++version}.`;
			return [from, current];
		};
		const batched: number[] = [];
		const separate: number[] = [];
		const n = reps(5, 2);
		for (let round = 0; round < n + 1; round++) {
			const [a, b] = flip();
			const tSeparate = await timeOnce(async () => {
				for (const name of names)
					await expectOk(bench, { action: "patch", skill: name, old_string: a, new_string: b });
			});
			const [c, d] = flip();
			const ops: OperationArgs[] = names.map((skill) => ({ action: "patch", skill, old_string: c, new_string: d }));
			const tBatch = await timeOnce(async () => {
				for (let i = 0; i < ops.length; i += chunk)
					await expectOk(bench, { action: "operations", operations: ops.slice(i, i + chunk) });
			});
			if (round === 0) continue;
			separate.push(tSeparate);
			batched.push(tBatch);
		}
		const [s, b] = [summarize(separate), summarize(batched)];
		console.log(`${count} separate patch calls ${fmtMs(s)}`);
		console.log(`batched                  ${fmtMs(b)}   ratio ${fmtRatio(b.median / s.median)}`);
		rows.push({
			figure: `batch of ${count} vs ${count} calls`,
			value: `${fmtRatio(b.median / s.median)} (${b.median.toFixed(0)} vs ${s.median.toFixed(0)} ms)`,
			goal: "≤ 0.50×",
			met: b.median / s.median <= 0.5,
		});
	} finally {
		bench.cleanup();
	}
}

function backupFiles(dir: string): { count: number; bytes: number; hashes: string[] } {
	let names: string[] = [];
	try {
		names = readdirSync(dir);
	} catch {
		// No backups yet.
	}
	const bytes = names.reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
	return {
		count: names.length,
		bytes,
		hashes: names.map((name) => name.replace(/^[^-]+-[^-]+-/, "").replace(/\..*$/, "")),
	};
}

function dirSize(dir: string): { files: number; bytes: number } {
	let files = 0;
	let bytes = 0;
	for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
		if (!entry.isFile()) continue;
		files++;
		bytes += statSync(join(entry.parentPath, entry.name)).size;
	}
	return { files, bytes };
}

async function benchBackups(): Promise<void> {
	const cap = 10;
	const n = reps(1000, 30);
	heading(`backups: ${n} patches of one skill, then ${n} restores (backupCap ${cap})`);
	const bench = createBenchEnv({ backupCap: cap });
	try {
		writeSkill(bench.roots[0], "backed-up", 4096);
		await expectOk(bench, { action: "read", skill: "backed-up" });
		await expectOk(bench, { action: "patch", skill: "backed-up", old_string: MARK_A, new_string: "Counter: 0." });
		const store = join(skillBackupDir(bench.env.agentDir, "backed-up"), "SKILL.md");
		let most = 0;
		const patchTimes: number[] = [];
		for (let i = 0; i < n; i++) {
			patchTimes.push(
				await timeOnce(() =>
					expectOk(bench, {
						action: "patch",
						skill: "backed-up",
						old_string: `Counter: ${i}.`,
						new_string: `Counter: ${i + 1}.`,
					}),
				),
			);
			if (i % 50 === 0) most = Math.max(most, backupFiles(store).count);
		}
		const afterPatches = backupFiles(store);
		most = Math.max(most, afterPatches.count);
		const restoreTimes: number[] = [];
		for (let i = 0; i < n; i++) {
			restoreTimes.push(await timeOnce(() => expectOk(bench, { action: "restore", skill: "backed-up" })));
			if (i % 50 === 0) most = Math.max(most, backupFiles(store).count);
		}
		const afterRestores = backupFiles(store);
		// A restore of a backup identical to the current file is refused and stores nothing.
		const current = readFileSync(join(bench.roots[0], "backed-up", "SKILL.md"));
		const sameId = readdirSync(store).find((name) => readFileSync(join(store, name)).equals(current));
		const noop = sameId ? await bench.call({ action: "restore", skill: "backed-up", backup: sameId }) : undefined;
		const afterNoop = backupFiles(store);
		const unique = new Set(afterNoop.hashes).size === afterNoop.hashes.length;
		const total = dirSize(join(bench.env.agentDir, "selfskills"));
		console.log(`patch (with prune)     ${fmtMs(summarize(patchTimes))}`);
		console.log(`restore                ${fmtMs(summarize(restoreTimes))}`);
		console.log(
			`backups of SKILL.md: after patches ${afterPatches.count}, after restores ${afterRestores.count}, ` +
				`most seen ${most}; duplicates: ${unique ? "none" : "YES"}`,
		);
		console.log(
			"restore of identical content: " +
				`${noop ? String(noop.details.code ?? "landed") : "(no identical backup held)"}, ` +
				`backups after it ${afterNoop.count}`,
		);
		console.log(
			`store: ${afterNoop.count} files, ${afterNoop.bytes} bytes for the skill; ` +
				`selfskills/ holds ${total.files} files, ${total.bytes} bytes (audit log included)`,
		);
		rows.push({
			figure: `backups after ${n} patches`,
			value: `${afterPatches.count} files (most ${most})`,
			goal: `≤ ${cap}`,
			met: most <= cap && afterPatches.count <= cap,
		});
		rows.push({
			figure: `backups after ${n} restores`,
			value: `${afterNoop.count} files, ${unique ? "no" : "some"} duplicates, ${afterNoop.bytes} B`,
			goal: "no duplicate",
			met: unique && afterNoop.count <= cap && (!noop || noop.details.code === "no_change"),
		});
	} finally {
		bench.cleanup();
	}
}

async function benchPromptCost(): Promise<void> {
	heading("prompt: what each request carries, tool JSON + system prompt (with minus without), vs pi's edit");
	const { ours, edit, ratio } = await measurePromptCost();
	const tokens = (chars: number) => Math.round(chars / 4);
	console.log(`skill_manage  ${JSON.stringify(ours)} chars (~${tokens(ours.total)} tokens at 4 chars a token)`);
	console.log(`pi edit       ${JSON.stringify(edit)} chars (~${tokens(edit.total)} tokens)`);
	rows.push({
		figure: "prompt per request / pi's edit",
		value: `${fmtRatio(ratio)} (${ours.total} vs ${edit.total} chars, ~${tokens(ours.total)} tokens)`,
		goal: "≤ 1.50×",
		met: ratio <= 1.5,
		cost: "gate",
	});
}

async function benchStartup(): Promise<void> {
	heading("start-up: pi -p (faux model, one prompt), package installed vs not, paired, warm");
	if (!hasTimeBinary()) throw new Error("/usr/bin/time is needed to read pi's peak memory");
	const withPkg = await createPiSide(createTempEnv({ prefix: "selfskills-bench-with-" }), true);
	const without = await createPiSide(createTempEnv({ prefix: "selfskills-bench-without-" }), false);
	try {
		const first = await runPiOnce(withPkg, "hello");
		if (!first.stdout.includes("ok")) throw new Error("pi -p did not answer");
		// SPEC: at least 20 pairs, whatever BENCH_SCALE says. 100 by default: a run's wall time here
		// spreads ±10 %, so the median of n pair ratios has a standard error of about 10 / √n %
		// (±2.2 at 20 pairs, ±1.3 at 60, ±1 at 100) around a cost of about 1.5 %.
		const paired = await pairedStartup(withPkg, without, reps(100, 20));
		const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;
		console.log(`with package   wall ${fmtMs(paired.withPkg.wall)}, peak RSS ${mib(paired.withPkg.rss.median)}`);
		console.log(`without        wall ${fmtMs(paired.without.wall)}, peak RSS ${mib(paired.without.rss.median)}`);
		const cold = await coldStartup(withPkg, without, reps(3, 3));
		console.log(`cold (module cache emptied): with ${fmtMs(cold.withPkg)}, without ${fmtMs(cold.without)}`);
		rows.push(
			{
				figure: "start-up wall, warm, with / without",
				value:
					`${fmtChange(paired.wallRatio)} median of pair ratios; ` +
					`medians ${paired.withPkg.wall.median.toFixed(0)} vs ${paired.without.wall.median.toFixed(0)} ms ` +
					`(${fmtChange(paired.withPkg.wall.median / paired.without.wall.median)}), ` +
					`n=${paired.withPkg.wall.runs} pairs`,
				goal: "≤ +3 %",
				met: paired.wallRatio <= 1.03,
				cost: "gate",
			},
			{
				figure: "start-up peak RSS, warm, with / without",
				value:
					`${fmtChange(paired.rssRatio)} ` +
					`(${mib(paired.withPkg.rss.median)} vs ${mib(paired.without.rss.median)})`,
				goal: "≤ +5 %",
				met: paired.rssRatio <= 1.05,
				cost: "gate",
			},
			{
				figure: "start-up wall, cold (module cache emptied)",
				value:
					`${fmtRatio(cold.withPkg.median / cold.without.median)} ` +
					`(${cold.withPkg.median.toFixed(0)} vs ${cold.without.median.toFixed(0)} ms)`,
				goal: "(reported)",
				met: true,
				cost: "report",
			},
		);
	} finally {
		withPkg.env.cleanup();
		without.env.cleanup();
	}
}

async function benchSandbox(): Promise<void> {
	heading("a sandboxed bash call: pi's bash with a control on (sandboxed) vs off, paired");
	const commands: Array<[string, string]> = [
		["true", "true"],
		["writing 1,000 small files", WRITE_1000],
	];
	// On tmpfs where there is one: on this disk the 1,000-file command alone takes 0.1 to 0.8 s from one
	// run to the next (writeback), which drowns what the sandbox adds; the sandbox's binds cost nothing
	// per file, so a tmpfs shows that cost and the disk's share is the disk's.
	const base = existsSync(TMPFS) ? TMPFS : undefined;
	console.log(`sessions and projects in ${base ?? "the temp folder"}`);
	const result = await benchSandboxedBash(
		commands.map(([, command]) => command),
		Math.max(20, reps(20, 20)),
		base,
	);
	if ("skipped" in result) {
		console.log(`not measured: ${result.skipped}`);
		for (const [label] of commands)
			rows.push({
				figure: `sandboxed bash, ${label}`,
				value: "not measured",
				goal: "≤ +10 ms",
				met: false,
				cost: "gate",
			});
		return;
	}
	for (const [i, figure] of result.figures.entries()) {
		const label = commands[i][0];
		console.log(`${label.padEnd(26)} on ${fmtMs(figure.on)}   off ${fmtMs(figure.off)}`);
		rows.push({
			figure: `sandboxed bash, ${label}`,
			value:
				`${figure.added < 0 ? "−" : "+"}${Math.abs(figure.added).toFixed(1)} ms ` +
				`(${figure.on.median.toFixed(1)} vs ${figure.off.median.toFixed(1)} ms, n=${figure.on.runs} pairs)`,
			goal: "≤ +10 ms",
			met: figure.added <= 10,
			cost: "gate",
		});
	}
}

async function benchYear(): Promise<void> {
	heading(
		`a year of use: ${YEAR.audit} audit lines, ${YEAR.decided} decided + ${YEAR.pending} pending proposals, ` +
			`${YEAR.uses} uses, ${YEAR.skills} skills with backups at cap, vs the same library without history`,
	);
	const { figures, disk } = await benchYearOfUse(reps(10, 5), reps(10, 5));
	for (const f of figures) {
		console.log(`${f.what.padEnd(34)} year ${fmtMs(f.year)}   none ${fmtMs(f.fresh)}   ratio ${fmtRatio(f.ratio)}`);
		rows.push({
			figure: `a year of use: ${f.what}`,
			value: `${fmtRatio(f.ratio)} (${f.year.median.toFixed(1)} vs ${f.fresh.median.toFixed(1)} ms)`,
			goal: "≤ 1.20×",
			met: f.ratio <= 1.2,
			cost: "gate",
		});
	}
	const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
	const grown = disk.year.audit + disk.year.usage + disk.year.proposals;
	console.log(`the year's store: ${JSON.stringify(disk.year)} bytes; without history: ${JSON.stringify(disk.fresh)}`);
	rows.push({
		figure: "a year's store beyond the backups",
		value:
			`${mib(grown)} (audit ${mib(disk.year.audit)}, usage ${mib(disk.year.usage)}, ` +
			`proposals ${mib(disk.year.proposals)}; backups at cap ${mib(disk.year.backups)})`,
		goal: "(reported)",
		met: true,
		cost: "report",
	});
	const git = await benchGitHistory(5000, reps(5, 3));
	console.log(`history with git, 5,000 commits: ${fmtMs(git.time)}, ${git.listed} commit(s) listed`);
	rows.push({
		figure: "history with git: commit, 5,000 commits",
		value: `${git.time.median.toFixed(0)} ms (${git.listed} listed, at most ${HISTORY_COMMITS})`,
		goal: "(reported)",
		met: true,
		cost: "report",
	});
}

/**
 * The side-door watch on every built-in tool call: its cost on a file outside any skill with 1,000
 * skills installed (the index is built once per prompt, measured apart), per edit and per bash call.
 */
async function benchSideDoors(): Promise<void> {
	heading("side doors: the tool_call handler on pi's edit / bash outside every skill, 1,000 skills");
	const env = createTempEnv({ prefix: "selfskills-bench-doors-" });
	try {
		const root = join(env.agentDir, "skills");
		buildTree([root], 1000);
		const state = createSessionState();
		state.runtimeSkillFiles = readdirSync(root).map((name) => join(root, name, "SKILL.md"));
		const guard = createSideDoorGuard({
			agentDir: () => env.agentDir,
			fs: realFs,
			state,
			effects: { onLanded() {} },
		});
		const ctx = { cwd: env.projectDir } as unknown as ExtensionContext;
		const outside = join(env.projectDir, "src", "app.ts");
		const editCall = {
			toolName: "edit",
			toolCallId: "e",
			input: { path: outside, edits: [{ oldText: "a", newText: "b" }] },
		};
		const bashCall = {
			toolName: "bash",
			toolCallId: "b",
			input: { command: "npm run build > build.log 2>&1 && cp dist/app.js /tmp/app.js" },
		};
		const indexMs = await timeOnce(() => guard.onToolCall(editCall, ctx));
		const n = reps(2000, 200);
		const timeEach = async (call: typeof editCall | typeof bashCall) => {
			for (let i = 0; i < 200; i++) guard.onToolCall(call, ctx);
			const runs: number[] = [];
			for (let i = 0; i < n; i++) runs.push(await timeOnce(() => guard.onToolCall(call, ctx)));
			return summarize(runs);
		};
		const edit = await timeEach(editCall);
		const bash = await timeEach(bashCall);
		console.log(`index of 1,000 skills (once per prompt) ${indexMs.toFixed(1)} ms`);
		console.log(`edit outside every skill   ${fmtMs(edit)}`);
		console.log(`bash outside every skill   ${fmtMs(bash)}`);
		rows.push({
			figure: "side-door handler, edit outside skills (1,000 skills)",
			value: `${edit.median.toFixed(3)} ms`,
			goal: "≤ 0.2 ms",
			met: edit.median <= 0.2,
		});
		rows.push({
			figure: "side-door handler, bash outside skills (1,000 skills)",
			value: `${bash.median.toFixed(3)} ms`,
			goal: "≤ 0.2 ms",
			met: bash.median <= 0.2,
		});
		rows.push({
			figure: "side-door skill index, built once per prompt",
			value: `${indexMs.toFixed(1)} ms`,
			goal: "(info)",
			met: true,
		});
	} finally {
		env.cleanup();
	}
}

/** Hostile bash commands for the matcher (used where bash is not sandboxed), each repeated to 1 MiB. */
const MATCHER_SHAPES = [
	"rm skills/a/x ",
	"{a,b}",
	`${"{a,b}".repeat(800)} `,
	"$(",
	"$a",
	"$a/",
	`"$a"`,
	"`",
	"$'\\n",
	"\\",
	"'",
	"cat <<E\n",
	"a;",
	"(",
	"sh -c '",
	"a=$a$a; ",
	"ls a | xargs rm; ",
	"find a -exec rm {} ; ",
	"pi -p /selfskills approve ",
	`python3 -c "open${" ".repeat(60_000)}"; `,
];

/** The matcher's CPU per command (findBashWrites, then findSelfApproval) on the worst 1 MiB shape. */
function benchMatcher(): void {
	heading("bash matcher: CPU on hostile 1 MiB commands, worst shape (SPEC Limits: ~100 ms)");
	const mib = 1 << 20;
	let worst = { ms: 0, shape: "" };
	for (const unit of MATCHER_SHAPES) {
		const command = unit.repeat(Math.ceil(mib / unit.length)).slice(0, mib);
		const runs: number[] = [];
		for (let i = 0; i < reps(5, 3); i++) {
			const start = process.cpuUsage();
			findBashWrites(command, "/w/project");
			findSelfApproval(command);
			const used = process.cpuUsage(start);
			runs.push((used.user + used.system) / 1000);
		}
		const ms = summarize(runs).median;
		if (ms > worst.ms) worst = { ms, shape: JSON.stringify(unit.slice(0, 20)) };
	}
	console.log(`worst of ${MATCHER_SHAPES.length} shapes: ${worst.shape} ${worst.ms.toFixed(1)} ms CPU per MiB`);
	rows.push({
		figure: "bash matcher, worst hostile shape (CPU per MiB)",
		value: `${worst.ms.toFixed(1)} ms`,
		goal: "≤ 100 ms",
		met: worst.ms <= 100,
	});
}

/** The risk scan on 1 MiB of each category's hostile shape: its worst single pattern, and the whole scan. */
function benchRiskScan(): void {
	heading("risk scan: CPU on 1 MiB of hostile text, worst pattern and whole scan (SPEC Limits: ~100 ms)");
	let pattern = { ms: 0, what: "" };
	let whole = { ms: 0, what: "" };
	for (const category of RISK_CATEGORIES) {
		for (const unit of shapeUnits(category)) {
			const text = toMiB(unit);
			const normalized = normalizeForScan(text);
			for (const [index, regex] of PATTERNS[category].entries()) {
				const ms = summarize(
					Array.from({ length: reps(3, 2) }, () =>
						cpuMs(() => {
							regex.lastIndex = 0;
							let count = 0;
							for (const _ of normalized.matchAll(regex)) if (++count >= 200) break;
						}),
					),
				).median;
				if (ms > pattern.ms) pattern = { ms, what: `${category} pattern ${index}` };
			}
			const ms = summarize(Array.from({ length: reps(3, 2) }, () => cpuMs(() => scanText(text)))).median;
			if (ms > whole.ms) whole = { ms, what: category };
		}
	}
	console.log(
		`worst pattern: ${pattern.what} ${pattern.ms.toFixed(1)} ms; whole scan: ${whole.what} ${whole.ms.toFixed(1)} ms`,
	);
	rows.push(
		{
			figure: "risk scan, worst pattern on 1 MiB",
			value: `${pattern.ms.toFixed(1)} ms`,
			goal: "≤ 50 ms",
			met: pattern.ms <= 50,
		},
		{
			figure: "risk scan, whole scan of 1 MiB",
			value: `${whole.ms.toFixed(1)} ms`,
			goal: "≤ 100 ms",
			met: whole.ms <= 100,
		},
	);
}

/**
 * The sections, in the order they run; BENCH_ONLY picks some by name. A section pushes its rows (or
 * returns them: another module's bench, e.g. `["review", benchContentReview]`, plugs in as one entry).
 */
const SECTIONS: ReadonlyArray<[string, () => unknown]> = [
	["startup", benchStartup],
	["prompt", benchPromptCost],
	["sandbox", benchSandbox],
	["cost", () => benchCost(1000)],
	["year", benchYear],
	[
		"patch",
		async () => {
			await benchPatch(4 * 1024);
			await benchPatch(4 * 1024, true);
		},
	],
	["operations", benchOperations],
	["backups", benchBackups],
	["sidedoors", benchSideDoors],
	["matcher", benchMatcher],
	["riskscan", benchRiskScan],
	[
		"contentreview",
		(): GoalRow[] =>
			benchContentReview().map((r) => ({
				figure: r.name,
				value: `${r.ms.toFixed(1)} ms`,
				goal: `≤ ${r.goalMs} ms`,
				met: r.ms <= r.goalMs,
			})),
	],
];

async function main(): Promise<void> {
	const started = Date.now();
	console.log(`pi-selfskills bench — node ${process.version}, BENCH_SCALE=${process.env.BENCH_SCALE ?? "1"}`);
	for (const [name, run] of SECTIONS) {
		if (!wants(name)) continue;
		const returned = await run();
		if (Array.isArray(returned)) rows.push(...(returned as GoalRow[]));
	}
	heading(`summary (${((Date.now() - started) / 1000).toFixed(0)} s)`);
	printTable(rows);
}

await main();
