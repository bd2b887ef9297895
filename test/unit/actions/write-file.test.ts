// `write` (src/actions/write-file.ts) through the tool: bundled files only, their modes, backups, bad paths.
import { chmodSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { useAlphaSkill } from "../../support/alpha.ts";
import { skillBackupDir } from "../../support/backups.ts";

describe("write", function () {
	const { env: getEnv, tool, dir } = useAlphaSkill();

	it("refuses SKILL.md with patch_only", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		expect((await tool().call({ action: "write", skill: "alpha", file: "SKILL.md", content: "x" })).code).to.equal(
			"patch_only",
		);
	});

	it("creates a new bundled file non-executable once SKILL.md was read", async function () {
		expect(
			(await tool().call({ action: "write", skill: "alpha", file: "scripts/run.sh", content: "#!/bin/sh\n" })).code,
		).to.equal("not_read");
		await tool().call({ action: "read", skill: "alpha" });
		const written = await tool().call({
			action: "write",
			skill: "alpha",
			file: "scripts/run.sh",
			content: "#!/bin/sh\n",
		});
		expect(written.ok, written.text).to.equal(true);
		expect(statSync(join(dir(), "scripts", "run.sh")).mode & 0o777).to.equal(0o644);
	});

	it("needs the bundled file read before overwriting it, backs it up and keeps an executable mode", async function () {
		chmodSync(join(dir(), "references", "api.md"), 0o755);
		await tool().call({ action: "read", skill: "alpha" });
		expect(
			(await tool().call({ action: "write", skill: "alpha", file: "references/api.md", content: "new\n" })).code,
		).to.equal("not_read");
		await tool().call({ action: "read", skill: "alpha", file: "references/api.md" });
		const written = await tool().call({
			action: "write",
			skill: "alpha",
			file: "references/api.md",
			content: "new\n",
		});
		expect(written.ok, written.text).to.equal(true);
		expect(statSync(join(dir(), "references", "api.md")).mode & 0o777).to.equal(0o755);
		const backups = readdirSync(join(skillBackupDir(getEnv().agentDir, "alpha"), "references", "api.md"));
		expect(backups).to.have.length(1);
		expect(
			readFileSync(join(skillBackupDir(getEnv().agentDir, "alpha"), "references", "api.md", backups[0]), "utf8"),
		).to.equal("API notes\nline two\n");
	});

	it("refuses empty content with empty_content and a bad path with bad_file_path", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		expect((await tool().call({ action: "write", skill: "alpha", file: "notes.md", content: "" })).code).to.equal(
			"empty_content",
		);
		expect(
			(await tool().call({ action: "write", skill: "alpha", file: "../escape.md", content: "x" })).code,
		).to.equal("bad_file_path");
		expect(existsSync(join(getEnv().agentDir, "skills", "escape.md"))).to.equal(false);
	});
});
