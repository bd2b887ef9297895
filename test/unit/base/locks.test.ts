// locks.ts: one per-user lock folder for every agent dir (made private, planted folders refused),
// and a lock whose holder is proven dead on this host taken over at once, while a live holder,
// or one on another host before the stale time, keeps it. Real child processes hold the locks.
import { type ChildProcess, spawn } from "node:child_process";
import {
	chmodSync,
	chownSync,
	mkdirSync,
	readFileSync,
	readlinkSync,
	statSync,
	symlinkSync,
	utimesSync,
	writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { isRefusal, type Refusal } from "../../../src/base/errors.ts";
import { realFs } from "../../../src/base/fs-ops.ts";
import { getLockDir, getLockPath, withFileLocks, type LockOptions } from "../../../src/base/locks.ts";
import { REPO_ROOT } from "../../support/pi-line.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";

const HOLDER = join(REPO_ROOT, "test", "hardening", "fixtures", "lock-holder.ts");

const readOr = <T>(read: () => T, fallback: T): T => {
	try {
		return read();
	} catch {
		return fallback;
	}
};

/** The owner record a holder with `pid` on this machine writes (`start`: its /proc start time). */
function holderRecord(pid: number, overrides: Record<string, unknown> = {}): string {
	const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
	return JSON.stringify({
		pid,
		host: hostname(),
		boot: readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(), null),
		pidns: readOr(() => readlinkSync("/proc/self/ns/pid"), null),
		start: stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19],
		...overrides,
	});
}

/** A lock folder for `target` as another process left it, holding `record`. */
function plantLock(target: string, options: LockOptions, record: string): string {
	const lockPath = getLockPath(target, options);
	mkdirSync(lockPath);
	writeFileSync(join(lockPath, "owner"), record);
	return lockPath;
}

/** A lock-holder child, once it has printed `signal` ("held", or "ready" when it waits for GO_FILE). */
function startChild(env: Record<string, string>, signal = "held"): Promise<ChildProcess> {
	const child = spawn(process.execPath, ["--import", "tsx", HOLDER], {
		cwd: REPO_ROOT,
		env: { ...process.env, ...env },
		stdio: ["ignore", "pipe", "inherit"],
	});
	return new Promise((resolve, reject) => {
		child.stdout?.on("data", (chunk: Buffer) => {
			if (chunk.toString().includes(signal)) resolve(child);
		});
		child.on("error", reject);
		child.on("exit", (code) => reject(new Error(`holder exited (${code}) before holding`)));
	});
}

const exited = (child: ChildProcess): Promise<void> =>
	new Promise((resolve) =>
		child.exitCode !== null || child.signalCode !== null ? resolve() : child.on("exit", () => resolve()),
	);

describe("locks", function () {
	this.timeout(60_000);
	const getEnv = useTempEnv({ prefix: "selfskills-locks-" });
	let env: TempEnv;
	let runtime: string;
	let options: LockOptions;
	let target: string;
	const children: ChildProcess[] = [];
	beforeEach(function () {
		env = getEnv();
		runtime = env.runtimeDir;
		options = { env: { XDG_RUNTIME_DIR: runtime } };
		target = join(env.projectDir, "SKILL.md");
		writeFileSync(target, "text\n");
	});
	afterEach(async function () {
		for (const child of children.splice(0)) {
			child.kill("SIGKILL");
			await exited(child);
		}
	});

	const lockAgain = (extra: LockOptions = {}) =>
		withFileLocks([target], async () => "locked", { ...options, ...extra });

	describe("the lock folder", function () {
		it("is one private folder per user, whatever the agent dir, with one lock per file however named", function () {
			mkdirSync(join(env.projectDir, "real"));
			symlinkSync(join(env.projectDir, "real"), join(env.projectDir, "alias"));
			const dir = getLockDir(options);
			expect(dir).to.equal(join(runtime, "pi-selfskills", "locks"));
			expect(statSync(dir).mode & 0o777).to.equal(0o700);
			expect(statSync(join(runtime, "pi-selfskills")).mode & 0o777).to.equal(0o700);
			// A file not made yet is keyed by its folder's real path, so both names meet on one lock.
			expect(getLockPath(join(env.projectDir, "alias", "new.md"), options)).to.equal(
				getLockPath(join(env.projectDir, "real", "new.md"), options),
			);
			expect(getLockPath(target, options).startsWith(dir)).to.equal(true);
		});

		it("falls back to <tmpdir>/pi-selfskills-<uid> when XDG_RUNTIME_DIR is open to others", function () {
			chmodSync(runtime, 0o755);
			const tmp = join(env.root, "tmp");
			mkdirSync(tmp);
			expect(getLockDir({ env: { XDG_RUNTIME_DIR: runtime, TMPDIR: tmp } })).to.equal(
				join(tmp, `pi-selfskills-${process.getuid?.()}`, "locks"),
			);
		});

		for (const [what, plant, problem] of [
			["a symbolic link", (dir: string) => symlinkSync(join(env.root, "home"), dir), /is a symbolic link/],
			[
				"owned by another user",
				(dir: string) => {
					mkdirSync(dir, { mode: 0o700 });
					chownSync(dir, 12345, 12345);
				},
				/is owned by uid 12345, not by you/,
			],
			[
				"open to other users",
				(dir: string) => {
					mkdirSync(dir);
					chmodSync(dir, 0o777);
				},
				/is open to other users \(mode 0777\)/,
			],
			["a file", (dir: string) => writeFileSync(dir, ""), /is not a folder/],
		] as const) {
			it(`is refused with io_error naming it when a planted one is ${what}, before the work`, async function () {
				const tmp = join(env.root, "tmp");
				mkdirSync(tmp);
				const planted = join(tmp, `pi-selfskills-${process.getuid?.()}`);
				plant(planted);
				let ran = false;
				const outcome = await withFileLocks([target], async () => (ran = true), { env: { TMPDIR: tmp } });
				expect(ran).to.equal(false);
				expect(isRefusal(outcome), JSON.stringify(outcome)).to.equal(true);
				const refusal = outcome as Refusal;
				expect(refusal.code).to.equal("io_error");
				expect(refusal.message).to.match(/^io_error: the lock folder /);
				expect(refusal.message).to.include(planted);
				expect(refusal.message).to.match(problem);
				expect(refusal.data.folder).to.equal(planted);
			});
		}

		it("is refused with io_error naming the folder when you cannot write it (injected EACCES)", async function () {
			const denied = {
				...realFs,
				access: () => {
					throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
				},
			};
			const outcome = await withFileLocks([target], async () => "ran", { ...options, fs: denied });
			expect(isRefusal(outcome)).to.equal(true);
			const refusal = outcome as Refusal;
			expect(refusal.message).to.match(/^io_error: the lock folder \S+ is not writable by you;/);
			expect(refusal.data).to.include({ errno: "EACCES" });
			// XDG_RUNTIME_DIR failed the same check, so the refused folder is the tmpdir fallback.
			expect(refusal.data.folder).to.match(/pi-selfskills-\d+$/);
		});
	});

	describe("a held lock", function () {
		it("is taken over at once when its holder was SIGKILLed, without waiting for the stale time", async function () {
			const child = await startChild({ TARGET: target, XDG_RUNTIME_DIR: runtime });
			children.push(child);
			child.kill("SIGKILL");
			await exited(child);
			// A stale time far beyond the wait: only the dead-holder rule can free it in time.
			expect(await lockAgain({ stale: 600_000, wait: 15_000 })).to.equal("locked");
		});

		it("is taken over when its pid now belongs to another process (another start time)", async function () {
			const sleeper = spawn("sleep", ["30"]);
			children.push(sleeper);
			plantLock(target, options, holderRecord(sleeper.pid ?? 0, { start: "1" }));
			expect(await lockAgain({ stale: 600_000, wait: 15_000 })).to.equal("locked");
		});

		it("goes to exactly one of several processes racing to take it over from a dead holder", async function () {
			const gone = spawn("true");
			await exited(gone);
			const sleeper = spawn("sleep", ["30"]);
			children.push(sleeper);
			// The record of a live process, with the pid of one that has exited.
			plantLock(target, options, holderRecord(sleeper.pid ?? 0, { pid: gone.pid }));
			writeFileSync(target, "");
			const go = join(env.root, "go");
			const racers = await Promise.all(
				Array.from({ length: 3 }, () =>
					startChild({ TARGET: target, HOLD_MS: "150", XDG_RUNTIME_DIR: runtime, GO_FILE: go }, "ready"),
				),
			);
			children.push(...racers);
			writeFileSync(go, "");
			await Promise.all(racers.map(exited));
			// Each racer read, waited and wrote back under the lock: an overlap would lose a line.
			expect(readFileSync(target, "utf8")).to.equal("- holder\n".repeat(3));
		});

		it("is kept by a live holder on this host, even past the stale time", async function () {
			const sleeper = spawn("sleep", ["30"]);
			children.push(sleeper);
			const lockPath = plantLock(target, options, holderRecord(sleeper.pid ?? 0));
			const old = new Date(Date.now() - 3_600_000);
			utimesSync(lockPath, old, old);
			const outcome = await lockAgain({ stale: 2_000, wait: 400 });
			expect(isRefusal(outcome) && outcome.code, JSON.stringify(outcome)).to.equal("io_error");
			expect((outcome as Refusal).data.errno).to.equal("ELOCKED");
			expect(readFileSync(join(lockPath, "owner"), "utf8")).to.include(`"pid":${sleeper.pid}`);
		});

		it("of another host waits for the stale time, then is taken over", async function () {
			const lockPath = plantLock(
				target,
				options,
				holderRecord(process.pid, { host: "elsewhere.example", pid: 4_000_000 }),
			);
			const busy = await lockAgain({ stale: 2_000, wait: 300 });
			expect(isRefusal(busy) && busy.data.errno, JSON.stringify(busy)).to.equal("ELOCKED");
			const old = new Date(Date.now() - 60_000);
			utimesSync(lockPath, old, old);
			expect(await lockAgain({ stale: 2_000, wait: 5_000 })).to.equal("locked");
		});

		it("stays held past proper-lockfile's update interval (owner record writes do not lose it)", async function () {
			const outcome = await withFileLocks(
				[target],
				async (guard) => {
					await new Promise((resolve) => setTimeout(resolve, 2_600));
					guard.assertHeld(target);
					return "held";
				},
				options,
			);
			expect(outcome).to.equal("held");
		});

		it("is released with its owner record: the next process takes it at once", async function () {
			expect(await lockAgain()).to.equal("locked");
			expect(readOr(() => statSync(getLockPath(target, options)), undefined)).to.equal(undefined);
		});
	});
});
