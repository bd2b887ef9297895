// Every action through executeSkillManage on the real filesystem: happy paths, refusals with
// their codes, dry runs, backups before every change, whole-skill delete and restore, and the
// post-write verification that rolls a change back when the landed file no longer loads.
import { chmodSync, existsSync, linkSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "chai";
import { skillBackupDir } from "../../support/backups.ts";
import { parseFrontmatter } from "@mariozechner/pi-coding-agent";
import { realFs, type FsOps } from "../../../src/base/fs-ops.ts";
import { checkSkillContent } from "../../../src/checks/validation.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";
import { skillText, writeSkill } from "../../support/fixtures.ts";
import { createHarness, type Harness } from "../../support/harness.ts";

/** The skill every test starts from; "Step one." is the line the patches aim at. */
const ALPHA = skillText("alpha", "# alpha\n\nStep one.\n", "Use when testing alpha.");
const BACKUPS = (env: TempEnv) => join(env.agentDir, "selfskills", "backups");

describe("skill_manage actions", function () {
	const getEnv = useTempEnv();
	let tool: Harness;
	let dir: string;
	beforeEach(function () {
		const env = getEnv();
		dir = dirname(
			writeSkill(join(env.agentDir, "skills"), "alpha", ALPHA, { "references/api.md": "API notes\nline two\n" }),
		);
		tool = createHarness(env);
	});
	const skillFile = () => join(dir, "SKILL.md");

	describe("patch", function () {
		it("refuses before a read with not_read, then lands after one", async function () {
			const refused = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step one.",
				new_string: "Step 1.",
			});
			expect(refused.code).to.equal("not_read");
			expect(readFileSync(skillFile(), "utf8")).to.contain("Step one.");
			await tool.call({ action: "read", skill: "alpha" });
			const landed = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step one.",
				new_string: "Step 1.",
			});
			expect(landed.ok, landed.text).to.equal(true);
			expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA.replace("Step one.", "Step 1."));
		});

		it("lets a second patch land without a re-read", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			expect(
				(await tool.call({ action: "patch", skill: "alpha", old_string: "Step one.", new_string: "Step 1." })).ok,
			).to.equal(true);
			const second = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step 1.",
				new_string: "Step 1, checked.",
			});
			expect(second.ok, second.text).to.equal(true);
			expect(readFileSync(skillFile(), "utf8")).to.contain("Step 1, checked.");
		});

		it("refuses with stale and both hashes when the file changed on disk after the read", async function () {
			const read = await tool.call({ action: "read", skill: "alpha" });
			writeFileSync(
				skillFile(),
				skillText("alpha", "# alpha\n\nStep one.\nEdited elsewhere.\n", "Use when testing alpha."),
			);
			const refused = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step one.",
				new_string: "Step 1.",
			});
			expect(refused.code).to.equal("stale");
			expect(refused.details.readHash).to.equal(read.details.hash);
			expect(refused.details.currentHash).to.be.a("string").and.not.equal(read.details.hash);
			expect(readFileSync(skillFile(), "utf8")).to.contain("Edited elsewhere.");
		});

		it("returns the diff and writes nothing on a dry run", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			const before = readFileSync(skillFile());
			const dry = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step one.",
				new_string: "Step 1.",
				dry_run: true,
			});
			expect(dry.ok).to.equal(true);
			expect(dry.details.dryRun).to.equal(true);
			expect(String(dry.details.diff)).to.contain("-Step one.").and.contain("+Step 1.");
			expect(readFileSync(skillFile()).equals(before)).to.equal(true);
			expect(existsSync(BACKUPS(getEnv()))).to.equal(false);
		});

		it("backs up the old bytes before the write, restorable by `cp`", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			const before = readFileSync(skillFile());
			const landed = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step one.",
				new_string: "Step 1.",
			});
			const change = (landed.details.changes as Array<{ backup: string }>)[0];
			expect(
				readFileSync(join(skillBackupDir(getEnv().agentDir, "alpha"), "SKILL.md", change.backup)).equals(before),
			).to.equal(true);
		});

		it(
			"keeps the old bytes as a private copy, never a hard link of the skill file, " +
				"and lands the new bytes as a new file",
			async function () {
				await tool.call({ action: "read", skill: "alpha" });
				const old = statSync(skillFile());
				const landed = await tool.call({
					action: "patch",
					skill: "alpha",
					old_string: "Step one.",
					new_string: "Step 1.",
				});
				const backup = statSync(
					join(
						skillBackupDir(getEnv().agentDir, "alpha"),
						"SKILL.md",
						(landed.details.changes as Array<{ backup: string }>)[0].backup,
					),
				);
				expect(backup.ino, "a copy: an in-place edit of the skill file can never change it").to.not.equal(old.ino);
				expect([backup.nlink, backup.mode & 0o777]).to.deep.equal([1, 0o600]);
				expect(statSync(skillFile()).ino).to.not.equal(old.ino);
				expect(statSync(skillFile()).mode & 0o777).to.equal(old.mode & 0o777);
			},
		);

		it(
			"copies instead when SKILL.md has another name, " + "which keeps the old bytes and never shares the backup",
			async function () {
				const other = join(getEnv().projectDir, "elsewhere.md");
				linkSync(skillFile(), other);
				await tool.call({ action: "read", skill: "alpha" });
				const before = readFileSync(skillFile());
				const landed = await tool.call({
					action: "patch",
					skill: "alpha",
					old_string: "Step one.",
					new_string: "Step 1.",
				});
				const backupPath = join(
					skillBackupDir(getEnv().agentDir, "alpha"),
					"SKILL.md",
					(landed.details.changes as Array<{ backup: string }>)[0].backup,
				);
				expect(statSync(backupPath).ino).to.not.equal(statSync(other).ino);
				writeFileSync(other, "edited through the other name\n");
				expect(readFileSync(backupPath).equals(before)).to.equal(true);
			},
		);

		it(
			"refuses a patch that breaks the frontmatter " + "with invalid_skill and a corrected frontmatter",
			async function () {
				await tool.call({ action: "read", skill: "alpha" });
				const refused = await tool.call({
					action: "patch",
					skill: "alpha",
					old_string: "description: Use when testing alpha.",
					new_string: "description: Use when: testing alpha",
				});
				expect(refused.code).to.equal("invalid_skill");
				expect(refused.details.suggestion).to.equal(
					'---\nname: alpha\ndescription: "Use when: testing alpha"\n---',
				);
				expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
			},
		);

		it("refuses hidden bidi characters in new_string with unsafe_content", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			const refused = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step one.",
				new_string: "Step \u202Eone.",
			});
			expect(refused.code).to.equal("unsafe_content");
		});

		it("refuses a skill in ~/.agents/skills with not_writable, the reason and the writable roots", async function () {
			const env = getEnv();
			writeSkill(join(env.home, ".agents", "skills"), "shared");
			await tool.call({ action: "read", skill: "shared" });
			const refused = await tool.call({
				action: "patch",
				skill: "shared",
				old_string: "Step one.",
				new_string: "Step 1.",
			});
			expect(refused.code).to.equal("not_writable");
			expect(String(refused.details.reason)).to.contain("~/.agents/skills");
			expect(refused.details.writableRoots).to.include(join(env.agentDir, "skills"));
		});

		it("refuses an unknown skill with unknown_skill and near names", async function () {
			const refused = await tool.call({ action: "patch", skill: "alpah", old_string: "a", new_string: "b" });
			expect(refused.code).to.equal("unknown_skill");
			expect(refused.details.nearNames).to.deep.equal(["alpha"]);
		});

		it("reports not_unique and not_found through the tool with their data", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			const many = await tool.call({ action: "patch", skill: "alpha", old_string: "alpha", new_string: "beta" });
			expect(many.code).to.equal("not_unique");
			expect(many.details.count).to.equal(3);
			expect(many.details.lines).to.deep.equal([2, 3, 5]);
			const none = await tool.call({ action: "patch", skill: "alpha", old_string: "Step won.", new_string: "x" });
			expect(none.code).to.equal("not_found");
			expect((none.details.closest as Array<{ line: number }>)[0].line).to.equal(7);
		});
	});

	describe("create", function () {
		it(
			"creates <skillsDir>/<name>/SKILL.md whose frontmatter survives colons, " + "quotes and newlines",
			async function () {
				const description = 'Use when: the "deploy" fails; it\'s #1.\nSecond line: with - dash';
				const created = await tool.call({
					action: "create",
					name: "new-skill",
					description,
					body: "# New\n\nDo it.\n",
				});
				expect(created.ok, created.text).to.equal(true);
				const file = join(getEnv().agentDir, "skills", "new-skill", "SKILL.md");
				const text = readFileSync(file, "utf8");
				expect(checkSkillContent(text, "new-skill")).to.deep.equal({
					name: "new-skill",
					description,
					diagnostics: [],
					loaderDiagnostics: [],
				});
				expect(parseFrontmatter<{ description: string }>(text).frontmatter.description).to.equal(description);
				expect(statSync(file).mode & 0o777).to.equal(0o644);
			},
		);

		it("refuses a name that exists anywhere pi looks with exists, naming where", async function () {
			const env = getEnv();
			writeSkill(join(env.home, ".agents", "skills"), "taken");
			const refused = await tool.call({ action: "create", name: "taken", description: "d", body: "b" });
			expect(refused.code).to.equal("exists");
			expect(refused.details.where).to.equal(join(env.home, ".agents", "skills", "taken", "SKILL.md"));
			expect(existsSync(join(env.agentDir, "skills", "taken"))).to.equal(false);
		});

		it("refuses a bad name with invalid_name", async function () {
			expect((await tool.call({ action: "create", name: "Bad_Name", description: "d", body: "b" })).code).to.equal(
				"invalid_name",
			);
		});

		it("writes nothing on a dry run", async function () {
			const dry = await tool.call({
				action: "create",
				name: "dry-skill",
				description: "d",
				body: "b",
				dry_run: true,
			});
			expect(dry.ok).to.equal(true);
			expect(existsSync(join(getEnv().agentDir, "skills", "dry-skill"))).to.equal(false);
		});
	});

	describe("write", function () {
		it("refuses SKILL.md with patch_only", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			expect((await tool.call({ action: "write", skill: "alpha", file: "SKILL.md", content: "x" })).code).to.equal(
				"patch_only",
			);
		});

		it("creates a new bundled file non-executable once SKILL.md was read", async function () {
			expect(
				(await tool.call({ action: "write", skill: "alpha", file: "scripts/run.sh", content: "#!/bin/sh\n" })).code,
			).to.equal("not_read");
			await tool.call({ action: "read", skill: "alpha" });
			const written = await tool.call({
				action: "write",
				skill: "alpha",
				file: "scripts/run.sh",
				content: "#!/bin/sh\n",
			});
			expect(written.ok, written.text).to.equal(true);
			expect(statSync(join(dir, "scripts", "run.sh")).mode & 0o777).to.equal(0o644);
		});

		it(
			"needs the bundled file read before overwriting it, " + "backs it up and keeps an executable mode",
			async function () {
				chmodSync(join(dir, "references", "api.md"), 0o755);
				await tool.call({ action: "read", skill: "alpha" });
				expect(
					(await tool.call({ action: "write", skill: "alpha", file: "references/api.md", content: "new\n" })).code,
				).to.equal("not_read");
				await tool.call({ action: "read", skill: "alpha", file: "references/api.md" });
				const written = await tool.call({
					action: "write",
					skill: "alpha",
					file: "references/api.md",
					content: "new\n",
				});
				expect(written.ok, written.text).to.equal(true);
				expect(statSync(join(dir, "references", "api.md")).mode & 0o777).to.equal(0o755);
				const backups = readdirSync(join(skillBackupDir(getEnv().agentDir, "alpha"), "references", "api.md"));
				expect(backups).to.have.length(1);
				expect(
					readFileSync(
						join(skillBackupDir(getEnv().agentDir, "alpha"), "references", "api.md", backups[0]),
						"utf8",
					),
				).to.equal("API notes\nline two\n");
			},
		);

		it("refuses empty content with empty_content and a bad path with bad_file_path", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			expect((await tool.call({ action: "write", skill: "alpha", file: "notes.md", content: "" })).code).to.equal(
				"empty_content",
			);
			expect(
				(await tool.call({ action: "write", skill: "alpha", file: "../escape.md", content: "x" })).code,
			).to.equal("bad_file_path");
			expect(existsSync(join(getEnv().agentDir, "skills", "escape.md"))).to.equal(false);
		});
	});

	describe("delete and restore", function () {
		it("refuses deleting SKILL.md alone with invalid_arguments", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			expect((await tool.call({ action: "delete", skill: "alpha", file: "SKILL.md" })).code).to.equal(
				"invalid_arguments",
			);
		});

		it("deletes a bundled file after backing it up, and restore brings it back", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			const deleted = await tool.call({ action: "delete", skill: "alpha", file: "references/api.md" });
			expect(deleted.ok, deleted.text).to.equal(true);
			expect(existsSync(join(dir, "references", "api.md"))).to.equal(false);
			const restored = await tool.call({ action: "restore", skill: "alpha", file: "references/api.md" });
			expect(restored.ok, restored.text).to.equal(true);
			expect(readFileSync(join(dir, "references", "api.md"), "utf8")).to.equal("API notes\nline two\n");
		});

		it(
			"snapshots a whole skill under __deleted__/<stamp>/ " + "and restore recreates the tree byte for byte",
			async function () {
				chmodSync(join(dir, "references", "api.md"), 0o755);
				await tool.call({ action: "read", skill: "alpha" });
				const deleted = await tool.call({ action: "delete", skill: "alpha" });
				expect(deleted.ok, deleted.text).to.equal(true);
				expect(existsSync(dir)).to.equal(false);
				const snapshots = join(skillBackupDir(getEnv().agentDir, "alpha"), "__deleted__");
				const stamp = readdirSync(snapshots).find((n) => !n.endsWith(".json")) ?? "";
				expect(stamp).to.match(/^\d{8}-\d{6}\.\d{3}$/);
				expect(readFileSync(join(snapshots, stamp, "SKILL.md"), "utf8")).to.equal(ALPHA);
				expect(readFileSync(join(snapshots, stamp, "references", "api.md"), "utf8")).to.equal(
					"API notes\nline two\n",
				);
				const history = await tool.call({ action: "history", skill: "alpha" });
				expect(history.text).to.contain(stamp);
				const restored = await tool.call({ action: "restore", skill: "alpha" });
				expect(restored.ok, restored.text).to.equal(true);
				expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
				expect(readFileSync(join(dir, "references", "api.md"), "utf8")).to.equal("API notes\nline two\n");
				expect(statSync(join(dir, "references", "api.md")).mode & 0o777).to.equal(0o755);
			},
		);

		it("backs up the current content before a restore, so a restore of the restore undoes it", async function () {
			await tool.call({ action: "read", skill: "alpha" });
			await tool.call({ action: "patch", skill: "alpha", old_string: "Step one.", new_string: "Step 1." });
			const patched = readFileSync(skillFile(), "utf8");
			const first = await tool.call({ action: "restore", skill: "alpha" });
			expect(first.ok, first.text).to.equal(true);
			expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
			const second = await tool.call({ action: "restore", skill: "alpha" });
			expect(second.ok, second.text).to.equal(true);
			expect(readFileSync(skillFile(), "utf8")).to.equal(patched);
		});

		it(
			"restores a named backup given without its extension, " + "and refuses an unknown one with no_backup",
			async function () {
				await tool.call({ action: "read", skill: "alpha" });
				await tool.call({ action: "patch", skill: "alpha", old_string: "Step one.", new_string: "Step 1." });
				await tool.call({ action: "patch", skill: "alpha", old_string: "Step 1.", new_string: "Step I." });
				const history = await tool.call({ action: "history", skill: "alpha" });
				const ids = (history.details.backups as Array<{ id: string }>).map((b) => b.id);
				expect(ids).to.have.length(2);
				const oldest = ids[1];
				const restored = await tool.call({
					action: "restore",
					skill: "alpha",
					backup: oldest.replace(/\.md$/, ""),
				});
				expect(restored.ok, restored.text).to.equal(true);
				expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
				const missing = await tool.call({
					action: "restore",
					skill: "alpha",
					backup: "20000101-000000.000-0000000000",
				});
				expect(missing.code).to.equal("no_backup");
			},
		);

		it("refuses a restore with no backup at all with no_backup", async function () {
			expect((await tool.call({ action: "restore", skill: "alpha" })).code).to.equal("no_backup");
		});
	});

	describe("verification after the write", function () {
		it("rolls the change back with invalid_skill when the file that landed no longer loads", async function () {
			const env = getEnv();
			// A filesystem that garbles the first SKILL.md write of the skill folder: what lands is not
			// what was validated, the situation the post-write check exists for.
			const fds = new Map<number, string>();
			let garbled = false;
			const faulty: FsOps = {
				...realFs,
				open(path, flags, mode) {
					const fd = realFs.open(path, flags, mode);
					fds.set(fd, path);
					return fd;
				},
				write(fd, bytes, offset) {
					const path = fds.get(fd) ?? "";
					if (!garbled && path.startsWith(dir) && path.includes(".SKILL.md")) {
						garbled = true;
						const broken = Buffer.from("---\nname: alpha\n---\nno description\n");
						realFs.write(fd, broken, 0);
						return bytes.length - offset;
					}
					return realFs.write(fd, bytes, offset);
				},
			};
			const faultyTool = createHarness(env, faulty);
			await faultyTool.call({ action: "read", skill: "alpha" });
			const refused = await faultyTool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step one.",
				new_string: "Step 1.",
			});
			expect(garbled).to.equal(true);
			expect(refused.code, refused.text).to.equal("invalid_skill");
			expect(refused.text).to.contain("rolled back");
			expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
		});
	});

	describe("list and read", function () {
		it("lists every skill with its patchable flag and reason", async function () {
			writeSkill(join(getEnv().home, ".agents", "skills"), "shared");
			const listed = await tool.call({ action: "list" });
			const skills = listed.details.skills as Array<{ name: string; patchable: boolean; reason?: string }>;
			expect(skills.map((s) => [s.name, s.patchable])).to.deep.equal([
				["alpha", true],
				["shared", false],
			]);
			expect(listed.text).to.contain("patchable: no (user-level ~/.agents/skills");
		});

		it("reads a bundled file but that read alone does not unlock the skill", async function () {
			const read = await tool.call({ action: "read", skill: "alpha", file: "references/api.md" });
			expect(read.ok).to.equal(true);
			expect(read.text).to.contain("API notes");
			expect(
				(
					await tool.call({
						action: "patch",
						skill: "alpha",
						file: "references/api.md",
						old_string: "API",
						new_string: "Api",
					})
				).code,
			).to.equal("not_read");
		});
	});
});
