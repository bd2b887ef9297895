// `list` (src/actions/list.ts) through the tool: every skill with its patchable flag and reason.
import { join } from "node:path";
import { expect } from "chai";
import { useAlphaSkill } from "../../support/alpha.ts";
import { writeSkill } from "../../support/fixtures.ts";

describe("list", function () {
	const { env: getEnv, tool } = useAlphaSkill();

	it("lists every skill with its patchable flag and reason", async function () {
		writeSkill(join(getEnv().home, ".agents", "skills"), "shared");
		const listed = await tool().call({ action: "list" });
		const skills = listed.details.skills as Array<{ name: string; patchable: boolean; reason?: string }>;
		expect(skills.map((s) => [s.name, s.patchable])).to.deep.equal([
			["alpha", true],
			["shared", false],
		]);
		expect(listed.text).to.contain("patchable: no (user-level ~/.agents/skills");
	});
});
