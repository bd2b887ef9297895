// Delete, restore and batches that mix them: a batch never leaves a skill folder without its
// SKILL.md, anything deleted comes back byte for byte with its mode, a restore does not count as
// a read, and every refusal on the way names a next call that works.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { backupFolderName } from "../../src/store/backup-store.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { faultyFs, immutableFile } from "../support/faulty-fs.ts";
import { writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, textOf, type Harness, type Result } from "../support/harness.ts";

const modeOf = (path: string): number => statSync(path).mode & 0o777;
const patchDeploy = (old_string: string, new_string: string) => ({
	action: "patch",
	skill: "deploy",
	old_string,
	new_string,
});

describe("hardening: delete and restore", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-restore-" });
	let env: TempEnv;
	let tool: Harness;
	let dir: string;
	let skillFile: string;
	beforeEach(async function () {
		env = getEnv();
		skillFile = writeSkill(join(env.agentDir, "skills"), "deploy");
		dir = join(env.agentDir, "skills", "deploy");
		mkdirSync(join(dir, "references"));
		writeFileSync(join(dir, "references", "notes.md"), "notes\n");
		tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "deploy" }));
	});

	/** The skill folder either loads as a skill (listed by the tool) or is gone entirely. */
	async function expectLoadsOrGone(): Promise<void> {
		if (!existsSync(dir)) return;
		expect(existsSync(skillFile), `${dir} is left without SKILL.md: ${readdirSync(dir).join(", ")}`).to.equal(true);
		const list = await tool.call({ action: "list", skill: "deploy" });
		expect(textOf(list)).to.contain("deploy —");
	}

	describe("a batch that deletes a skill and writes into it", function () {
		for (const [label, later] of [
			["write a new file", { action: "write", skill: "deploy", file: "references/new.md", content: "new\n" }],
			["overwrite a file", { action: "write", skill: "deploy", file: "references/notes.md", content: "other\n" }],
			["patch SKILL.md", patchDeploy("Run the build.", "Run npm ci.")],
			["delete a file", { action: "delete", skill: "deploy", file: "references/notes.md" }],
			["delete the skill again", { action: "delete", skill: "deploy" }],
		] as const) {
			it(`refuses op 1 (${label}) with deleted_in_batch naming the delete, and writes nothing`, async function () {
				expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/notes.md" }));
				const before = readFileSync(skillFile, "utf8");
				const r = await tool.call({
					action: "operations",
					operations: [{ action: "delete", skill: "deploy" }, later],
				});
				expectRefused(r, "deleted_in_batch");
				expect(r.details.operation).to.equal(1);
				expect(textOf(r))
					.to.match(/operations\[1\] failed, nothing was written/)
					.and.match(/operations\[0\]/);
				expect(readFileSync(skillFile, "utf8")).to.equal(before);
				expect(readFileSync(join(dir, "references", "notes.md"), "utf8")).to.equal("notes\n");
			});
		}

		it("deletes a file the batch wrote before the skill's delete too; restore brings it all back", async function () {
			const r = await tool.call({
				action: "operations",
				operations: [
					{ action: "write", skill: "deploy", file: "references/new.md", content: "new\n" },
					{ action: "write", skill: "deploy", file: "assets/deep/more.md", content: "more\n" },
					{ action: "delete", skill: "deploy" },
				],
			});
			expectOk(r);
			expect(existsSync(dir), "the skill folder is gone entirely").to.equal(false);
			await expectLoadsOrGone();
			expectOk(await tool.call({ action: "restore", skill: "deploy" }));
			expect(readFileSync(join(dir, "references", "notes.md"), "utf8")).to.equal("notes\n");
			await expectLoadsOrGone();
		});

		it("deletes the skill after an earlier op deleted one of its files, and both come back", async function () {
			const r = await tool.call({
				action: "operations",
				operations: [
					{ action: "delete", skill: "deploy", file: "references/notes.md" },
					{ action: "delete", skill: "deploy" },
				],
			});
			expectOk(r);
			expect(existsSync(dir), "the skill folder is gone entirely").to.equal(false);
			expectOk(await tool.call({ action: "restore", skill: "deploy" }));
			expect(existsSync(join(dir, "references", "notes.md"))).to.equal(false);
			expectOk(await tool.call({ action: "restore", skill: "deploy", file: "references/notes.md" }));
			expect(readFileSync(join(dir, "references", "notes.md"), "utf8")).to.equal("notes\n");
			await expectLoadsOrGone();
		});

		it("rolls the delete back if the folder cannot be removed (a file appeared in it mid-commit)", async function () {
			const planted = join(dir, "late.md");
			tool = createHarness(
				env,
				faultyFs({
					unlink: ({ args }) => {
						if (args[0] === skillFile && !existsSync(planted))
							writeFileSync(planted, "written by another program\n");
						return undefined;
					},
				}),
			);
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			const before = readFileSync(skillFile, "utf8");
			const r = await tool.call({ action: "delete", skill: "deploy" });
			expect(r.details.ok, textOf(r)).to.equal(false);
			expect(textOf(r)).to.contain("late.md");
			expect(readFileSync(skillFile, "utf8")).to.equal(before);
			expect(readFileSync(join(dir, "references", "notes.md"), "utf8")).to.equal("notes\n");
			expect(readFileSync(planted, "utf8")).to.equal("written by another program\n");
			await expectLoadsOrGone();
		});
	});

	it("rolls a bundled-file write back when its skill no longer loads after it (SKILL.md removed)", async function () {
		const notes = join(dir, "references", "notes.md");
		tool = createHarness(
			env,
			faultyFs({
				rename: ({ args }) => {
					if (String(args[1]) === notes && existsSync(skillFile)) rmSync(skillFile);
					return undefined;
				},
			}),
		);
		expectOk(await tool.call({ action: "read", skill: "deploy" }));
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/notes.md" }));
		const r = await tool.call({
			action: "write",
			skill: "deploy",
			file: "references/notes.md",
			content: "changed\n",
		});
		expectRefused(r, "invalid_skill");
		expect(textOf(r)).to.contain("rolled back");
		expect(readFileSync(notes, "utf8")).to.equal("notes\n");
	});

	describe("anything deleted can be restored, with its mode", function () {
		/** deploy's scripts/run.sh, written with `content` and made 0755; returns its path. */
		const executableScript = (content: string): string => {
			const script = join(dir, "scripts", "run.sh");
			mkdirSync(join(dir, "scripts"));
			writeFileSync(script, content);
			chmodSync(script, 0o755);
			return script;
		};
		/** The folder of deploy's delete snapshots and the stamp of the one it holds. */
		const deletedSnapshot = (): { snapshots: string; stamp: string } => {
			const store = join(env.agentDir, "selfskills", "backups");
			const snapshots = join(store, backupFolderName({ name: "deploy", dir }), "__deleted__");
			return { snapshots, stamp: readdirSync(snapshots).find((n) => !n.endsWith(".json")) ?? "" };
		};
		const cases: ReadonlyArray<readonly [string, Buffer, number]> = [
			["a binary file", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff, 0xfe]), 0o644],
			["a Latin-1 file", Buffer.from("caf\xe9 cr\xe8me\n", "latin1"), 0o644],
			["a 2 MiB file", Buffer.alloc(2 * 1024 * 1024, "x"), 0o644],
			["an executable script", Buffer.from("#!/bin/sh\necho hi\n"), 0o755],
			["a private file", Buffer.from("token\n"), 0o600],
		];
		for (const [label, bytes, mode] of cases) {
			it(`restores ${label} byte for byte, with its mode, after a file or whole-skill delete`, async function () {
				const file = join(dir, "assets", "item.bin");
				mkdirSync(join(dir, "assets"));
				writeFileSync(file, bytes);
				chmodSync(file, mode);
				expectOk(await tool.call({ action: "delete", skill: "deploy", file: "assets/item.bin" }));
				expect(existsSync(file)).to.equal(false);
				expectOk(await tool.call({ action: "restore", skill: "deploy", file: "assets/item.bin" }));
				expect(readFileSync(file).equals(bytes), "same bytes").to.equal(true);
				expect(modeOf(file).toString(8)).to.equal(mode.toString(8));
				expectOk(await tool.call({ action: "read", skill: "deploy" }));
				expectOk(await tool.call({ action: "delete", skill: "deploy" }));
				expectOk(await tool.call({ action: "restore", skill: "deploy" }));
				expect(readFileSync(file).equals(bytes), "same bytes after the snapshot").to.equal(true);
				expect(modeOf(file).toString(8)).to.equal(mode.toString(8));
			});
		}

		it("puts the recorded mode back over an existing file (a private script restored as 0755)", async function () {
			const script = executableScript("#!/bin/sh\necho one\n");
			expectOk(await tool.call({ action: "read", skill: "deploy", file: "scripts/run.sh" }));
			expectOk(
				await tool.call({
					action: "write",
					skill: "deploy",
					file: "scripts/run.sh",
					content: "#!/bin/sh\necho two\n",
				}),
			);
			expect(modeOf(script).toString(8), "an overwrite keeps the mode").to.equal("755");
			chmodSync(script, 0o600);
			expectOk(await tool.call({ action: "restore", skill: "deploy", file: "scripts/run.sh" }));
			expect(readFileSync(script, "utf8")).to.equal("#!/bin/sh\necho one\n");
			expect(modeOf(script).toString(8)).to.equal("755");
			// And a 0644 version comes back 0644 over a file someone made executable since.
			writeFileSync(join(dir, "references", "notes.md"), "notes\n");
			expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/notes.md" }));
			expectOk(
				await tool.call({ action: "write", skill: "deploy", file: "references/notes.md", content: "changed\n" }),
			);
			chmodSync(join(dir, "references", "notes.md"), 0o755);
			expectOk(await tool.call({ action: "restore", skill: "deploy", file: "references/notes.md" }));
			expect(modeOf(join(dir, "references", "notes.md")).toString(8)).to.equal("644");
		});

		it("gives the skill back as it was, modes included, after a by-hand cp -rp of its snapshot", async function () {
			const script = executableScript("#!/bin/sh\n");
			chmodSync(join(dir, "scripts"), 0o750);
			chmodSync(dir, 0o755);
			const before = [dir, join(dir, "SKILL.md"), join(dir, "scripts"), script].map(modeOf);
			expectOk(await tool.call({ action: "delete", skill: "deploy" }));
			const { snapshots, stamp } = deletedSnapshot();
			expect(modeOf(snapshots).toString(8), "the store keeps the snapshot private").to.equal("700");
			expect(JSON.parse(readFileSync(join(snapshots, `${stamp}.json`), "utf8"))).to.deep.equal({
				skill: "deploy",
				originDir: dir,
			});
			const copied = spawnSync("cp", ["-rp", join(snapshots, stamp), dir]);
			expect(copied.status, String(copied.stderr)).to.equal(0);
			const after = [dir, join(dir, "SKILL.md"), join(dir, "scripts"), script].map(modeOf);
			expect(after.map((m) => m.toString(8))).to.deep.equal(before.map((m) => m.toString(8)));
			expect(readFileSync(script, "utf8")).to.equal("#!/bin/sh\n");
		});

		it("keeps the recorded mode when the snapshot's own files are made private", async function () {
			const script = executableScript("#!/bin/sh\n");
			expectOk(await tool.call({ action: "delete", skill: "deploy" }));
			const { snapshots, stamp } = deletedSnapshot();
			chmodSync(join(snapshots, stamp, "scripts", "run.sh"), 0o600);
			expectOk(await tool.call({ action: "restore", skill: "deploy" }));
			expect(modeOf(script).toString(8)).to.equal("755");
		});
	});

	describe("a restore does not count as a read", function () {
		it("refuses a patch after another session's restore, or its own, until it reads again", async function () {
			expectOk(await tool.call(patchDeploy("Run the build.", "Run npm ci.")));
			const fresh = createHarness(env);
			expectOk(await fresh.call({ action: "restore", skill: "deploy" }));
			expectRefused(await fresh.call(patchDeploy("Run the build.", "Run make.")), "not_read");
			const restored = await tool.call({ action: "restore", skill: "deploy" });
			expectOk(restored);
			expect(textOf(restored)).to.contain('{"action":"read","skill":"deploy"}');
			expectRefused(await tool.call(patchDeploy("Run npm ci.", "Run make.")), "not_read");
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			expectOk(await tool.call(patchDeploy("Run npm ci.", "Run make.")));
		});

		it("forgets the read of a restored bundled file", async function () {
			expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/notes.md" }));
			expectOk(
				await tool.call({ action: "write", skill: "deploy", file: "references/notes.md", content: "mine\n" }),
			);
			expectOk(await tool.call({ action: "restore", skill: "deploy", file: "references/notes.md" }));
			expectRefused(
				await tool.call({ action: "write", skill: "deploy", file: "references/notes.md", content: "again\n" }),
				"not_read",
			);
		});
	});

	describe("repair data that leads somewhere", function () {
		it("restores a deleted SKILL.md from the snapshot history lists, after it was created anew", async function () {
			const original = readFileSync(skillFile, "utf8");
			expectOk(await tool.call({ action: "delete", skill: "deploy" }));
			expectOk(
				await tool.call({
					action: "create",
					name: "deploy",
					description: "Use when deploying again.",
					body: "New body.",
				}),
			);
			const history = await tool.call({ action: "history", skill: "deploy" });
			const snapshot = (history.details.snapshots as Array<{ id: string }>)[0].id;
			expect(textOf(history)).to.contain(snapshot);
			const restored = await tool.call({ action: "restore", skill: "deploy" });
			expectOk(restored);
			expect(readFileSync(skillFile, "utf8")).to.equal(original);
			// The created version was backed up first: restoring it by id works, and so does naming the snapshot.
			expectOk(await tool.call({ action: "restore", skill: "deploy" }));
			expect(readFileSync(skillFile, "utf8")).to.contain("New body.");
			expectOk(await tool.call({ action: "restore", skill: "deploy", backup: `__deleted__/${snapshot}` }));
			expect(readFileSync(skillFile, "utf8")).to.equal(original);
		});

		for (const [label, ops] of [
			[
				"a bundled file",
				[
					{ action: "delete", skill: "deploy", file: "references/notes.md" },
					{
						action: "patch",
						skill: "deploy",
						file: "references/notes.md",
						old_string: "notes",
						new_string: "Notes",
					},
				],
			],
			[
				"SKILL.md of a deleted skill",
				[{ action: "delete", skill: "deploy" }, patchDeploy("Run the build.", "Run npm ci.")],
			],
		] as const) {
			it(`answers [delete, patch] of ${label} with deleted_in_batch and the working order`, async function () {
				expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/notes.md" }));
				const r = await tool.call({ action: "operations", operations: ops });
				expectRefused(r, "deleted_in_batch");
				expect(textOf(r)).to.not.match(/read .* again/i);
				expect(textOf(r)).to.match(/before operations\[0\]|drop/i);
				// The order the refusal suggests works.
				expectOk(await tool.call({ action: "operations", operations: [ops[1], ops[0]] }));
			});
		}

		it("after a failed commit, a plain restore puts back the version before the last change", async function () {
			const v1 = readFileSync(skillFile, "utf8");
			expectOk(await tool.call(patchDeploy("Run the build.", "Run npm ci.")));
			const v2 = readFileSync(skillFile, "utf8");
			const failing = createHarness(env, immutableFile(skillFile));
			expectOk(await failing.call({ action: "read", skill: "deploy" }));
			expectRefused(await failing.call(patchDeploy("Run npm ci.", "Run make.")), "io_error");
			expect(readFileSync(skillFile, "utf8")).to.equal(v2);
			const history = await tool.call({ action: "history", skill: "deploy" });
			const [newest, previous] = history.details.backups as Array<{ id: string }>;
			expect(textOf(history), "history suggests the backup a plain restore puts back")
				.to.contain(`"backup":"${previous.id}"`)
				.and.not.contain(`"backup":"${newest.id}"`);
			const restored = await tool.call({ action: "restore", skill: "deploy" });
			expectOk(restored);
			expect(readFileSync(skillFile, "utf8")).to.equal(v1);
		});

		it("after a failed first commit, a plain restore says no_change with restore's advice", async function () {
			const failing = createHarness(env, immutableFile(skillFile));
			expectOk(await failing.call({ action: "read", skill: "deploy" }));
			expectRefused(await failing.call(patchDeploy("Run the build.", "Run make.")), "io_error");
			const r = await tool.call({ action: "restore", skill: "deploy" });
			expectRefused(r, "no_change");
			expect(textOf(r)).to.not.contain("new_string");
			expect(textOf(r)).to.contain('{"action":"history","skill":"deploy"}');
		});

		it("refuses a restore to the backup the file holds with no_change, naming one that differs", async function () {
			expectOk(await tool.call(patchDeploy("Run the build.", "Run npm ci.")));
			expectOk(await tool.call({ action: "restore", skill: "deploy" }));
			const history = await tool.call({ action: "history", skill: "deploy" });
			const ids = (history.details.backups as Array<{ id: string; hash: string }>).map((b) => b.id);
			expect(ids).to.have.length(2);
			// ids[1] holds what the file holds now (the original); ids[0] the patched text.
			const r: Result = await tool.call({ action: "restore", skill: "deploy", backup: ids[1] });
			expectRefused(r, "no_change");
			expect(textOf(r)).to.not.contain("new_string");
			expect(textOf(r)).to.contain(ids[0]);
			expect(textOf(history)).to.contain(`"backup":"${ids[0]}"`);
		});
	});
});
