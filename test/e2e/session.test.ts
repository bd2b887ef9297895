// The package as users run it: installed into settings.packages, loaded by pi's own resource loader,
// driven by a scripted faux model through skill_manage, the standing-rules block and /selfskills.
import { readFileSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { skillBackupDir } from "../support/backups.ts";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";
import { createPiSession, type PiSession, type ToolResultView } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";
import { call } from "../support/faux-script.ts";

const details = (r: ToolResultView) => r.details as Record<string, unknown>;

describe(`skill_manage through a real pi session (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("lists, reads, patches, refuses a non-unique match, creates, shows history and restores", async function () {
		const env = getEnv();
		const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const run = await pi.run("fix the deploy skill", [
			call({ action: "list" }),
			call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
			call({ action: "read", skill: "deploy-checks" }),
			call({
				action: "patch",
				skill: "deploy-checks",
				old_string: "Run npm build.",
				new_string: "Run npm run build.",
			}),
			call({ action: "patch", skill: "deploy-checks", old_string: "page", new_string: "endpoint" }),
			call({ action: "patch", skill: "deploy-checks", old_string: ".\n", new_string: "!\n" }),
			call({
				action: "create",
				name: "release-notes",
				description: "Use when writing release notes: the format: headings.",
				body: "# Release notes\n\nWrite them.",
			}),
			call({ action: "history", skill: "deploy-checks" }),
			call({ action: "restore", skill: "deploy-checks" }),
			{ text: "done" },
		]);
		const [list, notRead, read, patched, secondPatch, notUnique, created, history, restored] = run.toolResults;
		expect(list.isError, list.text).to.equal(false);
		expect(list.text).to.match(/deploy-checks — Use when deploying/);
		expect(list.text).to.match(/selfskills — .*patchable: no \(installed|selfskills — .*patchable: yes/);
		expect(notRead.isError).to.equal(true);
		expect(notRead.text).to.match(/^not_read: /);
		expect(details(notRead).code).to.equal("not_read");
		expect(read.isError, read.text).to.equal(false);
		expect(patched.isError, patched.text).to.equal(false);
		expect(secondPatch.isError, secondPatch.text).to.equal(false);
		expect(notUnique.isError).to.equal(true);
		expect(notUnique.text, notUnique.text).to.match(/^not_unique: old_string occurs 3 times .* \(lines 3, 7, 8\)/);
		expect(details(notUnique)).to.include({ code: "not_unique", count: 3 });
		expect(created.isError, created.text).to.equal(false);
		expect(readFileSync(join(env.agentDir, "skills", "release-notes", "SKILL.md"), "utf8")).to.contain(
			'description: "Use when writing release notes: the format: headings."',
		);
		expect(history.text, history.text).to.match(/2 backup\(s\)/);
		expect(restored.isError, restored.text).to.equal(false);
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL.replace("npm build", "npm run build"));
		expect(created.text).to.contain("/reload");
		const backups = readdirSync(join(skillBackupDir(env.agentDir, "deploy-checks"), "SKILL.md"));
		expect(backups).to.have.length(3);
		expect(existsSync(join(env.agentDir, "selfskills", "audit.jsonl"))).to.equal(true);
		expect(run.calls.every((c) => c.systemPrompt.includes("<selfskills-rules>"))).to.equal(true);
		const next = await pi.run("and now?", [{ text: "ok" }]);
		expect(next.calls[0].systemPrompt).to.contain("- release-notes (create): Use when writing release notes");
	});
});
