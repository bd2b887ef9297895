// "Refusals are repairable", measured: each typical mistake is repaired in at most one more call using
// only the refusal's code and data; the same agent facing generic errors mostly cannot repair at all.
import { expect } from "chai";
import { useTempEnv } from "../support/temp-env.ts";
import { runScenario, SCENARIOS, type Outcome } from "./repair-agent.ts";

describe("refusals are repairable from their code and data alone", function () {
	const getEnv = useTempEnv();
	const structured: Outcome[] = [];
	const generic: Outcome[] = [];

	for (const scenario of SCENARIOS) {
		it(`repairs a ${scenario.mistake} in at most one more call`, async function () {
			const outcome = await runScenario(scenario, getEnv(), false);
			structured.push(outcome);
			expect(outcome.repaired, scenario.mistake).to.equal(true);
			expect(outcome.extraCalls).to.be.at.most(1);
		});

		it(`cannot repair a ${scenario.mistake} in one call from a generic error`, async function () {
			const outcome = await runScenario(scenario, getEnv(), true);
			generic.push(outcome);
			expect(outcome.extraCalls).to.be.greaterThan(1);
		});
	}

	after(function () {
		const within = (list: Outcome[]) => list.filter((o) => o.extraCalls <= 1).length;
		const rows = SCENARIOS.map(
			(s, i) =>
				`  ${s.mistake.padEnd(20)} structured: ${structured[i]?.extraCalls ?? "-"}  ` +
				`generic: ${generic[i]?.extraCalls ?? "-"}`,
		);
		console.log(
			`\n  repaired within one more call: structured ${within(structured)}/${SCENARIOS.length}, ` +
				`generic ${within(generic)}/${SCENARIOS.length}\n${rows.join("\n")}`,
		);
	});
});
