// `patch` (src/actions/patch.ts) through the tool on the real filesystem.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { GATE_ORDER, type GateName } from "../../../src/pipeline/gates.ts";
import { skillText, writeSkill } from "../../support/fixtures.ts";
import { createHarness, expectOk, expectRefused } from "../../support/harness.ts";
import { useTempEnv } from "../../support/temp-env.ts";

const ALPHA = skillText("alpha", "# alpha\n\nStep one.\n", "Use when testing alpha.");

describe("patch", function () {
	const getEnv = useTempEnv();

	describe("gates that check values", function () {
		const order = GATE_ORDER.patch as unknown as GateName[];
		const saved = [...order];
		afterEach(function () {
			order.splice(0, order.length, ...saved);
		});

		it("plans the same bytes with the content gates in reverse order", async function () {
			const content: GateName[] = ["text", "unique", "size", "unsafe", "valid"];
			order.splice(order.indexOf("text"), content.length, ...[...content].reverse());
			const env = getEnv();
			const file = writeSkill(join(env.agentDir, "skills"), "alpha", ALPHA);
			const tool = createHarness(env);
			expectOk(await tool.call({ action: "read", skill: "alpha" }));
			const missing = { action: "patch", skill: "alpha", old_string: "Step two.", new_string: "Step 2." };
			expectRefused(await tool.call(missing), "not_found");
			expectOk(await tool.call({ action: "patch", skill: "alpha", old_string: "Step one.", new_string: "Step 1." }));
			expect(readFileSync(file, "utf8")).to.equal(ALPHA.replace("Step one.", "Step 1."));
		});
	});
});
