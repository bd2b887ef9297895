// `read` (src/actions/read.ts) through the tool: what a read of a bundled file unlocks.
import { expect } from "chai";
import { useAlphaSkill } from "../../support/alpha.ts";

describe("read", function () {
	const { tool } = useAlphaSkill();

	it("reads a bundled file but that read alone does not unlock the skill", async function () {
		const read = await tool().call({ action: "read", skill: "alpha", file: "references/api.md" });
		expect(read.ok).to.equal(true);
		expect(read.text).to.contain("API notes");
		expect(
			(
				await tool().call({
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
