// src/face/review.ts: an approval lands what was proposed, or a patch replayed on a changed file, and
// nothing else: where no file changed but the plan would now differ (a restore without a backup id
// that would now pick a newer backup), the approval is refused stale and the proposal stays pending.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { listProposals } from "../../../src/store/proposals.ts";
import { findProposal, previewApproval } from "../../../src/face/review.ts";
import { writeJson, writeSkill } from "../../support/fixtures.ts";
import { createHarness, expectOk, sessionDeps } from "../../support/harness.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";

describe("review (src/face/review.ts)", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-review-unit-" });
	let env: TempEnv;
	const approval = (mode: string) =>
		writeJson(join(env.agentDir, "settings.json"), { selfskills: { approval: mode } });
	const deps = () => sessionDeps(env.agentDir);

	beforeEach(function () {
		env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "deploy-checks");
	});

	it("refuses to approve a change that would now differ from the proposal though no file changed", async function () {
		const skillFile = join(env.agentDir, "skills", "deploy-checks", "SKILL.md");
		const tool = createHarness(env);
		const patch = (from: string, to: string) => ({
			action: "patch",
			skill: "deploy-checks",
			old_string: from,
			new_string: to,
		});
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		expectOk(await tool.call(patch("Run the build.", "Run make.")));
		const base = readFileSync(skillFile, "utf8");
		approval("propose");
		const proposed = await tool.call({ action: "restore", skill: "deploy-checks" });
		expect(proposed.details.proposed).to.equal(true);
		approval("auto");
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		expectOk(await tool.call(patch("Run make.", "Run make all.")));
		expectOk(await tool.call(patch("Run make all.", "Run make.")));
		expect(readFileSync(skillFile, "utf8")).to.equal(base);
		const proposal = findProposal(deps(), String(proposed.details.proposal));
		if ("code" in proposal) throw new Error(proposal.message);
		const preview = await previewApproval(deps(), { cwd: env.projectDir }, proposal);
		expect(preview).to.have.property("code", "stale");
		expect((preview as { message: string }).message).to.contain("is not the one proposed");
		expect(listProposals(realFs, env.agentDir).map((p) => p.id)).to.deep.equal([proposal.id]);
	});

	it("previews the proposed change itself when nothing changed", async function () {
		const tool = createHarness(env);
		approval("propose");
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		const proposed = await tool.call({
			action: "patch",
			skill: "deploy-checks",
			old_string: "Run the build.",
			new_string: "Run make.",
		});
		const proposal = findProposal(deps(), String(proposed.details.proposal));
		if ("code" in proposal) throw new Error(proposal.message);
		const preview = await previewApproval(deps(), { cwd: env.projectDir }, proposal);
		if ("code" in preview) throw new Error(preview.message);
		expect(preview.replayedOn).to.deep.equal([]);
		expect(preview.targets).to.deep.equal(proposal.targets);
		expect(preview.diff).to.equal(proposal.diff);
	});

	it("does not replay a patch on a file that took the proposed change since", async function () {
		const skillFile = join(env.agentDir, "skills", "deploy-checks", "SKILL.md");
		const tool = createHarness(env);
		// The new text still holds the old: replayed on the file that took it, it would apply again.
		const patch = {
			action: "patch",
			skill: "deploy-checks",
			old_string: "Run the build.",
			new_string: "Run the build. Twice.",
		};
		approval("propose");
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		const proposed = await tool.call(patch);
		expect(proposed.details.proposed).to.equal(true);
		approval("auto");
		expectOk(await tool.call(patch));
		const taken = readFileSync(skillFile, "utf8");
		const proposal = findProposal(deps(), String(proposed.details.proposal));
		if ("code" in proposal) throw new Error(proposal.message);
		const preview = await previewApproval(deps(), { cwd: env.projectDir }, proposal);
		expect(preview).to.have.property("code", "stale");
		expect((preview as { message: string }).message).to.contain("already holds the proposed change");
		expect(readFileSync(skillFile, "utf8")).to.equal(taken);
		expect(listProposals(realFs, env.agentDir).map((p) => p.id)).to.deep.equal([proposal.id]);
	});
});
