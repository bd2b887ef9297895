// A multi-file commit killed with SIGKILL at every point that changes the disk, in a real child
// process, then recovered the way the package does on its next start: every run must end
// all-old or all-new, never in between, and all-new only once the commit point is passed.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../src/base/fs-ops.ts";
import { recoverJournals } from "../../src/store/journal.ts";
import { getJournalDir } from "../../src/base/paths.ts";
import { expectedTree, snapshotTree, writeOldTree } from "../crash/scenario.ts";
import { sharedBackups } from "../hardening/crash-support.ts";
import { runChild, useCrashChild } from "./support.ts";

/** Runs `fn` over `items` with at most `limit` at a time, results in order. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
	const results: R[] = new Array(items.length);
	let next = 0;
	const worker = async () => {
		while (next < items.length) {
			const i = next++;
			results[i] = await fn(items[i]);
		}
	};
	await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
	return results;
}

type Side = "old" | "new";

const canonical = (tree: Record<string, string>) =>
	JSON.stringify(Object.entries(tree).sort(([a], [b]) => a.localeCompare(b)));

interface KillResult {
	readonly killAt: number;
	readonly killed: boolean;
	readonly side: Side | "torn";
	readonly restored: number;
	readonly tree: Record<string, string>;
	readonly journalsLeft: string[];
	/** Backups still linked to a skill file after a journal was recovered (none may be). */
	readonly sharedAfterRecovery: string[];
}

describe("operations: SIGKILL at every disk-changing call of a multi-file commit", function () {
	this.timeout(120_000);
	const getChild = useCrashChild();

	async function killAndRecover(name: string, killAt: number, extra: readonly string[]): Promise<KillResult> {
		const agentDir = join(getChild().root, name, String(killAt));
		writeOldTree(agentDir);
		const run = await runChild(getChild().script, [agentDir, String(killAt), ...extra]);
		const killed = run.signal === "SIGKILL";
		if (!killed) expect(run.code, `kill point ${killAt}: ${run.stdout}`).to.equal(0);
		const reports = recoverJournals(realFs, agentDir);
		const tree = snapshotTree(agentDir);
		const same = (side: Side) => canonical(tree) === canonical(expectedTree(side));
		const side = same("old") ? "old" : same("new") ? "new" : "torn";
		const journalDir = getJournalDir(agentDir);
		const journalsLeft = existsSync(journalDir) ? readdirSync(journalDir) : [];
		const sharedAfterRecovery = reports.length > 0 ? sharedBackups({ agentDir }) : [];
		rmSync(agentDir, { recursive: true, force: true });
		return {
			killAt,
			killed,
			side,
			restored: reports.reduce((n, r) => n + r.restored.length, 0),
			tree,
			journalsLeft,
			sharedAfterRecovery,
		};
	}

	/** Kills at every disk-changing call from `from` on (1: the whole commit), and once never. */
	async function sweep(
		name: string,
		extra: readonly string[],
		from = 1,
	): Promise<{ calls: number; results: KillResult[] }> {
		const dry = join(getChild().root, name, "count");
		writeOldTree(dry);
		const counted = await runChild(getChild().script, [dry, "0", ...extra]);
		const { calls, failedAt } = JSON.parse(counted.stdout) as { calls: number; failedAt?: number };
		const start = failedAt ?? from;
		expect(calls).to.be.greaterThan(20);
		const points = Array.from({ length: calls + 2 - start }, (_, i) => start + i); // calls + 1: never killed
		const results = await pool(points, availableParallelism(), (killAt) => killAndRecover(name, killAt, extra));
		for (const r of results) {
			expect(
				r.side,
				`kill point ${r.killAt}/${calls}: the tree is neither all-old nor all-new:\n` +
					JSON.stringify(r.tree, null, 1),
			).to.not.equal("torn");
			expect(r.journalsLeft, `kill point ${r.killAt}: journal left after recovery`).to.deep.equal([]);
			expect(
				r.sharedAfterRecovery,
				`kill point ${r.killAt}: a backup still linked to a file after recovery`,
			).to.deep.equal([]);
		}
		expect(results.filter((r) => r.killed)).to.have.length(points.length - 1);
		return { calls, results };
	}

	it("ends all-old before the commit point and all-new after it, at every one of the kill points", async function () {
		const { calls, results } = await sweep("commit", []);
		const sides = results.map((r) => r.side).join("");
		// old...old new...new: once the journal is gone (the commit point) every later kill is all-new.
		expect(sides).to.match(/^(old)+(new)+$/);
		expect(
			results.some((r) => r.side === "old" && r.restored > 0),
			"some kill points needed files put back",
		).to.equal(true);
		expect(results.at(-1)?.side).to.equal("new");
		const count = (keep: (r: (typeof results)[number]) => boolean) => results.filter(keep).length;
		console.log(
			`      ${calls + 1} kill points (${calls} disk-changing calls + a run to the end): ` +
				`${count((r) => r.side === "old")} all-old, ${count((r) => r.side === "new")} all-new, ` +
				`${count((r) => r.restored > 0)} needed recovery`,
		);
	});

	it("ends all-old at every kill point of a commit whose fourth write fails and is rolled back", async function () {
		const { results } = await sweep("rollback", ["beta/SKILL.md"]);
		expect(results.every((r) => r.side === "old")).to.equal(true);
		expect(
			results.some((r) => r.restored > 0),
			"some kill points fell inside the rollback",
		).to.equal(true);
		console.log(`      ${results.length} kill points from the failed rename through the rollback: all all-old`);
	});
});
