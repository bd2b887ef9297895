// Refused arguments through pi's real agent loop: pi turns a throw in prepareArguments into an
// error with empty details, so every invalid_arguments refusal must still reach the model as an
// error result whose details carry the code and the field, whatever shape the bad call has.
import { join } from "node:path";
import { expect } from "chai";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";

describe(`invalid_arguments through pi's agent loop (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("keeps details.code for an unknown action; a missing, mistyped or extra field; a bad batch", async function () {
		const env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const bad: Array<Record<string, unknown>> = [
			{ action: "frobnicate" },
			{ action: "patch", skill: "deploy-checks", new_string: "x" },
			{ action: "read", skill: 42 },
			{ action: "read", skill: "deploy-checks", old_string: "x" },
			{ action: "operations", operations: [{ action: "create", name: "x" }] },
			{ action: "operations", operations: "[not json" },
		];
		const run = await pi.run("try bad calls", [...bad.map((args) => call(args)), { text: "done" }]);
		expect(run.toolResults).to.have.length(bad.length);
		for (const [index, result] of run.toolResults.entries()) {
			const label = `${JSON.stringify(bad[index])} -> ${result.text}`;
			expect(result.isError, label).to.equal(true);
			expect(result.text, label).to.match(/^invalid_arguments: /);
			expect((result.details as Record<string, unknown>).code, label).to.equal("invalid_arguments");
		}
		expect((run.toolResults[0].details as Record<string, unknown>).field).to.equal("action");
		// A valid call right after still works: the carrier never leaks into a real action.
		const next = await pi.run("list", [call({ action: "list" }), { text: "ok" }]);
		expect(next.toolResults[0].isError, next.toolResults[0].text).to.equal(false);
		expect(next.toolResults[0].text).to.contain("deploy-checks");
	});
});
