// Skills in git through a real pi session: with selfskills.git "commit" the model's patch lands as one
// commit in the skills repository (the result says so), /selfskills status names the work tree, and a
// proposal is exported as a branch for review, then approved as a commit with its trailer.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";
import { call } from "../support/faux-script.ts";
import { commitCount, git, initRepo, lastCommitFiles, repoState } from "../support/git-repo.ts";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { commandOutputs } from "../ux/ux-support.ts";

describe(`skills in git through a real pi session (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv({ prefix: "selfskills-git-e2e-" });
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("commits a landed patch, exports a proposal as a branch and commits its approval", async function () {
		const env = getEnv();
		const repo = join(env.agentDir, "skills");
		writeSkill(repo, "deploy-checks", DEPLOY_SKILL);
		initRepo(repo);
		pi = await createPiSession({
			env,
			packageDir: REPO_ROOT,
			ui: { confirm: true },
			settings: { selfskills: { git: "commit" } },
		});
		const run = await pi.run("fix the deploy skill", [
			call({ action: "read", skill: "deploy-checks" }),
			call({
				action: "patch",
				skill: "deploy-checks",
				old_string: "npm build",
				new_string: "npm run build",
				reason: "the build script is npm run build now",
			}),
			{ text: "done" },
		]);
		const patched = run.toolResults[1];
		expect(patched.isError, patched.text).to.equal(false);
		expect(patched.text).to.match(/git: committed [0-9a-f]{12} in .*: deploy-checks\/SKILL\.md\./);
		expect(commitCount(repo)).to.equal(2);
		expect(lastCommitFiles(repo)).to.deep.equal(["M\tdeploy-checks/SKILL.md"]);
		expect(git(repo, "log", "-1", "--format=%s%n%b")).to.contain("the build script is npm run build now");

		await pi.runCommand("/selfskills");
		expect(commandOutputs(pi).at(-1)).to.contain(
			`${repo}: in the git work tree ${repo}; each landed change is committed`,
		);

		// The person now reviews changes first; the model's next patch becomes a proposal.
		const settingsPath = join(env.agentDir, "settings.json");
		const settings = JSON.parse(readFileSync(settingsPath, "utf8"));
		writeFileSync(settingsPath, JSON.stringify({ ...settings, selfskills: { git: "commit", approval: "propose" } }));
		const proposing = await pi.run("check the page too", [
			call({
				action: "patch",
				skill: "deploy-checks",
				old_string: "Check the health page.",
				new_string: "Check the health page and the logs.",
				reason: "the logs showed the failure first",
			}),
			{ text: "proposed" },
		]);
		const proposed = proposing.toolResults[0];
		expect(proposed.text, proposed.text).to.contain("proposed, not written");
		const id = String((proposed.details as Record<string, unknown>).proposal);

		const before = repoState(repo);
		await pi.runCommand(`/selfskills export ${id} --branch`);
		expect(commandOutputs(pi).at(-1)).to.contain(`exported ${id} to branch selfskills/${id}`);
		expect(repoState(repo)).to.deep.equal(before);
		expect(git(repo, "show", `selfskills/${id}:deploy-checks/SKILL.md`)).to.contain("and the logs");

		await pi.runCommand(`/selfskills approve ${id}`);
		expect(commandOutputs(pi).at(-1)).to.contain(`approved ${id}`);
		expect(commitCount(repo)).to.equal(3);
		expect(git(repo, "log", "-1", "--format=%B")).to.contain(`Selfskills-Approved: ${id}`);
	});
});
