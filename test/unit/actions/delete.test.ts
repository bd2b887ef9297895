// `delete` (src/actions/delete.ts) through the tool: a bundled file backed up first, a whole skill snapshotted.
import { chmodSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { ALPHA, useAlphaSkill } from "../../support/alpha.ts";
import { skillBackupDir } from "../../support/backups.ts";

describe("delete", function () {
	const { env: getEnv, tool, dir, skillFile } = useAlphaSkill();

	it("refuses deleting SKILL.md alone with invalid_arguments", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		expect((await tool().call({ action: "delete", skill: "alpha", file: "SKILL.md" })).code).to.equal(
			"invalid_arguments",
		);
	});

	it("deletes a bundled file after backing it up, and restore brings it back", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		const deleted = await tool().call({ action: "delete", skill: "alpha", file: "references/api.md" });
		expect(deleted.ok, deleted.text).to.equal(true);
		expect(existsSync(join(dir(), "references", "api.md"))).to.equal(false);
		const restored = await tool().call({ action: "restore", skill: "alpha", file: "references/api.md" });
		expect(restored.ok, restored.text).to.equal(true);
		expect(readFileSync(join(dir(), "references", "api.md"), "utf8")).to.equal("API notes\nline two\n");
	});

	it("snapshots a whole skill, and restore recreates its tree byte for byte", async function () {
		chmodSync(join(dir(), "references", "api.md"), 0o755);
		await tool().call({ action: "read", skill: "alpha" });
		const deleted = await tool().call({ action: "delete", skill: "alpha" });
		expect(deleted.ok, deleted.text).to.equal(true);
		expect(existsSync(dir())).to.equal(false);
		const snapshots = join(skillBackupDir(getEnv().agentDir, "alpha"), "__deleted__");
		const stamp = readdirSync(snapshots).find((n) => !n.endsWith(".json")) ?? "";
		expect(stamp).to.match(/^\d{8}-\d{6}\.\d{3}$/);
		expect(readFileSync(join(snapshots, stamp, "SKILL.md"), "utf8")).to.equal(ALPHA);
		expect(readFileSync(join(snapshots, stamp, "references", "api.md"), "utf8")).to.equal("API notes\nline two\n");
		const history = await tool().call({ action: "history", skill: "alpha" });
		expect(history.text).to.contain(stamp);
		const restored = await tool().call({ action: "restore", skill: "alpha" });
		expect(restored.ok, restored.text).to.equal(true);
		expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
		expect(readFileSync(join(dir(), "references", "api.md"), "utf8")).to.equal("API notes\nline two\n");
		expect(statSync(join(dir(), "references", "api.md")).mode & 0o777).to.equal(0o755);
	});
});
