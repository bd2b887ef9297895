// `npm run bench`: what skill_manage costs against the pi built-ins it stands beside, measured in
// one run on one machine. Every figure is a median over repeated runs with min–max, and a ratio
// against its peer. BENCH_SCALE=0.2 scales repetitions down; BENCH_ONLY=patch,list picks sections.
// The sessions that patch, create, batch and follow are handed pi's skill files first, as index.ts hands
// them over in pi (each is a place the discovery cache stamps and a part of its key).

import {
	closeSync,
	copyFileSync,
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
import { createDiscoveryCache } from "../../src/policy/discovery-cache.ts";
import { createPackageManager, discoverSkills, type DiscoverOptions } from "../../src/policy/discovery.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { createSessionState } from "../../src/pipeline/session-state.ts";
import { loadSettings } from "../../src/policy/settings.ts";
import { createSideDoorGuard } from "../../src/guard/side-doors.ts";
import { buildInjectedBlock } from "../../src/face/prompt.ts";
import {
	executeSkillManage,
	PROMPT_GUIDELINES,
	PROMPT_SNIPPET,
	skillManageSchema,
	TOOL_DESCRIPTION,
	TOOL_NAME,
} from "../../src/face/tool.ts";
import type { OperationArgs } from "../../src/face/arguments.ts";
import { piInstall, runPiPrint } from "../support/pi-cli.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import { skillBackupDir } from "../support/backups.ts";
import { createTempEnv } from "../support/temp-env.ts";
import { createBenchEnv, expectOk, MARK_A, skillText, writeSkill, type BenchEnv } from "./fixtures.ts";
import { fmtMs, fmtRatio, printTable, reps, summarize, timeOnce, type GoalRow } from "./stats.ts";

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
		const floorGoal = !tmpfs && size <= 4096 ? 2 : undefined;
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
			goal: goal(floorGoal),
			met: floorGoal === undefined || patch.median / durable.median <= floorGoal,
		});
	} finally {
		bench.cleanup();
	}
}

/**
 * Issue 17's main figure: a patch must not grow with the skills installed beside it. Two sessions
 * on tmpfs (so the disk does not hide CPU), one with 10 skills and one with 10,000, each patching a
 * 4 KiB skill (the tool's own lighter check for a call naming its skill); the two alternate, the
 * order turning every round.
 */
async function benchScale(): Promise<void> {
	heading("patch 4 KiB with 10 vs 10,000 skills installed, tmpfs");
	const small = createTmpfsBenchEnv();
	const large = createTmpfsBenchEnv();
	const benches = [small, large];
	try {
		buildTree(small.roots, 9);
		buildTree(large.roots, 9_999);
		for (const bench of benches) writeSkill(bench.roots[0], "bench-patch", 4096);
		for (const bench of benches) await bench.handPiSkillFiles();
		await ageTree();
		// A session's first call takes the full discovery; the patches after it are what is timed.
		// A call naming its skill checks the skills pi loads before it: where the target stands matters.
		// The first and the last skill in pi's order are patched too, in the same session (the best and the
		// worst case).
		const { agentDir, projectDir } = large.env;
		const settings = loadSettings({ cwd: projectDir, agentDir, trusted: true }).settings;
		const order = (await discoverSkills({ cwd: projectDir, agentDir, trusted: true, settings })).skills;
		const at = order.findIndex((skill) => skill.name === "bench-patch");
		const contenders: Array<[BenchEnv, string]> = [
			[small, "bench-patch"],
			[large, "bench-patch"],
			[large, order[0].name],
			[large, order[order.length - 1].name],
		];
		for (const [bench, skill] of contenders) await expectOk(bench, { action: "read", skill });
		const marks = new Map<string, string>();
		let version = 0;
		const patchOnce = (index: number) => {
			const [bench, skill] = contenders[index];
			const from = marks.get(`${index}`) ?? MARK_A;
			const to = `Marker: version ${++version}.`;
			marks.set(`${index}`, to);
			return expectOk(bench, { action: "patch", skill, old_string: from, new_string: to });
		};
		const times = contenders.map((): number[] => []);
		const warmup = reps(30, 3);
		const n = reps(60, 8);
		for (let i = 0; i < warmup + n; i++) {
			// The order turns every round, so each contender follows each of the others equally often.
			for (let k = 0; k < contenders.length; k++) {
				const index = (i + k) % contenders.length;
				const t = await timeOnce(() => patchOnce(index));
				if (i >= warmup) times[index].push(t);
			}
		}
		const [s, l, first, last] = times.map((t) => summarize(t));
		const cacheLine = (bench: BenchEnv) =>
			`(discovery cache: ${bench.deps.state.discoveryCache.stats.hits} hits, ` +
			`${bench.deps.state.discoveryCache.stats.misses} misses)`;
		console.log(`patch, 10 skills       ${fmtMs(s)}`);
		console.log(
			`patch, 10,000 skills   ${fmtMs(l)}   ratio ${fmtRatio(l.median / s.median)}   ` +
				`(at ${at + 1} of ${order.length} in pi's order)   ${cacheLine(large)}`,
		);
		console.log(`  the first in pi's order ${fmtMs(first)}   ratio ${fmtRatio(first.median / s.median)}`);
		console.log(`  the last in pi's order ${fmtMs(last)}   ratio ${fmtRatio(last.median / s.median)}`);
		rows.push({
			figure: "patch with 10,000 skills / with 10, tmpfs",
			value: `${fmtRatio(l.median / s.median)} (${l.median.toFixed(2)} vs ${s.median.toFixed(2)} ms)`,
			goal: "≤ 1.25×",
			met: l.median / s.median <= 1.25,
		});
		rows.push({
			figure: "  the same, the first skill in pi's order",
			value: `${fmtRatio(first.median / s.median)} (${first.median.toFixed(2)} ms)`,
			goal: "(info)",
			met: true,
		});
		rows.push({
			figure: "  the same, the last skill in pi's order",
			value: `${fmtRatio(last.median / s.median)} (${last.median.toFixed(2)} ms)`,
			goal: "(info)",
			met: true,
		});
	} finally {
		for (const bench of benches) bench.cleanup();
	}
}

/**
 * The call after a write, at 10,000 skills: the discovery cache takes the tool's own writes in, so
 * the next call checks its stamps instead of discovering every skill again. Timed: a read after a
 * patch (followed since the cache was built), after a new bundled file, after a removed one, and
 * after a whole skill deleted (each followed since round 2; each cost a discovery of every skill
 * before, about 2 s here).
 */
async function benchFollow(): Promise<void> {
	heading("the call after a write, 10,000 skills, tmpfs");
	const bench = createTmpfsBenchEnv();
	try {
		buildTree(bench.roots, 9_999);
		writeSkill(bench.roots[0], "bench-patch", 4096);
		await bench.handPiSkillFiles();
		await ageTree();
		await expectOk(bench, { action: "read", skill: "bench-patch" });
		const readNext = () => timeOnce(() => expectOk(bench, { action: "read", skill: "bench-patch" }));
		const after = {
			patch: [] as number[],
			created: [] as number[],
			removed: [] as number[],
			deleted: [] as number[],
		};
		let mark = MARK_A;
		const warmup = reps(2, 1);
		const n = reps(10, 3);
		for (let i = 0; i < warmup + n; i++) {
			const keep = (list: number[], t: number) => i >= warmup && list.push(t);
			const to = `Marker: round ${i}.`;
			await expectOk(bench, { action: "patch", skill: "bench-patch", old_string: mark, new_string: to });
			mark = to;
			keep(after.patch, await readNext());
			const file = `notes/round-${i}.md`;
			await expectOk(bench, { action: "write", skill: "bench-patch", file, content: `Round ${i}.\n` });
			keep(after.created, await readNext());
			await expectOk(bench, { action: "delete", skill: "bench-patch", file });
			keep(after.removed, await readNext());
			const extra = `extra-${i}`;
			await expectOk(bench, {
				action: "create",
				name: extra,
				description: `Use when round ${i} runs.`,
				body: "# x\n",
			});
			await expectOk(bench, { action: "read", skill: extra });
			await expectOk(bench, { action: "delete", skill: extra });
			keep(after.deleted, await readNext());
		}
		const [patch, created, removed, deleted] = [after.patch, after.created, after.removed, after.deleted].map(
			summarize,
		);
		const { misses } = bench.deps.state.discoveryCache.stats;
		console.log(`a read after ${"a patch".padEnd(22)} ${fmtMs(patch)}   (discovery cache: ${misses} misses in all)`);
		for (const [label, s] of [
			["a new bundled file", created],
			["a bundled file deleted", removed],
			["a whole skill deleted", deleted],
		] as const) {
			console.log(`a read after ${label.padEnd(22)} ${fmtMs(s)}   ratio ${fmtRatio(s.median / patch.median)}`);
			rows.push({
				figure: `read after ${label} / after a patch, 10k`,
				value: `${fmtRatio(s.median / patch.median)} (${s.median.toFixed(1)} vs ${patch.median.toFixed(1)} ms)`,
				goal: "(info)",
				met: true,
			});
		}
	} finally {
		bench.cleanup();
	}
}

/**
 * What the freshness check costs at 10,000 skills that each bundle files (a folder of two notes),
 * measured on the cache itself: the full check (list, create), the targeted one (a call naming its
 * skill: the folder and SKILL.md of each skill pi loads before it, no bundled files), and the least
 * any stat-based check that sees an earlier skill's `name:` edited in place must do: one stat of
 * each SKILL.md before the target.
 */
async function benchFreshness(): Promise<void> {
	heading("freshness check, 10,000 skills with bundled files, tmpfs");
	const bench = createTmpfsBenchEnv();
	try {
		buildTree(bench.roots, 9_999);
		for (const root of bench.roots) {
			for (const name of readdirSync(root)) {
				mkdirSync(join(root, name, "references"), { recursive: true });
				for (const note of ["api.md", "examples.md"])
					writeFileSync(join(root, name, "references", note), `# ${note}\n`);
			}
		}
		writeSkill(bench.roots[0], "bench-patch", 4096);
		await ageTree();
		const { agentDir, projectDir } = bench.env;
		const settings = loadSettings({ cwd: projectDir, agentDir, trusted: true }).settings;
		const options: DiscoverOptions = { cwd: projectDir, agentDir, trusted: true, settings, runtimeSkillFiles: [] };
		const cache = createDiscoveryCache();
		const discovery = await cache.discover(options);
		if (discovery.skills.length !== 10_000)
			throw new Error(`discovered ${discovery.skills.length} skills, expected 10,000`);
		const at = discovery.skills.findIndex((skill) => skill.name === "bench-patch");
		const files = discovery.skills.slice(0, at).map((skill) => skill.filePath);
		const times = { full: [] as number[], targeted: [] as number[], floor: [] as number[] };
		const runners: Array<[keyof typeof times, () => unknown]> = [
			["full", () => cache.discover(options)],
			["targeted", () => cache.discover(options, ["bench-patch"])],
			["floor", () => files.forEach((file) => statSync(file))],
		];
		const warmup = reps(5, 2);
		const n = reps(20, 5);
		for (let i = 0; i < warmup + n; i++) {
			for (let k = 0; k < runners.length; k++) {
				const [name, run] = runners[(i + k) % runners.length];
				const t = await timeOnce(run);
				if (i >= warmup) times[name].push(t);
			}
		}
		if (cache.stats.misses !== 1)
			throw new Error(`the cache missed ${cache.stats.misses - 1} time(s) on an unchanged tree`);
		const [full, targeted, floor] = [summarize(times.full), summarize(times.targeted), summarize(times.floor)];
		console.log(`full check             ${fmtMs(full)}`);
		console.log(
			`targeted check         ${fmtMs(targeted)}   targeted/full ${fmtRatio(targeted.median / full.median)}`,
		);
		console.log(
			`a stat of each SKILL.md before it (${at}) ${fmtMs(floor)}   ` +
				`targeted/floor ${fmtRatio(targeted.median / floor.median)}`,
		);
		rows.push({
			figure: "freshness check, 10,000 skills with bundled files: full",
			value: `${full.median.toFixed(1)} ms`,
			goal: "(info)",
			met: true,
		});
		rows.push({
			figure: "  targeted (targeted/full)",
			value: `${targeted.median.toFixed(1)} ms (${fmtRatio(targeted.median / full.median)})`,
			goal: "(info)",
			met: true,
		});
		rows.push({
			figure: "  floor: one stat of each SKILL.md before the target",
			value: `${floor.median.toFixed(1)} ms`,
			goal: "(info)",
			met: true,
		});
	} finally {
		bench.cleanup();
	}
}

/**
 * create of a new 4 KiB skill against a patch of an existing one, disk, each in its own session,
 * the two alternating with the order turning. A create adds a folder to a root: the session's
 * discovery cache follows it (the count is printed) rather than discovering again at the next call.
 */
async function benchCreate(): Promise<void> {
	heading("create vs patch, 4 KiB, 20 other skills installed, separate sessions, disk");
	const creating = createBenchEnv();
	const patching = createBenchEnv();
	try {
		for (const bench of [creating, patching])
			for (let i = 0; i < 20; i++) writeSkill(bench.roots[0], `other-skill-${i}`);
		writeSkill(patching.roots[0], "bench-patch", 4096);
		for (const bench of [creating, patching]) await bench.handPiSkillFiles();
		await ageTree();
		await expectOk(patching, { action: "read", skill: "bench-patch" });
		await expectOk(creating, { action: "list" });
		const body = skillText("x", 4096).split("\n---\n")[1] ?? "";
		let current = MARK_A;
		let made = 0;
		const runners: Array<["create" | "patch", () => Promise<unknown>]> = [
			[
				"create",
				() =>
					expectOk(creating, {
						action: "create",
						name: `made-${++made}`,
						description: "Use when benchmarking create. Steps to follow in order.",
						body,
					}),
			],
			[
				"patch",
				() => {
					const from = current;
					current = `Marker: version ${made}-${Math.random().toString(36).slice(2)}.`;
					return expectOk(patching, {
						action: "patch",
						skill: "bench-patch",
						old_string: from,
						new_string: current,
					});
				},
			],
		];
		const times = { create: [] as number[], patch: [] as number[] };
		const warmup = reps(10, 2);
		const n = reps(30, 5);
		for (let i = 0; i < warmup + n; i++) {
			for (let k = 0; k < runners.length; k++) {
				const [name, run] = runners[(i + k) % runners.length];
				const t = await timeOnce(run);
				if (i >= warmup) times[name].push(t);
			}
		}
		const [c, p] = [summarize(times.create), summarize(times.patch)];
		const { misses, followedCreates } = creating.deps.state.discoveryCache.stats;
		const cacheNote = `(discovery cache: ${followedCreates} creates followed, ${misses} misses)`;
		console.log(`create                 ${fmtMs(c)}   ${cacheNote}`);
		console.log(`patch                  ${fmtMs(p)}   create/patch ${fmtRatio(c.median / p.median)}`);
		rows.push({
			figure: "create / patch, 4 KiB, disk",
			value: `${fmtRatio(c.median / p.median)} (${c.median.toFixed(2)} vs ${p.median.toFixed(2)} ms)`,
			goal: "≤ 1.50×",
			met: c.median / p.median <= 1.5,
		});
	} finally {
		creating.cleanup();
		patching.cleanup();
	}
}

/** Spreads `count` skills over the four roots, round-robin. */
function buildTree(roots: readonly string[], count: number): void {
	for (let i = 0; i < count; i++) writeSkill(roots[i % roots.length], `skill-${String(i).padStart(5, "0")}`, 400);
}

/**
 * A session's discovery is reused while its stat fingerprint holds, so `list` is timed twice: as
 * a session's later calls (warm: the fingerprint is checked, pi's loader does not run) and as a
 * session's first call (cold: the fingerprint is taken, then pi's resolver and loader run).
 */
async function benchList(count: number): Promise<{ ours: number; pi: number }> {
	heading(`list, ${count} skills across agent skills, .pi/skills, .agents/skills and a local package`);
	const bench = createBenchEnv();
	try {
		buildTree(bench.roots, count);
		await ageTree();
		const { agentDir, projectDir } = bench.env;
		const peer = () =>
			loadSkills({ cwd: projectDir, agentDir, skillPaths: [...bench.roots], includeDefaults: false });
		// list shows what fits the read limit and gives the total of the rest.
		const { details } = await expectOk(bench, { action: "list" });
		const listed = typeof details.total === "number" ? details.total : (details.skills as unknown[]).length;
		const loaded = peer().skills.length;
		if (listed !== count || loaded !== count)
			throw new Error(`list saw ${listed}, loadSkills ${loaded}, expected ${count}`);
		// A session's first discovery is stamped after the call returns (in slices, while the model
		// reads the answer): awaited outside the timed call, and timed on its own.
		let cold = createSessionState();
		const coldList = () => {
			cold = createSessionState();
			return executeSkillManage({ ...bench.deps, state: cold }, { action: "list" }, bench.ctx);
		};
		// What pi itself does for a session: its resolver finds the places, its loader reads what they hold.
		const resolvePeer = async () => {
			const { packageManager } = createPackageManager({ cwd: projectDir, agentDir, trusted: true });
			const resolved = await packageManager.resolve(async () => "skip");
			return loadSkills({
				cwd: projectDir,
				agentDir,
				skillPaths: resolved.skills.filter((r) => r.enabled).map((r) => r.path),
				includeDefaults: false,
			});
		};
		if ((await resolvePeer()).skills.length !== count)
			throw new Error("pi's resolver and loader did not find every skill");
		const n = reps(count > 5000 ? 4 : 15, 3);
		const times = { ours: [] as number[], cold: [] as number[], theirs: [] as number[], resolved: [] as number[] };
		const stamping: number[] = [];
		const runners: Array<[keyof typeof times, () => unknown]> = [
			["ours", () => expectOk(bench, { action: "list" })],
			["cold", coldList],
			["theirs", peer],
			["resolved", resolvePeer],
		];
		for (let i = 0; i < n + 1; i++) {
			for (let k = 0; k < runners.length; k++) {
				const [name, run] = runners[(i + k) % runners.length];
				const t = await timeOnce(run);
				if (i > 0) times[name].push(t);
				if (name !== "cold") continue;
				const late = await timeOnce(() => cold.discoveryCache.settled());
				if (i > 0) stamping.push(late);
				if (cold.discoveryCache.stats.rebuilt > 0) throw new Error("the first list's late stamps did not hold");
			}
		}
		const [o, c, p, r] = [
			summarize(times.ours),
			summarize(times.cold),
			summarize(times.theirs),
			summarize(times.resolved),
		];
		const { hits, misses } = bench.deps.state.discoveryCache.stats;
		console.log(`skill_manage list      ${fmtMs(o)}   (discovery cache: ${hits} hits, ${misses} misses)`);
		console.log(`  first list of a session ${fmtMs(c)}`);
		console.log(`  then its stamps, after the call ${fmtMs(summarize(stamping))}`);
		console.log(
			`pi loadSkills          ${fmtMs(p)}   ratio ${fmtRatio(o.median / p.median)}, ` +
				`first list ${fmtRatio(c.median / p.median)}`,
		);
		console.log(`pi resolve()+loadSkills ${fmtMs(r)}   first list ${fmtRatio(c.median / r.median)}`);
		rows.push({
			figure: `later lists of ${count} / loadSkills`,
			value: `${fmtRatio(o.median / p.median)} (${o.median.toFixed(1)} vs ${p.median.toFixed(1)} ms)`,
			goal: "≤ 0.15×",
			met: o.median / p.median <= 0.15,
		});
		rows.push({
			figure: `first list of ${count} / resolve()+loadSkills`,
			value: `${fmtRatio(c.median / r.median)} (${c.median.toFixed(1)} vs ${r.median.toFixed(1)} ms)`,
			goal: count === 1000 ? "≤ 1.10×" : "(info)",
			met: count !== 1000 || c.median / r.median <= 1.1,
		});
		return { ours: o.median, pi: p.median };
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

function benchPromptCost(): void {
	heading("prompt cost: characters added to every request");
	const ours = {
		name: TOOL_NAME.length,
		description: TOOL_DESCRIPTION.length,
		schema: JSON.stringify(skillManageSchema).length,
		snippet: PROMPT_SNIPPET.length,
		guidelines: PROMPT_GUIDELINES.join("\n").length,
		injected: buildInjectedBlock([]).length,
	};
	const edit = createEditToolDefinition(process.cwd());
	const theirs = {
		name: edit.name.length,
		description: edit.description.length,
		schema: JSON.stringify(edit.parameters).length,
		snippet: (edit.promptSnippet ?? "").length,
		guidelines: (edit.promptGuidelines ?? []).join("\n").length,
		injected: 0,
	};
	const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
	console.log(`skill_manage: ${sum(ours)} chars ${JSON.stringify(ours)}`);
	console.log(`pi edit:      ${sum(theirs)} chars ${JSON.stringify(theirs)}`);
	const ratio = sum(ours) / sum(theirs);
	console.log(`ratio ${fmtRatio(ratio)}`);
	rows.push({
		figure: "prompt chars vs edit",
		value: `${fmtRatio(ratio)} (${sum(ours)} vs ${sum(theirs)})`,
		goal: "≤ 2.00×",
		met: ratio <= 2,
	});
}

async function benchStartup(): Promise<void> {
	heading("startup: pi -p (offline, faux model, one prompt) with the package installed vs without");
	const withPkg = createTempEnv({ prefix: "selfskills-bench-with-" });
	const without = createTempEnv({ prefix: "selfskills-bench-without-" });
	try {
		await piInstall(withPkg, REPO_ROOT);
		const run = async (env: typeof withPkg) => {
			const result = await runPiPrint({ env, prompt: "hello", steps: [{ text: "ok" }] });
			if (result.exitCode !== 0) throw new Error(`pi exited ${result.exitCode}: ${result.stderr}`);
			return result;
		};
		const first = await run(withPkg);
		if (!first.calls[0]?.systemPrompt.includes("<selfskills-rules>"))
			throw new Error("the package did not load in the installed env");
		await run(without);
		const a: number[] = [];
		const b: number[] = [];
		const n = reps(8, 3);
		for (let i = 0; i < n; i++) {
			a.push(await timeOnce(() => run(withPkg)));
			b.push(await timeOnce(() => run(without)));
		}
		const [w, wo] = [summarize(a), summarize(b)];
		console.log(`with package           ${fmtMs(w)}`);
		console.log(`without                ${fmtMs(wo)}   ratio ${fmtRatio(w.median / wo.median)}`);
		rows.push({
			figure: "pi startup with vs without",
			value: `${fmtRatio(w.median / wo.median)} (${w.median.toFixed(0)} vs ${wo.median.toFixed(0)} ms)`,
			goal: "≤ 1.15×",
			met: w.median / wo.median <= 1.15,
		});
	} finally {
		withPkg.cleanup();
		without.cleanup();
	}
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

async function main(): Promise<void> {
	const started = Date.now();
	console.log(`pi-selfskills bench — node ${process.version}, BENCH_SCALE=${process.env.BENCH_SCALE ?? "1"}`);
	if (wants("patch")) {
		await benchPatch(4 * 1024);
		await benchPatch(64 * 1024);
		await benchPatch(4 * 1024, true);
		await benchPatch(1000 * 1024, true);
	}
	if (wants("scale")) await benchScale();
	if (wants("follow")) await benchFollow();
	if (wants("freshness")) await benchFreshness();
	if (wants("create")) await benchCreate();
	if (wants("list")) {
		const small = await benchList(1000);
		const large = await benchList(10000);
		const oursGrowth = large.ours / small.ours;
		const piGrowth = large.pi / small.pi;
		console.log(
			`growth 1k→10k: skill_manage ${oursGrowth.toFixed(1)}×, loadSkills ${piGrowth.toFixed(1)}× (linear = 10×)`,
		);
		rows.push({
			figure: "list growth 1k→10k",
			value: `${oursGrowth.toFixed(1)}× (pi's loader ${piGrowth.toFixed(1)}×)`,
			goal: "≤ 10× (linear)",
			met: oursGrowth <= 10,
		});
		rows.push({
			figure: "list growth vs pi's growth",
			value: fmtRatio(oursGrowth / piGrowth),
			goal: "(info)",
			met: true,
		});
	}
	if (wants("operations")) await benchOperations();
	if (wants("backups")) await benchBackups();
	if (wants("prompt")) benchPromptCost();
	if (wants("startup")) await benchStartup();
	if (wants("sidedoors")) await benchSideDoors();
	heading(`summary (${((Date.now() - started) / 1000).toFixed(0)} s)`);
	printTable(rows);
}

await main();
