// discovery.ts on folders holding many skills (listed once for their entries' types, each SKILL.md
// lstat'ed or taken from the hint, the writable root found once per real folder): symlinked skill
// folders and SKILL.md files among plain ones are classified as one at a time would be.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { discoverSkills, type DiscoveredSkill, type DiscoverOptions } from "../../../src/policy/discovery.ts";
import { loadSettings } from "../../../src/policy/settings.ts";
import { skillText, writeSkill } from "../../support/fixtures.ts";
import { useTempEnv } from "../../support/temp-env.ts";

const OUTSIDE = "outside every writable root (after resolving symlinks)";

const verdicts = (skills: readonly DiscoveredSkill[]) =>
	Object.fromEntries(skills.map((s) => [s.name, s.patchable ? "patchable" : s.reason]));

describe("discovery: folders of many skills with symlinks among them", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-discovery-links-" });

	/**
	 * <agent>/skills: 8 plain skills, a folder linked outside every root, a SKILL.md linked outside, a
	 * SKILL.md linked to a file in its own folder, a link to a folder of two skills outside every root,
	 * and `twin` linked outside; in <project>/.pi/skills a plain folder `twin` too (its skill named
	 * twin-project), so the two listings disagree on one name. <project>/.pi/skills: 8 plain skills and a folder
	 * linked into the skillsDir (another root, which pi also scans after: the link comes first).
	 */
	function build(): DiscoverOptions {
		const { root, agentDir, projectDir } = getEnv();
		const agentSkills = join(agentDir, "skills");
		const projectSkills = join(projectDir, ".pi", "skills");
		const extra = join(root, "extra");
		for (let i = 0; i < 8; i++) {
			writeSkill(agentSkills, `agent-${i}`);
			writeSkill(projectSkills, `project-${i}`);
		}
		writeSkill(join(root, "outside"), "linked-out");
		symlinkSync(join(root, "outside", "linked-out"), join(agentSkills, "linked-out"));
		mkdirSync(join(agentSkills, "file-out"));
		writeFileSync(join(root, "outside", "file-out.md"), skillText("file-out"));
		symlinkSync(join(root, "outside", "file-out.md"), join(agentSkills, "file-out", "SKILL.md"));
		mkdirSync(join(agentSkills, "file-in"));
		writeFileSync(join(agentSkills, "file-in", "real.md"), skillText("file-in"));
		symlinkSync("real.md", join(agentSkills, "file-in", "SKILL.md"));
		for (const name of ["grouped-0", "grouped-1"]) writeSkill(join(root, "outside-group"), name);
		symlinkSync(join(root, "outside-group"), join(agentSkills, "group-link"));
		writeSkill(join(root, "outside-twin"), "twin");
		symlinkSync(join(root, "outside-twin", "twin"), join(agentSkills, "twin"));
		mkdirSync(join(projectSkills, "twin"), { recursive: true });
		writeFileSync(join(projectSkills, "twin", "SKILL.md"), skillText("twin-project"));
		writeSkill(extra, "linked-in");
		symlinkSync(join(extra, "linked-in"), join(projectSkills, "linked-in"));
		writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ selfskills: { skillsDir: extra } }));
		const settings = loadSettings({ cwd: projectDir, agentDir, trusted: true }).settings;
		return { cwd: projectDir, agentDir, trusted: true, settings };
	}

	it("classifies each symlinked folder and SKILL.md by where it resolves, the plain ones patchable", async () => {
		const { skills } = await discoverSkills(build());
		const expected: Record<string, string | undefined> = {
			"linked-out": OUTSIDE,
			"file-out": OUTSIDE,
			"file-in": "patchable",
			"grouped-0": OUTSIDE,
			"grouped-1": OUTSIDE,
			twin: OUTSIDE,
			"twin-project": "patchable",
			"linked-in": "patchable",
		};
		for (let i = 0; i < 8; i++) expected[`agent-${i}`] = expected[`project-${i}`] = "patchable";
		expect(verdicts(skills)).to.deep.equal(expected);
		const linkedIn = skills.find((s) => s.name === "linked-in");
		expect(linkedIn?.filePath).to.equal(join(getEnv().projectDir, ".pi", "skills", "linked-in", "SKILL.md"));
	});
});
