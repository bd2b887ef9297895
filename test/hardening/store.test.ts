// The package's own store under attack and under race: another program writing a skill file in
// place at every filesystem call of a mutation (a backup must keep the bytes its name promises),
// skills whose backups could share a folder, symlinks planted inside the store, and its modes.
import {
	chmodSync,
	closeSync,
	existsSync,
	ftruncateSync,
	lstatSync,
	mkdirSync,
	openSync,
	readdirSync,
	readFileSync,
	renameSync,
	statSync,
	symlinkSync,
	writeFileSync,
	writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "chai";
import { backupFolderName, skillKey } from "../../src/store/backup-store.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { recoverJournals } from "../../src/store/journal.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { checkBackups, prepareEnv, SCENARIOS, skillDir } from "./crash-support.ts";
import { faultyFs, type FsCall } from "../support/faulty-fs.ts";
import { fingerprint, skillText, walkFiles, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, textOf } from "../support/harness.ts";
import { sha256 } from "../../src/base/hash.ts";

const OTHER = "# Written in place by another program\n";

/**
 * The one call before which another program's in-place write is lost whatever is done: the rename
 * (or unlink) that replaces the file, right after the last look at it. Before any other call its
 * bytes must end up in the file or in a backup.
 */
function blindCall(log: readonly FsCall[], target: string): number {
	return log.findIndex(
		(c) => (c.op === "rename" && c.args[1] === target) || (c.op === "unlink" && c.args[0] === target),
	);
}

/** What an editor that saves in place does: same inode, new bytes; false when there is no file. */
function writeInPlace(path: string, text: string): boolean {
	try {
		if (!lstatSync(path).isFile()) return false;
	} catch {
		return false;
	}
	const fd = openSync(path, "r+");
	try {
		writeSync(fd, text, 0);
		ftruncateSync(fd, Buffer.byteLength(text));
	} finally {
		closeSync(fd);
	}
	return true;
}

describe("hardening: the backup store", function () {
	this.timeout(900_000);

	describe("another program writing the target in place before every filesystem call", function () {
		let total = 0;
		after(() => console.log(`      total: ${total} in-place writes`));
		for (const scenario of SCENARIOS.filter((s) => s.old !== null)) {
			it(`${scenario.name}: each backup holds the bytes its name promises; the old one is kept`, async function () {
				let calls = 0;
				let blind = -1;
				{
					const env = await prepareEnv(scenario);
					try {
						let armed = false;
						const fs = faultyFs(() => void (armed && calls++));
						const { log } = fs;
						const tool = createHarness(env, fs);
						for (const read of scenario.reads) expectOk(await tool.call(read));
						log.length = 0;
						armed = true;
						expectOk(await tool.call(scenario.action));
						blind = blindCall(log, scenario.target(env));
					} finally {
						env.cleanup();
					}
				}
				expect(calls).to.be.greaterThan(5);
				expect(blind, "the call replaces the target with a rename or an unlink").to.be.at.least(0);
				for (let k = 0; k < calls; k++) {
					const env = await prepareEnv(scenario);
					try {
						let armed = false;
						let seen = 0;
						let wrote = false;
						const fs = faultyFs(() => {
							if (armed && seen++ === k) wrote = writeInPlace(scenario.target(env), OTHER);
						});
						const tool = createHarness(env, fs);
						for (const read of scenario.reads) expectOk(await tool.call(read));
						const armedAt = fs.log.length;
						armed = true;
						const r = await tool.call(scenario.action);
						// The blind call of this very run: a call's sequence may differ from the first run's
						// (a file written within the discovery cache's racy window is hashed, one older is not).
						const blindHere = blindCall(fs.log.slice(armedAt), scenario.target(env));
						const where = `${scenario.name}: in-place write before call #${k}`;
						checkBackups(env);
						const held = walkFiles(join(env.agentDir, "selfskills", "backups")).map((f) =>
							readFileSync(f, "utf8"),
						);
						// The bytes the call replaced are the old ones, or the other program's when it wrote
						// before the call read the file.
						const now = existsSync(scenario.target(env)) ? readFileSync(scenario.target(env), "utf8") : null;
						if (r.details.ok === true) {
							expect(
								held.includes(scenario.old ?? "") || held.includes(OTHER),
								`${where}: landed without a backup of what it replaced`,
							).to.equal(true);
							if (wrote && k !== blindHere)
								expect(
									now === OTHER || held.includes(OTHER),
									`${where}: the other program's bytes were lost`,
								).to.equal(true);
						} else
							expect([scenario.old, OTHER], `${where}: refused but changed the file: ${textOf(r)}`).to.include(
								now,
							);
						total++;
					} finally {
						env.cleanup();
					}
				}
			});
		}
	});

	describe("a symlink planted at any step of the store", function () {
		let total = 0;
		after(() => console.log(`      total: ${total} planted links`));
		for (const scenario of SCENARIOS) {
			it(`${scenario.name}: io_error naming the link, nothing written or read through it`, async function () {
				const relPath =
					scenario.name === "patch" || scenario.name === "restore" ? "SKILL.md" : "references/notes.md";
				const steps = (folder: string) => {
					const parts = relPath.split("/");
					return [
						"selfskills",
						"selfskills/backups",
						`selfskills/backups/${folder}.json`,
						`selfskills/backups/${folder}`,
						...parts.map((_, i) => `selfskills/backups/${folder}/${parts.slice(0, i + 1).join("/")}`),
					];
				};
				const count = steps("x").length;
				for (let i = 0; i < count; i++) {
					const env = await prepareEnv(scenario);
					try {
						const folder = backupFolderName(skillKey("crashy", join(skillDir(env), "SKILL.md")));
						const step = steps(folder)[i];
						const at = join(env.agentDir, ...step.split("/"));
						const outside = join(env.root, "outside");
						mkdirSync(outside);
						// Whatever is already there moves outside, so a read through the link would find real backups.
						const away = join(outside, "moved");
						if (existsSync(at)) renameSync(at, away);
						else if (step.endsWith(".json"))
							writeFileSync(away, JSON.stringify({ name: "crashy", dir: skillDir(env) }));
						else mkdirSync(away);
						mkdirSync(dirname(at), { recursive: true });
						symlinkSync(away, at);
						const before = fingerprint(outside);
						const tool = createHarness(env);
						for (const read of scenario.reads) expectOk(await tool.call(read));
						const r = await tool.call(scenario.action);
						const where = `${scenario.name}: link at ${step}`;
						expectRefused(r, "io_error");
						expect(textOf(r), where).to.contain(at);
						expect(
							existsSync(scenario.target(env)) ? readFileSync(scenario.target(env), "utf8") : null,
							`${where}: the target changed`,
						).to.equal(scenario.old);
						expect([...fingerprint(outside).entries()], `${where}: written through the link`).to.deep.equal([
							...before.entries(),
						]);
						total++;
					} finally {
						env.cleanup();
					}
				}
			});
		}

		it("never appends the audit log through a symlink (the change lands; the log is not written)", async function () {
			const scenario = SCENARIOS[0];
			const env = await prepareEnv(scenario);
			try {
				const outside = join(env.root, "outside.jsonl");
				writeFileSync(outside, "");
				mkdirSync(join(env.agentDir, "selfskills"), { recursive: true });
				symlinkSync(outside, join(env.agentDir, "selfskills", "audit.jsonl"));
				const tool = createHarness(env);
				for (const read of scenario.reads) expectOk(await tool.call(read));
				const r = await tool.call(scenario.action);
				expectOk(r);
				expect(textOf(r)).to.contain(join(env.agentDir, "selfskills", "audit.jsonl"));
				expect(readFileSync(outside, "utf8")).to.equal("");
			} finally {
				env.cleanup();
			}
		});

		it("never recovers from journals reached through a symlinked journal folder", async function () {
			const env = await prepareEnv(SCENARIOS[0]);
			try {
				const file = join(skillDir(env), "SKILL.md");
				const now = readFileSync(file);
				const outside = join(env.root, "outside");
				mkdirSync(outside);
				writeFileSync(join(outside, "planted.md"), "planted text\n");
				const entry = {
					absPath: file,
					beforeHash: sha256("planted text\n"),
					afterHash: sha256(now),
					backupPath: join(outside, "planted.md"),
					mode: 0o644,
				};
				writeFileSync(
					join(outside, "1-999999-0.json"),
					JSON.stringify({ pid: 999999, startedAt: new Date().toISOString(), entries: [entry] }),
				);
				mkdirSync(join(env.agentDir, "selfskills"), { recursive: true });
				symlinkSync(outside, join(env.agentDir, "selfskills", "journal"));
				expect(recoverJournals(realFs, env.agentDir)).to.deep.equal([]);
				expect(readFileSync(file).equals(now), "the skill file was rolled 'back' to the planted bytes").to.equal(
					true,
				);
			} finally {
				env.cleanup();
			}
		});

		it("never writes a batch's journal through a symlink", async function () {
			const env = await prepareEnv(SCENARIOS[0]);
			try {
				const outside = join(env.root, "outside");
				mkdirSync(outside);
				mkdirSync(join(env.agentDir, "selfskills"), { recursive: true });
				symlinkSync(outside, join(env.agentDir, "selfskills", "journal"));
				const tool = createHarness(env);
				expectOk(await tool.call({ action: "read", skill: "crashy" }));
				expectOk(await tool.call({ action: "read", skill: "crashy", file: "references/notes.md" }));
				const before = readFileSync(join(skillDir(env), "SKILL.md"), "utf8");
				const r = await tool.call({
					action: "operations",
					operations: [
						{ action: "patch", skill: "crashy", old_string: "Run the build.", new_string: "Run npm run build." },
						{ action: "write", skill: "crashy", file: "references/notes.md", content: "new notes\n" },
					],
				});
				expectRefused(r, "io_error");
				expect(textOf(r)).to.contain(`${join(env.agentDir, "selfskills", "journal")} is a symbolic link`);
				expect(readdirSync(outside)).to.deep.equal([]);
				expect(readFileSync(join(skillDir(env), "SKILL.md"), "utf8")).to.equal(before);
			} finally {
				env.cleanup();
			}
		});
	});

	describe("through the tool", function () {
		const getEnv = useTempEnv({ prefix: "selfskills-store-" });

		it("keeps the backups of two skills with one safe name apart, through restore and prune", async function () {
			const env = getEnv();
			writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify({ selfskills: { backupCap: 1 } }));
			const root = join(env.agentDir, "skills");
			const spaced = writeSkill(root, "a b");
			const underscored = writeSkill(root, "a_b");
			const tool = createHarness(env);
			const listed = await tool.call({ action: "list" });
			expect(textOf(listed), "pi loads both").to.contain("a b").and.to.contain("a_b");
			expectOk(await tool.call({ action: "read", path: spaced }));
			expectOk(
				await tool.call({
					action: "patch",
					path: spaced,
					old_string: "Run the build.",
					new_string: "Run the spaced build.",
				}),
			);
			expectOk(await tool.call({ action: "read", path: underscored }));
			for (const n of [1, 2, 3]) {
				expectOk(
					await tool.call({
						action: "patch",
						path: underscored,
						old_string: n === 1 ? "Run the build." : `Run build ${n - 1}.`,
						new_string: `Run build ${n}.`,
					}),
				);
			}
			expectOk(await tool.call({ action: "restore", path: spaced }));
			expect(readFileSync(spaced, "utf8")).to.equal(skillText("a b"));
		});

		it("keeps every folder of the store 0700 and every file 0600, older looser ones included", async function () {
			const env = getEnv();
			const self = join(env.agentDir, "selfskills");
			mkdirSync(self, { mode: 0o755 });
			chmodSync(self, 0o755);
			writeFileSync(join(self, "audit.jsonl"), "", { mode: 0o644 });
			chmodSync(join(self, "audit.jsonl"), 0o644);
			const dir = join(env.agentDir, "skills", "deploy");
			writeSkill(join(env.agentDir, "skills"), "deploy");
			mkdirSync(join(dir, "scripts"));
			writeFileSync(join(dir, "scripts", "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
			chmodSync(join(dir, "scripts", "run.sh"), 0o755);
			const tool = createHarness(env);
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			expectOk(
				await tool.call({
					action: "patch",
					skill: "deploy",
					old_string: "Run the build.",
					new_string: "Run npm run build.",
				}),
			);
			expectOk(await tool.call({ action: "read", skill: "deploy", file: "scripts/run.sh" }));
			expectOk(
				await tool.call({
					action: "write",
					skill: "deploy",
					file: "scripts/run.sh",
					content: "#!/bin/sh\necho hi\n",
				}),
			);
			const batch = [
				{ action: "patch", skill: "deploy", old_string: "Run npm run build.", new_string: "Run the build." },
				{ action: "write", skill: "deploy", file: "scripts/run.sh", content: "#!/bin/sh\necho bye\n" },
			];
			expectOk(await tool.call({ action: "operations", operations: batch }));
			expect(existsSync(join(self, "journal")), "a batch made its journal folder").to.equal(true);
			expectOk(await tool.call({ action: "delete", skill: "deploy" }));
			expectOk(await tool.call({ action: "restore", skill: "deploy" }));
			expect(
				statSync(join(dir, "scripts", "run.sh")).mode & 0o777,
				"restore puts the file's own mode back",
			).to.equal(0o755);
			const walk = (d: string): string[] =>
				readdirSync(d).flatMap((n) =>
					lstatSync(join(d, n)).isDirectory() ? [join(d, n), ...walk(join(d, n))] : [join(d, n)],
				);
			// A deletion snapshot keeps the skill's own modes (so cp -rp gives it back as it was); the
			// store's 0700 folders above it keep it private.
			const inSnapshot = (p: string) => /\/__deleted__\/[^/]+(\/|$)/.test(p.slice(self.length));
			const loose = [self, ...walk(self)].filter(
				(p) => !inSnapshot(p) && (statSync(p).mode & 0o777) !== (statSync(p).isDirectory() ? 0o700 : 0o600),
			);
			expect(loose.map((p) => `${p} ${(statSync(p).mode & 0o777).toString(8)}`)).to.deep.equal([]);
			const snapshots = walk(self).filter((p) => p.endsWith("__deleted__"));
			expect(snapshots, "the delete made a snapshot").to.have.length(1);
			expect(statSync(snapshots[0]).mode & 0o777).to.equal(0o700);
		});
	});
});
