// discovery-cache.ts in a session as pi runs one: after the tool's own writes (rewrites followed,
// anything else discovered again) and changes by other processes, every list reads exactly as a
// fresh session's.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { createRandom } from "../../support/random.ts";
import { writeJson, writeSkill } from "../../support/fixtures.ts";
import { createHarness, freshPiSession, startPiSession, type Harness } from "../../support/harness.ts";
import { type TempEnv, useTempEnv } from "../../support/temp-env.ts";

const SKILLS = ["alpha", "bravo", "charlie", "delta"];

/** Skills in the skillsDir (<agentDir>/skills) and the project's .pi/skills, the project trusted. */
function seed(env: TempEnv): string {
	const root = join(env.agentDir, "skills");
	for (const name of SKILLS) writeSkill(root, name);
	writeSkill(join(env.projectDir, ".pi", "skills"), "project-skill");
	writeJson(join(env.agentDir, "settings.json"), { selfskills: { trustedProjects: [env.projectDir] } });
	return root;
}

/** A session as pi runs one (startPiSession), each seeded skill read. */
async function session(env: TempEnv, tool = createHarness(env)): Promise<Harness> {
	await startPiSession(env, tool);
	for (const skill of SKILLS) expect((await tool.call({ action: "read", skill })).ok).to.equal(true);
	return tool;
}

/** What a fresh session of the same pi lists: order, names, descriptions, paths, patchable and reasons. */
async function freshList(env: TempEnv, session: Harness): Promise<string> {
	return (await freshPiSession(env, session).call({ action: "list" })).text;
}

/** Runs `step`, then expects a list equal to a fresh session's, reached with `extra` new discoveries. */
async function expectFollowed(env: TempEnv, tool: Harness, step: () => Promise<void>, extra = 0): Promise<void> {
	const { misses } = tool.state.discoveryCache.stats;
	await step();
	expect((await tool.call({ action: "list" })).text).to.equal(await freshList(env, tool));
	expect(tool.state.discoveryCache.stats.misses, "new discoveries").to.equal(misses + extra);
}

describe("discovery cache in a session: every list reads as a fresh session's", function () {
	const getEnv = useTempEnv();

	it("keys the discovery by the skill files pi hands over at each prompt: the same files reuse it", async function () {
		this.timeout(60_000);
		const env = getEnv();
		seed(env);
		const tool = await session(env);
		// Each prompt brings a new list (index.ts): the same files reuse the discovery.
		await expectFollowed(env, tool, async () => {
			tool.state.runtimeSkillFiles = [...tool.state.runtimeSkillFiles];
		});
		// One more (a --skill file pi loaded from elsewhere): discovered again, as a runtime skill.
		const extra = writeSkill(join(env.root, "elsewhere"), "from-flag");
		await expectFollowed(
			env,
			tool,
			async () => {
				tool.state.runtimeSkillFiles = [...tool.state.runtimeSkillFiles, extra];
			},
			1,
		);
		expect((await tool.call({ action: "list" })).text).to.contain("from-flag —");
	});

	it("equals a fresh session after each of 60 random steps by the tool and by others", async function () {
		this.timeout(240_000);
		const env = getEnv();
		const root = seed(env);
		const tool = await session(env);
		const pick = createRandom(17);
		const paths = ["notes/a.md", "notes/b.md", "scripts/run.sh", "notes/deep/c.md", "d.md"];
		const alive = new Set(SKILLS);
		const deleted = new Set<string>();
		/** Skills whose SKILL.md an ignore file hides (pi loads their nested skills instead). */
		const hidden = new Set<string>();
		let followed = 0;
		for (let step = 0; step < 60; step++) {
			const skill = [...alive][pick(alive.size)];
			const file = paths[pick(paths.length)];
			const kind = hidden.has(skill) ? 9 : pick(10);
			if (kind < 7) {
				// The tool: a new file, a rewrite or a delete of a bundled file, or a whole skill deleted or restored.
				expect((await tool.call({ action: "read", skill })).ok).to.equal(true);
				const { misses } = tool.state.discoveryCache.stats;
				const exists = (await tool.call({ action: "read", skill, file })).ok;
				let result: { ok: boolean; text: string };
				if (kind === 0 && alive.size > 1) {
					result = await tool.call({ action: "delete", skill });
					alive.delete(skill);
					deleted.add(skill);
				} else if (kind === 1 && deleted.size > 0) {
					const back = [...deleted][0];
					result = await tool.call({ action: "restore", skill: back });
					deleted.delete(back);
					alive.add(back);
				} else if (exists && kind < 4) result = await tool.call({ action: "delete", skill, file });
				else result = await tool.call({ action: "write", skill, file, content: `step ${step}\n` });
				expect(result.ok, `step ${step}: ${result.text}`).to.equal(true);
				expect((await tool.call({ action: "list" })).text, `step ${step}`).to.equal(await freshList(env, tool));
				if (tool.state.discoveryCache.stats.misses === misses) followed++;
				continue;
			}
			// Another process: a file beside the tool's, or a nested skill let in and out by an ignore file.
			const dir = join(root, skill);
			if (kind === 7) writeFileSync(join(dir, "notes-by-hand.md"), `step ${step}\n`);
			else if (kind === 8) {
				mkdirSync(join(dir, "notes"), { recursive: true });
				writeSkill(join(dir, "notes"), `nested-${step}`);
				writeFileSync(join(dir, ".ignore"), "/SKILL.md\n");
				hidden.add(skill);
			} else {
				rmSync(join(dir, ".ignore"), { force: true });
				hidden.delete(skill);
			}
			expect((await tool.call({ action: "list" })).text, `step ${step} (by hand)`).to.equal(
				await freshList(env, tool),
			);
		}
		// Rewrites of an existing file are followed; any other step is discovered again.
		expect(followed, "tool steps followed without a new discovery").to.be.at.least(2);
	});
});
