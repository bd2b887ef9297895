// The doc-skill skills/selfskills/SKILL.md: clean under pi's own validation, and loaded by pi whenever the
// package is installed, in-process and through the real CLI.
import { expect } from "chai";
import { join } from "node:path";
import { loadSkillsFromDir } from "@mariozechner/pi-coding-agent";
import { getRpcCommands, piInstall } from "../support/pi-cli.ts";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";

const DOC_SKILL = join(REPO_ROOT, "skills", "selfskills", "SKILL.md");

describe(`the doc-skill selfskills (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("passes pi's skill validation with zero diagnostics", function () {
		const { skills, diagnostics } = loadSkillsFromDir({ dir: join(REPO_ROOT, "skills"), source: "test" });
		expect(diagnostics).to.deep.equal([]);
		expect(skills.map((s) => s.name)).to.deep.equal(["selfskills"]);
		expect(skills[0].description.length).to.be.within(50, 1024);
		expect(skills[0].description).to.contain("skill_manage");
	});

	it("is loaded, without diagnostics, when the package is installed (in-process)", async function () {
		pi = await createPiSession({ env: getEnv(), packageDir: REPO_ROOT });
		const { skills, diagnostics } = pi.session.resourceLoader.getSkills();
		expect(skills.find((s) => s.name === "selfskills")?.filePath).to.equal(DOC_SKILL);
		expect(diagnostics.filter((d) => d.path?.startsWith(REPO_ROOT))).to.deep.equal([]);
		const run = await pi.run("hi", [{ text: "ok" }]);
		expect(run.calls[0].systemPrompt).to.contain(`<location>${DOC_SKILL}</location>`);
	});

	it("is loaded when the package is installed with the real `pi install` (CLI, RPC get_commands)", async function () {
		this.timeout(120000);
		const env = getEnv();
		await piInstall(env, REPO_ROOT);
		const commands = await getRpcCommands(env);
		const skill = commands.find((c) => c.name === "skill:selfskills");
		expect(skill, JSON.stringify(commands.map((c) => c.name))).to.not.equal(undefined);
		expect(skill?.source).to.equal("skill");
		expect(commands.some((c) => c.name === "selfskills" && c.source === "extension")).to.equal(true);
	});
});
