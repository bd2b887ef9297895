// The lighter freshness check for calls that name their skills: which calls do (targetsOf), and,
// through the tool with that check on (as if the tool passed targetsOf(args)), the change the first
// version of it could not see: another skill's SKILL.md renamed in place into a twin of the target.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { targetsOf } from "../../../src/policy/call-context.ts";
import { normalizeArguments, type SkillManageArgs } from "../../../src/face/arguments.ts";
import type { DiscoveryCache } from "../../../src/policy/discovery-cache.ts";
import { skillText, writeSkill } from "../../support/fixtures.ts";
import { createHarness, type Harness } from "../../support/harness.ts";
import { useTempEnv } from "../../support/temp-env.ts";

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
			[
				"a name with a control character (refused with every near name)",
				{ action: "read", skill: "al\u0007pha" },
				undefined,
			],
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
			[
				"a batch with one op by path",
				{ action: "operations", operations: [{ action: "write", path: "/x/alpha", file: "a.md", content: "x" }] },
				undefined,
			],
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

		/** The harness, its cache given each call's targets: the lighter check the tool can switch on. */
		function withTargets(tool: Harness): Harness {
			const cache = tool.state.discoveryCache;
			const discover = cache.discover.bind(cache);
			let targets: string[] | undefined;
			(cache as { discover: DiscoveryCache["discover"] }).discover = (options, given) =>
				discover(options, given ?? targets);
			const call = tool.call.bind(tool);
			tool.call = (args, cwd) => {
				targets = targetsOf(normalizeArguments(args));
				return call(args, cwd);
			};
			return tool;
		}

		for (const lighter of [false, true]) {
			it(
				"a patch sees another skill's SKILL.md renamed in place into a twin of its target " +
					`earlier in pi's order (${lighter ? "lighter" : "full"} check)`,
				async function () {
					this.timeout(30_000);
					const env = getEnv();
					const alpha = writeSkill(
						join(env.agentDir, "skills"),
						"alpha",
						skillText("alpha", "# alpha\n\nStep 0.\n"),
					);
					// The project's .pi/skills come before <agentDir>/skills in pi's order; trusted, so pi 1.6
					// loads them too.

					const other = writeSkill(
						join(env.projectDir, ".pi", "skills"),
						"alpha-notes",
						skillText("alpha-notes", "# notes\n\nStep 0.\n"),
					);
					writeFileSync(
						join(env.agentDir, "settings.json"),
						JSON.stringify({ selfskills: { trustedProjects: [env.projectDir] } }),
					);
					const plain = createHarness(env);
					const tool = lighter ? withTargets(plain) : plain;
					expect((await tool.call({ action: "read", skill: "alpha" })).ok).to.equal(true);
					expect(
						(await tool.call({ action: "patch", skill: "alpha", old_string: "Step 0.", new_string: "Step 1." }))
							.ok,
					).to.equal(true);
					const { hits } = tool.state.discoveryCache.stats;
					writeFileSync(other, readFileSync(other, "utf8").replace("name: alpha-notes", "name: alpha"));
					const next = await tool.call({
						action: "patch",
						skill: "alpha",
						old_string: "Step 1.",
						new_string: "Step 2.",
					});
					// "alpha" now means the twin, which this session never read: nothing lands in the shadowed file.
					expect(next.code, next.text).to.equal("not_read");
					expect(readFileSync(alpha, "utf8")).to.contain("Step 1.");
					expect(
						tool.state.discoveryCache.stats.hits,
						"the patch after the read was served from the cache",
					).to.be.greaterThan(0);
					expect(tool.state.discoveryCache.stats.hits).to.equal(hits);
				},
			);
		}

		it(
			"a call naming a skill does not check a skill after it in pi's order; a patch giving it that skill's " +
				"new name (renamed in place) does, and is refused as a twin",
			async function () {
				this.timeout(30_000);
				const env = getEnv();
				// The project's .pi/skills come before <agentDir>/skills in pi's order. Its folder is "gamma": the
				// one new name pi's loader takes without a new diagnostic is the folder's.
				const alpha = writeSkill(
					join(env.projectDir, ".pi", "skills"),
					"gamma",
					skillText("alpha", "# alpha\n\nStep 0.\n"),
				);
				const later = writeSkill(join(env.agentDir, "skills"), "beta", skillText("beta", "# beta\n\nStep 0.\n"));
				writeFileSync(
					join(env.agentDir, "settings.json"),
					JSON.stringify({ selfskills: { trustedProjects: [env.projectDir] } }),
				);
				const tool = createHarness(env);
				const patch = (old_string: string, new_string: string) =>
					tool.call({ action: "patch", skill: "alpha", old_string, new_string });
				expect((await tool.call({ action: "read", skill: "alpha" })).ok).to.equal(true);
				expect((await patch("Step 0.", "Step 1.")).ok).to.equal(true);
				const { hits, misses } = tool.state.discoveryCache.stats;
				writeFileSync(later, readFileSync(later, "utf8").replace("name: beta", "name: gamma"));
				const reread = await tool.call({ action: "read", skill: "alpha" });
				expect(reread.ok, reread.text).to.equal(true);
				expect(tool.state.discoveryCache.stats, "the read was served from the cache").to.include({
					hits: hits + 1,
					misses,
				});
				const renamed = await patch("name: alpha", "name: gamma");
				expect(renamed.code, renamed.text).to.equal("invalid_skill");
				expect(renamed.text).to.contain('name "gamma" collides');
				expect(readFileSync(alpha, "utf8")).to.contain("name: alpha").and.to.contain("Step 1.");
			},
		);
	});
});
