// `npm run profile:patch`: where one patch spends its time, per source file (a stage: discovery
// cache, gates, commit, locks...) and per function, from V8's CPU profile of repeated patches on
// tmpfs. Nothing in src knows it is profiled. PROFILE_SKILLS=10,10000 picks the installed counts,
// PROFILE_BYTES the size of the patched SKILL.md (default 4096). PROFILE_ACTION=first-list profiles
// a session's first list instead (a new session each call: the fingerprint walk and pi's loader),
// PROFILE_ACTION=batch one `operations` call patching every installed skill (up to 100).

import { readdirSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createSessionState } from "../../src/pipeline/session-state.ts";
import { executeSkillManage } from "../../src/face/tool.ts";
import { createBenchEnv, expectOk, MARK_A, writeSkill, type BenchEnv } from "./fixtures.ts";
import { fmtMs, summarize, timeOnce } from "./stats.ts";

interface ProfileNode {
	id: number;
	callFrame: { functionName: string; url: string; lineNumber: number };
	hitCount?: number;
	children?: number[];
}

interface Profile {
	nodes: ProfileNode[];
	startTime: number;
	endTime: number;
	samples?: number[];
	timeDeltas?: number[];
}

const REPO = fileURLToPath(new URL("../..", import.meta.url));

function where(url: string): string {
	if (url === "") return "(native / V8)";
	const path = url.startsWith("file://") ? fileURLToPath(url) : url;
	if (path.includes("/node_modules/"))
		return `node_modules/${path.split("/node_modules/").pop()?.split("/").slice(0, 2).join("/")}`;
	return path.startsWith(REPO) ? relative(REPO, path) : path.startsWith("node:") ? "node internals" : path;
}

/** Self time per key, from the sample deltas (microseconds). */
function selfTimes(profile: Profile, keyOf: (node: ProfileNode) => string): Map<string, number> {
	const byId = new Map(profile.nodes.map((n) => [n.id, n]));
	const out = new Map<string, number>();
	const samples = profile.samples ?? [];
	const deltas = profile.timeDeltas ?? [];
	for (let i = 0; i < samples.length; i++) {
		const node = byId.get(samples[i]);
		if (!node) continue;
		const key = keyOf(node);
		out.set(key, (out.get(key) ?? 0) + (deltas[i] ?? 0));
	}
	return out;
}

/**
 * Each sample charged to the nearest frame in src/ or a package (who asked for the lstat, the
 * readdir, the garbage): native and Node-internal frames pass their time up to their caller.
 */
function callerTimes(profile: Profile): Map<string, number> {
	const parent = new Map<number, number>();
	for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
	const byId = new Map(profile.nodes.map((n) => [n.id, n]));
	const label = (n: ProfileNode) =>
		`${n.callFrame.functionName || "(anonymous)"}  ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
	return selfTimes(profile, (node) => {
		let at: ProfileNode | undefined = node;
		while (at && /^\(native|^node internals/.test(where(at.callFrame.url))) at = byId.get(parent.get(at.id) ?? -1);
		return at ? label(at) : label(node);
	});
}

/**
 * Each sample charged to every src/ function on its stack, once (a stage's whole time: the gates,
 * the commit, the backup, the freshness check), so the stages of one call can be read top down.
 */
function stageTimes(profile: Profile): Map<string, number> {
	const parent = new Map<number, number>();
	for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
	const byId = new Map(profile.nodes.map((n) => [n.id, n]));
	const out = new Map<string, number>();
	const samples = profile.samples ?? [];
	const deltas = profile.timeDeltas ?? [];
	for (let i = 0; i < samples.length; i++) {
		const seen = new Set<string>();
		for (let at = byId.get(samples[i]); at; at = byId.get(parent.get(at.id) ?? -1)) {
			const file = where(at.callFrame.url);
			if (!file.startsWith("src/")) continue;
			seen.add(`${at.callFrame.functionName || "(anonymous)"}  ${file}:${at.callFrame.lineNumber + 1}`);
		}
		for (const key of seen) out.set(key, (out.get(key) ?? 0) + (deltas[i] ?? 0));
	}
	return out;
}

function printTop(title: string, times: Map<string, number>, calls: number, limit: number, sampled?: number): void {
	const total = sampled ?? [...times.values()].reduce((a, b) => a + b, 0);
	const what = sampled === undefined ? "self time" : "time";
	console.log(`\n${title} (${what} per call; total ${(total / 1000 / calls).toFixed(2)} ms)`);
	for (const [key, us] of [...times].sort((a, b) => b[1] - a[1]).slice(0, limit)) {
		console.log(
			`  ${(us / 1000 / calls).toFixed(3).padStart(8)} ms  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${key}`,
		);
	}
}

async function profileAt(count: number, session: Session): Promise<void> {
	const saved = process.env.TMPDIR;
	process.env.TMPDIR = "/dev/shm";
	let bench: BenchEnv;
	try {
		bench = createBenchEnv();
	} finally {
		if (saved === undefined) delete process.env.TMPDIR;
		else process.env.TMPDIR = saved;
	}
	try {
		for (let i = 0; i < count - 1; i++)
			writeSkill(bench.roots[i % bench.roots.length], `skill-${String(i).padStart(5, "0")}`, 400);
		writeSkill(bench.roots[0], "bench-patch", bytes);
		// Past the discovery cache's racy window, as skills on a real disk are.
		await new Promise((done) => setTimeout(done, 3_500));
		await expectOk(bench, { action: "read", skill: "bench-patch" });
		let current = MARK_A;
		let version = 0;
		const patch = () => {
			const from = current;
			current = `Marker: version ${++version}.`;
			return expectOk(bench, { action: "patch", skill: "bench-patch", old_string: from, new_string: current });
		};
		const firstList = process.env.PROFILE_ACTION === "first-list";
		const batch = process.env.PROFILE_ACTION === "batch";
		// A batch patches every installed skill (up to MAX_OPERATIONS) in one call, each read first.
		const batched = bench.roots.flatMap((root) => readdirSync(root)).slice(0, 100);
		if (batch) for (const skill of batched) await expectOk(bench, { action: "read", skill });
		let batchMark = MARK_A;
		const patchAll = () => {
			const from = batchMark;
			batchMark = `Marker: version ${++version}.`;
			return expectOk(bench, {
				action: "operations",
				operations: batched.map((skill) => ({ action: "patch", skill, old_string: from, new_string: batchMark })),
			});
		};
		// A session's first list stamps the tree after it returns: that walk is finished before the
		// next call is timed (it is the previous session's, not the next one's).
		let last = createSessionState();
		const run = firstList
			? () => {
					last = createSessionState();
					return executeSkillManage({ ...bench.deps, state: last }, { action: "list" }, bench.ctx);
				}
			: batch
				? patchAll
				: patch;
		const settle = () => last.discoveryCache.settled();
		for (let i = 0; i < (firstList ? 5 : 40); i++) {
			await run();
			await settle();
		}
		const calls = Number(process.env.PROFILE_CALLS ?? (firstList ? "20" : "200"));
		await session.post("Profiler.setSamplingInterval", { interval: 50 });
		await session.post("Profiler.start");
		const times: number[] = [];
		for (let i = 0; i < calls; i++) {
			times.push(await timeOnce(run));
			await settle();
		}
		const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: Profile };
		const what = firstList
			? "a session's first list"
			: batch
				? `a batch patching ${batched.length} skills`
				: `patch ${bytes / 1024} KiB`;
		console.log(
			`\n=== ${what}, ${count} skills installed, tmpfs: ${fmtMs(summarize(times))} (profiled, ${calls} calls)`,
		);
		printTop(
			"per source file",
			selfTimes(profile, (n) => where(n.callFrame.url)),
			calls,
			25,
		);
		printTop(
			"per function",
			selfTimes(
				profile,
				(n) =>
					`${n.callFrame.functionName || "(anonymous)"}  ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`,
			),
			calls,
			30,
		);
		printTop(
			"per calling function (native and Node-internal time charged to its caller)",
			callerTimes(profile),
			calls,
			25,
		);
		const sampled = (profile.timeDeltas ?? []).reduce((a, b) => a + b, 0);
		printTop("per stage (src/ functions, with all they call)", stageTimes(profile), calls, 40, sampled);
	} finally {
		bench.cleanup();
	}
}

const bytes = Number(process.env.PROFILE_BYTES ?? "4096");
const counts = (process.env.PROFILE_SKILLS ?? "10,10000").split(",").map((s) => Number(s.trim()));
const session = new Session();
session.connect();
await session.post("Profiler.enable");
for (const count of counts) await profileAt(count, session);
session.disconnect();
