// The person's gates in the pipeline: a pinned skill is read-only (`pinned`) for every change the
// tool can make; under approval "propose" a change becomes one proposal (nothing written, no
// backup), filed once; under "ask" a session with a UI asks (allow once / for the session / deny
// with words) and one without a UI proposes; a dry run never asks nor proposes; per origin.
import { appendFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { expect } from "chai";
import { ALLOW_ONCE, allowSessionLabel, DENY } from "../../src/face/ask.ts";
import { normalizeArguments } from "../../src/face/arguments.ts";
import { withFileLocks } from "../../src/base/locks.ts";
import { listProposals } from "../../src/store/proposals.ts";
import { executeSkillManage } from "../../src/face/tool.ts";
import { auditLines } from "../support/backups.ts";
import { writeJson, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, textOf } from "../support/harness.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";

const PATCH = {
	action: "patch",
	skill: "deploy-checks",
	old_string: "Run the build.",
	new_string: "Run make.",
	reason: "the build target moved to make",
};

describe("hardening: the person's gates (pins and approval)", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-human-" });
	let env: TempEnv;
	let skillFile: string;
	const settings = (selfskills: Record<string, unknown>) =>
		writeJson(join(env.agentDir, "settings.json"), { selfskills });
	const backups = () => existsSync(join(env.agentDir, "selfskills", "backups"));

	beforeEach(function () {
		env = getEnv();
		skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks");
	});

	it("refuses every change to a pinned skill with pinned, reads it, and writes nothing", async function () {
		settings({ pinned: ["deploy-*"] });
		const tool = createHarness(env);
		const before = readFileSync(skillFile, "utf8");
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		for (const args of [
			{ action: "patch", skill: "deploy-checks", old_string: "Run the build.", new_string: "Run make." },
			{
				action: "patch",
				skill: "deploy-checks",
				old_string: "Run the build.",
				new_string: "Run make.",
				dry_run: true,
			},
			{ action: "write", skill: "deploy-checks", file: "references/x.md", content: "x\n" },
			{ action: "delete", skill: "deploy-checks" },
			{ action: "create", name: "deploy-more", description: "Use when deploying more.", body: "# More\n" },
			{
				action: "operations",
				operations: [{ action: "write", skill: "deploy-checks", file: "references/y.md", content: "y\n" }],
			},
		]) {
			const r = await tool.call(args);
			expectRefused(r, "pinned");
			expect(textOf(r), JSON.stringify(args)).to.match(/pinned \(selfskills\.pinned: "deploy-\*"\)/);
		}
		expect(readFileSync(skillFile, "utf8")).to.equal(before);
		expect(existsSync(join(env.agentDir, "skills", "deploy-more"))).to.equal(false);
		expect(backups()).to.equal(false);
	});

	it("under propose files each change once, writes nothing, and list shows it; dry runs file none", async function () {
		settings({ approval: "propose" });
		const tool = createHarness(env);
		const before = readFileSync(skillFile, "utf8");
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		const dry = await tool.call({ ...PATCH, dry_run: true });
		expectOk(dry);
		expect(textOf(dry)).to.contain("+1. Run make.").and.contain("filed as a proposal");
		expect(listProposals(tool.fs, env.agentDir)).to.have.length(0);
		const first = await tool.call(PATCH);
		expectOk(first);
		expect(first.details).to.include({ proposed: true, alreadyPending: false });
		const id = String(first.details.proposal);
		expect(id).to.match(/^p-[0-9a-f]{8}$/);
		expect(first.text)
			.to.contain(`proposal ${id}`)
			.and.contain("Do not retry this change or make it another way")
			.and.contain("+1. Run make.");
		expect(readFileSync(skillFile, "utf8")).to.equal(before);
		expect(backups()).to.equal(false);
		expect(auditLines(env.agentDir)).to.deep.equal([]);
		expect(tool.events).to.deep.equal([]);
		const [proposal] = listProposals(tool.fs, env.agentDir);
		expect(proposal).to.include({
			id,
			action: "patch",
			reason: PATCH.reason,
			mode: "propose",
			cwd: env.projectDir,
			added: 1,
			removed: 1,
		});
		expect(proposal.targets).to.have.length(1);
		expect(proposal.targets[0]).to.include({ path: skillFile, skill: "deploy-checks", file: "SKILL.md" });
		expect(proposal.args).to.deep.include({
			action: "patch",
			old_string: "Run the build.",
			new_string: "Run make.",
		});
		// The same change again (another reason) is the same proposal.
		const again = await tool.call({ ...PATCH, reason: "retrying" });
		expect(again.details).to.include({ proposed: true, proposal: id, alreadyPending: true });
		expect(
			readdirSync(join(env.agentDir, "selfskills", "proposals")).filter((f) => f.endsWith(".json")),
		).to.deep.equal([`${id}.json`]);
		const list = await tool.call({ action: "list" });
		expect(list.text).to.match(new RegExp(`deploy-checks — .*awaiting the person's review: ${id}`));
		expect((list.details.skills as Array<Record<string, unknown>>)[0].pending).to.deep.equal([id]);
	});

	it("files a proposal under a machine-wide lock (two processes file one change once)", async function () {
		settings({ approval: "propose" });
		const tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		const order: string[] = [];
		let release = () => {};
		const held = withFileLocks([join(env.agentDir, "selfskills", "proposals")], async () => {
			order.push("held");
			await new Promise<void>((resolve) => {
				release = resolve;
			});
			order.push("released");
		});
		await new Promise((resolve) => setTimeout(resolve, 20));
		const call = tool.call(PATCH).then((r) => {
			order.push("filed");
			return r;
		});
		await new Promise((resolve) => setTimeout(resolve, 100));
		expect(listProposals(tool.fs, env.agentDir)).to.deep.equal([]);
		release();
		await held;
		expect((await call).details.proposed).to.equal(true);
		expect(order).to.deep.equal(["held", "released", "filed"]);
	});

	it("files a whole batch as one proposal, never half of it", async function () {
		settings({ approval: "propose" });
		const tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		const batch = await tool.call({
			action: "operations",
			reason: "two gaps",
			operations: [
				{ action: "write", skill: "deploy-checks", file: "references/a.md", content: "a\n" },
				{ action: "patch", skill: "deploy-checks", old_string: "Check the page.", new_string: "Check /healthz." },
			],
		});
		expectOk(batch);
		expect(existsSync(join(env.agentDir, "skills", "deploy-checks", "references"))).to.equal(false);
		const [proposal] = listProposals(tool.fs, env.agentDir);
		expect(proposal).to.include({ action: "operations", reason: "two gaps" });
		expect(proposal.targets.map((t) => t.file).sort()).to.deep.equal(["SKILL.md", "references/a.md"]);
	});

	it("under { own: propose, others: auto } lands a person's skill and proposes the package's own", async function () {
		const tool = createHarness(env);
		expectOk(
			await tool.call({
				action: "create",
				name: "release-notes",
				description: "Use when writing release notes.",
				body: "# Notes\n\n1. List the changes.\n",
			}),
		);
		settings({ approval: { own: "propose", others: "auto" } });
		const next = createHarness(env);
		expectOk(await next.call({ action: "read", skill: "deploy-checks" }));
		const person = await next.call(PATCH);
		expectOk(person);
		expect(person.details.proposed).to.equal(undefined);
		expect(readFileSync(skillFile, "utf8")).to.contain("Run make.");
		expect(auditLines(env.agentDir).at(-1)).to.include({
			action: "patch",
			skill: "deploy-checks",
			reason: PATCH.reason,
		});
		expectOk(await next.call({ action: "read", skill: "release-notes" }));
		const own = await next.call({
			action: "patch",
			skill: "release-notes",
			old_string: "List the changes.",
			new_string: "List every change.",
		});
		expect(own.details).to.include({ proposed: true });
		const created = await next.call({
			action: "create",
			name: "another",
			description: "Use when testing.",
			body: "# Another\n",
		});
		expect(created.details).to.include({ proposed: true });
		expect(existsSync(join(env.agentDir, "skills", "another"))).to.equal(false);
	});

	it("leaves proposals, the approval setting and pins out of the agent's reach", async function () {
		settings({ approval: "propose", pinned: ["x-*"] });
		const tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
		const id = String((await tool.call(PATCH)).details.proposal);
		const proposals = join(env.agentDir, "selfskills", "proposals");
		const settingsFile = join(env.agentDir, "settings.json");
		for (const path of [proposals, join(proposals, `${id}.json`), env.agentDir, settingsFile]) {
			for (const args of [
				{ action: "write", path, file: "x.md", content: "approved\n" },
				{ action: "delete", path },
				{ action: "read", path },
			]) {
				const r = await tool.call(args);
				expect(r.ok, `${JSON.stringify(args)}: ${r.text}`).to.equal(false);
			}
		}
		expect(listProposals(tool.fs, env.agentDir).map((p) => p.id)).to.deep.equal([id]);
		expect(JSON.parse(readFileSync(settingsFile, "utf8")).selfskills).to.deep.equal({
			approval: "propose",
			pinned: ["x-*"],
		});
	});

	describe("ask", function () {
		/** The tool as pi runs it in a session with a UI whose select and input answer from a script. */
		function withUi(answers: { select: Array<string | undefined>; input?: string[] }) {
			const harness = createHarness(env);
			const asked: string[] = [];
			const ctx = {
				cwd: env.projectDir,
				hasUI: true,
				ui: {
					select: async (title: string, options: string[]) => {
						asked.push(title);
						const answer = answers.select.shift();
						if (answer !== undefined && !options.includes(answer))
							throw new Error(`no option "${answer}" in ${options.join(" | ")}`);
						return answer;
					},
					input: async () => answers.input?.shift(),
				},
			} as unknown as ExtensionContext;
			const call = async (args: Record<string, unknown>) => {
				const r = await executeSkillManage(
					{
						agentDir: () => env.agentDir,
						fs: harness.fs,
						state: harness.state,
						effects: { onLanded: (record) => harness.events.push(record) },
					},
					normalizeArguments(args),
					ctx,
				);
				return { ...r, text: textOf(r) };
			};
			return { call, asked, harness };
		}

		beforeEach(() => settings({ approval: "ask" }));

		it("shows skill, action, reason and diff; allow once lands it, audited, and asks next time", async function () {
			const ui = withUi({ select: [ALLOW_ONCE, DENY] });
			expectOk(await ui.call({ action: "read", skill: "deploy-checks" }));
			const r = await ui.call(PATCH);
			expectOk(r);
			expect(ui.asked[0])
				.to.contain("skill_manage wants to patch deploy-checks")
				.and.contain(`Reason: ${PATCH.reason}`)
				.and.contain("+1. Run make.");
			expect(readFileSync(skillFile, "utf8")).to.contain("Run make.");
			expect(auditLines(env.agentDir).at(-1)).to.include({ allowed: "once", reason: PATCH.reason });
			const second = await ui.call({
				action: "patch",
				skill: "deploy-checks",
				old_string: "Check the page.",
				new_string: "Check /healthz.",
			});
			expectRefused(second, "denied");
			expect(ui.asked).to.have.length(2);
		});

		it("allow for the session stops asking for that skill", async function () {
			const ui = withUi({ select: [allowSessionLabel(["deploy-checks"])] });
			expectOk(await ui.call({ action: "read", skill: "deploy-checks" }));
			expectOk(await ui.call(PATCH));
			expectOk(
				await ui.call({
					action: "patch",
					skill: "deploy-checks",
					old_string: "Check the page.",
					new_string: "Check /healthz.",
				}),
			);
			expect(ui.asked).to.have.length(1);
			expect(auditLines(env.agentDir).map((a) => a.allowed)).to.deep.equal(["session", undefined]);
		});

		it("deny refuses with the person's words: nothing written, no backup, no audit line", async function () {
			const ui = withUi({ select: [DENY], input: ["keep the build step, make is only for CI"] });
			expectOk(await ui.call({ action: "read", skill: "deploy-checks" }));
			const before = readFileSync(skillFile, "utf8");
			const r = await ui.call(PATCH);
			expectRefused(r, "denied");
			expect(r.text)
				.to.contain('saying: "keep the build step, make is only for CI"')
				.and.contain("Do not retry it or make the change another way");
			expect(r.details.words).to.equal("keep the build step, make is only for CI");
			expect(readFileSync(skillFile, "utf8")).to.equal(before);
			expect(backups()).to.equal(false);
			expect(auditLines(env.agentDir)).to.deep.equal([]);
			const closed = withUi({ select: [undefined] });
			expectOk(await closed.call({ action: "read", skill: "deploy-checks" }));
			expectRefused(await closed.call(PATCH), "denied");
		});

		it("lands nothing (stale) when the file changed while the person was being asked", async function () {
			const harness = createHarness(env);
			const ctx = {
				cwd: env.projectDir,
				hasUI: true,
				ui: {
					select: async () => {
						// Another program edits the skill while the dialog is open.
						appendFileSync(skillFile, "3. Tell the team.\n");
						return ALLOW_ONCE;
					},
					input: async () => undefined,
				},
			} as unknown as ExtensionContext;
			const deps = {
				agentDir: () => env.agentDir,
				fs: harness.fs,
				state: harness.state,
				effects: { onLanded: () => undefined },
			};
			await executeSkillManage(deps, normalizeArguments({ action: "read", skill: "deploy-checks" }), ctx);
			const edited = readFileSync(skillFile, "utf8");
			const r = await executeSkillManage(deps, normalizeArguments(PATCH), ctx);
			expect(r.details.ok).to.equal(false);
			// The fresh plan's read gate sees the file changed since the agent read it.
			expect(r.details.code).to.equal("stale");
			expect(readFileSync(skillFile, "utf8")).to.equal(`${edited}3. Tell the team.\n`);
			expect(backups()).to.equal(false);
		});

		it("without a UI files a proposal instead (mode ask), and a dry run asks nobody", async function () {
			const tool = createHarness(env);
			expectOk(await tool.call({ action: "read", skill: "deploy-checks" }));
			const dry = await tool.call({ ...PATCH, dry_run: true });
			expect(dry.text).to.contain("filed as a proposal");
			const r = await tool.call(PATCH);
			expect(r.details).to.include({ proposed: true });
			expect(r.text).to.contain("cannot be asked in this session");
			expect(listProposals(tool.fs, env.agentDir)[0]).to.include({ mode: "ask" });
		});
	});
});
