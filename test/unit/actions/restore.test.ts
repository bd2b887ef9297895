// `restore` (src/actions/restore.ts) through the tool: the current bytes backed up first, named backups, none.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { ALPHA, PATCH_ALPHA, useAlphaSkill } from "../../support/alpha.ts";

describe("restore", function () {
	const { tool, skillFile } = useAlphaSkill();

	it("backs up the current content before a restore, so a restore of the restore undoes it", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		await tool().call(PATCH_ALPHA);
		const patched = readFileSync(skillFile(), "utf8");
		const first = await tool().call({ action: "restore", skill: "alpha" });
		expect(first.ok, first.text).to.equal(true);
		expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
		const second = await tool().call({ action: "restore", skill: "alpha" });
		expect(second.ok, second.text).to.equal(true);
		expect(readFileSync(skillFile(), "utf8")).to.equal(patched);
	});

	it("restores a backup named without its extension; an unknown one is no_backup", async function () {
		await tool().call({ action: "read", skill: "alpha" });
		await tool().call(PATCH_ALPHA);
		await tool().call({ action: "patch", skill: "alpha", old_string: "Step 1.", new_string: "Step I." });
		const history = await tool().call({ action: "history", skill: "alpha" });
		const ids = (history.details.backups as Array<{ id: string }>).map((b) => b.id);
		expect(ids).to.have.length(2);
		const oldest = ids[1];
		const restored = await tool().call({
			action: "restore",
			skill: "alpha",
			backup: oldest.replace(/\.md$/, ""),
		});
		expect(restored.ok, restored.text).to.equal(true);
		expect(readFileSync(skillFile(), "utf8")).to.equal(ALPHA);
		const missing = await tool().call({
			action: "restore",
			skill: "alpha",
			backup: "20000101-000000.000-0000000000",
		});
		expect(missing.code).to.equal("no_backup");
	});

	it("refuses a restore with no backup at all with no_backup", async function () {
		expect((await tool().call({ action: "restore", skill: "alpha" })).code).to.equal("no_backup");
	});
});
