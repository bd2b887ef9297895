// discovery-cache.ts following the tool's own create: the next call is served from the cache only
// when its discovery reads exactly as a fresh session's (the same list, in pi's order), and is
// discovered again whenever anything could make pi treat the new skill otherwise.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { changedBeforeFirstRename } from "../../support/faulty-fs.ts";
import { writeJson, writeSkill } from "../../support/fixtures.ts";
import { createHarness, freshPiSession, startPiSession, type Harness } from "../../support/harness.ts";
import { type TempEnv, useTempEnv } from "../../support/temp-env.ts";

const BODY = "# Steps\n\n1. Do the thing.\n";

/** Skills in the skillsDir (<agentDir>/skills) and the project's .pi/skills, the project trusted. */
function seed(env: TempEnv, settings: Record<string, unknown> = {}): string {
	const root = join(env.agentDir, "skills");
	for (const name of ["delta", "mike", "tango"]) writeSkill(root, name);
	writeSkill(join(env.projectDir, ".pi", "skills"), "project-skill");
	writeJson(join(env.agentDir, "settings.json"), {
		...settings,
		selfskills: { trustedProjects: [env.projectDir] },
	});
	return root;
}

const session = startPiSession;

/** What a fresh session of the same pi lists: order, names, descriptions, paths, patchable and reasons. */
async function freshList(env: TempEnv, session: Harness): Promise<string> {
	return (await freshPiSession(env, session).call({ action: "list" })).text;
}

async function create(tool: Harness, name: string): Promise<void> {
	const result = await tool.call({ action: "create", name, description: `Use when ${name} is needed.`, body: BODY });
	expect(result.ok, result.text).to.equal(true);
}

describe("discovery cache: following the tool's own create", function () {
	const getEnv = useTempEnv();

	it("adds the new skill where pi's order puts it: later calls read as a fresh session's", async function () {
		this.timeout(30_000);
		const env = getEnv();
		seed(env);
		const tool = await session(env);
		const { misses } = tool.state.discoveryCache.stats;
		for (const name of ["alpha", "lima", "zulu", "a-first", "mike-2"]) {
			await create(tool, name);
			const listed = await tool.call({ action: "list" });
			expect(listed.text, `after creating ${name}`).to.equal(await freshList(env, tool));
		}
		expect(tool.state.discoveryCache.stats).to.deep.include({ misses, followedCreates: 5 });
		// A create sees every other name, the created ones included.
		const again = await tool.call({ action: "create", name: "lima", description: "Use when twice.", body: BODY });
		expect(again.code).to.equal("exists");
	});

	it("follows a deleted skill put back by restore: later calls read as a fresh session's", async function () {
		this.timeout(30_000);
		const env = getEnv();
		seed(env);
		const tool = await session(env);
		// Made in this session: pi's list of the session does not name it (a skill it names, once
		// deleted, is a file pi's list names and misses, so its discovery is taken again).
		await create(tool, "oscar");
		expect((await tool.call({ action: "read", skill: "oscar" })).ok).to.equal(true);
		const deleted = await tool.call({ action: "delete", skill: "oscar" });
		expect(deleted.ok, deleted.text).to.equal(true);
		expect((await tool.call({ action: "list" })).text).to.not.contain("oscar —");
		const { misses } = tool.state.discoveryCache.stats;
		const restored = await tool.call({ action: "restore", skill: "oscar" });
		expect(restored.ok, restored.text).to.equal(true);
		expect((await tool.call({ action: "list" })).text).to.equal(await freshList(env, tool));
		expect(tool.state.discoveryCache.stats).to.deep.include({ misses, followedCreates: 2 });
	});

	it("discovers again when the root changed in any other way during the create", async function () {
		this.timeout(30_000);
		const env = getEnv();
		const root = seed(env);
		// Another process adds a skill while the tool writes its own.
		const fs = changedBeforeFirstRename(() => writeSkill(root, "stray"));
		const tool = await session(env, createHarness(env, fs));
		const { misses } = tool.state.discoveryCache.stats;
		await create(tool, "alpha");
		expect(fs.changed()).to.equal(true);
		expect((await tool.call({ action: "list" })).text).to.equal(await freshList(env, tool));
		expect(tool.state.discoveryCache.stats).to.deep.include({ misses: misses + 1, followedCreates: 0 });
	});

	/** Creates `name`, which pi will not load: the list after it is a fresh one's, without it, not followed. */
	async function expectRediscoveredWithout(env: TempEnv, name: string): Promise<void> {
		const tool = await session(env);
		await create(tool, name);
		const listed = (await tool.call({ action: "list" })).text;
		expect(listed).to.equal(await freshList(env, tool));
		expect(listed).to.not.contain(`${name} —`);
		expect(tool.state.discoveryCache.stats.followedCreates).to.equal(0);
	}

	it("discovers again when an ignore file in the root could hide the new skill", async function () {
		this.timeout(30_000);
		const env = getEnv();
		writeFileSync(join(seed(env), ".gitignore"), "hidden-*/\n");
		await expectRediscoveredWithout(env, "hidden-one");
	});

	it("discovers again when a settings `skills` override could disable the new skill", async function () {
		this.timeout(30_000);
		const env = getEnv();
		seed(env, { skills: ["!**/excluded-*"] });
		await expectRediscoveredWithout(env, "excluded-one");
	});

	it("discovers again when the skillsDir holds no skill yet (no sibling tells pi's order)", async function () {
		this.timeout(30_000);
		const env = getEnv();
		mkdirSync(join(env.agentDir, "skills"), { recursive: true });
		writeSkill(join(env.projectDir, ".pi", "skills"), "project-skill");
		writeJson(join(env.agentDir, "settings.json"), { selfskills: { trustedProjects: [env.projectDir] } });
		const tool = await session(env);
		await create(tool, "first-one");
		expect((await tool.call({ action: "list" })).text).to.equal(await freshList(env, tool));
		expect(tool.state.discoveryCache.stats.followedCreates).to.equal(0);
	});
});
