// src/face/export.ts on real repositories: a pending proposal becomes a patch `git apply --check`
// takes (paths relative to the repository), or the branch selfskills/<id> with one commit on top of
// HEAD while the work tree, the index and the current branch stay as they were; ops planned on
// HEAD's version, stale where they no longer apply (the proposal stays pending); an approval lands
// as a commit with the Selfskills-Approved trailer; /selfskills status names each root's work tree.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { exportProposal, formatGitStatus } from "../../../src/face/export.ts";
import { findProposal, landApproval, previewApproval } from "../../../src/face/review.ts";
import { listProposals } from "../../../src/store/proposals.ts";
import { DEPLOY_SKILL, writeFile, writeSkill } from "../../support/fixtures.ts";
import { commitCount, git, gitSettings, initRepo, lastCommitFiles, repoState } from "../../support/git-repo.ts";
import { createHarness, expectOk, type Harness, sessionDeps } from "../../support/harness.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";

describe("export (src/face/export.ts)", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-export-" });
	let env: TempEnv;
	let repo: string;
	let h: Harness;
	const deps = () => sessionDeps(env.agentDir);

	beforeEach(function () {
		env = getEnv();
		repo = join(env.agentDir, "skills");
		writeSkill(repo, "deploy-checks", DEPLOY_SKILL);
		initRepo(repo);
		gitSettings(env.agentDir, { approval: "propose" });
		h = createHarness(env);
	});

	/** The agent proposes a patch and a new bundled file; returns the proposal id. */
	const propose = async (): Promise<string> => {
		expectOk(await h.call({ action: "read", skill: "deploy-checks" }));
		const result = await h.call({
			action: "operations",
			operations: [
				{ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" },
				{ action: "write", skill: "deploy-checks", file: "references/ci.md", content: "ci runs it\n" },
			],
			reason: "the build script is npm run build now",
		});
		expect(result.details.proposed, result.text).to.equal(true);
		return String(result.details.proposal);
	};

	it("writes a patch that git apply --check takes, with paths relative to the repository", async function () {
		const id = await propose();
		const before = repoState(repo);
		const done = await exportProposal(deps(), { cwd: env.projectDir }, id, { branch: false });
		if ("code" in done) throw new Error(done.message);
		expect(done).to.have.length(1);
		const patch = String(done[0].patch);
		expect(patch.startsWith(join(env.agentDir, "selfskills", "exports"))).to.equal(true);
		const text = readFileSync(patch, "utf8");
		expect(text).to.contain("diff --git a/deploy-checks/SKILL.md b/deploy-checks/SKILL.md");
		expect(text).to.contain("new file mode 100644");
		expect(text).to.contain(`Selfskills-Proposal: ${id}`);
		git(repo, "apply", "--check", patch);
		expect(repoState(repo)).to.deep.equal(before);
		expect(listProposals(realFs, env.agentDir).map((p) => p.id)).to.deep.equal([id]);
		git(repo, "apply", patch);
		expect(readFileSync(join(repo, "deploy-checks", "SKILL.md"), "utf8")).to.contain("npm run build");
	});

	it("creates the branch selfskills/<id> without touching the work tree, the index or HEAD", async function () {
		const id = await propose();
		// The person's own work, staged and unstaged, in the proposal's file too.
		writeFile(join(repo, "notes.md"), "mine\n");
		git(repo, "add", "notes.md");
		const skillFile = join(repo, "deploy-checks", "SKILL.md");
		writeFileSync(skillFile, `${readFileSync(skillFile, "utf8")}3. My own step.\n`);
		const before = repoState(repo);
		const branch = git(repo, "symbolic-ref", "HEAD");
		const done = await exportProposal(deps(), { cwd: env.projectDir }, id, { branch: true });
		if ("code" in done) throw new Error(done.message);
		expect(done[0].branch).to.equal(`selfskills/${id}`);
		expect(repoState(repo)).to.deep.equal(before);
		expect(git(repo, "symbolic-ref", "HEAD")).to.equal(branch);
		expect(git(repo, "rev-parse", `selfskills/${id}~1`).trim()).to.equal(before.head);
		expect(
			git(repo, "show", "--name-status", "--format=", `selfskills/${id}`).trim().split("\n").sort(),
		).to.deep.equal(["A\tdeploy-checks/references/ci.md", "M\tdeploy-checks/SKILL.md"]);
		// Planned on HEAD's version: the person's uncommitted step is not in the branch.
		expect(git(repo, "show", `selfskills/${id}:deploy-checks/SKILL.md`)).to.not.contain("My own step");
		const again = await exportProposal(deps(), { cwd: env.projectDir }, id, { branch: true });
		expect(again).to.have.property("code", "git_failed");
	});

	it("fails stale where the ops no longer apply to HEAD, and the proposal stays pending", async function () {
		const id = await propose();
		const skillFile = join(repo, "deploy-checks", "SKILL.md");
		writeFileSync(skillFile, readFileSync(skillFile, "utf8").replace("npm build", "yarn build"));
		git(repo, "commit", "-q", "-am", "yarn");
		const done = await exportProposal(deps(), { cwd: env.projectDir }, id, { branch: true });
		expect(done).to.have.property("code", "stale");
		expect((done as { message: string }).message).to.contain("does not apply to HEAD's version");
		expect(listProposals(realFs, env.agentDir).map((p) => p.id)).to.deep.equal([id]);
		expect(git(repo, "branch", "--list", "selfskills/*")).to.equal("");
	});

	it("lands an approved proposal as one commit with the Selfskills-Approved trailer", async function () {
		const id = await propose();
		const proposal = findProposal(deps(), id);
		if ("code" in proposal) throw new Error(proposal.message);
		const preview = await previewApproval(deps(), { cwd: env.projectDir }, proposal);
		if ("code" in preview) throw new Error(preview.message);
		const landed = await landApproval(deps(), preview, undefined);
		if ("code" in landed) throw new Error(landed.message);
		expect(commitCount(repo)).to.equal(2);
		expect(lastCommitFiles(repo).sort()).to.deep.equal([
			"A\tdeploy-checks/references/ci.md",
			"M\tdeploy-checks/SKILL.md",
		]);
		const message = git(repo, "log", "-1", "--format=%B");
		expect(message).to.contain(`Selfskills-Approved: ${id}`);
		expect(message).to.contain("the build script is npm run build now");
		// approval "propose" is a control: the commit ran no hook.
		expect(landed.text).to.contain("hooks skipped");
	});

	it("says per writable root whether it lies in a work tree and whether commits are on", function () {
		const outside = join(env.root, "plain");
		const text = formatGitStatus(realFs, [repo, outside], "commit");
		expect(text).to.contain('git: commits on (selfskills.git "commit"); nothing is ever pushed');
		expect(text).to.contain(`${repo}: in the git work tree ${repo}; each landed change is committed`);
		expect(text).to.contain(`${outside}: not in a git work tree`);
	});
});
