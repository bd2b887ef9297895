// Injected faults on every filesystem call of single actions (patch, write, delete, restore):
// EACCES, ENOSPC, EIO, EPERM, EXDEV on open, write, fsync, fchmod, close, rename, link, unlink, mkdir,
// readFile, lstat, readdir, appendFile, one call at a time. After each: the target holds its old
// or new bytes (a refusal means old, unless it reports a failed rollback), every backup matches
// its hash and none is still a hard link of a live file, no temp file is left, and the host never throws.
import { expect } from "chai";
import type { FsOps } from "../../src/base/fs-ops.ts";
import { checkOldOrNew, prepareEnv, SCENARIOS, sharedBackups, tempFiles } from "./crash-support.ts";
import { errno, faultyFs } from "../support/faulty-fs.ts";
import { createHarness, expectOk, textOf } from "../support/harness.ts";

describe("hardening: every fault on every call", function () {
	this.timeout(900_000);
	let total = 0;
	after(() => console.log(`      total: ${total} injected faults`));
	const FAULTS: Array<{ op: keyof FsOps; code: string }> = [
		{ op: "open", code: "EACCES" },
		{ op: "write", code: "ENOSPC" },
		{ op: "fsync", code: "EIO" },
		{ op: "fchmod", code: "EPERM" },
		{ op: "close", code: "EIO" },
		{ op: "rename", code: "EPERM" },
		{ op: "rename", code: "EXDEV" },
		{ op: "link", code: "EXDEV" },
		{ op: "link", code: "EIO" },
		{ op: "unlink", code: "EACCES" },
		{ op: "mkdir", code: "ENOSPC" },
		{ op: "readFile", code: "EIO" },
		{ op: "lstat", code: "EACCES" },
		{ op: "readdir", code: "EIO" },
		{ op: "appendFile", code: "ENOSPC" },
	];
	for (const scenario of SCENARIOS) {
		it(`keeps ${scenario.name} whole under every fault on every call`, async function () {
			const counting = faultyFs({});
			{
				const env = await prepareEnv(scenario);
				try {
					const tool = createHarness(env, counting);
					for (const read of scenario.reads) expectOk(await tool.call(read));
					counting.log.length = 0;
					expectOk(await tool.call(scenario.action));
				} finally {
					env.cleanup();
				}
			}
			const counts = new Map<string, number>();
			for (const entry of counting.log) counts.set(entry.op, (counts.get(entry.op) ?? 0) + 1);
			const outcomes = new Map<string, number>();
			let cases = 0;
			for (const fault of FAULTS) {
				for (let k = 0; k < (counts.get(fault.op) ?? 0); k++) {
					const env = await prepareEnv(scenario);
					try {
						// Calls are counted from the mutation on, as in the counting run.
						let armed = false;
						let seen = 0;
						const fs = faultyFs({ [fault.op]: () => (armed && seen++ === k ? errno(fault.code) : undefined) });
						const tool = createHarness(env, fs);
						for (const read of scenario.reads) expectOk(await tool.call(read));
						armed = true;
						const r = await tool.call(scenario.action);
						const where = `${scenario.name}: ${fault.code} on ${fault.op} #${k}`;
						const fate = checkOldOrNew(env, scenario, where);
						const label = r.details.ok === true ? "ok" : String(r.details.code);
						if (r.details.ok !== true) {
							expect(["io_error", "conflict", "stale", "invalid_skill"], `${where}: ${textOf(r)}`).to.include(
								label,
							);
							const rolledBackFailed = JSON.stringify(r.details.fates ?? []).includes("rollback_failed");
							if (!rolledBackFailed)
								expect(fate, `${where}: refused but the new bytes stayed: ${textOf(r)}`).to.equal("old");
						} else expect(fate, where).to.equal("new");
						if (fault.op !== "unlink") expect(tempFiles(env), where).to.deep.equal([]);
						expect(sharedBackups(env), `${where}: a backup still shares its file`).to.deep.equal([]);
						outcomes.set(label, (outcomes.get(label) ?? 0) + 1);
						cases++;
					} finally {
						env.cleanup();
					}
				}
			}
			total += cases;
			console.log(
				`      ${scenario.name}: ${cases} faults -> ${[...outcomes].map(([k, v]) => `${k} ${v}`).join(", ")}`,
			);
		});
	}
});
