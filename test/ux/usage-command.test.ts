// /selfskills and usage: the status line of each skill says when it was last used and how many
// changes it had; `/selfskills unused [days]` lists the skills not used for that long, moving nothing.
import { writeFileSync, mkdirSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";
import { commandOutputs } from "./ux-support.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";

describe(`/selfskills: last use, changes and unused skills (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("shows last use and changes per skill, and lists the skills not used for N days", async function () {
		const env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		const yearAgo = new Date(Date.now() - 365 * 86_400_000);
		for (const name of ["old-notes", "never-read"]) {
			const file = writeSkill(join(env.agentDir, "skills"), name, DEPLOY_SKILL.replace("deploy-checks", name));
			utimesSync(file, yearAgo, yearAgo);
		}
		// Written a moment ago: never advice to prune, used or not.
		writeSkill(join(env.agentDir, "skills"), "brand-new", DEPLOY_SKILL.replace("deploy-checks", "brand-new"));
		// A use long ago, in the log's folded form.
		mkdirSync(join(env.agentDir, "selfskills"), { recursive: true });
		writeFileSync(
			join(env.agentDir, "selfskills", "usage.jsonl"),
			`${JSON.stringify({
				skill: "old-notes",
				count: 4,
				first: "2025-01-01T00:00:00.000Z",
				last: "2025-02-01T00:00:00.000Z",
			})}\n`,
		);
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		await pi.run("fix", [
			call({ action: "read", skill: "deploy-checks" }),
			call({
				action: "patch",
				skill: "deploy-checks",
				old_string: "Run npm build.",
				new_string: "Run npm run build.",
			}),
			{ text: "done" },
		]);
		await pi.runCommand("/selfskills");
		const status = commandOutputs(pi).at(-1) ?? "";
		expect(status).to.match(/deploy-checks: patchable — last used \d{4}-\d\d-\d\d \(1 use\), 1 change\b/);
		expect(status).to.contain("old-notes: patchable — last used 2025-02-01 (4 uses), 0 changes");
		expect(status).to.contain("never-read: patchable — never used, 0 changes");
		await pi.runCommand("/selfskills unused");
		const unused = commandOutputs(pi).at(-1) ?? "";
		expect(unused).to.match(/not used in the last 30 days/);
		expect(unused).to.contain("never-read: never used");
		expect(unused).to.contain("old-notes: last used 2025-02-01");
		expect(unused).not.to.contain("deploy-checks:");
		expect(unused, "a skill created minutes ago").not.to.contain("brand-new");
		expect(unused, "the package's own doc-skill").not.to.match(/^ {2}selfskills:/m);
		expect(unused).to.contain("Nothing is moved or archived");
		expect(unused, "the person's next step, not the agent's tool").not.to.match(/skill_manage|\{"action"/);
		expect(unused).to.contain(`delete its folder`);
		expect(unused).to.contain(join(env.agentDir, "skills", "old-notes"));
		await pi.runCommand("/selfskills doctor");
		const doctor = commandOutputs(pi).at(-1) ?? "";
		expect(doctor).to.contain("unused: old-notes: last used 2025-02-01");
		expect(doctor).not.to.match(/unused: (brand-new|selfskills):/);
		expect(doctor).not.to.match(/skill_manage|<skill>/);
		await pi.runCommand("/selfskills unused soon");
		expect(commandOutputs(pi).at(-1)).to.contain('"soon" is not a number of days');
	});
});
