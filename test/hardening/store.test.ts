// The package's own store under attack and under race: another program writing a skill file in
// place at every filesystem call of a mutation (a backup must keep the bytes its name promises),
// skills whose backups could share a folder, symlinks planted inside the store, and its modes.
import { closeSync, ftruncateSync, lstatSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import type { FsOps } from "../../src/fs-ops.ts";
import { realFs } from "../../src/fs-ops.ts";
import { checkBackups, prepareEnv, SCENARIOS, walkFiles } from "./crash-support.ts";
import { createHarness, expectOk, textOf } from "./support.ts";

const OTHER = "# Written in place by another program\n";

/** realFs that calls `before(n)` ahead of its n-th call (counted over every operation). */
function steppedFs(before: (n: number) => void): FsOps {
	let n = 0;
	const wrapped: Record<string, unknown> = {};
	for (const key of Object.keys(realFs) as Array<keyof FsOps>) {
		const original = realFs[key] as (...a: unknown[]) => unknown;
		wrapped[key] = (...args: unknown[]) => {
			before(n++);
			return original(...args);
		};
	}
	return wrapped as unknown as FsOps;
}

/** What an editor that saves in place does: same inode, new bytes. */
function writeInPlace(path: string, text: string): void {
	try {
		if (!lstatSync(path).isFile()) return;
	} catch {
		return;
	}
	const fd = openSync(path, "r+");
	try {
		writeSync(fd, text, 0);
		ftruncateSync(fd, Buffer.byteLength(text));
	} finally {
		closeSync(fd);
	}
}

describe("hardening: the backup store", function () {
	this.timeout(900_000);

	describe("another program writing the target in place before every filesystem call", function () {
		let total = 0;
		after(() => console.log(`      total: ${total} in-place writes`));
		for (const scenario of SCENARIOS.filter((s) => s.old !== null)) {
			it(`${scenario.name}: every backup still holds the bytes its name promises, and the old version is kept`, async function () {
				let calls = 0;
				{
					const env = await prepareEnv(scenario);
					try {
						let armed = false;
						const tool = createHarness(env, steppedFs(() => armed && calls++));
						for (const read of scenario.reads) expectOk(await tool.call(read));
						armed = true;
						expectOk(await tool.call(scenario.action));
					} finally {
						env.cleanup();
					}
				}
				expect(calls).to.be.greaterThan(5);
				for (let k = 0; k < calls; k++) {
					const env = await prepareEnv(scenario);
					try {
						let armed = false;
						const tool = createHarness(env, steppedFs((n) => armed && n === k && writeInPlace(scenario.target(env), OTHER)));
						for (const read of scenario.reads) expectOk(await tool.call(read));
						armed = true;
						const r = await tool.call(scenario.action);
						const where = `${scenario.name}: in-place write before call #${k}`;
						checkBackups(env);
						const held = walkFiles(join(env.agentDir, "selfskills", "backups")).map((f) => readFileSync(f, "utf8"));
						// The bytes the call replaced are the old ones, or the other program's when it wrote before the call read the file.
						if (r.details.ok === true) expect(held.includes(scenario.old ?? "") || held.includes(OTHER), `${where}: landed without a backup of what it replaced`).to.equal(true);
						else expect([scenario.old, OTHER], `${where}: refused but changed the file: ${textOf(r)}`).to.include(readFileSync(scenario.target(env), "utf8"));
						total++;
					} finally {
						env.cleanup();
					}
				}
			});
		}
	});
});
