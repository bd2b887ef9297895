// The lighter freshness check as the tool uses it: which calls name their skills (targetsOf), and
// that a patch through executeSkillManage neither looks inside other skills' folders nor misses a
// change to its own skill, a twin of it, or the settings.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { targetsOf } from "../../src/call-context.ts";
import type { SkillManageArgs } from "../../src/arguments.ts";
import { skillText, writeSkill } from "../support/fixtures.ts";
import { createHarness } from "../support/harness.ts";
import { useTempEnv } from "../support/temp-env.ts";

describe("targeted discovery checks", function () {
	describe("targetsOf", function () {
		const cases: Array<[string, SkillManageArgs, string[] | undefined]> = [
			["patch by name", { action: "patch", skill: "alpha", old_string: "a", new_string: "b" }, ["alpha"]],
			["read, name trimmed as findSkill trims it", { action: "read", skill: " alpha " }, ["alpha"]],
			["each single-skill action", { action: "history", skill: "alpha" }, ["alpha"]],
			["a skill chosen by path", { action: "patch", path: "/x/alpha", old_string: "a", new_string: "b" }, undefined],
			["name and path", { action: "read", skill: "alpha", path: "/x/alpha" }, undefined],
			["create: every name matters", { action: "create", name: "beta", description: "d", body: "b" }, undefined],
			["list", { action: "list" }, undefined],
			["a name with a control character (refused with every near name)", { action: "read", skill: "al\u0007pha" }, undefined],
			[
				"a batch of named ops",
				{
					action: "operations",
					operations: [
						{ action: "patch", skill: "alpha", old_string: "a", new_string: "b" },
						{ action: "delete", skill: "beta" },
					],
				},
				["alpha", "beta"],
			],
			["a batch with one op by path", { action: "operations", operations: [{ action: "write", path: "/x/alpha", file: "a.md", content: "x" }] }, undefined],
			["an empty batch", { action: "operations", operations: [] }, undefined],
		];
		for (const [title, args, expected] of cases) {
			it(title, function () {
				expect(targetsOf(args)).to.deep.equal(expected);
			});
		}
	});

	describe("through the tool", function () {
		const getEnv = useTempEnv();

		it("a patch does not rediscover for an edit inside another skill, and does for its own skill and a twin", async function () {
			this.timeout(30_000);
			const env = getEnv();
			const skills = join(env.agentDir, "skills");
			const alpha = writeSkill(skills, "alpha", skillText("alpha", "# alpha\n\nStep 0.\n"));
			const beta = writeSkill(skills, "beta");
			// Trusted, so that pi 1.6 loads the project's own skills too.
			writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify({ selfskills: { trustedProjects: [env.projectDir] } }));
			const tool = createHarness(env);
			const { stats } = tool.state.discoveryCache;
			expect((await tool.call({ action: "read", skill: "alpha" })).ok).to.equal(true);
			let step = 0;
			const patch = async () => {
				const result = await tool.call({ action: "patch", skill: "alpha", old_string: `Step ${step}.`, new_string: `Step ${step + 1}.` });
				expect(result.ok, result.text).to.equal(true);
				step++;
			};
			await patch();
			const misses = stats.misses;
			writeFileSync(beta, skillText("beta", "# beta\n\nEdited elsewhere.\n", "Use when testing beta. Edited."));
			await patch();
			expect(stats.misses, "an edit inside another skill's folder forced a rediscovery").to.equal(misses);
			// The full check (list) still sees it.
			const listed = await tool.call({ action: "list" });
			expect(JSON.stringify(listed.details.skills)).to.contain("Edited.");
			// Its own skill changed by another process: seen (the patch is refused as stale, not run on old knowledge).
			writeFileSync(alpha, readFileSync(alpha, "utf8").replace("Use when testing alpha.", "Use when testing alpha, changed."));
			const before = stats.misses;
			const stale = await tool.call({ action: "patch", skill: "alpha", old_string: `Step ${step}.`, new_string: `Step ${step + 1}.` });
			expect(stats.misses).to.equal(before + 1);
			expect(stale.code).to.equal("stale");
			// A twin in a place pi scans first (the project's .pi/skills): the name now means that skill.
			const twinDir = join(env.projectDir, ".pi", "skills", "alpha");
			mkdirSync(twinDir, { recursive: true });
			writeFileSync(join(twinDir, "SKILL.md"), skillText("alpha", "# twin\n\nStep 0.\n", "Use when testing the twin."));
			const read = await tool.call({ action: "read", skill: "alpha" });
			expect(read.text).to.contain("# twin");
		});
	});
});
