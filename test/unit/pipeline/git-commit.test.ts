// git-commit.ts on real repositories: with git "commit" each landed change is one commit of exactly
// its files (patch, create, delete, batch), the person's staged and unstaged work stays as it was, a
// target with uncommitted work is left uncommitted, hooks run (and can refuse) unless a control is
// on, and a lock, a merge, a detached HEAD or a missing git leave the change landed and say why.
import { distrustFolders } from "../../../src/base/programs.ts";
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { DEPLOY_SKILL, skillText, writeFile, writeSkill } from "../../support/fixtures.ts";
import { commitCount, git, gitSettings, initRepo, lastCommitFiles, repoState } from "../../support/git-repo.ts";
import { createHarness, expectOk, type Harness } from "../../support/harness.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";

const FIX = { old_string: "npm build", new_string: "npm run build" };

describe("git-commit: landed changes become commits", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-git-" });
	let env: TempEnv;
	let repo: string;
	let h: Harness;

	beforeEach(function () {
		env = getEnv();
		repo = join(env.agentDir, "skills");
		writeSkill(repo, "deploy-checks", DEPLOY_SKILL, { "references/notes.md": "notes\n" });
		writeSkill(repo, "other", skillText("other"));
		writeFile(join(repo, "README.md"), "team skills\n");
		initRepo(repo);
		gitSettings(env.agentDir);
		h = createHarness(env);
	});

	const patchDeploy = async (reason = "the build script is npm run build now") => {
		expectOk(await h.call({ action: "read", skill: "deploy-checks" }));
		const result = await h.call({ action: "patch", skill: "deploy-checks", ...FIX, reason });
		expectOk(result);
		return result;
	};
	const gitReport = (r: { details: Record<string, unknown> }) =>
		(r.details.git as Array<Record<string, unknown>>)[0] ?? {};

	it("commits a patch as one commit of exactly SKILL.md, keeping the person's other work", async function () {
		// The person's own work: a staged new file, a staged edit and an unstaged edit.
		writeFile(join(repo, "staged-new.md"), "draft\n");
		writeFile(join(repo, "README.md"), "team skills, staged\n");
		git(repo, "add", "staged-new.md", "README.md");
		writeFile(join(repo, "other", "SKILL.md"), skillText("other", "# Steps\n\n1. Unstaged.\n"));
		const before = repoState(repo);
		const result = await patchDeploy();
		expect(commitCount(repo)).to.equal(2);
		expect(lastCommitFiles(repo)).to.deep.equal(["M\tdeploy-checks/SKILL.md"]);
		const after = repoState(repo);
		expect(after.status).to.equal(before.status);
		expect(after.staged).to.equal(before.staged);
		expect(after.unstaged).to.equal(before.unstaged);
		expect(git(repo, "show", "HEAD:deploy-checks/SKILL.md")).to.contain("npm run build");
		const message = git(repo, "log", "-1", "--format=%B");
		const subject = message.split("\n")[0];
		expect(subject).to.equal("selfskills: patch deploy-checks (deploy-checks/SKILL.md)");
		expect(subject.length).to.be.at.most(72);
		expect(message).to.contain("\n\nthe build script is npm run build now\n\n");
		expect(message).to.match(/Selfskills-Audit: \d{4}-\d\d-\d\dT/);
		expect(message).to.not.contain("Selfskills-Approved");
		expect(git(repo, "log", "-1", "--format=%an <%ae>").trim()).to.equal("Pat Person <pat@example.com>");
		expect(result.text).to.match(/git: committed [0-9a-f]{12} in .*: deploy-checks\/SKILL\.md\./);
		expect(gitReport(result).hooksSkipped).to.equal(false);
		// With git off again, the next change is not committed.
		gitSettings(env.agentDir, { git: "off" });
		const off = await h.call({ action: "patch", skill: "deploy-checks", old_string: "health", new_string: "status" });
		expectOk(off);
		expect(commitCount(repo)).to.equal(2);
		expect(off.details.git).to.equal(undefined);
	});

	it("uses the package identity when the repository has none", async function () {
		git(repo, "config", "--unset", "user.name");
		git(repo, "config", "--unset", "user.email");
		await patchDeploy();
		expect(git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>").trim()).to.equal(
			"pi-selfskills <pi-selfskills@localhost>|pi-selfskills <pi-selfskills@localhost>",
		);
	});

	it("commits a create with its new file added", async function () {
		const result = await h.call({
			action: "create",
			name: "release-notes",
			description: "Use when writing release notes for a tagged version of the app.",
			body: "# Release notes\n\n1. List the merged changes.\n",
			reason: "asked twice this week",
		});
		expectOk(result);
		expect(lastCommitFiles(repo)).to.deep.equal(["A\trelease-notes/SKILL.md"]);
		expect(git(repo, "status", "--porcelain")).to.equal("");
	});

	it("commits a whole-skill delete with every file removed", async function () {
		expectOk(await h.call({ action: "read", skill: "deploy-checks" }));
		const result = await h.call({ action: "delete", skill: "deploy-checks", reason: "replaced by ci" });
		expectOk(result);
		expect(lastCommitFiles(repo).sort()).to.deep.equal([
			"D\tdeploy-checks/SKILL.md",
			"D\tdeploy-checks/references/notes.md",
		]);
		expect(git(repo, "status", "--porcelain")).to.equal("");
	});

	it("commits a batch over two skills as one commit", async function () {
		expectOk(await h.call({ action: "read", skill: "deploy-checks" }));
		expectOk(await h.call({ action: "read", skill: "other" }));
		const result = await h.call({
			action: "operations",
			operations: [
				{ action: "patch", skill: "deploy-checks", ...FIX },
				{ action: "patch", skill: "other", old_string: "Run the build.", new_string: "Run the tests." },
				{ action: "write", skill: "other", file: "references/more.md", content: "more\n" },
			],
			reason: "one fix across skills",
		});
		expectOk(result);
		expect(commitCount(repo)).to.equal(2);
		expect(lastCommitFiles(repo).sort()).to.deep.equal([
			"A\tother/references/more.md",
			"M\tdeploy-checks/SKILL.md",
			"M\tother/SKILL.md",
		]);
		expect(git(repo, "log", "-1", "--format=%s").trim()).to.equal(
			"selfskills: operations deploy-checks, other (3 files)",
		);
	});

	it("lands but does not commit when a target held uncommitted work", async function () {
		const file = join(repo, "deploy-checks", "SKILL.md");
		writeFileSync(file, `${readFileSync(file, "utf8")}3. The person's own line.\n`);
		const result = await patchDeploy();
		expect(readFileSync(file, "utf8")).to.contain("npm run build");
		expect(commitCount(repo)).to.equal(1);
		expect(result.text).to.contain("differed from HEAD before the change (your uncommitted work)");
		expect(gitReport(result).commit).to.equal(null);
	});

	it("lands but does not commit when a target was staged", async function () {
		writeFile(join(repo, "deploy-checks", "references", "notes.md"), "staged notes\n");
		git(repo, "add", "deploy-checks/references/notes.md");
		expectOk(await h.call({ action: "read", skill: "deploy-checks" }));
		expectOk(await h.call({ action: "read", skill: "deploy-checks", file: "references/notes.md" }));
		const result = await h.call({
			action: "write",
			skill: "deploy-checks",
			file: "references/notes.md",
			content: "agent notes\n",
		});
		expectOk(result);
		expect(commitCount(repo)).to.equal(1);
		expect(result.text).to.contain("deploy-checks/references/notes.md differed from HEAD");
	});

	it("runs the person's pre-commit hook", async function () {
		const marker = join(env.root, "hook-ran");
		writeFile(join(repo, ".git", "hooks", "pre-commit"), `#!/bin/sh\ntouch '${marker}'\n`, 0o755);
		await patchDeploy();
		expect(existsSync(marker)).to.equal(true);
		expect(commitCount(repo)).to.equal(2);
	});

	it("leaves the change landed and uncommitted when a hook refuses, with the command to commit it", async function () {
		writeFile(join(repo, ".git", "hooks", "pre-commit"), "#!/bin/sh\necho 'lint failed' >&2\nexit 1\n", 0o755);
		const before = repoState(repo);
		const result = await h.call({
			action: "create",
			name: "release-notes",
			description: "Use when writing release notes for a tagged version of the app.",
			body: "# Release notes\n\n1. List the merged changes.\n",
		});
		expectOk(result);
		expect(existsSync(join(repo, "release-notes", "SKILL.md"))).to.equal(true);
		expect(commitCount(repo)).to.equal(1);
		expect(result.text).to.contain("git commit failed (a hook may have refused)");
		expect(result.text).to.contain("lint failed");
		expect(result.text).to.contain(`To commit it by hand: git -C ${repo} add -A -- release-notes/SKILL.md`);
		// The new file is not left staged by the failed commit.
		expect(repoState(repo).staged).to.equal(before.staged);
		expect(git(repo, "status", "--porcelain")).to.equal("?? release-notes/\n");
	});

	it("skips hooks while a control is on, and keeps the index in step", async function () {
		gitSettings(env.agentDir, { pinned: ["some-other-skill"] });
		writeFile(join(repo, "README.md"), "staged readme\n");
		git(repo, "add", "README.md");
		writeFile(join(repo, "other", "SKILL.md"), skillText("other", "# Steps\n\n1. Unstaged.\n"));
		const before = repoState(repo);
		// Planted after the person's own git ran above (a status writes the index: post-index-change).
		const marker = join(env.root, "hook-ran");
		for (const hook of ["pre-commit", "commit-msg", "post-commit", "post-index-change", "reference-transaction"])
			writeFile(join(repo, ".git", "hooks", hook), `#!/bin/sh\necho ${hook} >> '${marker}'\n`, 0o755);
		const result = await patchDeploy();
		expect(existsSync(marker) ? readFileSync(marker, "utf8") : "", "a planted hook ran").to.equal("");
		rmSync(join(repo, ".git", "hooks"), { recursive: true });
		expect(commitCount(repo)).to.equal(2);
		expect(lastCommitFiles(repo)).to.deep.equal(["M\tdeploy-checks/SKILL.md"]);
		expect(result.text).to.contain("(hooks skipped: a control is on)");
		expect(gitReport(result).hooksSkipped).to.equal(true);
		const after = repoState(repo);
		expect(after.status).to.equal(before.status);
		expect(after.staged).to.equal(before.staged);
		expect(after.unstaged).to.equal(before.unstaged);
		expect(git(repo, "reflog", "-1", "--format=%gs").trim()).to.equal("commit (pi-selfskills)");
	});

	it("commits a create and a delete with plumbing while a control is on", async function () {
		gitSettings(env.agentDir, { contentReview: "refuse" });
		expectOk(
			await h.call({
				action: "create",
				name: "release-notes",
				description: "Use when writing release notes for a tagged version of the app.",
				body: "# Release notes\n\n1. List the merged changes.\n",
			}),
		);
		expect(lastCommitFiles(repo)).to.deep.equal(["A\trelease-notes/SKILL.md"]);
		expectOk(await h.call({ action: "read", skill: "deploy-checks" }));
		expectOk(await h.call({ action: "delete", skill: "deploy-checks" }));
		expect(lastCommitFiles(repo).sort()).to.deep.equal([
			"D\tdeploy-checks/SKILL.md",
			"D\tdeploy-checks/references/notes.md",
		]);
		expect(git(repo, "status", "--porcelain")).to.equal("");
	});

	for (const [title, setup, why] of [
		[
			"another process holds index.lock",
			(dir: string) => writeFileSync(join(dir, ".git", "index.lock"), ""),
			"index.lock exists",
		],
		[
			"a merge is under way",
			(dir: string) => writeFileSync(join(dir, ".git", "MERGE_HEAD"), `${git(dir, "rev-parse", "HEAD")}`),
			"a merge is under way",
		],
		["HEAD is detached", (dir: string) => git(dir, "checkout", "-q", "--detach"), "HEAD is detached"],
	] as const) {
		it(`leaves the change landed and uncommitted when ${title}`, async function () {
			setup(repo);
			const result = await patchDeploy();
			expect(readFileSync(join(repo, "deploy-checks", "SKILL.md"), "utf8")).to.contain("npm run build");
			expect(commitCount(repo)).to.equal(1);
			expect(result.text).to.contain(why);
			expect(result.text).to.contain("the change stays landed, uncommitted");
			expect(result.text).to.contain("To commit it by hand: git -C");
		});
	}

	it("says git is missing when no git is on PATH, and lands the change", async function () {
		const path = process.env.PATH;
		process.env.PATH = join(env.root, "no-bin");
		// git is looked up at session start (programs.ts): this is a start with no git on PATH.
		distrustFolders([env.projectDir]);
		let result: Awaited<ReturnType<Harness["call"]>>;
		try {
			result = await patchDeploy();
		} finally {
			process.env.PATH = path;
			distrustFolders([env.projectDir]);
		}
		expect(readFileSync(join(repo, "deploy-checks", "SKILL.md"), "utf8")).to.contain("npm run build");
		expect(commitCount(repo)).to.equal(1);
		expect(result.text).to.contain("git is not installed (no `git` on PATH)");
		expect(result.text).to.contain("the change stays landed, uncommitted");
	});

	it("leaves ignored new files out of the commit and says so", async function () {
		/** One batch writing references/run.log (ignored) and references/steps.md. */
		const writeLogAndSteps = (log: string, steps: string) =>
			h.call({
				action: "operations",
				operations: [
					{ action: "write", skill: "deploy-checks", file: "references/run.log", content: log },
					{ action: "write", skill: "deploy-checks", file: "references/steps.md", content: steps },
				],
			});
		writeFile(join(repo, ".gitignore"), "*.log\n");
		git(repo, "add", ".gitignore");
		git(repo, "commit", "-q", "-m", "ignore logs");
		expectOk(await h.call({ action: "read", skill: "deploy-checks" }));
		const result = await writeLogAndSteps("log\n", "steps\n");
		expectOk(result);
		expect(lastCommitFiles(repo)).to.deep.equal(["A\tdeploy-checks/references/steps.md"]);
		expect(result.text).to.contain("Ignored by git, not committed: deploy-checks/references/run.log.");
		expect(existsSync(join(repo, "deploy-checks", "references", "run.log"))).to.equal(true);
		// An ignored file that already exists is nobody's uncommitted work: the next overwrite is committed too.
		expectOk(await h.call({ action: "read", skill: "deploy-checks", file: "references/run.log" }));
		expectOk(await h.call({ action: "read", skill: "deploy-checks", file: "references/steps.md" }));
		expectOk(await writeLogAndSteps("log 2\n", "steps 2\n"));
		expect(lastCommitFiles(repo)).to.deep.equal(["M\tdeploy-checks/references/steps.md"]);
	});

	it("never prompts: a hook reading the terminal gets no terminal", async function () {
		writeFile(join(repo, ".git", "hooks", "pre-commit"), "#!/bin/sh\nread answer </dev/tty || exit 3\n", 0o755);
		chmodSync(join(repo, ".git", "hooks", "pre-commit"), 0o755);
		const result = await patchDeploy();
		expect(commitCount(repo)).to.equal(1);
		expect(result.text).to.contain("git commit failed");
	});
});
