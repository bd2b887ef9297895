// locks.ts through an injected FsOps: the keys, the owner record, its release and the take-over of
// a dead holder's lock all go through the `fs` of the lock options, and a fault in the owner record
// leaves the lock valid (only the timed stale rule could free it then).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readlinkSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import type { Refusal } from "../../../src/base/errors.ts";
import { realFs } from "../../../src/base/fs-ops.ts";
import { getLockPath, type LockOptions, queueKey, takeOver, withFileLocks } from "../../../src/base/locks.ts";
import { errno, faultyFs } from "../../support/faulty-fs.ts";
import { useTempEnv } from "../../support/temp-env.ts";

const readOr = <T>(read: () => T, fallback: T): T => {
	try {
		return read();
	} catch {
		return fallback;
	}
};

/** Plants the lock of `target` as a holder on this machine left it, whose process has exited. */
async function plantDeadHolder(target: string, options: LockOptions): Promise<string> {
	const gone = spawn("true");
	await new Promise((done) => gone.on("exit", done));
	const lockPath = getLockPath(target, options);
	mkdirSync(lockPath);
	const record = {
		pid: gone.pid,
		host: hostname(),
		boot: readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(), null),
		pidns: readOr(() => readlinkSync("/proc/self/ns/pid"), null),
		start: null,
	};
	writeFileSync(join(lockPath, "owner"), JSON.stringify(record));
	return lockPath;
}

describe("locks through an injected FsOps", function () {
	this.timeout(30_000);
	const getEnv = useTempEnv({ prefix: "selfskills-fs-seam-locks-" });
	let options: LockOptions;
	let target: string;
	beforeEach(function () {
		const env = getEnv();
		options = { env: { XDG_RUNTIME_DIR: env.runtimeDir } };
		target = join(env.projectDir, "SKILL.md");
		writeFileSync(target, "text\n");
	});

	it("writes the owner record, puts the folder's time back and releases through the fs", async function () {
		const fs = faultyFs();
		const lockPath = getLockPath(target, options);
		const owner = join(lockPath, "owner");
		let record = "";
		const outcome = await withFileLocks(
			[target],
			async () => {
				record = readFileSync(owner, "utf8");
				return "ran";
			},
			{ ...options, fs },
		);
		expect(outcome).to.equal("ran");
		expect(JSON.parse(record)).to.include({ pid: process.pid, host: hostname() });
		const calls = fs.log.map((call) => `${call.op} ${String(call.args[0])}`);
		expect(calls).to.include.members([
			`realpath ${target}`,
			`open ${owner}`,
			`utimes ${lockPath}`,
			`unlink ${owner}`,
		]);
		expect(existsSync(lockPath)).to.equal(false);
	});

	it("keeps a lock whose owner record the fs could not write (ENOSPC): the locked work still runs", async function () {
		const fs = faultyFs({ open: () => errno("ENOSPC", "no space left on device") });
		const owner = join(getLockPath(target, options), "owner");
		let hadRecord = true;
		const outcome = await withFileLocks(
			[target],
			async (guard) => {
				hadRecord = existsSync(owner);
				guard.assertHeld(target);
				return "ran";
			},
			{ ...options, fs },
		);
		expect(outcome).to.equal("ran");
		expect(hadRecord).to.equal(false);
	});

	it("keys a path whose realpath fails by its resolved path (queueKey) or its folder's real path (lock)", function () {
		const fs = faultyFs({ realpath: (call) => (call.args[0] === target ? errno("EACCES") : undefined) });
		expect(queueKey(target, fs)).to.equal(target);
		expect(getLockPath(target, { ...options, fs })).to.equal(getLockPath(target, options));
	});

	it("takes over a dead holder's lock by renaming it away through the fs", async function () {
		const lockPath = await plantDeadHolder(target, options);
		const fs = faultyFs();
		const outcome = await withFileLocks([target], async () => "locked", {
			...options,
			fs,
			stale: 600_000,
			wait: 10_000,
		});
		expect(outcome).to.equal("locked");
		const renames = fs.log.filter((call) => call.op === "rename");
		expect(renames.map((call) => call.args[0])).to.deep.equal([lockPath]);
		expect(String(renames[0].args[1])).to.match(/\.lock\.taken-\d+-[0-9a-f]{8}$/);
	});

	it("leaves the lock folder alone when the fs fails the rename of a take-over, and waits", async function () {
		const lockPath = await plantDeadHolder(target, options);
		const record = readFileSync(join(lockPath, "owner"), "utf8");
		const fs = faultyFs({ rename: () => errno("EACCES") });
		const outcome = await withFileLocks([target], async () => "locked", {
			...options,
			fs,
			stale: 600_000,
			wait: 300,
		});
		expect(outcome).to.have.property("code", "io_error");
		expect((outcome as Refusal).data.errno).to.equal("ELOCKED");
		expect(fs.log.some((call) => call.op === "rename" && call.args[0] === lockPath)).to.equal(true);
		expect(readFileSync(join(lockPath, "owner"), "utf8")).to.equal(record);
	});

	describe("the take-over mutex", function () {
		/** What takeOver compares a lock folder against: its inode and birth time when judged. */
		const identityOf = (path: string) => {
			const stat = statSync(path);
			return `${stat.ino}:${stat.birthtimeMs}`;
		};

		it("lets one taker at a time: another that judged the same dead holder takes nothing then", async function () {
			const lockPath = await plantDeadHolder(target, options);
			const judged = identityOf(lockPath);
			const record = readFileSync(join(lockPath, "owner"), "utf8");
			let second: boolean | undefined;
			let seenBySecond = "";
			// Right before the first taker renames the dead lock away, a second taker tries the same.
			const fs = faultyFs({
				rename: (call) => {
					if (call.args[0] !== lockPath || second !== undefined) return;
					second = takeOver(realFs, lockPath, judged);
					seenBySecond = readFileSync(join(lockPath, "owner"), "utf8");
				},
			});
			expect(takeOver(fs, lockPath, judged)).to.equal(true);
			expect(second).to.equal(false);
			expect(seenBySecond).to.equal(record);
			expect(existsSync(lockPath)).to.equal(false);
			expect(existsSync(`${lockPath}.taking`)).to.equal(false);
		});

		it("is respected while fresh, and cleared once a dead taker left it behind", async function () {
			const lockPath = await plantDeadHolder(target, options);
			const mutex = `${lockPath}.taking`;
			mkdirSync(mutex);
			const busy = await withFileLocks([target], async () => "locked", { ...options, stale: 600_000, wait: 300 });
			expect((busy as Refusal).data?.errno, JSON.stringify(busy)).to.equal("ELOCKED");
			expect(existsSync(join(lockPath, "owner"))).to.equal(true);
			const old = new Date(Date.now() - 60_000);
			utimesSync(mutex, old, old);
			const outcome = await withFileLocks([target], async () => "locked", {
				...options,
				stale: 600_000,
				wait: 10_000,
			});
			expect(outcome).to.equal("locked");
			expect(existsSync(mutex)).to.equal(false);
		});
	});
});
