// Crashes during single actions (patch, write, delete, restore): a real child process SIGKILLed
// right before each of its filesystem calls, and a cross-process lock taken away mid-write. After
// each: the target holds its old or its new bytes (never torn or empty), every backup matches its
// hash, leftover temp files are hidden, swept and never loaded as skills, and the host never
// throws. Every-call injected faults are in fault-sweep.test.ts.
import { readdirSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getLockDir } from "../../src/base/locks.ts";
import {
	checkOldOrNew,
	OLD_SKILL,
	prepareEnv,
	readSkill,
	runChild,
	SCENARIOS,
	sharedBackups,
	tempFiles,
} from "./crash-support.ts";
import { faultyFs } from "../support/faulty-fs.ts";
import { createHarness, expectOk, textOf } from "../support/harness.ts";

/** Up to `max` indexes spread over 0..count-1, always the first and the last. */
function spread(count: number, max: number): number[] {
	if (count <= max || process.env.HARDENING_FULL === "1") return Array.from({ length: count }, (_, i) => i);
	return [...new Set(Array.from({ length: max }, (_, i) => Math.round((i * (count - 1)) / (max - 1))))];
}

describe("hardening: crashes and faults", function () {
	this.timeout(900_000);
	const totals = { killPoints: 0, faults: 0 };
	after(() => console.log(`      totals: ${totals.killPoints} SIGKILL points, ${totals.faults} injected faults`));

	describe("a real child process SIGKILLed before each filesystem call", function () {
		for (const scenario of SCENARIOS) {
			it(`leaves ${scenario.name}'s target old or new, backups intact, temp files swept`, async function () {
				const probeEnv = await prepareEnv(scenario);
				let ops: string[];
				try {
					ops = (await runChild(probeEnv, scenario, -1)).ops;
					checkOldOrNew(probeEnv, scenario, "no kill");
				} finally {
					probeEnv.cleanup();
				}
				expect(ops.length).to.be.greaterThan(3);
				const points = spread(ops.length, 8);
				const fates = { old: 0, new: 0 };
				for (let i = 0; i < points.length; i += 2) {
					await Promise.all(
						points.slice(i, i + 2).map(async (point) => {
							const env = await prepareEnv(scenario);
							try {
								const { killed } = await runChild(env, scenario, point);
								expect(killed, `kill before op ${point} (${ops[point]})`).to.equal(true);
								fates[checkOldOrNew(env, scenario, `killed before ${ops[point]}`)]++;
								// A later call in a fresh session sees two skills, sweeps dead temp files and works.
								const tool = createHarness(env);
								const list = await tool.call({ action: "list" });
								expect(list.details.skills, textOf(list)).to.have.length(2);
								expect(
									tempFiles(env).every((f) => f.split("/").pop()?.startsWith(".")),
									tempFiles(env).join(","),
								).to.equal(true);
							} finally {
								env.cleanup();
							}
						}),
					);
				}
				totals.killPoints += points.length;
				console.log(
					`      ${scenario.name}: ${ops.length} fs calls, killed before ${points.length} of them: ` +
						`${fates.old} old, ${fates.new} new`,
				);
			});
		}

		it("sweeps a killed writer's temp file and takes over its stale lock on the next write", async function () {
			const scenario = SCENARIOS[0];
			const env = await prepareEnv(scenario);
			try {
				const probe = await prepareEnv(scenario);
				const all = (await runChild(probe, scenario, -1)).ops;
				probe.cleanup();
				const renameAt = all.findIndex((op) => op.startsWith("rename") && op.includes("SKILL.md.selfskills-tmp-"));
				expect(renameAt).to.be.greaterThan(0);
				const { killed } = await runChild(env, scenario, renameAt);
				expect(killed).to.equal(true);
				expect(tempFiles(env)).to.have.length(1);
				expect(readFileSync(scenario.target(env), "utf8")).to.equal(OLD_SKILL);
				const tool = createHarness(env);
				expectOk(await tool.call(readSkill));
				const started = Date.now();
				expectOk(
					await tool.call({
						action: "patch",
						skill: "crashy",
						old_string: "Check the page.",
						new_string: "Check the health page.",
					}),
				);
				console.log(
					`      after a kill before rename: next write waited ${Date.now() - started} ms for the stale lock; ` +
						`temp files left: ${tempFiles(env).length}`,
				);
				expect(tempFiles(env)).to.deep.equal([]);
				totals.killPoints++;
			} finally {
				env.cleanup();
			}
		});
	});

	describe("injected faults", function () {
		for (const takeover of [false, true]) {
			it(`aborts the write when its lock is ${takeover ? "taken over" : "removed"} mid-write`, async function () {
				for (const scenario of SCENARIOS) {
					const env = await prepareEnv(scenario);
					try {
						let armed = false;
						let stolen = 0;
						const locks = getLockDir();
						let lastOpen = "";
						const fs = faultyFs({
							open: ({ args }) => {
								lastOpen = String(args[0]);
							},
							// Taken away while the target's temp file is synced, after the backup was taken.
							fsync: () => {
								// A delete syncs only its backup.
								const targetTemp = lastOpen.startsWith(join(env.agentDir, "skills")) || scenario.next === null;
								if (!armed || !targetTemp || stolen > 0) return undefined;
								for (const name of readdirSync(locks)) {
									rmSync(join(locks, name), { recursive: true, force: true });
									if (takeover) mkdirSync(join(locks, name));
									stolen++;
								}
								return undefined;
							},
						});
						const tool = createHarness(env, fs);
						for (const read of scenario.reads) expectOk(await tool.call(read));
						armed = true;
						const r = await tool.call(scenario.action);
						expect(stolen, scenario.name).to.be.greaterThan(0);
						expect(r.details.code, `${scenario.name}: ${textOf(r)}`).to.equal("conflict");
						expect(textOf(r)).to.match(/lock was lost/);
						expect(checkOldOrNew(env, scenario, `${scenario.name} lock lost`)).to.equal("old");
						expect(
							sharedBackups(env),
							`${scenario.name}: a backup still linked to the file left in place`,
						).to.deep.equal([]);
						expect(tempFiles(env)).to.deep.equal([]);
						totals.faults++;
					} finally {
						env.cleanup();
					}
				}
			});
		}
	});
});
