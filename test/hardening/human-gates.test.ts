// The person's gates in the pipeline: a pinned skill is read-only (`pinned`) for every change the
// tool can make; an approval mode other than "auto" for a skill's origin refuses the change
// (`needs_approval`, nothing written, no backup) until the review flow exists, except in a dry run,
// which never asks; a batch is refused whole; a person's skill under { own: "propose", others: "auto" } lands.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { writeJson, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, textOf } from "../support/harness.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";

describe("hardening: the person's gates (pins and approval)", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-human-" });
	let env: TempEnv;
	let skillFile: string;
	const settings = (selfskills: Record<string, unknown>) => writeJson(join(env.agentDir, "settings.json"), { selfskills });
	const backups = () => existsSync(join(env.agentDir, "selfskills", "backups"));

	beforeEach(function () {
		env = getEnv();
		skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks");
	});

	it("refuses every change to a pinned skill with pinned, reads it, and writes nothing", async function () {
		settings({ pinned: ["deploy-*"] });
		const tool = createHarness(env);
		const before = readFileSync(skillFile, "utf8");
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		for (const args of [
			{ action: "patch", skill: "deploy-checks", old_string: "Run the build.", new_string: "Run make." },
			{ action: "patch", skill: "deploy-checks", old_string: "Run the build.", new_string: "Run make.", dry_run: true },
			{ action: "write", skill: "deploy-checks", file: "references/x.md", content: "x\n" },
			{ action: "delete", skill: "deploy-checks" },
			{ action: "create", name: "deploy-more", description: "Use when deploying more.", body: "# More\n" },
			{ action: "operations", operations: [{ action: "write", skill: "deploy-checks", file: "references/y.md", content: "y\n" }] },
		]) {
			const r = await tool.call(args);
			expectRefused(r, "pinned");
			expect(textOf(r), JSON.stringify(args)).to.match(/pinned \(selfskills\.pinned: "deploy-\*"\)/);
		}
		expect(readFileSync(skillFile, "utf8")).to.equal(before);
		expect(existsSync(join(env.agentDir, "skills", "deploy-more"))).to.equal(false);
		expect(backups()).to.equal(false);
	});

	it("refuses a change that needs approval with needs_approval and writes nothing, while a dry run still shows the diff", async function () {
		settings({ approval: "propose" });
		const tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		const dry = await tool.call({ action: "patch", skill: "deploy-checks", old_string: "Run the build.", new_string: "Run make.", dry_run: true });
		expectOk(dry);
		expect(textOf(dry)).to.contain("+1. Run make.");
		const refused = await tool.call({ action: "patch", skill: "deploy-checks", old_string: "Run the build.", new_string: "Run make." });
		expectRefused(refused, "needs_approval");
		expect(textOf(refused)).to.contain('"propose"').and.contain("Do not make the change another way");
		expect(readFileSync(skillFile, "utf8")).to.contain("Run the build.");
		expect(backups()).to.equal(false);
		const batch = await tool.call({ action: "operations", operations: [{ action: "write", skill: "deploy-checks", file: "references/a.md", content: "a\n" }, { action: "patch", skill: "deploy-checks", old_string: "Check the page.", new_string: "Check /healthz." }] });
		expectRefused(batch, "needs_approval");
		expect(textOf(batch)).to.contain("operations[0]");
		expect(existsSync(join(env.agentDir, "skills", "deploy-checks", "references"))).to.equal(false);
	});

	it("decides per origin: under { own: propose, others: auto } a person's skill lands, the package's own does not", async function () {
		const tool = createHarness(env);
		expectOk(await tool.call({ action: "create", name: "release-notes", description: "Use when writing release notes.", body: "# Notes\n\n1. List the changes.\n" }));
		settings({ approval: { own: "propose", others: "auto" } });
		const next = createHarness(env);
		expectOk(await next.call({ action: "read", skill: "deploy-checks" }));
		expectOk(await next.call({ action: "patch", skill: "deploy-checks", old_string: "Run the build.", new_string: "Run make." }));
		expectOk(await next.call({ action: "read", skill: "release-notes" }));
		const own = await next.call({ action: "patch", skill: "release-notes", old_string: "List the changes.", new_string: "List every change." });
		expectRefused(own, "needs_approval");
		expect(textOf(own)).to.contain("skills this package created");
		const created = await next.call({ action: "create", name: "another", description: "Use when testing.", body: "# Another\n" });
		expectRefused(created, "needs_approval");
	});
});
