// `npm run profile:calls`: every synchronous filesystem call one skill_manage call makes, counted
// by kind (stat, lstat, realpath, open...) and, with PROFILE_TRACE=1, listed in order with its path,
// so the next round of performance work starts from the calls themselves and not from a guess.
// Each kind's time inside the calls shows the disk's share (fsync, mkdir, rename).
// PROFILE_ACTION=patch (default), create, write (an overwrite of a bundled file, then a read), list
// or first-list (a new session's: no discovery cached);
// PROFILE_SKILLS (10) installed, a 4 KiB SKILL.md patched, the tree aged past the discovery
// cache's racy window (as skills on a real disk are).
// Node's fs functions are wrapped before the package is loaded; nothing in src knows it is counted.

import { createRequire, syncBuiltinESMExports } from "node:module";
import { join } from "node:path";

type AnyFn = (...args: unknown[]) => unknown;
const fs = createRequire(import.meta.url)("node:fs") as Record<string, AnyFn & { native?: AnyFn }>;
const counts = new Map<string, number>();
/** Time spent inside each kind of call, in milliseconds (the disk's share of a call: fsync, mkdir...). */
const spent = new Map<string, number>();
const trace: string[] = [];
let counting = false;

function timed(kind: string, first: unknown, call: () => unknown): unknown {
	if (!counting) return call();
	const started = performance.now();
	try {
		return call();
	} finally {
		const ms = performance.now() - started;
		counts.set(kind, (counts.get(kind) ?? 0) + 1);
		spent.set(kind, (spent.get(kind) ?? 0) + ms);
		const path = typeof first === "string" ? first.replace(/.*\/selfskills-bench-[^/]*/, "~") : "(fd)";
		trace.push(`${ms.toFixed(3).padStart(7)} ms  ${kind} ${path}`);
	}
}

for (const name of Object.keys(fs)) {
	const original = fs[name];
	// readSync is the terminal's own input polling, not the package's.
	if (typeof original !== "function" || !name.endsWith("Sync") || name === "readSync") continue;
	const wrapped = function (this: unknown, ...args: unknown[]) {
		return timed(name, args[0], () => original.apply(this, args));
	} as AnyFn & { native?: AnyFn };
	const native = original.native;
	if (native)
		wrapped.native = function (this: unknown, ...args: unknown[]) {
			return timed(`${name}.native`, args[0], () => native.apply(this, args));
		};
	fs[name] = wrapped;
}
syncBuiltinESMExports();

const { mkdirSync, writeFileSync } = fs as unknown as typeof import("node:fs");
const { createBenchEnv, expectOk, MARK_A, writeSkill } = await import("./fixtures.ts");
const { createSessionState } = await import("../../src/pipeline/session-state.ts");
const { executeSkillManage } = await import("../../src/face/tool.ts");
// PROFILE_TMPFS=1: the tree on /dev/shm (CPU only); otherwise in the temp folder (the disk, here).
const where = process.env.PROFILE_TMPFS === "1" ? "tmpfs" : "temp folder";
const savedTmp = process.env.TMPDIR;
if (where === "tmpfs") process.env.TMPDIR = "/dev/shm";
const bench = createBenchEnv();
if (savedTmp === undefined) delete process.env.TMPDIR;
else process.env.TMPDIR = savedTmp;
try {
	const skills = Number(process.env.PROFILE_SKILLS ?? "10");
	for (let i = 0; i < skills; i++) writeSkill(bench.roots[i % bench.roots.length], `skill-${i}`, 400);
	writeSkill(bench.roots[0], "bench-patch", 4096);
	mkdirSync(join(bench.roots[0], "bench-patch", "notes"));
	writeFileSync(join(bench.roots[0], "bench-patch", "notes", "a.md"), "Note 0.\n");
	await new Promise((done) => setTimeout(done, 3_500));
	await expectOk(bench, { action: "read", skill: "bench-patch" });
	await expectOk(bench, { action: "read", skill: "bench-patch", file: "notes/a.md" });
	let current = MARK_A;
	const patch = async (to: string) => {
		await expectOk(bench, { action: "patch", skill: "bench-patch", old_string: current, new_string: to });
		current = to;
	};
	// Warm: the lock folder made, the backup folder made, the discovery cached.
	for (let i = 0; i < 3; i++) await patch(`Marker: warm ${i}.`);
	const action = process.env.PROFILE_ACTION ?? "patch";
	counting = true;
	if (action === "create")
		await expectOk(bench, {
			action: "create",
			name: "counted-skill",
			description: "Use when counting the filesystem calls of a create.",
			body: "# Counted\n\nOne step.\n",
		});
	else if (action === "write") {
		const note = { skill: "bench-patch", file: "notes/a.md" };
		await expectOk(bench, { action: "write", ...note, content: "Note 1.\n" });
		await expectOk(bench, { action: "read", ...note });
	} else if (action === "list") await expectOk(bench, { action: "list" });
	else if (action === "first-list") {
		const state = createSessionState();
		state.runtimeSkillFiles = bench.deps.state.runtimeSkillFiles;
		await executeSkillManage({ ...bench.deps, state }, { action: "list" }, bench.ctx);
	} else await patch("Marker: counted.");
	counting = false;
	const total = [...counts.values()].reduce((a, b) => a + b, 0);
	const ms = [...spent.values()].reduce((a, b) => a + b, 0);
	console.log(`${action}: ${total} synchronous fs calls, ${ms.toFixed(2)} ms inside them (${where})`);
	for (const [kind, n] of [...counts].sort((a, b) => (spent.get(b[0]) ?? 0) - (spent.get(a[0]) ?? 0)))
		console.log(`${String(n).padStart(6)}  ${(spent.get(kind) ?? 0).toFixed(3).padStart(8)} ms  ${kind}`);
	if (process.env.PROFILE_TRACE === "1") console.log(`\n${trace.join("\n")}`);
} finally {
	bench.cleanup();
}
