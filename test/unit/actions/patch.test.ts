// `patch` (src/actions/patch.ts) through the tool: reads first, stale files, dry runs, backups as
// private copies, the refusals of each gate, a gate order that cannot change what is planned, and
// the check after the write that rolls back a file that no longer loads.
import { existsSync, linkSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs, type FsOps } from "../../../src/base/fs-ops.ts";
import { GATE_ORDER, type GateName } from "../../../src/pipeline/gates.ts";
import { ALPHA, PATCH_ALPHA, useAlphaSkill } from "../../support/alpha.ts";
import { skillText, writeSkill } from "../../support/fixtures.ts";
import { createHarness, expectOk, expectRefused } from "../../support/harness.ts";

describe("patch", function () {
	const { env: getEnv, tool, dir, skillFile, backups, backupOf } = useAlphaSkill();

	it("refuses before a read with not_read, then lands after one", async function () {
		const refused = await tool().call(PATCH_ALPHA);
		expect(refused.code).to.equal("not_read");
		expect(readFileSync(skillFile(), "utf8")).to.contain("Step one.");
		await tool().call({ action: "read", skill: "alpha" });
		const landed = await tool().call(PATCH_ALPHA);
		expect(landed.ok, landed.text).to.equal(true);
		expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA.replace("Step one.", "Step 1."));
	});

	it("lets a second patch land without a re-read", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		expect((await tool().call(PATCH_ALPHA)).ok).to.equal(true);
		const second = await tool().call({
			action: "patch",
			skill: "alpha",
			old_string: "Step 1.",
			new_string: "Step 1, checked.",
		});
		expect(second.ok, second.text).to.equal(true);
		expect(readFileSync(skillFile(), "utf8")).to.contain("Step 1, checked.");
	});

	it("refuses with stale and both hashes when the file changed on disk after the read", async function () {
		const read = await tool().call({ action: "read", skill: "alpha" });
		writeFileSync(
			skillFile(),
			skillText("alpha", "# alpha\n\nStep one.\nEdited elsewhere.\n", "Use when testing alpha."),
		);
		const refused = await tool().call(PATCH_ALPHA);
		expect(refused.code).to.equal("stale");
		expect(refused.details.readHash).to.equal(read.details.hash);
		expect(refused.details.currentHash).to.be.a("string").and.not.equal(read.details.hash);
		expect(readFileSync(skillFile(), "utf8")).to.contain("Edited elsewhere.");
	});

	it("returns the diff and writes nothing on a dry run", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		const before = readFileSync(skillFile());
		const dry = await tool().call({
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
		expect(existsSync(backups())).to.equal(false);
	});

	it("backs up the old bytes before the write, restorable by `cp`", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		const before = readFileSync(skillFile());
		const landed = await tool().call(PATCH_ALPHA);
		expect(readFileSync(backupOf(landed)).equals(before)).to.equal(true);
	});

	it("keeps the old bytes as a private copy, never a hard link, and lands a new file", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		const old = statSync(skillFile());
		const landed = await tool().call(PATCH_ALPHA);
		const backup = statSync(backupOf(landed));
		expect(backup.ino, "a copy: an in-place edit of the skill file can never change it").to.not.equal(old.ino);
		expect([backup.nlink, backup.mode & 0o777]).to.deep.equal([1, 0o600]);
		expect(statSync(skillFile()).ino).to.not.equal(old.ino);
		expect(statSync(skillFile()).mode & 0o777).to.equal(old.mode & 0o777);
	});

	it("backs up a SKILL.md that has another name as a copy that keeps the old bytes", async function () {
		const other = join(getEnv().projectDir, "elsewhere.md");
		linkSync(skillFile(), other);
		await tool().call({ action: "read", skill: "alpha" });
		const before = readFileSync(skillFile());
		const landed = await tool().call(PATCH_ALPHA);
		const backupPath = backupOf(landed);
		expect(statSync(backupPath).ino).to.not.equal(statSync(other).ino);
		writeFileSync(other, "edited through the other name\n");
		expect(readFileSync(backupPath).equals(before)).to.equal(true);
	});

	it("refuses a patch that breaks the frontmatter with invalid_skill and a corrected frontmatter", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		const refused = await tool().call({
			action: "patch",
			skill: "alpha",
			old_string: "description: Use when testing alpha.",
			new_string: "description: Use when: testing alpha",
		});
		expect(refused.code).to.equal("invalid_skill");
		expect(refused.details.suggestion).to.equal('---\nname: alpha\ndescription: "Use when: testing alpha"\n---');
		expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
	});

	it("refuses hidden bidi characters in new_string with unsafe_content", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		const refused = await tool().call({
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
		await tool().call({ action: "read", skill: "shared" });
		const refused = await tool().call({
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
		const refused = await tool().call({ action: "patch", skill: "alpah", old_string: "a", new_string: "b" });
		expect(refused.code).to.equal("unknown_skill");
		expect(refused.details.nearNames).to.deep.equal(["alpha"]);
	});

	it("reports not_unique and not_found through the tool with their data", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		const many = await tool().call({ action: "patch", skill: "alpha", old_string: "alpha", new_string: "beta" });
		expect(many.code).to.equal("not_unique");
		expect(many.details.count).to.equal(3);
		expect(many.details.lines).to.deep.equal([2, 3, 5]);
		const none = await tool().call({ action: "patch", skill: "alpha", old_string: "Step won.", new_string: "x" });
		expect(none.code).to.equal("not_found");
		expect((none.details.closest as Array<{ line: number }>)[0].line).to.equal(7);
	});

	it("plans the same bytes with the content gates in reverse order", async function () {
		const order = GATE_ORDER.patch as unknown as GateName[];
		const saved = [...order];
		const content: GateName[] = ["text", "unique", "size", "unsafe", "valid"];
		order.splice(order.indexOf("text"), content.length, ...[...content].reverse());
		try {
			expectOk(await tool().call({ action: "read", skill: "alpha" }));
			expectRefused(await tool().call({ ...PATCH_ALPHA, old_string: "Step two." }), "not_found");
			expectOk(await tool().call(PATCH_ALPHA));
			expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA.replace("Step one.", "Step 1."));
		} finally {
			order.splice(0, order.length, ...saved);
		}
	});

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
				if (!garbled && path.startsWith(dir()) && path.includes(".SKILL.md")) {
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
		const refused = await faultyTool.call(PATCH_ALPHA);
		expect(garbled).to.equal(true);
		expect(refused.code, refused.text).to.equal("invalid_skill");
		expect(refused.text).to.contain("rolled back");
		expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
	});
});
