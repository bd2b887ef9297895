// The gate order as data: GATE_ORDER lists, per planner, the contract's order; runGates runs the
// named gates top to bottom and stops at the first refusal. Through the tool: a whole-skill delete
// of a read-only skill it never read answers not_read (gate 2) before not_writable (gate 4).
import { join } from "node:path";
import { expect } from "chai";
import * as refusals from "../../../src/base/errors.ts";
import { GATE_ORDER, runGates, type GateName } from "../../../src/pipeline/gates.ts";
import { useTempEnv } from "../../support/temp-env.ts";
import { writeSkill } from "../../support/fixtures.ts";
import { createHarness, expectOk, expectRefused } from "../../support/harness.ts";

describe("the gate order", function () {
	it("keeps the contract's order 2 read, 3 unchanged, 4 writable, 6 valid wherever a planner names them", function () {
		const contract: GateName[] = ["old_string", "read", "unchanged", "writable", "unique", "valid"];
		for (const [planner, order] of Object.entries(GATE_ORDER)) {
			const named = contract.filter((gate) => (order as readonly GateName[]).includes(gate));
			const seen = (order as readonly GateName[]).filter((gate) => contract.includes(gate));
			expect(seen, planner).to.deep.equal(named);
		}
		expect(GATE_ORDER.patch.slice(0, 4)).to.deep.equal(["old_string", "read", "unchanged", "writable"]);
	});

	it("runs the named gates in order, stops at the first refusal, and throws on a gate not supplied", function () {
		const ran: string[] = [];
		const gate =
			(name: string, refuse = false) =>
			() => {
				ran.push(name);
				return refuse ? refusals.emptyOldString() : undefined;
			};
		const refused = runGates(["read", "unchanged", "writable"], {
			writable: gate("writable"),
			read: gate("read"),
			unchanged: gate("unchanged", true),
		});
		expect(refused?.code).to.equal("empty_old_string");
		expect(ran).to.deep.equal(["read", "unchanged"]);
		expect(() => runGates(["read", "valid"], { read: gate("read") })).to.throw(/"valid" is named but not supplied/);
	});

	describe("through the tool", function () {
		const getEnv = useTempEnv();

		it("refuses a whole-skill delete of a read-only skill: not_read, then not_writable once read", async function () {
			const env = getEnv();
			const tool = createHarness(env);
			writeSkill(join(env.home, ".agents", "skills"), "shared");
			expectRefused(await tool.call({ action: "delete", skill: "shared" }), "not_read");
			expectOk(await tool.call({ action: "read", skill: "shared" }));
			expectRefused(await tool.call({ action: "delete", skill: "shared" }), "not_writable");
		});
	});
});
