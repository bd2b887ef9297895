// A change the person makes with /selfskills is theirs: it lands after their confirmation under every
// approval mode and whatever the pins (the confirmation names the pin), and nothing says "landed"
// unless it did. Driven through pi with a scripted UI (the TUI's dialogs) and without one (print mode).
import { expect } from "chai";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession, type UiScript } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";
import { auditLines } from "../support/backups.ts";
import { git, initRepo } from "../support/git-repo.ts";
import { listProposals } from "../../src/store/proposals.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { captureStderr, commandOutputs } from "./ux-support.ts";

const PATCHED = DEPLOY_SKILL.replace("npm build", "npm run build");
const NOTES = "# Notes\n\nfirst\n";
const NOTES2 = "# Notes\n\nsecond\n";

/** Merges `selfskills` into the global settings (the package entry pi install wrote stays). */
function setSelfskills(env: TempEnv, selfskills: Record<string, unknown>): void {
	const path = join(env.agentDir, "settings.json");
	const current = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
	writeFileSync(path, JSON.stringify({ ...current, selfskills }, null, 2));
}

const last = (pi: PiSession) => commandOutputs(pi).at(-1) ?? "";
const proposals = (env: TempEnv) => listProposals(realFs, env.agentDir);

describe(`/selfskills: the person's own changes land (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv({ prefix: "selfskills-person-" });
	let env: TempEnv;
	let pi: PiSession | undefined;
	let skillFile: string;
	afterEach(() => pi?.dispose());

	/** deploy-checks patched once and references/notes.md written twice by the agent (approval auto). */
	async function edited(ui: UiScript | false): Promise<PiSession> {
		env = getEnv();
		skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		const session = await createPiSession({ env, packageDir: REPO_ROOT, ui });
		const run = await session.run("fix deploy-checks", [
			call({ action: "read", skill: "deploy-checks" }),
			call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
			call({ action: "write", skill: "deploy-checks", file: "references/notes.md", content: NOTES }),
			call({ action: "read", skill: "deploy-checks", file: "references/notes.md" }),
			call({ action: "write", skill: "deploy-checks", file: "references/notes.md", content: NOTES2 }),
			{ text: "done" },
		]);
		for (const r of run.toolResults) expect(r.isError, r.text).to.equal(false);
		expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
		return session;
	}

	/** Review on ("propose"), then the agent's patch of deploy-checks filed as a proposal: its id. */
	async function propose(session: PiSession): Promise<string> {
		setSelfskills(env, { approval: "propose" });
		const run = await session.run("again", [
			call({ action: "read", skill: "deploy-checks" }),
			call({ action: "patch", skill: "deploy-checks", old_string: "health page", new_string: "health url" }),
			{ text: "proposed" },
		]);
		return String(((run.toolResults.at(-1)?.details ?? {}) as Record<string, unknown>).proposal);
	}

	const modes: Array<[string, Record<string, unknown>]> = [
		["propose", { approval: "propose" }],
		["ask", { approval: "ask" }],
		["propose for others by origin", { approval: { own: "auto", others: "propose" } }],
		["a pin", { pinned: ["deploy-*"] }],
		["propose and a pin", { approval: "propose", pinned: ["deploy-checks"] }],
	];
	for (const [name, settings] of modes) {
		it(`restores SKILL.md and a bundled file in the dialog under ${name}; no proposal`, async function () {
			const titles: string[] = [];
			pi = await edited({
				confirm: (title) => {
					titles.push(title);
					return true;
				},
			});
			setSelfskills(env, settings);
			await pi.runCommand("/selfskills restore deploy-checks");
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
			expect(last(pi)).to.match(/^restore landed: deploy-checks\/SKILL\.md/);
			await pi.runCommand("/selfskills restore deploy-checks references/notes.md");
			expect(readFileSync(join(env.agentDir, "skills", "deploy-checks", "references", "notes.md"), "utf8")).to.equal(
				NOTES,
			);
			expect(last(pi)).to.match(/^restore landed: deploy-checks\/references\/notes\.md/);
			expect(proposals(env), "the person's restore is never a proposal").to.deep.equal([]);
			const pinned = "pinned" in settings;
			for (const title of titles) {
				if (pinned) expect(title).to.match(/deploy-checks is pinned \(selfskills\.pinned "deploy-[*a-z-]+"\)/);
				else expect(title).not.to.contain("pinned");
			}
			const audit = auditLines(env.agentDir).filter((l) => l.action === "restore");
			expect(audit.map((l) => (l as unknown as Record<string, unknown>).byPerson)).to.deep.equal([
				"restore",
				"restore",
			]);
		});
	}

	it("recreates a deleted skill in the dialog under propose and a pin", async function () {
		pi = await edited({ confirm: true });
		const run = await pi.run("drop it", [call({ action: "delete", skill: "deploy-checks" }), { text: "gone" }]);
		expect(run.toolResults[0].isError, run.toolResults[0].text).to.equal(false);
		expect(existsSync(skillFile)).to.equal(false);
		setSelfskills(env, { approval: "propose", pinned: ["deploy-checks"] });
		await pi.runCommand("/selfskills restore deploy-checks");
		expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
		expect(last(pi)).to.match(/^restore landed: deploy-checks \(whole skill\)/);
		expect(proposals(env)).to.deep.equal([]);
	});

	it("approves a proposal on a skill pinned since, naming the pin in the dialog", async function () {
		const bodies: string[] = [];
		pi = await edited({
			confirm: (_title, body) => {
				bodies.push(body);
				return true;
			},
		});
		const id = await propose(pi);
		setSelfskills(env, { approval: "propose", pinned: ["deploy-checks"] });
		await pi.runCommand(`/selfskills approve ${id}`);
		expect(bodies[0]).to.contain('deploy-checks is pinned (selfskills.pinned "deploy-checks")');
		expect(last(pi)).to.match(new RegExp(`^approved ${id}: patch of deploy-checks landed`));
		expect(readFileSync(skillFile, "utf8")).to.contain("health url");
	});

	it("completes pin with unpinned skills and unpin with the global pins only", async function () {
		pi = await edited({ confirm: true });
		setSelfskills(env, { pinned: ["deploy-checks"] });
		const command = pi.session.extensionRunner.getCommand("selfskills");
		const complete = async (prefix: string) =>
			((await command?.getArgumentCompletions?.(prefix)) ?? []).map((c) => c.value);
		expect(await complete("unpin ")).to.deep.equal(["unpin deploy-checks"]);
		expect(await complete("pin ")).not.to.include("pin deploy-checks");
		expect(await complete("pin ")).to.include("pin selfskills");
	});

	it("says nothing landed when the dialog is declined", async function () {
		pi = await edited({ confirm: false });
		setSelfskills(env, { approval: "propose" });
		await pi.runCommand("/selfskills restore deploy-checks");
		expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
		expect(last(pi)).to.equal("restore cancelled; nothing changed");
		expect(commandOutputs(pi).join("\n")).not.to.contain("landed");
	});

	describe("without a UI (print mode)", function () {
		const printed = (command: string) => captureStderr(() => (pi as PiSession).runCommand(command));

		it("restores only a named backup, and only with --yes; under propose and a pin it lands", async function () {
			pi = await edited(false);
			setSelfskills(env, { approval: "propose", pinned: ["deploy-checks"] });
			const plain = await printed("/selfskills restore deploy-checks");
			expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
			const hint = /To restore it, run: (\/selfskills restore deploy-checks SKILL\.md \S+ --yes)/.exec(plain);
			expect(hint, plain).to.not.equal(null);
			expect(plain).to.contain('deploy-checks is pinned (selfskills.pinned "deploy-checks")');
			const named = hint?.[1].replace(/ --yes$/, "") ?? "";
			const unconfirmed = await printed(named);
			expect(readFileSync(skillFile, "utf8"), "a named backup without --yes restores nothing").to.equal(PATCHED);
			expect(unconfirmed).to.contain("Nothing was restored");
			const done = await printed(hint?.[1] ?? "");
			expect(done).to.match(/^restore landed: deploy-checks\/SKILL\.md/m);
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
			expect(proposals(env)).to.deep.equal([]);
		});

		it("never recreates a deleted skill without a snapshot id and --yes", async function () {
			pi = await edited(false);
			await pi.run("drop it", [call({ action: "delete", skill: "deploy-checks" }), { text: "gone" }]);
			expect(existsSync(skillFile)).to.equal(false);
			const plain = await printed("/selfskills restore deploy-checks");
			expect(existsSync(skillFile)).to.equal(false);
			const yesOnly = await printed("/selfskills restore deploy-checks --yes");
			expect(existsSync(skillFile), "--yes without a snapshot id").to.equal(false);
			expect(yesOnly).to.contain("Nothing was restored");
			const hint = /To restore it, run: (\/selfskills restore deploy-checks \S+ --yes)/.exec(plain);
			expect(hint, plain).to.not.equal(null);
			await printed(hint?.[1] ?? "");
			expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
		});

		it("says a skill with no backup has nothing to restore, naming no dead-end command", async function () {
			pi = await edited(false);
			writeSkill(join(env.agentDir, "skills"), "fresh-notes");
			const out = await printed("/selfskills restore fresh-notes");
			expect(out)
				.to.contain("no_backup: there is no backup of fresh-notes/SKILL.md yet")
				.and.not.contain("/selfskills");
		});

		it("offers in history only restore commands that work, a snapshot as a whole-skill restore", async function () {
			pi = await edited(false);
			await pi.run("drop it", [call({ action: "delete", skill: "deploy-checks" }), { text: "gone" }]);
			const history = await printed("/selfskills history deploy-checks");
			const commands = [...history.matchAll(/\/selfskills restore .*$/gm)].map((m) => m[0]);
			expect(commands.length, history).to.be.greaterThan(0);
			for (const command of commands) expect(command).not.to.match(/SKILL\.md \d{8}-\d{6}\.\d{3}-?\S*$/);
			const snapshot = commands.find((c) => /^\/selfskills restore deploy-checks \d{8}-\d{6}\.\d{3}$/.test(c));
			expect(snapshot, history).to.not.equal(undefined);
			await printed(`${snapshot} --yes`);
			expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
			expect(readdirSync(join(env.agentDir, "skills"))).to.include("deploy-checks");
		});
	});
	describe("arguments, help and proposal texts (print mode)", function () {
		const printed = (command: string) => captureStderr(() => (pi as PiSession).runCommand(command));

		it("lists every subcommand in help with an example, and completes help", async function () {
			pi = await edited(false);
			const help = await printed("/selfskills help");
			for (const sub of ["history", "restore", "show", "approve", "reject", "export", "pin", "unpin"])
				expect(help).to.match(new RegExp(`^ {2}/selfskills ${sub} .* — .*\\(e\\.g\\. /selfskills ${sub} `, "m"));
			for (const sub of ["help", "pending", "trust", "untrust", "unused", "doctor"])
				expect(help).to.match(new RegExp(`^ {2}/selfskills ${sub}\\b.* — `, "m"));
			expect(help).not.to.match(/\{"action"/);
			const command = pi.session.extensionRunner.getCommand("selfskills");
			const values = ((await command?.getArgumentCompletions?.("he")) ?? []).map((c) => c.value);
			expect(values).to.deep.equal(["help"]);
		});

		it("refuses extra words, unknown flags and quotes on every subcommand, changing nothing", async function () {
			pi = await edited(false);
			const settings = () => readFileSync(join(env.agentDir, "settings.json"), "utf8");
			const before = settings();
			const cases: Array<[string, string]> = [
				["/selfskills pin deploy-checks please --yes", '"please"'],
				['/selfskills pin "deploy checks" --yes', "not quotes"],
				["/selfskills unpin deploy-checks now --yes", '"now"'],
				["/selfskills status verbose", '"verbose"'],
				["/selfskills pending all", '"all"'],
				["/selfskills doctor --fix", '"--fix"'],
				["/selfskills history deploy-checks SKILL.md extra", '"extra"'],
				["/selfskills restore deploy-checks SKILL.md 20990101-000000.000 more --yes", '"more"'],
				["/selfskills show p-00000000 now", '"now"'],
				["/selfskills export p-00000000 --force", '"--force"'],
				["/selfskills unused 30 days", '"days"'],
			];
			for (const [command, word] of cases) {
				const out = await printed(command);
				expect(out, command).to.contain("Nothing changed: /selfskills").and.contain(word).and.contain("usage:");
			}
			expect(settings()).to.equal(before);
			expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
		});

		it("tells approved from rejected, and names an unknown id with how to list them", async function () {
			pi = await edited(false);
			setSelfskills(env, { approval: "propose" });
			const ids: string[] = [];
			for (const [from, to] of [
				["Check the health page.", "Check the health endpoint."],
				["# Deploy checks", "# Deploy checks (staging)"],
			]) {
				const run = await pi.run("again", [
					call({ action: "read", skill: "deploy-checks" }),
					call({ action: "patch", skill: "deploy-checks", old_string: from, new_string: to }),
					{ text: "proposed" },
				]);
				ids.push(String(((run.toolResults.at(-1)?.details ?? {}) as Record<string, unknown>).proposal));
			}
			const [a, b] = ids;
			const digest = /^digest: (\S+)$/m.exec(await printed(`/selfskills show ${a}`))?.[1];
			expect(await printed(`/selfskills approve ${a} --yes=${digest}`)).to.match(/^approved /m);
			expect(await printed(`/selfskills reject ${b} not now --yes`)).to.match(/^rejected /m);
			const shownA = await printed(`/selfskills show ${a}`);
			const shownB = await printed(`/selfskills show ${b}`);
			expect(shownA)
				.to.match(/was approved/)
				.and.contain("It landed; /selfskills history deploy-checks");
			expect(shownB)
				.to.match(/was rejected/)
				.and.contain("nothing of it was written");
			for (const text of [shownA, shownB]) expect(text).not.to.contain("<skill>");
			const again = await printed(`/selfskills approve ${b} --yes=${digest}`);
			expect(again)
				.to.match(/was rejected/)
				.and.contain("no longer pending");
			expect(readFileSync(skillFile, "utf8")).not.to.contain("(staging)");
			const unknown = await printed("/selfskills show p-deadbeef");
			expect(unknown)
				.to.contain('unknown_proposal: there is no proposal "p-deadbeef"')
				.and.contain("/selfskills pending");
			expect(unknown).not.to.contain("missing");
		});

		it("exports a proposal on a skill pinned since as a branch", async function () {
			pi = await edited(false);
			initRepo(join(env.agentDir, "skills"));
			const id = await propose(pi);
			setSelfskills(env, { approval: "propose", pinned: ["deploy-checks"] });
			const out = await printed(`/selfskills export ${id} --branch`);
			expect(git(join(env.agentDir, "skills"), "branch", "--list", `selfskills/${id}`), out).to.contain(id);
		});

		it("says why export needs git, and what to do, outside a repository", async function () {
			pi = await edited(false);
			const id = await propose(pi);
			const out = await printed(`/selfskills export ${id}`);
			expect(out).to.contain(`Not exported: proposal ${id} changes files that are not in a git repository`);
			expect(out).to.contain("deploy-checks/SKILL.md is in no git work tree");
			expect(out).to.contain("git init").and.contain(`/selfskills show ${id}`).and.contain("still pending");
			expect(proposals(env).map((p) => p.id)).to.deep.equal([id]);
		});
	});
});
