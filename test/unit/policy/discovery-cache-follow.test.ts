// discovery-cache.ts following the tool's own new and removed bundled files and its delete of a
// whole skill: the next call is served from the cache only when its discovery reads exactly as a
// fresh session's, and a change another process makes afterwards is still seen.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { createSideDoorGuard } from "../../../src/guard/side-doors.ts";
import { changedBeforeFirstRename } from "../../support/faulty-fs.ts";
import { createRandom } from "../../support/random.ts";
import { skillText, writeJson, writeSkill } from "../../support/fixtures.ts";
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

/** Another process nests a skill in alpha and hides alpha's SKILL.md: pi walks the folder and finds it. */
function nestUnderHiddenAlpha(root: string): void {
	writeSkill(join(root, "alpha", "nested"), "nested-one");
	writeFileSync(join(root, "alpha", ".ignore"), "/SKILL.md\n");
}

/** What a fresh session of the same pi lists: order, names, descriptions, paths, patchable and reasons. */
async function freshList(env: TempEnv, session: Harness): Promise<string> {
	return (await freshPiSession(env, session).call({ action: "list" })).text;
}

/** Creates `name` (a skill pi's list of the session does not name) and reads it. */
async function createRead(tool: Harness, name: string): Promise<void> {
	await ok(tool, { action: "create", name, description: `Use when ${name} is needed.`, body: "# Steps\n" });
	await ok(tool, { action: "read", skill: name });
}

async function ok(tool: Harness, args: Record<string, unknown>): Promise<void> {
	const result = await tool.call(args);
	expect(result.ok, `${JSON.stringify(args)}: ${result.text}`).to.equal(true);
}

/** Runs `step`, then expects a list equal to a fresh session's, reached with `extra` new discoveries. */
async function expectFollowed(env: TempEnv, tool: Harness, step: () => Promise<void>, extra = 0): Promise<void> {
	const { misses } = tool.state.discoveryCache.stats;
	await step();
	expect((await tool.call({ action: "list" })).text).to.equal(await freshList(env, tool));
	expect(tool.state.discoveryCache.stats.misses, "new discoveries").to.equal(misses + extra);
}

describe("discovery cache: following the tool's own bundled files and skill deletes", function () {
	const getEnv = useTempEnv();

	it("follows new and removed bundled files, in new folders or not, alone or in a batch", async function () {
		this.timeout(60_000);
		const env = getEnv();
		seed(env);
		const tool = await session(env);
		const files = ["notes/a.md", "scripts/run.sh", "notes/deep/b.md", "c.md"];
		for (const file of files) {
			await expectFollowed(env, tool, () =>
				ok(tool, { action: "write", skill: "alpha", file, content: `${file}\n` }),
			);
		}
		await expectFollowed(env, tool, () =>
			ok(tool, {
				action: "operations",
				operations: [
					{ action: "write", skill: "bravo", file: "notes/one.md", content: "1\n" },
					{ action: "write", skill: "bravo", file: "notes/two.md", content: "2\n" },
					{ action: "patch", skill: "bravo", old_string: "Run the build.", new_string: "Run the full build." },
					{ action: "write", skill: "charlie", file: "refs/r.md", content: "r\n" },
				],
			}),
		);
		for (const file of files) {
			await expectFollowed(env, tool, () => ok(tool, { action: "delete", skill: "alpha", file }));
		}
		await expectFollowed(env, tool, () =>
			ok(tool, {
				action: "operations",
				operations: [
					{ action: "delete", skill: "bravo", file: "notes/one.md" },
					{ action: "delete", skill: "bravo", file: "notes/two.md" },
				],
			}),
		);
	});

	it("follows a whole skill deleted, alone and with another skill in a batch", async function () {
		this.timeout(60_000);
		const env = getEnv();
		seed(env);
		const tool = await session(env);
		// Skills made in this session: pi's list of the session does not name them.
		for (const name of ["echo", "foxtrot"]) await createRead(tool, name);
		await ok(tool, { action: "write", skill: "echo", file: "notes/a.md", content: "a\n" });
		await expectFollowed(env, tool, () => ok(tool, { action: "delete", skill: "echo" }));
		await expectFollowed(env, tool, () =>
			ok(tool, {
				action: "operations",
				operations: [
					{ action: "delete", skill: "foxtrot" },
					{ action: "write", skill: "charlie", file: "notes/c.md", content: "c\n" },
				],
			}),
		);
		const listed = (await tool.call({ action: "list" })).text;
		expect(listed).to.not.contain("echo —").and.not.contain("foxtrot —");
		// One pi listed: a fresh discovery reports the file pi named as missing, so it is discovered again.
		await expectFollowed(env, tool, () => ok(tool, { action: "delete", skill: "alpha" }), 1);
	});

	it("follows a deleted skill restored with its files", async function () {
		this.timeout(60_000);
		const env = getEnv();
		seed(env);
		const tool = await session(env);
		await createRead(tool, "echo");
		const { followedCreates } = tool.state.discoveryCache.stats;
		await ok(tool, { action: "write", skill: "echo", file: "notes/a.md", content: "a\n" });
		await ok(tool, { action: "write", skill: "echo", file: "scripts/run.sh", content: "echo\n" });
		await ok(tool, { action: "delete", skill: "echo" });
		await expectFollowed(env, tool, () => ok(tool, { action: "restore", skill: "echo" }));
		expect(tool.state.discoveryCache.stats.followedCreates).to.equal(followedCreates + 1);
		expect((await tool.call({ action: "read", skill: "echo", file: "scripts/run.sh" })).ok).to.equal(true);
	});

	it("discovers again when the deleted skill hid a twin of its name, which pi loads now", async function () {
		this.timeout(60_000);
		const env = getEnv();
		seed(env);
		const tool = await session(env);
		await createRead(tool, "echo");
		// ~/.agents/skills comes after <agentDir>/skills: pi keeps the tool's "echo" and reports the collision.
		writeSkill(join(env.home, ".agents", "skills"), "echo-twin", skillText("echo"));
		expect((await tool.call({ action: "list" })).text).to.contain("echo —");
		await expectFollowed(env, tool, () => ok(tool, { action: "delete", skill: "echo" }), 1);
		expect((await tool.call({ action: "list" })).text).to.contain("echo-twin/SKILL.md");
	});

	it("still sees what another process changes after a followed write: a nested twin let in", async function () {
		this.timeout(60_000);
		const env = getEnv();
		const root = seed(env);
		const tool = await session(env);
		await expectFollowed(env, tool, () =>
			ok(tool, { action: "write", skill: "alpha", file: "nested/notes.md", content: "n\n" }),
		);
		nestUnderHiddenAlpha(root);
		const listed = (await tool.call({ action: "list" })).text;
		expect(listed).to.equal(await freshList(env, tool));
		// alpha stays listed: pi handed its file to the session, and loads it from there.
		expect(listed).to.contain("nested-one —");
	});

	it("discovers again when another process changed the folder while the tool wrote its file", async function () {
		this.timeout(60_000);
		const env = getEnv();
		const root = seed(env);
		const fs = changedBeforeFirstRename(() => nestUnderHiddenAlpha(root));
		const tool = await session(env, createHarness(env, fs));
		await expectFollowed(
			env,
			tool,
			() => ok(tool, { action: "write", skill: "alpha", file: "nested/notes.md", content: "n\n" }),
			1,
		);
		expect(fs.changed()).to.equal(true);
		expect((await tool.call({ action: "list" })).text).to.contain("nested-one");
	});

	it("checks a followed create's and delete's neighbours for a call naming a later skill", async function () {
		this.timeout(60_000);
		const env = getEnv();
		const root = seed(env);
		const tool = await session(env);
		const read = async (harness: Harness, skill: string) => (await harness.call({ action: "read", skill })).text;
		for (const name of ["a-new", "b-new"]) {
			await ok(tool, { action: "create", name, description: `Use when ${name} is needed.`, body: "# Steps\n" });
		}
		await ok(tool, { action: "delete", skill: "bravo" });
		expect(tool.state.discoveryCache.stats.followedCreates).to.equal(2);
		// Whichever of the two pi meets first, before every seeded skill or not, now holds delta's name.
		for (const name of ["a-new", "b-new"]) {
			const { misses } = tool.state.discoveryCache.stats;
			writeFileSync(join(root, name, "SKILL.md"), skillText("delta"));
			expect(await read(tool, "delta"), `${name} renamed delta in place`).to.equal(
				await read(freshPiSession(env, tool), "delta"),
			);
			expect(tool.state.discoveryCache.stats.misses).to.equal(misses + 1);
			writeFileSync(join(root, name, "SKILL.md"), skillText(name));
		}
	});

	it("discovers again when the new file lies in a place pi scans in the skill (settings entry)", async function () {
		this.timeout(60_000);
		const env = getEnv();
		const root = seed(env);
		mkdirSync(join(root, "alpha", "notes"), { recursive: true });
		writeJson(join(env.agentDir, "settings.json"), {
			skills: [join(root, "alpha", "notes")],
			selfskills: { trustedProjects: [env.projectDir] },
		});
		const tool = await session(env);
		// pi loads every skill file the entry holds, this one too.
		await expectFollowed(
			env,
			tool,
			() => ok(tool, { action: "write", skill: "alpha", file: "notes/note.md", content: skillText("from-a-note") }),
			1,
		);
		expect((await tool.call({ action: "list" })).text).to.contain("from-a-note —");
	});

	it("follows pi's own write and edit of a skill's files, backed up by the side-door guard", async function () {
		this.timeout(60_000);
		const env = getEnv();
		const root = seed(env);
		// The guard finds a path's skill among the skill files pi handed the session.
		const tool = await session(env);
		const guard = createSideDoorGuard({
			agentDir: () => env.agentDir,
			fs: realFs,
			state: tool.state,
			effects: { onLanded() {} },
		});
		const ctx = { cwd: env.projectDir } as ExtensionContext;
		/** pi's tool `toolName` on `path`, which `run` stands in for, between the guard's two hooks. */
		const piTool = (toolName: string, path: string, run: () => void) => async () => {
			expect(guard.onToolCall({ toolName, toolCallId: toolName, input: { path } }, ctx)).to.equal(undefined);
			run();
			guard.onToolResult({ toolName, toolCallId: toolName });
		};
		const note = join(root, "alpha", "notes", "by-pi.md");
		await expectFollowed(
			env,
			tool,
			piTool("write", note, () => {
				mkdirSync(dirname(note), { recursive: true });
				writeFileSync(note, "Written by pi's write.\n");
			}),
		);
		const skillFile = join(root, "bravo", "SKILL.md");
		await expectFollowed(
			env,
			tool,
			piTool("edit", skillFile, () =>
				writeFileSync(skillFile, readFileSync(skillFile, "utf8").replace("Run the build.", "Run the full build.")),
			),
		);
		// A new name is no follow: every skill is discovered again.
		await expectFollowed(
			env,
			tool,
			piTool("edit", skillFile, () => writeFileSync(skillFile, skillText("bravo-2"))),
			1,
		);
	});

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
		expect(followed, "tool steps followed without a new discovery").to.be.at.least(20);
	});
});
