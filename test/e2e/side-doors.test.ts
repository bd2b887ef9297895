// The side doors through pi's real tools: the faux model calls pi's own edit, write and bash on skill
// files. "backup" (default) backs up first, audits with `via`, warns when the skill breaks, and
// keeps a later skill_manage patch on stale knowledge `stale`; "block" blocks with what to do
// instead; "off" leaves it alone; approval or a pin always blocks. Reads and files outside skills
// are never touched.
import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../src/base/fs-ops.ts";
import { readUsage } from "../../src/store/usage.ts";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { createTempEnv, useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";
import { auditLines } from "../support/backups.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";

const tool = (name: string, args: Record<string, unknown>) => ({ toolCall: { name, arguments: args } });
const edit = (path: string, oldText: string, newText: string) => tool("edit", { path, edits: [{ oldText, newText }] });

describe(`pi's own edit, write and bash on skill files (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	async function start(
		env: TempEnv,
		selfskills: Record<string, unknown> = {},
	): Promise<{ skillFile: string; outside: string }> {
		const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		const outside = join(env.projectDir, "notes.md");
		writeFileSync(outside, "project notes\n");
		pi = await createPiSession({ env, packageDir: REPO_ROOT, settings: { selfskills } });
		return { skillFile, outside };
	}

	describe('"backup" (the default)', function () {
		it("backs an edit up, audits it with via, and a skill_manage patch on the old read is stale", async function () {
			const env = getEnv();
			const { skillFile } = await start(env);
			const run = await pi!.run("fix it", [
				call({ action: "read", skill: "deploy-checks" }),
				edit(skillFile, "Run npm build.", "Run npm run build."),
				call({
					action: "patch",
					skill: "deploy-checks",
					old_string: "health page",
					new_string: "/healthz page",
				}),
				call({ action: "history", skill: "deploy-checks" }),
				{ text: "done" },
			]);
			const [, edited, patched, history] = run.toolResults;
			expect(edited.isError, edited.text).to.equal(false);
			expect(readFileSync(skillFile, "utf8")).to.contain("Run npm run build.");
			expect(patched.isError).to.equal(true);
			expect(patched.text).to.match(/^stale: /);
			const lines = auditLines(env.agentDir);
			expect(lines).to.have.length(1);
			expect(lines[0]).to.include({ action: "edit", via: "edit", skill: "deploy-checks", file: "SKILL.md" });
			expect(history.text).to.contain(String(lines[0].backup));
			const backupDir = readdirSync(join(env.agentDir, "selfskills", "backups")).find((d) =>
				d.startsWith("deploy-checks"),
			);
			const stored = readdirSync(join(env.agentDir, "selfskills", "backups", String(backupDir), "SKILL.md"));
			expect(
				stored.map((f) =>
					readFileSync(join(env.agentDir, "selfskills", "backups", String(backupDir), "SKILL.md", f), "utf8"),
				),
			).to.include(DEPLOY_SKILL);
		});

		it("warns with the exact restore call when an edit breaks the skill, and the restore works", async function () {
			const env = getEnv();
			const { skillFile } = await start(env);
			const run = await pi!.run("break it", [
				edit(skillFile, "description: Use when deploying the app. Lists the checks to run.\n", ""),
				{ text: "oops" },
			]);
			const warned = run.toolResults[0];
			expect(warned.text).to.match(
				/selfskills warning: after this edit, skill "deploy-checks" .* is broken: pi no longer loads it/,
			);
			const restore = /skill_manage (\{"action":"restore"[^}]*\})/.exec(warned.text)?.[1];
			expect(restore, warned.text).to.be.a("string");
			const fixed = await pi!.run("restore", [
				call(JSON.parse(String(restore)) as Record<string, unknown>),
				{ text: "ok" },
			]);
			expect(fixed.toolResults[0].isError, fixed.toolResults[0].text).to.equal(false);
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
		});

		it("audits a write and a bash sed -i through a symlinked folder, not reads or other files", async function () {
			const env = getEnv();
			const { skillFile, outside } = await start(env);
			symlinkSync(join(env.agentDir, "skills"), join(env.projectDir, "my-skills"));
			const run = await pi!.run("work", [
				tool("write", { path: "my-skills/deploy-checks/references/api.md", content: "# API\n" }),
				tool("bash", { command: "sed -i 's/health page/status page/' my-skills/deploy-checks/SKILL.md" }),
				tool("bash", { command: "cat my-skills/deploy-checks/SKILL.md && grep -rn build my-skills/" }),
				tool("write", { path: outside, content: "changed notes\n" }),
				{ text: "done" },
			]);
			for (const r of run.toolResults) expect(r.isError, r.text).to.equal(false);
			expect(readFileSync(skillFile, "utf8")).to.contain("status page");
			const lines = auditLines(env.agentDir);
			expect(lines.map((l) => [l.via, l.file, l.oldHash === null])).to.deep.equal([
				["write", "references/api.md", true],
				["bash", "SKILL.md", false],
			]);
			expect(readFileSync(outside, "utf8")).to.equal("changed notes\n");
			// The change was followed like a landed one (the same path emits selfskills:changed): the
			// next prompt names it.
			const next = await pi!.run("next", [{ text: "ok" }]);
			expect(next.calls[0].systemPrompt).to.contain("- deploy-checks (bash)");
		});
	});

	describe('"block"', function () {
		it("blocks edit, write and writing bash on skill files only, pointing to skill_manage", async function () {
			const env = getEnv();
			const { skillFile, outside } = await start(env, { guardBuiltins: "block" });
			symlinkSync(join(env.agentDir, "skills", "deploy-checks"), join(env.projectDir, "dc"));
			const run = await pi!.run("try", [
				edit(skillFile, "Run npm build.", "Run make."),
				tool("write", { path: "dc/scripts/run.sh", content: "echo hi\n" }),
				tool("bash", { command: `echo '- step' >> ${skillFile}` }),
				tool("bash", { command: "rm -rf dc/" }),
				tool("read", { path: skillFile }),
				tool("bash", { command: "cat dc/SKILL.md | head -3" }),
				tool("edit", { path: outside, edits: [{ oldText: "project notes", newText: "other notes" }] }),
				{ text: "done" },
			]);
			const [e, w, b1, b2, read, cat, other] = run.toolResults;
			for (const blocked of [e, w, b1, b2]) {
				expect(blocked.isError, blocked.text).to.equal(true);
				expect(blocked.text).to.contain('skill "deploy-checks"');
				expect(blocked.text).to.contain('skill_manage instead: {"action":"read","skill":"deploy-checks"}');
			}
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
			expect(existsSync(join(env.agentDir, "skills", "deploy-checks", "scripts"))).to.equal(false);
			for (const ok of [read, cat, other]) expect(ok.isError, ok.text).to.equal(false);
			expect(readFileSync(outside, "utf8")).to.equal("other notes\n");
			expect(auditLines(env.agentDir)).to.deep.equal([]);
		});

		it("resolves paths as pi does: a leading @, ~, and a symlinked folder on the way", async function () {
			const env = getEnv();
			const { skillFile } = await start(env, { guardBuiltins: "block" });
			symlinkSync(join(env.agentDir, "skills"), join(env.home, "sk"));
			symlinkSync(join(env.agentDir, "skills"), join(env.projectDir, "linked"));
			const run = await pi!.run("try", [
				tool("write", { path: "@linked/deploy-checks/references/new.md", content: "x\n" }),
				edit("~/sk/deploy-checks/SKILL.md", "Run npm build.", "Run make."),
				tool("bash", { command: "cd ~/sk && echo x > deploy-checks/notes.md" }),
				{ text: "done" },
			]);
			for (const r of run.toolResults) expect(r.isError, r.text).to.equal(true);
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
			expect(readdirSync(join(env.agentDir, "skills", "deploy-checks"))).to.deep.equal(["SKILL.md"]);
		});

		it("blocks even under guardBuiltins off when approval is not auto or the skill is pinned", async function () {
			for (const selfskills of [
				{ guardBuiltins: "off", approval: "ask" },
				{ guardBuiltins: "off", approval: { own: "auto", others: "propose" } },
				{ guardBuiltins: "off", pinned: ["deploy-*"] },
			]) {
				const env = createTempEnv();
				const { skillFile } = await start(env, selfskills);
				const run = await pi!.run("try", [edit(skillFile, "Run npm build.", "Run make."), { text: "done" }]);
				expect(run.toolResults[0].isError, JSON.stringify(selfskills)).to.equal(true);
				expect(run.toolResults[0].text).to.match(/pinned|approval/);
				expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
				pi!.dispose();
				pi = undefined;
				env.cleanup();
			}
		});
	});

	it("tells the package's skills from a person's across sessions under { own: propose }", async function () {
		const env = getEnv();
		const { skillFile } = await start(env);
		const created = await pi!.run("make", [
			call({
				action: "create",
				name: "release-notes",
				description: "Use when writing release notes. Gives the format.",
				body: "# Release notes\n\n1. List the changes.\n",
			}),
			{ text: "ok" },
		]);
		expect(created.toolResults[0].isError, created.toolResults[0].text).to.equal(false);
		pi!.dispose();
		// A new session (pi restarted) with approval for own skills: the record of what the package
		// created is on disk.
		pi = await createPiSession({
			env,
			packageDir: REPO_ROOT,
			settings: { selfskills: { approval: { own: "propose", others: "auto" } } },
		});
		const own = join(env.agentDir, "skills", "release-notes", "SKILL.md");
		const run = await pi.run("edit both", [
			edit(own, "List the changes.", "List every change."),
			edit(skillFile, "Run npm build.", "Run make."),
			{ text: "done" },
		]);
		const [ownEdit, personsEdit] = run.toolResults;
		expect(ownEdit.isError, ownEdit.text).to.equal(true);
		expect(ownEdit.text).to.contain('selfskills.approval: "propose"');
		expect(readFileSync(own, "utf8")).to.contain("List the changes.");
		// Approval for own skills is a control: the whole protected set, the person's skill too, is out
		// of reach of pi's edit (SPEC "Control that holds"); skill_manage still lands it at once.
		expect(personsEdit.isError, personsEdit.text).to.equal(true);
		expect(personsEdit.text).to.match(/^selfskills: this edit call would change .* while the person's review is on/);
		expect(readFileSync(skillFile, "utf8")).to.contain("Run npm build.");
	});

	it("counts a use for each read of a SKILL.md by pi or skill_manage, and none for other files", async function () {
		const env = getEnv();
		const { skillFile, outside } = await start(env);
		await pi!.run("use it", [
			tool("read", { path: skillFile }),
			call({ action: "read", skill: "deploy-checks" }),
			tool("read", { path: outside }),
			{ text: "ok" },
		]);
		const usage = readUsage(realFs, env.agentDir);
		expect([...usage.keys()]).to.deep.equal(["deploy-checks"]);
		expect(usage.get("deploy-checks")?.count).to.equal(2);
	});

	it('"off" leaves the call alone: no backup, no audit line', async function () {
		const env = getEnv();
		const { skillFile } = await start(env, { guardBuiltins: "off" });
		const run = await pi!.run("edit", [edit(skillFile, "Run npm build.", "Run make."), { text: "done" }]);
		expect(run.toolResults[0].isError).to.equal(false);
		expect(readFileSync(skillFile, "utf8")).to.contain("Run make.");
		expect(auditLines(env.agentDir)).to.deep.equal([]);
		expect(existsSync(join(env.agentDir, "selfskills", "backups"))).to.equal(false);
	});
});
