// Keeping a human in the loop, through pi itself on both lines: under approval "propose" the model's
// patch becomes a proposal that survives a restart; the person lists, shows, approves (backed up,
// audit line marked approved) or rejects it (with words), and the next prompt names the verdict
// once; an approval replays a patch on a file that changed since, or fails stale; "ask" shows a
// dialog; print mode needs --yes=<digest> of the change show printed; pins from /selfskills pin|unpin.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { allowSessionLabel, DENY } from "../../src/face/ask.ts";
import { completeArguments, type CommandDeps } from "../../src/face/command.ts";
import { listProposals } from "../../src/store/proposals.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { sessionDeps } from "../support/harness.ts";
import { auditLines } from "../support/backups.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";
import { call } from "../support/faux-script.ts";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";
import { createPiSession, type PiSession, type UiScript } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { captureStderr, commandOutputs } from "./ux-support.ts";

const REASON = "the build script is npm run build now";
const PROPOSE_STEPS = [
	call({ action: "read", skill: "deploy-checks" }),
	call({
		action: "patch",
		skill: "deploy-checks",
		old_string: "npm build",
		new_string: "npm run build",
		reason: REASON,
	}),
	{ text: "proposed" },
];

describe(`keeping a human in the loop (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv({ prefix: "selfskills-review-" });
	let env: TempEnv;
	let skillFile: string;
	const sessions: PiSession[] = [];
	const open = async (ui: UiScript | false, approval: unknown = "propose") => {
		const pi = await createPiSession({
			env,
			packageDir: sessions.length === 0 ? REPO_ROOT : undefined,
			ui,
			settings: { selfskills: { approval } },
		});
		sessions.push(pi);
		return pi;
	};
	const last = (pi: PiSession) => commandOutputs(pi).at(-1) ?? "";
	/** The model proposes the patch; returns the proposal id. */
	const propose = async (pi: PiSession): Promise<string> => {
		const run = await pi.run("fix deploy-checks", PROPOSE_STEPS);
		const result = run.toolResults.at(-1);
		expect(result?.isError, result?.text).to.equal(false);
		expect(result?.text).to.contain("proposed, not written");
		return String((result?.details as Record<string, unknown> | undefined)?.proposal);
	};

	beforeEach(function () {
		env = getEnv();
		skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
	});
	afterEach(() => {
		for (const pi of sessions.splice(0)) pi.dispose();
	});

	it("keeps a proposal across a restart; approve lands it backed up and audited, and says so once", async function () {
		const first = await open({ confirm: true });
		const id = await propose(first);
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
		first.dispose();
		sessions.splice(0);
		const pi = await open({ confirm: true });
		await pi.runCommand("/selfskills pending");
		expect(last(pi))
			.to.contain("1 pending proposal(s)")
			.and.contain(id)
			.and.contain("deploy-checks")
			.and.contain("+1 −1")
			.and.contain(REASON);
		await pi.runCommand(`/selfskills show ${id}`);
		expect(last(pi))
			.to.contain(`proposal ${id}: patch of deploy-checks`)
			.and.contain("+")
			.and.contain("npm run build");
		await pi.runCommand(`/selfskills approve ${id}`);
		expect(last(pi)).to.contain(`approved ${id}`).and.contain("Backup: SKILL.md ->");
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL.replace("npm build", "npm run build"));
		expect(listProposals(realFs, env.agentDir)).to.deep.equal([]);
		expect(auditLines(env.agentDir).at(-1)).to.include({
			action: "patch",
			skill: "deploy-checks",
			approved: id,
			reason: REASON,
		});
		const next = await pi.run("anything new?", [{ text: "ok" }, { text: "ok" }]);
		expect(next.calls[0].systemPrompt)
			.to.contain("<selfskills-reviewed>")
			.and.contain(`${id} (patch of deploy-checks): approved`);
		const after = await pi.run("and now?", [{ text: "ok" }]);
		expect(after.calls[0].systemPrompt).to.not.contain(id);
	});

	it("reject drops it with the person's words, which the model reads once; the file is untouched", async function () {
		const pi = await open({ confirm: true });
		const id = await propose(pi);
		await pi.runCommand(`/selfskills reject ${id} keep npm build, the alias exists`);
		expect(last(pi)).to.contain(`rejected ${id}`).and.contain("keep npm build, the alias exists");
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
		expect(listProposals(realFs, env.agentDir)).to.deep.equal([]);
		const next = await pi.run("go on", [{ text: "ok" }]);
		expect(next.calls[0].systemPrompt).to.contain(
			`${id} (patch of deploy-checks): rejected, saying: "keep npm build, the alias exists"`,
		);
		await pi.runCommand(`/selfskills approve ${id}`);
		expect(last(pi))
			.to.contain(`proposal ${id} (patch of deploy-checks) was rejected`)
			.and.contain("no longer pending");
	});

	it("replays a patch on a changed file and shows the new diff first; fails stale if it cannot", async function () {
		const dialogs: string[] = [];
		const pi = await open({
			confirm: (title, message) => {
				dialogs.push(`${title}\n${message}`);
				return true;
			},
		});
		const id = await propose(pi);
		const edited = DEPLOY_SKILL.replace("health page", "health endpoint");
		writeFileSync(skillFile, edited);
		await pi.runCommand(`/selfskills approve ${id}`);
		expect(dialogs.at(-1)).to.contain("replayed on the changed deploy-checks/SKILL.md");
		expect(readFileSync(skillFile, "utf8")).to.equal(edited.replace("npm build", "npm run build"));
		writeFileSync(skillFile, DEPLOY_SKILL);
		const second = await propose(pi);
		writeFileSync(skillFile, DEPLOY_SKILL.replace("npm build", "make"));
		await pi.runCommand(`/selfskills approve ${second}`);
		expect(last(pi)).to.contain("stale").and.contain(`proposal ${second} no longer applies`);
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL.replace("npm build", "make"));
		expect(listProposals(realFs, env.agentDir).map((p) => p.id)).to.deep.equal([second]);
	});

	it("keeps a proposal pending when the person declines the approval dialog", async function () {
		const pi = await open({ confirm: false });
		const id = await propose(pi);
		await pi.runCommand(`/selfskills approve ${id}`);
		expect(last(pi)).to.contain(`${id} is still pending`);
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
	});

	it("under ask shows one dialog; allowing for the session lands this change and the next unasked", async function () {
		const titles: string[] = [];
		const pi = await open(
			{
				select: (title) => {
					titles.push(title);
					return titles.length === 1 ? allowSessionLabel(["deploy-checks"]) : DENY;
				},
				input: "not now",
			},
			"ask",
		);
		const run = await pi.run("fix it", [
			...PROPOSE_STEPS.slice(0, 2),
			call({ action: "patch", skill: "deploy-checks", old_string: "health page", new_string: "health endpoint" }),
			{ text: "done" },
		]);
		for (const r of run.toolResults) expect(r.isError, r.text).to.equal(false);
		expect(titles).to.have.length(1);
		expect(titles[0]).to.contain("skill_manage wants to patch deploy-checks").and.contain(REASON);
		expect(readFileSync(skillFile, "utf8")).to.contain("npm run build").and.contain("health endpoint");
		expect(auditLines(env.agentDir).map((a) => a.allowed)).to.deep.equal(["session", undefined]);
	});

	it("completes pending proposal ids after show, approve and reject, and the pins after unpin", async function () {
		const pi = await open(false);
		const id = await propose(pi);
		writeFileSync(
			join(env.agentDir, "settings.json"),
			JSON.stringify({
				...JSON.parse(readFileSync(join(env.agentDir, "settings.json"), "utf8")),
				selfskills: { approval: "propose", pinned: ["deploy-*"] },
			}),
		);
		const deps: CommandDeps = { ...sessionDeps(env.agentDir), knownSkills: [] };
		expect(await completeArguments(deps, "ap")).to.deep.equal([{ value: "approve ", label: "approve" }]);
		for (const sub of ["show", "approve"])
			expect(await completeArguments(deps, `${sub} p-`)).to.deep.equal([{ value: `${sub} ${id}`, label: id }]);
		expect(await completeArguments(deps, "reject ")).to.deep.equal([{ value: `reject ${id} `, label: id }]);
		expect(await completeArguments(deps, "unpin ")).to.deep.equal([{ value: "unpin deploy-*", label: "deploy-*" }]);
	});

	describe("without a UI (print mode)", function () {
		it("approve needs --yes=<digest show printed>, not a plain or old one; reject needs --yes", async function () {
			const pi = await open(false);
			const id = await propose(pi);
			const printed = (command: string) => captureStderr(() => pi.runCommand(command));
			const digestOf = (text: string) => /^digest: ([0-9a-f]{12})$/m.exec(text)?.[1] ?? "";
			for (const command of [`/selfskills approve ${id}`, `/selfskills approve ${id} --yes`]) {
				const out = await printed(command);
				expect(out, command)
					.to.contain("+1. Run npm run build.")
					.and.contain(
						`nobody can be asked. To approve it, run: /selfskills approve ${id} --yes=${digestOf(out)}`,
					);
				expect(readFileSync(skillFile, "utf8"), command).to.equal(DEPLOY_SKILL);
			}
			expect(await printed(`/selfskills approve ${id} --yes=000000000000`))
				.to.match(/^digest_mismatch: /m)
				.and.contain(`/selfskills show ${id}`);
			expect(await printed(`/selfskills reject ${id}`)).to.contain(`/selfskills reject ${id} [reason] --yes`);
			expect(listProposals(realFs, env.agentDir)).to.have.length(1);
			const shown = await printed(`/selfskills show ${id}`);
			const seen = digestOf(shown);
			expect(shown).to.contain("+1. Run npm run build.").and.contain(`--yes=${seen}`);
			// The file changes after show: the digest seen no longer lands anything, and the refusal names the new one.
			writeFileSync(skillFile, DEPLOY_SKILL.replace("health page", "health endpoint"));
			const refused = await printed(`/selfskills approve ${id} --yes=${seen}`);
			expect(readFileSync(skillFile, "utf8")).to.not.contain("npm run build");
			const again = await printed(`/selfskills show ${id}`);
			const replayed = digestOf(again);
			expect(replayed).to.not.equal(seen);
			expect(refused).to.contain("digest_mismatch").and.contain(`digest is ${replayed}`);
			expect(again).to.contain("changed since: deploy-checks/SKILL.md");
			expect(await printed(`/selfskills approve ${id} --yes=${replayed}`)).to.contain(`approved ${id}`);
			expect(readFileSync(skillFile, "utf8")).to.contain("npm run build").and.contain("health endpoint");
			writeFileSync(skillFile, DEPLOY_SKILL);
			const second = await propose(pi);
			expect(second).to.not.equal(id);
			await pi.runCommand(`/selfskills reject ${second} too soon --yes`);
			expect(listProposals(realFs, env.agentDir)).to.deep.equal([]);
		});

		it("pin and unpin edit the global list only with --yes; a pinned skill is refused pinned", async function () {
			const pi = await open(false, "auto");
			await pi.runCommand("/selfskills pin deploy-checks");
			const settingsPath = join(env.agentDir, "settings.json");
			expect(JSON.parse(readFileSync(settingsPath, "utf8")).selfskills.pinned).to.equal(undefined);
			await pi.runCommand("/selfskills pin deploy-checks --yes");
			expect(JSON.parse(readFileSync(settingsPath, "utf8")).selfskills.pinned).to.deep.equal(["deploy-checks"]);
			const run = await pi.run("fix", [...PROPOSE_STEPS.slice(0, 2), { text: "pinned" }]);
			expect(run.toolResults.at(-1)?.isError).to.equal(true);
			expect(run.toolResults.at(-1)?.text).to.match(/^pinned:/);
			await pi.runCommand("/selfskills unpin deploy-checks --yes");
			expect(JSON.parse(readFileSync(settingsPath, "utf8")).selfskills.pinned).to.deep.equal([]);
			const again = await pi.run("fix", [...PROPOSE_STEPS.slice(0, 2), { text: "done" }]);
			expect(again.toolResults.at(-1)?.isError, again.toolResults.at(-1)?.text).to.equal(false);
			expect(readFileSync(skillFile, "utf8")).to.contain("npm run build");
		});
	});
});
