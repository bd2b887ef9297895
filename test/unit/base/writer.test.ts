// writer.ts with faults injected through FsOps, the way write-file-atomic's own tests do it: the
// target stays untouched, no temp file is left behind, and the first error is the one thrown; the
// private store's folders, modes and symlink refusal.
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs, type FsOps } from "../../../src/base/fs-ops.ts";
import {
	appendPrivate,
	assertNoLinkBelow,
	createPrivateDirs,
	discardWrite,
	existingMode,
	finishWrite,
	mkdirPrivate,
	prepareWrite,
	removeFileDurable,
	StoreLinkError,
	sweepTempFiles,
	SymlinkTargetError,
	syncDirs,
	syncWrites,
	TEMP_MARK,
	writeFileAtomic,
	type PreparedWrite,
} from "../../../src/base/writer.ts";
import { errno, faultyFs } from "../../support/faulty-fs.ts";
import { useTempEnv } from "../../support/temp-env.ts";

const fail =
	(code: string, what = code) =>
	() => {
		throw Object.assign(new Error(`injected ${what}`), { code });
	};

function withFaults(overrides: Partial<FsOps>): FsOps {
	return { ...realFs, ...overrides };
}

async function rejection(promise: Promise<unknown>): Promise<NodeJS.ErrnoException> {
	try {
		await promise;
	} catch (error) {
		return error as NodeJS.ErrnoException;
	}
	throw new Error("expected a rejection");
}

function thrown(fn: () => void): NodeJS.ErrnoException {
	try {
		fn();
	} catch (error) {
		return error as NodeJS.ErrnoException;
	}
	throw new Error("expected an error");
}

describe("writer", function () {
	const getEnv = useTempEnv();
	const setup = () => {
		const dir = getEnv().projectDir;
		const target = join(dir, "SKILL.md");
		writeFileSync(target, "original\n");
		return { dir, target };
	};
	const expectUntouched = (dir: string, target: string) => {
		expect(readFileSync(target, "utf8")).to.equal("original\n");
		expect(readdirSync(dir)).to.deep.equal(["SKILL.md"]);
	};

	it("replaces the file's bytes and leaves no temp file", function () {
		const { dir, target } = setup();
		writeFileAtomic(realFs, target, Buffer.from("new\r\n"));
		expect(readFileSync(target, "utf8")).to.equal("new\r\n");
		expect(readdirSync(dir)).to.deep.equal(["SKILL.md"]);
	});

	const faults: Array<[string, Partial<FsOps>, string]> = [
		["the rename fails", { rename: fail("EXDEV") }, "EXDEV"],
		["a write hits ENOSPC", { write: fail("ENOSPC") }, "ENOSPC"],
		["fsync of the temp file fails with EIO", { fsync: fail("EIO") }, "EIO"],
		["fchmod fails", { fchmod: fail("EPERM") }, "EPERM"],
		["opening the temp file fails with EACCES", { open: fail("EACCES") }, "EACCES"],
		["a write makes no progress (zero bytes written)", { write: () => 0 }, "EIO"],
	];
	for (const [what, overrides, code] of faults) {
		it(`leaves the target untouched and no temp file when ${what}`, function () {
			const { dir, target } = setup();
			const error = thrown(() => writeFileAtomic(withFaults(overrides), target, Buffer.from("new content\n")));
			expect(error.code).to.equal(code);
			expectUntouched(dir, target);
		});
	}

	it("completes a write the kernel takes in short pieces", function () {
		const { target } = setup();
		const trickle = withFaults({
			write: (fd, bytes, offset) => realFs.write(fd, bytes.subarray(0, Math.min(bytes.length, offset + 3)), offset),
		});
		const content = Buffer.from("a longer text that needs many short writes\n");
		writeFileAtomic(trickle, target, content);
		expect(readFileSync(target).equals(content)).to.equal(true);
	});

	it("throws the first error, not one from closing or cleaning up after it", function () {
		const { dir, target } = setup();
		let temp = "";
		const faulty = withFaults({
			open: (path, flags, mode) => {
				temp = path;
				return realFs.open(path, flags, mode);
			},
			write: fail("ENOSPC"),
			close: (fd) => {
				realFs.close(fd);
				fail("EIO", "close")();
			},
			unlink: (path) => {
				realFs.unlink(path);
				fail("EPERM", "unlink")();
			},
		});
		const error = thrown(() => writeFileAtomic(faulty, target, Buffer.from("new\n")));
		expect(error.code).to.equal("ENOSPC");
		expect(temp).to.contain(TEMP_MARK);
		expectUntouched(dir, target);
	});

	it("throws the rename error even when removing the temp file fails too", function () {
		const { target } = setup();
		const error = thrown(() =>
			writeFileAtomic(withFaults({ rename: fail("EACCES"), unlink: fail("EBUSY") }), target, Buffer.from("new\n")),
		);
		expect(error.code).to.equal("EACCES");
		expect(readFileSync(target, "utf8")).to.equal("original\n");
	});

	it("leaves the target untouched until a prepared write is finished, and no temp file once discarded", function () {
		const { dir, target } = setup();
		const kept = prepareWrite(realFs, target, Buffer.from("new\n"));
		const dropped = prepareWrite(realFs, target, Buffer.from("other\n"));
		expect(readFileSync(target, "utf8")).to.equal("original\n");
		finishWrite(realFs, kept);
		discardWrite(realFs, dropped);
		expect(readFileSync(target, "utf8")).to.equal("new\n");
		expect(readdirSync(dir)).to.deep.equal(["SKILL.md"]);
	});

	describe("syncs issued at once", function () {
		it("syncs deferred writes together, and never renames one before its sync", async function () {
			const { dir, target } = setup();
			const other = join(dir, "other.md");
			const writes = [
				prepareWrite(realFs, target, Buffer.from("new\n"), { deferSync: true }),
				undefined,
				prepareWrite(realFs, other, Buffer.from("other\n"), { deferSync: true }),
			];
			expect(thrown(() => finishWrite(realFs, writes[0] as PreparedWrite)).message).to.include("not synced yet");
			expect(readFileSync(target, "utf8")).to.equal("original\n");
			const closed: number[] = [];
			await syncWrites(
				{
					...realFs,
					close: (fd) => {
						closed.push(fd);
						return realFs.close(fd);
					},
				},
				writes,
			);
			expect(closed, "each temp file closed once synced").to.have.length(2);
			for (const write of writes) if (write) finishWrite(realFs, write);
			expect(readFileSync(target, "utf8")).to.equal("new\n");
			expect(readFileSync(other, "utf8")).to.equal("other\n");
			expect(readdirSync(dir).sort()).to.deep.equal(["SKILL.md", "other.md"]);
		});

		it("closes every file once all syncs settled and throws the first error; no temp file is left", async () => {
			const { dir, target } = setup();
			const events: string[] = [];
			const fs = withFaults({
				fsyncAll: async (fds) => {
					events.push("sync begins");
					await realFs.fsyncAll(fds);
					events.push("sync settled");
					throw errno("EIO", "injected");
				},
				close: (fd) => {
					events.push("close");
					return realFs.close(fd);
				},
			});
			const writes = [1, 2].map((n) => prepareWrite(fs, target, Buffer.from(`v${n}\n`), { deferSync: true }));
			expect((await rejection(syncWrites(fs, writes))).code).to.equal("EIO");
			expect(events).to.deep.equal(["sync begins", "sync settled", "close", "close"]);
			for (const write of writes) discardWrite(fs, write);
			expect(events, "never closed twice").to.have.length(4);
			expect(readFileSync(target, "utf8")).to.equal("original\n");
			expect(readdirSync(dir)).to.deep.equal(["SKILL.md"]);
			expect((await rejection(syncDirs(fs, [dir, dir]))).code).to.equal("EIO");
			expect(events.slice(4)).to.deep.equal(["sync begins", "sync settled", "close", "close"]);
		});

		it("realFs.fsyncAll rejects with the first failing fd's error once every sync has settled", async function () {
			const { target } = setup();
			const fd = realFs.open(target, 0, 0);
			try {
				expect((await rejection(realFs.fsyncAll([fd, 2 ** 30, fd]))).code).to.equal("EBADF");
				await realFs.fsyncAll([fd, fd]);
			} finally {
				realFs.close(fd);
			}
		});

		it("counts and fails in the fault-injecting fs as the same fsyncs one after the other", async function () {
			const { target } = setup();
			const fd = realFs.open(target, 0, 0);
			try {
				const fs = faultyFs({ fsync: ({ index }) => (index === 1 ? errno("EIO") : undefined) });
				expect((await rejection(fs.fsyncAll([fd, fd, fd]))).code).to.equal("EIO");
				// The third is never made, as it would not be after the second failed.
				expect(fs.log.map((c) => [c.op, c.index, c.args[0]])).to.deep.equal([
					["fsync", 0, fd],
					["fsync", 1, fd],
				]);
			} finally {
				realFs.close(fd);
			}
		});
	});

	it("does not replace the target when beforeRename throws", function () {
		const { dir, target } = setup();
		const error = thrown(() =>
			writeFileAtomic(realFs, target, Buffer.from("new\n"), { beforeRename: fail("ECOMPROMISED") }),
		);
		expect(error.code).to.equal("ECOMPROMISED");
		expectUntouched(dir, target);
	});

	it("creates a new file with mode 0644 whatever the umask", function () {
		const { dir } = setup();
		const previous = process.umask(0o077);
		try {
			writeFileAtomic(realFs, join(dir, "new.md"), Buffer.from("x"));
		} finally {
			process.umask(previous);
		}
		expect(statSync(join(dir, "new.md")).mode & 0o7777).to.equal(0o644);
	});

	for (const mode of [0o755, 0o700, 0o644, 0o600, 0o640]) {
		it(`keeps mode ${mode.toString(8)} on an overwrite`, function () {
			const { target } = setup();
			chmodSync(target, mode);
			writeFileAtomic(realFs, target, Buffer.from("#!/bin/sh\necho new\n"));
			expect(statSync(target).mode & 0o7777).to.equal(mode);
		});
	}

	it("never makes a non-executable file executable, even when the content starts with #!", function () {
		const { target } = setup();
		writeFileAtomic(realFs, target, Buffer.from("#!/bin/sh\n"));
		expect(statSync(target).mode & 0o111).to.equal(0);
	});

	it("refuses a symlinked target and leaves the link and what it points at untouched", function () {
		const { dir, target } = setup();
		const link = join(dir, "link.md");
		symlinkSync(target, link);
		const error = thrown(() => writeFileAtomic(realFs, link, Buffer.from("through the link\n")));
		expect(error).to.be.instanceOf(SymlinkTargetError);
		expect(error.code).to.equal("ESYMLINK");
		expect(readFileSync(target, "utf8")).to.equal("original\n");
		expect(readdirSync(dir).sort()).to.deep.equal(["SKILL.md", "link.md"]);
	});

	it("refuses a dangling symlink as a target instead of creating the file it points at", function () {
		const { dir } = setup();
		const link = join(dir, "dangling.md");
		symlinkSync(join(getEnv().root, "nowhere.md"), link);
		expect(thrown(() => writeFileAtomic(realFs, link, Buffer.from("x"))).code).to.equal("ESYMLINK");
		expect(() => statSync(join(getEnv().root, "nowhere.md"))).to.throw();
	});

	it("reports the mode of an existing file and nothing for a missing one", function () {
		const { dir, target } = setup();
		chmodSync(target, 0o640);
		expect(existingMode(realFs, target)).to.equal(0o640);
		expect(existingMode(realFs, join(dir, "missing.md"))).to.equal(undefined);
	});

	it("removes a file but refuses to remove through a symlink", function () {
		const { dir, target } = setup();
		symlinkSync(target, join(dir, "link.md"));
		expect(thrown(() => removeFileDurable(realFs, join(dir, "link.md"))).code).to.equal("ESYMLINK");
		removeFileDurable(realFs, target);
		expect(readdirSync(dir)).to.deep.equal(["link.md"]);
	});

	it("sweeps temp files left by a dead process and keeps those of a live one", function () {
		const { dir } = setup();
		const dead = `.SKILL.md${TEMP_MARK}999999999-0abc`;
		const alive = `.SKILL.md${TEMP_MARK}${process.pid}-0abc`;
		writeFileSync(join(dir, dead), "x");
		writeFileSync(join(dir, alive), "x");
		expect(sweepTempFiles(realFs, dir)).to.deep.equal([dead]);
		expect(readdirSync(dir).sort()).to.deep.equal([alive, "SKILL.md"].sort());
	});

	describe("the private store", function () {
		const base = () => getEnv().agentDir;

		it("checks each folder once per operation, and a link planted before the next operation is refused", function () {
			mkdirSync(join(base(), "selfskills", "backups", "a"), { recursive: true, mode: 0o700 });
			mkdirSync(join(base(), "selfskills", "backups", "b"), { mode: 0o700 });
			const lstats: string[] = [];
			const fs = withFaults({
				lstat: (path) => {
					lstats.push(path);
					return realFs.lstat(path);
				},
			});
			const dirs = createPrivateDirs(fs, base());
			dirs.ensure(join(base(), "selfskills", "backups", "a"));
			dirs.ensure(join(base(), "selfskills", "backups", "b"));
			dirs.ensure(join(base(), "selfskills", "backups", "a"));
			expect(lstats.sort()).to.deep.equal(
				["selfskills", "selfskills/backups", "selfskills/backups/a", "selfskills/backups/b"]
					.map((step) => join(base(), ...step.split("/")))
					.sort(),
			);
			const outside = join(getEnv().root, "outside");
			mkdirSync(outside);
			rmSync(join(base(), "selfskills", "backups", "a"), { recursive: true });
			symlinkSync(outside, join(base(), "selfskills", "backups", "a"));
			const next = createPrivateDirs(realFs, base());
			expect(thrown(() => next.ensure(join(base(), "selfskills", "backups", "a", "x")))).to.be.instanceOf(
				StoreLinkError,
			);
			expect(readdirSync(outside)).to.deep.equal([]);
		});

		it("makes missing folders 0700 and sets older looser ones to 0700, below the base only", function () {
			chmodSync(base(), 0o755);
			mkdirSync(join(base(), "selfskills"), { mode: 0o755 });
			chmodSync(join(base(), "selfskills"), 0o755);
			mkdirPrivate(realFs, base(), join(base(), "selfskills", "backups", "a@1"));
			for (const dir of ["selfskills", "selfskills/backups", "selfskills/backups/a@1"])
				expect((statSync(join(base(), dir)).mode & 0o777).toString(8), dir).to.equal("700");
			expect(statSync(base()).mode & 0o777, "the base is the user's own").to.equal(0o755);
		});

		it("refuses a symlink at any step below the base, naming it, and makes nothing behind it", function () {
			const outside = join(getEnv().root, "outside");
			mkdirSync(outside);
			symlinkSync(outside, join(base(), "selfskills"));
			const error = thrown(() => mkdirPrivate(realFs, base(), join(base(), "selfskills", "backups")));
			expect(error).to.be.instanceOf(StoreLinkError);
			expect([error.code, (error as StoreLinkError).path]).to.deep.equal(["ESYMLINK", join(base(), "selfskills")]);
			expect(error.message).to.contain(`rm ${join(base(), "selfskills")}`);
			expect(readdirSync(outside)).to.deep.equal([]);
			expect(() => assertNoLinkBelow(realFs, base(), join(base(), "selfskills", "x"))).to.throw(StoreLinkError);
		});

		it("appends owner-only, tightens an older 0644 log, and never appends through a symlinked log", function () {
			const log = join(base(), "selfskills", "audit.jsonl");
			mkdirSync(join(base(), "selfskills"));
			writeFileSync(log, "old\n", { mode: 0o644 });
			chmodSync(log, 0o644);
			appendPrivate(realFs, base(), log, "new\n");
			expect([readFileSync(log, "utf8"), statSync(log).mode & 0o777]).to.deep.equal(["old\nnew\n", 0o600]);
			const outside = join(getEnv().root, "outside.jsonl");
			writeFileSync(outside, "");
			const planted = join(base(), "selfskills", "planted.jsonl");
			symlinkSync(outside, planted);
			expect(thrown(() => appendPrivate(realFs, base(), planted, "x\n")).code).to.equal("ESYMLINK");
			expect(readFileSync(outside, "utf8")).to.equal("");
		});

		it("keeps the first error of an append: a failing write closes the log and throws that error", function () {
			const log = join(base(), "selfskills", "audit.jsonl");
			let closed = 0;
			const close = (fd: number) => {
				closed++;
				realFs.close(fd);
			};
			const fs = withFaults({ write: fail("ENOSPC"), close });
			expect(thrown(() => appendPrivate(fs, base(), log, "x\n")).code).to.equal("ENOSPC");
			expect(closed).to.be.greaterThan(0);
		});

		it("refuses an atomic write into a symlinked folder below the store base, before any temp file", function () {
			const outside = join(getEnv().root, "outside");
			mkdirSync(outside);
			mkdirSync(join(base(), "selfskills"));
			symlinkSync(outside, join(base(), "selfskills", "backups"));
			const error = thrown(() =>
				writeFileAtomic(realFs, join(base(), "selfskills", "backups", "b.md"), Buffer.from("x"), {
					mode: 0o600,
					storeBase: base(),
				}),
			);
			expect(error).to.be.instanceOf(StoreLinkError);
			expect(readdirSync(outside)).to.deep.equal([]);
		});
	});
});
