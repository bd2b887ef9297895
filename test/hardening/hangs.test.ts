// What could freeze pi's event loop: a FIFO (or socket, or device) in a skill folder, which blocks
// any reader forever, and arguments whose handling grows faster than their size (a long old_string
// that is not found, a pattern V8's indexOf is quadratic on, a million matches, a replace_all that
// multiplies the file). Each must end at once with its refusal. A FIFO test keeps a writer waiting,
// so a regression reads EOF and fails instead of hanging the suite.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { expect } from "chai";
import { NotRegularFileError, readRegularFile } from "../../src/base/fs-ops.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { skillText, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, textOf, type Harness, type Result } from "../support/harness.ts";

const MIB = 1024 * 1024;

/** CPU milliseconds (user + system) the call took in this process. */
async function cpuOf(run: () => Promise<Result>): Promise<{ ms: number; result: Result }> {
	const start = process.cpuUsage();
	const result = await run();
	const used = process.cpuUsage(start);
	return { ms: (used.user + used.system) / 1000, result };
}

/** A writer that opens the FIFO again and again: any reader that opens it gets EOF instead of blocking. */
function unblocker(fifo: string): ChildProcess {
	return spawn("sh", ["-c", 'while :; do : > "$0"; done', fifo], { stdio: "ignore" });
}

describe("hardening: hangs", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-hangs-" });
	let env: TempEnv;
	let tool: Harness;
	let dir: string;
	beforeEach(function () {
		env = getEnv();
		dir = join(env.agentDir, "skills", "deploy");
		writeSkill(join(env.agentDir, "skills"), "deploy");
		tool = createHarness(env);
	});

	describe("a FIFO, socket or device in a skill folder", function () {
		let writers: ChildProcess[] = [];
		let server: Server | undefined;
		afterEach(function () {
			for (const writer of writers) writer.kill("SIGKILL");
			server?.close();
			writers = [];
			server = undefined;
		});

		it("is never opened: list answers, and every action on it refuses at once with bad_file_path", async function () {
			this.timeout(20_000);
			const fifos = [join(dir, "p.md"), join(dir, "references", "q.md")];
			mkdirSync(join(dir, "references"));
			execFileSync("mkfifo", fifos);
			writers = fifos.map(unblocker);
			const started = Date.now();
			// The discovery cache stamps every .md of a skill folder, and hashes one that changed just now.
			const list = await tool.call({ action: "list" });
			expectOk(list);
			expect(textOf(list)).to.contain("deploy");
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			for (const args of [
				{ action: "read", skill: "deploy", file: "p.md" },
				{ action: "read", skill: "deploy", file: "references/q.md" },
				{ action: "patch", skill: "deploy", file: "p.md", old_string: "a", new_string: "b" },
				{ action: "write", skill: "deploy", file: "p.md", content: "text\n" },
				{ action: "delete", skill: "deploy", file: "p.md" },
				{
					action: "operations",
					operations: [{ action: "write", skill: "deploy", file: "p.md", content: "x\n" }],
				},
			]) {
				const r = await tool.call(args);
				expectRefused(r, "bad_file_path");
				expect(textOf(r), JSON.stringify(args)).to.contain("FIFO");
			}
			// A whole-skill delete is refused up front, naming the pipes, before any snapshot is taken.
			const whole = await tool.call({ action: "delete", skill: "deploy" });
			expectRefused(whole, "bad_file_path");
			expect(textOf(whole)).to.contain("p.md, references/q.md").and.contain("FIFO");
			expect(existsSync(join(dir, "SKILL.md"))).to.equal(true);
			expect(Date.now() - started, "took so long that something waited on the pipe").to.be.below(10_000);
		});

		it("refuses a socket and a device the same way", async function () {
			server = createServer();
			const socket = join(dir, "s.md");
			await new Promise<void>((done) => server?.listen(socket, done));
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			expect(textOf(await tool.call({ action: "read", skill: "deploy", file: "s.md" }))).to.match(
				/^bad_file_path: .*a socket/,
			);
			expectRefused(
				await tool.call({ action: "write", skill: "deploy", file: "s.md", content: "x\n" }),
				"bad_file_path",
			);
			try {
				execFileSync("mknod", [join(dir, "zero.md"), "c", "1", "5"], { stdio: "ignore" });
			} catch {
				return; // No mknod here.
			}
			// /dev/zero never ends: read whole, it would fill memory.
			expect(textOf(await tool.call({ action: "read", skill: "deploy", file: "zero.md" }))).to.match(
				/^bad_file_path: .*a device/,
			);
		});

		it("readRegularFile reads a file but refuses a pipe (ENOTREG) or a folder with NotRegularFileError", function () {
			const fifo = join(env.root, "pipe");
			execFileSync("mkfifo", [fifo]);
			writers = [unblocker(fifo)];
			expect(() => readRegularFile(fifo))
				.to.throw(NotRegularFileError)
				.with.property("code", "ENOTREG");
			expect(() => readRegularFile(env.root))
				.to.throw(NotRegularFileError)
				.with.property("kind", "a folder");
			expect(readRegularFile(join(dir, "SKILL.md")).toString()).to.equal(skillText("deploy"));
		});
	});

	describe("arguments whose handling could grow faster than their size", function () {
		// Loose bounds for a slow, shared box: the point is a bound, not a benchmark.
		const BOUND_MS = 1000;

		/** A bundled file on disk, read (with SKILL.md) so that a patch of it passes gates 2 and 3. */
		async function readBundled(file: string, text: string): Promise<void> {
			writeFileSync(join(dir, file), text);
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			expectOk(await tool.call({ action: "read", skill: "deploy", file }));
		}

		/** Patches `file` and checks the refusal's code and the CPU it cost. */
		async function expectBoundedRefusal(args: Record<string, unknown>, code: string): Promise<Result> {
			const { ms, result } = await cpuOf(() => tool.call({ action: "patch", skill: "deploy", ...args }));
			expectRefused(result, code);
			expect(ms, `took ${ms} ms of CPU`).to.be.below(BOUND_MS);
			return result;
		}

		it("answers a 256 KiB or 1 MiB missing old_string with not_found and the closest lines", async function () {
			this.timeout(30_000);
			const lines = Array.from(
				{ length: 200 },
				(_, i) => `${i}. Run step ${i} of the deploy, then check the page for errors.`,
			);
			writeSkill(join(env.agentDir, "skills"), "deploy", skillText("deploy", `${lines.join("\n")}\n`));
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			for (const size of [256 * 1024, MIB]) {
				const words = "Run the deploy step and check the page for errors twice ";
				const oldString = words.repeat(Math.ceil(size / words.length)).slice(0, size);
				const { ms, result } = await cpuOf(() =>
					tool.call({ action: "patch", skill: "deploy", old_string: oldString, new_string: "x" }),
				);
				expectRefused(result, "not_found");
				expect(textOf(result)).to.contain("Closest lines:");
				expect(ms, `${size} bytes of old_string took ${ms} ms of CPU`).to.be.below(BOUND_MS);
			}
		});

		it("answers an old_string that makes V8's indexOf quadratic, against a 1 MiB file", async function () {
			this.timeout(60_000);
			await readBundled("big.md", `${"a".repeat(MIB - 1)}\n`);
			// 250 a's, a b, then 50,000 a's: V8 took 19 s to say it is not there.
			await expectBoundedRefusal(
				{ file: "big.md", old_string: `${"a".repeat(250)}b${"a".repeat(50_000)}`, new_string: "x" },
				"not_found",
			);
		});

		it("answers worst-shape old_strings of up to 250 characters (the engine's search) in 1 MiB", async function () {
			this.timeout(60_000);
			await readBundled("big.md", `${"a".repeat(MIB - 1)}\n`);
			for (const [before, after] of [
				[60, 3],
				[96, 159],
				[192, 7],
				[249, 0],
				[18, 231],
			]) {
				await expectBoundedRefusal(
					{ file: "big.md", old_string: `${"a".repeat(before)}b${"a".repeat(after)}`, new_string: "x" },
					"not_found",
				);
			}
		});

		it("counts many matches and lists a few of their lines", async function () {
			this.timeout(30_000);
			// A line number per match, each counted from the top, took minutes for 300,000 matches.
			await readBundled("many.md", "ab\n".repeat(30_000));
			const result = await expectBoundedRefusal({ file: "many.md", old_string: "b", new_string: "c" }, "not_unique");
			expect(result.details.count).to.equal(30_000);
			expect((result.details.lines as number[]).length).to.be.at.most(20);
			expect(textOf(result).length).to.be.below(2000);
		});

		it("refuses a replace_all that would multiply the file past 1 MiB before building it", async function () {
			this.timeout(30_000);
			await readBundled("many.md", "ab\n".repeat(300_000));
			await expectBoundedRefusal(
				{ file: "many.md", old_string: "b", new_string: "c".repeat(100_000), replace_all: true },
				"too_large",
			);
		});

		it("answers a 1 MiB skill name or path with unknown_skill among many skills", async function () {
			this.timeout(30_000);
			for (let i = 0; i < 30; i++) writeSkill(join(env.agentDir, "skills"), `skill-number-${i}`);
			expectOk(await tool.call({ action: "list" }));
			// A long name costs edit distances against every skill; a long path, one realpath per segment.
			for (const args of [
				{ skill: "s".repeat(MIB) },
				{ path: "a/".repeat(MIB / 2) },
				{ path: `${"a".repeat(MIB)}/deploy` },
			]) {
				const { ms, result } = await cpuOf(() => tool.call({ action: "read", ...args }));
				expectRefused(result, "unknown_skill");
				expect(textOf(result).length).to.be.below(2000);
				expect(ms, `took ${ms} ms of CPU`).to.be.below(BOUND_MS);
			}
		});
	});
});
