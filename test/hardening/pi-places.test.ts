// No writable root inside pi's own folders: a trusted project or a setting that aims skillsDir, a
// package or a symlinked .pi/skills at pi's extensions (code every later session runs), a .pi
// folder, node_modules or the home folder gets no write there, and every refusal says why.
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { fingerprint, writeJson, writeSkill } from "../support/fixtures.ts";
import {
	createHarness,
	expectOk,
	expectRefused,
	expectSameTree,
	textOf,
	type Harness,
	type Result,
} from "../support/harness.ts";

const landedPaths = (r: Result): unknown[] => (r.details.changes as Array<{ path: string }>).map((c) => c.path);

describe("hardening: pi's own folders are never writable", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-places-" });
	let env: TempEnv;
	let tool: Harness;
	let extensions: string;

	beforeEach(function () {
		env = getEnv();
		tool = createHarness(env);
		extensions = join(env.agentDir, "extensions");
		mkdirSync(extensions, { recursive: true });
	});

	const trustProject = (selfskills: Record<string, unknown> = {}) =>
		writeJson(join(env.agentDir, "settings.json"), {
			selfskills: { trustedProjects: [env.projectDir], ...selfskills },
		});

	it("a trusted project's skillsDir aimed at <agentDir>/extensions plants no extension code", async function () {
		trustProject();
		writeJson(join(env.projectDir, ".pi", "settings.json"), { selfskills: { skillsDir: extensions } });
		const before = fingerprint(extensions);
		const created = await tool.call({
			action: "create",
			name: "evil",
			description: "Use when testing. Plants code.",
			body: "# Evil\n",
		});
		expectOk(created);
		// The setting fell back to the default skills folder; nothing reached the extensions folder.
		expect(landedPaths(created)).to.deep.equal([join(env.agentDir, "skills", "evil", "SKILL.md")]);
		const wrote = await tool.call({
			action: "write",
			skill: "evil",
			file: "index.ts",
			content: "export default () => {};\n",
		});
		expectOk(wrote);
		expectSameTree(before, fingerprint(extensions), "pi's extensions folder");
		expect(existsSync(join(env.agentDir, "skills", "evil", "index.ts"))).to.equal(true);
	});

	it("a global skillsDir in the agent folder or the home folder falls back to <agentDir>/skills", async function () {
		const topics = ["ledger totals", "compass bearings", "lantern wicks", "harbor tides"];
		for (const [i, skillsDir] of [extensions, env.agentDir, env.home, "~"].entries()) {
			writeJson(join(env.agentDir, "settings.json"), { selfskills: { skillsDir } });
			const name = `n${Math.abs(skillsDir.length)}`;
			const created = await tool.call({
				action: "create",
				name,
				// A description of its own each: near-copies of one skill are refused (similar_exists).
				description: `Use when checking ${topics[i]}. Says hi.`,
				body: "# Hi\n",
			});
			expectOk(created);
			expect(landedPaths(created), skillsDir).to.deep.equal([join(env.agentDir, "skills", name, "SKILL.md")]);
		}
		expect(existsSync(join(extensions, "n1"))).to.equal(false);
	});

	it("a project's .pi/skills symlinked into pi's extensions folder is read-only with the reason", async function () {
		trustProject();
		const planted = join(extensions, "x");
		writeSkill(planted, "planted");
		mkdirSync(join(env.projectDir, ".pi"), { recursive: true });
		symlinkSync(planted, join(env.projectDir, ".pi", "skills"));
		const before = fingerprint(extensions);
		const list = await tool.call({ action: "list", skill: "planted" });
		expect(textOf(list)).to.match(/patchable: no \(inside pi's own folder/);
		expectOk(await tool.call({ action: "read", skill: "planted" }));
		const refused = await tool.call({
			action: "patch",
			skill: "planted",
			old_string: "Run the build",
			new_string: "Run the tests",
		});
		expectRefused(refused, "not_writable");
		expect(textOf(refused)).to.include("pi's own folder");
		expectRefused(
			await tool.call({ action: "write", skill: "planted", file: "index.ts", content: "x\n" }),
			"not_writable",
		);
		expectRefused(await tool.call({ action: "delete", skill: "planted" }), "not_writable");
		expectSameTree(before, fingerprint(extensions), "pi's extensions folder");
	});

	it("keeps read-only the skills of a local package in the agent folder or a project's .pi folder", async function () {
		trustProject();
		const inAgent = join(extensions, "pkg");
		const inDotPi = join(env.projectDir, ".pi", "extensions", "pkg2");
		for (const [dir, name] of [
			[inAgent, "pkg-skill"],
			[inDotPi, "pkg2-skill"],
		] as const) {
			writeJson(join(dir, "package.json"), { name: name.replace("-skill", ""), pi: { skills: ["./skills"] } });
			writeSkill(join(dir, "skills"), name);
		}
		writeJson(join(env.agentDir, "settings.json"), {
			packages: [inAgent, inDotPi],
			selfskills: { trustedProjects: [env.projectDir] },
		});
		for (const name of ["pkg-skill", "pkg2-skill"]) {
			expectOk(await tool.call({ action: "read", skill: name }));
			const refused = await tool.call({
				action: "patch",
				skill: name,
				old_string: "Run the build",
				new_string: "Run the tests",
			});
			expectRefused(refused, "not_writable");
		}
	});
});
