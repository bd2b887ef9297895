// `create` (src/actions/create.ts) through the tool: a new skill, names taken anywhere pi looks, bad names, dry runs.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parseFrontmatter } from "@mariozechner/pi-coding-agent";
import { checkSkillContent } from "../../../src/checks/validation.ts";
import { useAlphaSkill } from "../../support/alpha.ts";
import { writeSkill } from "../../support/fixtures.ts";

describe("create", function () {
	const { env: getEnv, tool } = useAlphaSkill();

	it("creates <skillsDir>/<name>/SKILL.md whose frontmatter survives colons, quotes and newlines", async function () {
		const description = 'Use when: the "deploy" fails; it\'s #1.\nSecond line: with - dash';
		const created = await tool().call({
			action: "create",
			name: "new-skill",
			description,
			body: "# New\n\nDo it.\n",
		});
		expect(created.ok, created.text).to.equal(true);
		const file = join(getEnv().agentDir, "skills", "new-skill", "SKILL.md");
		const text = readFileSync(file, "utf8");
		expect(checkSkillContent(text, "new-skill")).to.deep.equal({
			name: "new-skill",
			description,
			diagnostics: [],
			loaderDiagnostics: [],
		});
		expect(parseFrontmatter<{ description: string }>(text).frontmatter.description).to.equal(description);
		expect(statSync(file).mode & 0o777).to.equal(0o644);
	});

	it("refuses a name that exists anywhere pi looks with exists, naming where", async function () {
		const env = getEnv();
		writeSkill(join(env.home, ".agents", "skills"), "taken");
		const refused = await tool().call({ action: "create", name: "taken", description: "d", body: "b" });
		expect(refused.code).to.equal("exists");
		expect(refused.details.where).to.equal(join(env.home, ".agents", "skills", "taken", "SKILL.md"));
		expect(existsSync(join(env.agentDir, "skills", "taken"))).to.equal(false);
	});

	it("refuses a bad name with invalid_name", async function () {
		expect((await tool().call({ action: "create", name: "Bad_Name", description: "d", body: "b" })).code).to.equal(
			"invalid_name",
		);
	});

	it("writes nothing on a dry run", async function () {
		const dry = await tool().call({
			action: "create",
			name: "dry-skill",
			description: "d",
			body: "b",
			dry_run: true,
		});
		expect(dry.ok).to.equal(true);
		expect(existsSync(join(getEnv().agentDir, "skills", "dry-skill"))).to.equal(false);
	});
});
