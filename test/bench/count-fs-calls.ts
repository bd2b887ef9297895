// `npm run profile:calls`: every synchronous filesystem call one skill_manage call makes, counted
// by kind (stat, lstat, realpath, open...) and, with PROFILE_TRACE=1, listed in order with its path,
// so the next round of performance work starts from the calls themselves and not from a guess.
// PROFILE_ACTION=patch (default), create or list; 10 skills installed, a 4 KiB SKILL.md patched,
// the tree aged past the discovery cache's racy window (as skills on a real disk are).
// Node's fs functions are wrapped before the package is loaded; nothing in src knows it is counted.

import { createRequire, syncBuiltinESMExports } from "node:module";

type AnyFn = (...args: unknown[]) => unknown;
const fs = createRequire(import.meta.url)("node:fs") as Record<string, AnyFn & { native?: AnyFn }>;
const counts = new Map<string, number>();
const trace: string[] = [];
let counting = false;

function note(kind: string, first: unknown): void {
	if (!counting) return;
	counts.set(kind, (counts.get(kind) ?? 0) + 1);
	trace.push(`${kind} ${typeof first === "string" ? first.replace(/.*\/selfskills-bench-[^/]*/, "~") : "(fd)"}`);
}

for (const name of Object.keys(fs)) {
	const original = fs[name];
	// readSync is the terminal's own input polling, not the package's.
	if (typeof original !== "function" || !name.endsWith("Sync") || name === "readSync") continue;
	const wrapped = function (this: unknown, ...args: unknown[]) {
		note(name, args[0]);
		return original.apply(this, args);
	} as AnyFn & { native?: AnyFn };
	const native = original.native;
	if (native)
		wrapped.native = function (this: unknown, ...args: unknown[]) {
			note(`${name}.native`, args[0]);
			return native.apply(this, args);
		};
	fs[name] = wrapped;
}
syncBuiltinESMExports();

const { createBenchEnv, expectOk, MARK_A, writeSkill } = await import("./fixtures.ts");
const bench = createBenchEnv();
try {
	for (let i = 0; i < 10; i++) writeSkill(bench.roots[i % bench.roots.length], `skill-${i}`, 400);
	writeSkill(bench.roots[0], "bench-patch", 4096);
	await new Promise((done) => setTimeout(done, 3_500));
	await expectOk(bench, { action: "read", skill: "bench-patch" });
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
	else if (action === "list") await expectOk(bench, { action: "list" });
	else await patch("Marker: counted.");
	counting = false;
	const total = [...counts.values()].reduce((a, b) => a + b, 0);
	console.log(`${action}: ${total} synchronous fs calls`);
	for (const [kind, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`${String(n).padStart(6)}  ${kind}`);
	if (process.env.PROFILE_TRACE === "1") console.log(`\n${trace.join("\n")}`);
} finally {
	bench.cleanup();
}
