// /selfskills for the human, through pi: the status report, history, restore (diff shown, confirmation
// asked; without a UI it prints and restores only a named backup), trust/untrust, the completions and
// the start-up settings warning. Each output stays in the conversation as a panel the model never sees;
// the human's texts name slash commands. Driven in-process with a scripted UI, and through the real
// CLI in print and RPC mode.
import { expect } from "chai";
import { skillBackupDir } from "../support/backups.ts";
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Theme } from "@mariozechner/pi-coding-agent";
import { CombinedAutocompleteProvider } from "@mariozechner/pi-tui";
import { FAUX_CLI_ARGS, piInstall, runPiPrint } from "../support/pi-cli.ts";
import { REPO_ROOT, getPiLine, getPiLineInfo, isPi16 } from "../support/pi-line.ts";
import { createPiSession, type PiSession, type UiScript } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { createBackupStore } from "../../src/store/backup-store.ts";
import { completeArguments, OUTPUT_MESSAGE_TYPE, type CommandDeps } from "../../src/face/command.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { createSessionState } from "../../src/pipeline/session-state.ts";
import { call } from "../support/faux-script.ts";
import { captureStderr, commandOutputs } from "./ux-support.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";

const PATCHED = DEPLOY_SKILL.replace("npm build", "npm run build");
const TWICE = PATCHED.replace("health page", "health endpoint");

/** The model reads deploy-checks and patches it twice: two backups, the file at TWICE. */
const EDIT_STEPS = [
	call({ action: "read", skill: "deploy-checks" }),
	call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
	call({ action: "patch", skill: "deploy-checks", old_string: "health page", new_string: "health endpoint" }),
	{ text: "done" },
];

function backupIds(env: TempEnv): string[] {
	return readdirSync(join(skillBackupDir(env.agentDir, "deploy-checks"), "SKILL.md")).sort();
}

/** A session with deploy-checks edited twice and a read-only skill in ~/.agents/skills. */
async function editedSession(
	env: TempEnv,
	options: { ui?: UiScript | false; settings?: Record<string, unknown> } = {},
): Promise<{ pi: PiSession; skillFile: string }> {
	const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
	const shared = join(env.home, ".agents", "skills", "shared-notes");
	mkdirSync(shared, { recursive: true });
	writeFileSync(
		join(shared, "SKILL.md"),
		"---\nname: shared-notes\ndescription: Shared notes every agent on this machine reads.\n---\n# Notes\n",
	);
	const pi = await createPiSession({ env, packageDir: REPO_ROOT, ui: options.ui, settings: options.settings });
	const run = await pi.run("fix deploy-checks", EDIT_STEPS);
	for (const result of run.toolResults) expect(result.isError, result.text).to.equal(false);
	expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
	return { pi, skillFile };
}

const last = (pi: PiSession) => commandOutputs(pi).at(-1) ?? "";

/** A theme that leaves the text as it is, to read what a renderer lays out. */
const PLAIN_THEME = {
	fg: (_colour: string, text: string) => text,
	bg: (_colour: string, text: string) => text,
	bold: (text: string) => text,
} as unknown as Theme;

/** Tool-call syntax the human should never be asked to type. */
const TOOL_CALL_SYNTAX = /\{"action"|skill_manage/;

describe(`/selfskills (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	describe("with a UI", function () {
		it("reports enabled, inject, trust, roots, skills, backups, settings problems and journals", async function () {
			const env = getEnv();
			({ pi } = await editedSession(env, { settings: { selfskills: { backupCap: "lots" } } }));
			const journalDir = join(env.agentDir, "selfskills", "journal");
			mkdirSync(journalDir, { recursive: true });
			writeFileSync(
				join(journalDir, "1-999999-0.json"),
				JSON.stringify({ pid: 999999, startedAt: new Date().toISOString(), entries: [] }),
			);
			await pi.runCommand("/selfskills");
			const status = last(pi);
			expect(status).to.contain("selfskills: enabled true, inject true");
			expect(status).to.match(
				isPi16()
					? /project .*: (trusted|untrusted) \(pi's own trust\)/
					: /project .*: untrusted \(selfskills\.trustedProjects\)/,
			);
			expect(status).to.contain(`skills dir (create): ${join(env.agentDir, "skills")}`);
			expect(status).to.match(
				new RegExp(`writable roots:\\n  ${join(env.agentDir, "skills")} \\(agent-skills, skills-dir\\)`),
			);
			expect(status.split(`${join(env.agentDir, "skills")} (`).length - 1, "a folder is listed once").to.equal(1);
			expect(status).to.match(/skills: 3 found, 2 patchable, 1 read-only/);
			expect(status).to.match(/ {2}deploy-checks: patchable/);
			expect(status).to.match(/ {2}shared-notes: read-only \(.+\)/);
			expect(status).to.match(/backups: 2 file\(s\), \d+ bytes in /);
			expect(status).to.match(/settings problems:\n {2}.*backupCap/);
			expect(status).to.contain("unfinished batch journal(s): 1-999999-0.json");
		});

		it("lists a selfskills.sandbox.writable folder the tools refuse among the settings problems", async function () {
			const env = getEnv();
			const sibling = join(env.root, "sibling");
			mkdirSync(sibling);
			const inStore = join(env.agentDir, "skills");
			const writable = [sibling, inStore, env.home];
			({ pi } = await editedSession(env, { settings: { selfskills: { sandbox: { writable } } } }));
			await pi.runCommand("/selfskills");
			const problems =
				last(pi)
					.split("settings problems:\n")[1]
					?.split(/\n(?! {2})/)[0] ?? "";
			const settingsFile = join(env.agentDir, "settings.json");
			expect(problems).to.contain(
				`  ${settingsFile}: selfskills.sandbox.writable ${inStore} is not writable: it lies in ${env.agentDir}`,
			);
			expect(problems).to.match(/left out while a control is on \(remove it, or name a folder outside/);
			expect(problems).to.contain(
				`selfskills.sandbox.writable entry ${JSON.stringify(env.home)} is the home folder`,
			);
			expect(problems, "an accepted folder is no problem").to.not.contain(sibling);
		});

		it("shows history, and restores the latest backup after showing its diff and getting a yes", async function () {
			const env = getEnv();
			const dialogs: Array<{ title: string; message: string }> = [];
			const { pi: session, skillFile } = await editedSession(env, {
				ui: {
					confirm: (title, message) => {
						dialogs.push({ title, message });
						return true;
					},
				},
			});
			pi = session;
			await pi.runCommand("/selfskills history deploy-checks");
			expect(last(pi)).to.match(/^2 backup\(s\) of deploy-checks\/SKILL\.md/);
			for (const id of backupIds(env)) expect(last(pi)).to.contain(id);
			const newest = backupIds(env).at(-1) ?? "";

			await pi.runCommand("/selfskills restore deploy-checks");
			expect(dialogs).to.have.length(1);
			expect(dialogs[0].title).to.equal(`Restore deploy-checks/SKILL.md to backup ${newest}?`);
			expect(dialogs[0].message).to.contain("-2. Check the health endpoint.\n+2. Check the health page.");
			expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
			expect(last(pi)).to.match(/^restore landed/);
		});

		it("restores nothing when the confirmation is declined, and restores a named backup", async function () {
			const env = getEnv();
			const { pi: session, skillFile } = await editedSession(env, { ui: { confirm: false } });
			pi = session;
			await pi.runCommand("/selfskills restore deploy-checks");
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
			expect(last(pi)).to.contain("restore cancelled; nothing changed");
			pi.dispose();
			pi = await createPiSession({ env, ui: { confirm: true } });
			const oldest = backupIds(env)[0];
			await pi.runCommand(`/selfskills restore deploy-checks SKILL.md ${oldest.replace(/\.md$/, "")}`);
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
		});

		it("trusts and untrusts after confirmation (pi 0.73), or defers to pi's own trust (pi 1.6)", async function () {
			const env = getEnv();
			pi = await createPiSession({ env, packageDir: REPO_ROOT, ui: { confirm: true } });
			await pi.runCommand("/selfskills trust");
			const settings = () =>
				JSON.parse(readFileSync(join(env.agentDir, "settings.json"), "utf8")) as {
					selfskills?: { trustedProjects?: string[] };
				};
			if (isPi16()) {
				expect(last(pi)).to.match(/This pi decides project trust itself/);
				expect(last(pi), "names pi 1.6's own command").to.contain("pi's own /trust command");
				expect(settings().selfskills?.trustedProjects).to.equal(undefined);
				return;
			}
			expect(last(pi)).to.contain(`trusted: ${env.projectDir}`);
			expect(settings().selfskills?.trustedProjects).to.deep.equal([env.projectDir]);
			await pi.runCommand("/selfskills");
			expect(last(pi)).to.contain(`project ${env.projectDir}: trusted`);
			await pi.runCommand("/selfskills untrust");
			expect(settings().selfskills?.trustedProjects).to.deep.equal([]);
		});

		it("changes no trust when the user says no", async function () {
			const env = getEnv();
			pi = await createPiSession({ env, packageDir: REPO_ROOT, ui: { confirm: false } });
			await pi.runCommand("/selfskills trust");
			if (!isPi16()) expect(last(pi)).to.equal("nothing changed");
			const text = readFileSync(join(env.agentDir, "settings.json"), "utf8");
			expect(text).not.to.contain("trustedProjects");
		});

		it("completes subcommands, skill names (before any command ran), files and backup ids", async function () {
			const env = getEnv();
			({ pi } = await editedSession(env));
			pi.dispose();
			pi = await createPiSession({ env });
			const command = pi.session.extensionRunner.getCommand("selfskills");
			const complete = async (prefix: string) =>
				((await command?.getArgumentCompletions?.(prefix)) ?? []).map((c) => c.value);
			expect(await complete("")).to.deep.equal([
				"status",
				"help",
				"history ",
				"restore ",
				"pending",
				"show ",
				"approve ",
				"reject ",
				"export ",
				"pin ",
				"unpin ",
				"trust",
				"untrust",
				"unused",
				"doctor",
				"eval ",
			]);
			expect(await complete("export p-00000000 ")).to.deep.equal(["export p-00000000 --branch"]);
			expect(await complete("re")).to.deep.equal(["restore ", "reject "]);
			expect(await complete("res")).to.deep.equal(["restore "]);
			expect(await complete("history dep")).to.deep.equal(["history deploy-checks "]);
			expect(await complete("eval dep")).to.deep.equal(["eval deploy-checks "]);
			expect(await complete("restore "), "only skills with something to put back").to.deep.equal([
				"restore deploy-checks ",
			]);
			expect(await complete("history ")).to.include.members([
				"history deploy-checks ",
				"history shared-notes ",
				"history selfskills ",
			]);
			const ids = backupIds(env);
			expect(await complete("restore deploy-checks ")).to.include.members(
				ids.map((id) => `restore deploy-checks ${id}`),
			);
			expect(await complete("restore deploy-checks 2")).to.have.length(ids.length);
			expect(await complete("nonsense ")).to.deep.equal([]);
		});
		it("shows each output as its own panel, hidden from the model, which is told of a restore", async function () {
			const env = getEnv();
			const { pi: session } = await editedSession(env, { ui: { confirm: true } });
			pi = session;
			await pi.runCommand("/selfskills");
			await pi.runCommand("/selfskills history deploy-checks");
			const listed = backupIds(env);
			await pi.runCommand("/selfskills restore deploy-checks");
			const outputs = commandOutputs(pi);
			expect(outputs, "no output replaces another").to.have.length(3);
			expect(outputs[0]).to.match(/^selfskills: enabled true/);
			expect(outputs[1]).to.match(/^2 backup\(s\) of deploy-checks/);
			expect(outputs[2]).to.match(/^restore landed/);
			expect(pi.notifications, "nothing goes to the status line").to.deep.equal([]);

			// pi's renderer for them: a panel titled with the command line, then the whole text
			const renderer = pi.session.extensionRunner.getMessageRenderer(OUTPUT_MESSAGE_TYPE);
			const history = pi.session.messages.filter(
				(m) => m.role === "custom" && m.customType === OUTPUT_MESSAGE_TYPE,
			)[1];
			if (!renderer || history?.role !== "custom") throw new Error("no renderer or no history message");
			const shown = (renderer(history, { expanded: false }, PLAIN_THEME)?.render(120) ?? []).map((line) =>
				line.trim(),
			);
			expect(shown).to.include("/selfskills history deploy-checks");
			for (const id of listed)
				expect(
					shown.some((line) => line.startsWith(id)),
					shown.join("\n"),
				).to.equal(true);

			// what the next model call is sent (pi's context handlers, then its conversion)
			const agent = pi.session.agent;
			const sent = JSON.stringify(
				await agent.convertToLlm(
					agent.transformContext ? await agent.transformContext(pi.session.messages) : pi.session.messages,
				),
			);
			expect(sent).to.not.contain("selfskills: enabled true");
			expect(sent).to.not.contain("backup(s) of deploy-checks");
			expect(sent).to.not.contain("restore landed");
			expect(sent).to.contain("The user restored deploy-checks/SKILL.md to backup");

			// the restored text is not one the model read: a patch from memory must read first
			const patch = await pi.run("patch it", [
				call({ action: "patch", skill: "deploy-checks", old_string: "health page", new_string: "health check" }),
				{ text: "ok" },
			]);
			expect(patch.toolResults[0]?.text).to.match(/^not_read:/);
		});

		it("speaks slash commands to the human and tool calls to the model", async function () {
			const env = getEnv();
			const { pi: session, skillFile } = await editedSession(env, { ui: { confirm: true } });
			pi = session;
			const newest = backupIds(env).at(-1) ?? "";
			await pi.runCommand("/selfskills history deploy-checks");
			expect(last(pi)).to.contain(`/selfskills restore deploy-checks SKILL.md ${newest}`);
			expect(last(pi)).to.not.match(TOOL_CALL_SYNTAX);
			await pi.runCommand("/selfskills restore deploy-chex");
			expect(last(pi)).to.equal(
				'unknown_skill: no skill is named "deploy-chex". Did you mean "deploy-checks"? ' +
					"/selfskills lists every skill pi found.",
			);
			await pi.runCommand("/selfskills restore deploy-checks SKILL.md 20990101-000000.000");
			expect(last(pi)).to.match(
				new RegExp(
					/^no_backup: there is no backup "20990101-000000\.000" of deploy-checks\/SKILL\.md\. /.source +
						/Available: .*\/selfskills history deploy-checks lists them\.$/.source,
				),
			);
			expect(last(pi)).to.not.match(TOOL_CALL_SYNTAX);
			// the model's history keeps the JSON of its next call
			const model = await pi.run("history", [call({ action: "history", skill: "deploy-checks" }), { text: "ok" }]);
			expect(model.toolResults[0]?.text).to.contain('Restore one: {"action":"restore","skill":"deploy-checks"');

			// a restore names the command that undoes it, and that command does
			await pi.runCommand("/selfskills restore deploy-checks");
			const undo = /\/selfskills restore deploy-checks SKILL\.md (\S+) puts it back/.exec(last(pi));
			expect(undo, last(pi)).to.not.equal(null);
			expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
			await pi.runCommand(`/selfskills restore deploy-checks SKILL.md ${undo?.[1]}`);
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
		});

		it("Tab after a subcommand or a skill name goes to the next argument (pi's autocomplete)", async function () {
			const env = getEnv();
			({ pi } = await editedSession(env));
			const command = pi.session.extensionRunner.getCommand("selfskills");
			const provider = new CombinedAutocompleteProvider(
				[{ name: "selfskills", getArgumentCompletions: command?.getArgumentCompletions }],
				env.projectDir,
			);
			const signal = new AbortController().signal;
			/** One Tab: pi's first suggestion applied to the line, or undefined when it offers none. */
			const tab = async (line: string, pick = 0): Promise<string | undefined> => {
				const found = await provider.getSuggestions([line], 0, line.length, { signal });
				const item = found?.items[pick];
				return found && item
					? provider.applyCompletion([line], 0, line.length, item, found.prefix).lines[0]
					: undefined;
			};
			expect(await tab("/selfskills hi")).to.equal("/selfskills history ");
			expect(await tab("/selfskills history "), "a second Tab offers the skills").to.be.a("string");
			expect(await tab("/selfskills history dep")).to.equal("/selfskills history deploy-checks ");
			const ids = backupIds(env);
			expect(await tab("/selfskills restore deploy-checks "), "then the backup ids, newest first").to.equal(
				`/selfskills restore deploy-checks ${ids.at(-1)}`,
			);
			expect(await tab("/selfskills tr")).to.equal("/selfskills trust");
		});

		it("warns once at start-up, in one line, when the settings have problems, and only then", async function () {
			const env = getEnv();
			pi = await createPiSession({
				env,
				packageDir: REPO_ROOT,
				settings: { selfskills: { backupCap: "lots", inject: "yes" } },
			});
			const warnings = () => pi?.notifications.filter((n) => n.type === "warning") ?? [];
			expect(warnings()).to.have.length(1);
			expect(warnings()[0].message).to.match(
				new RegExp(
					/^selfskills: settings problem: \S+settings\.json: /.source +
						/selfskills\.backupCap must be an integer from 1 to 1000; default used \(and 1 more\)\. /.source +
						/\/selfskills lists them\.$/.source,
				),
			);
			await pi.run("hello", [{ text: "hi" }]);
			await pi.runCommand("/selfskills");
			expect(warnings(), "once per session").to.have.length(1);
			pi.dispose();
			writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify({ selfskills: { backupCap: 5 } }));
			pi = await createPiSession({ env });
			expect(pi.notifications).to.deep.equal([]);
		});
	});

	it("completes the bundled files that have backups, then that file's own backup ids", async function () {
		const env = getEnv();
		const store = createBackupStore(realFs, env.agentDir);
		const key = { name: "deploy-checks", dir: join(env.agentDir, "skills", "deploy-checks") };
		const skillBackup = store.store(key, "SKILL.md", Buffer.from("old skill"));
		const fileBackup = store.store(key, "references/api.md", Buffer.from("old api"));
		const deps: CommandDeps = {
			agentDir: () => env.agentDir,
			fs: realFs,
			state: createSessionState(),
			effects: { onLanded: () => undefined },
			knownSkills: ["deploy-checks"],
		};
		const values = async (prefix: string) => ((await completeArguments(deps, prefix)) ?? []).map((c) => c.value);
		expect(await values("restore deploy-checks ")).to.deep.equal([
			`restore deploy-checks ${skillBackup.id}`,
			"restore deploy-checks references/api.md ",
		]);
		expect(await values("restore deploy-checks references/api.md ")).to.deep.equal([
			`restore deploy-checks references/api.md ${fileBackup.id}`,
		]);
		expect(await values("history deploy-checks r")).to.deep.equal(["history deploy-checks references/api.md"]);
		expect(await values(`restore deploy-checks ${skillBackup.id} `), "nothing after a backup id").to.deep.equal([]);
	});

	describe("without a UI", function () {
		this.timeout(150000);
		it("prints status and history, previews a restore, restores a named one with --yes", async function () {
			const env = getEnv();
			const { pi: session, skillFile } = await editedSession(env, { ui: false });
			pi = session;
			const status = await captureStderr(() => session.runCommand("/selfskills"));
			expect(status).to.contain("selfskills: enabled true, inject true");
			const history = await captureStderr(() => session.runCommand("/selfskills history deploy-checks"));
			expect(history).to.match(/2 backup\(s\) of deploy-checks/);
			const preview = await captureStderr(() => session.runCommand("/selfskills restore deploy-checks"));
			const newest = backupIds(env).at(-1) ?? "";
			expect(preview).to.contain(
				`Would restore deploy-checks/SKILL.md to backup ${newest}, the newest that differs from it now.`,
			);
			expect(preview).to.contain("+2. Check the health page.");
			expect(preview).to.contain("Nothing was restored: without a UI pi cannot ask you first.");
			expect(preview).to.contain(`/selfskills restore deploy-checks SKILL.md ${newest}`);
			expect(preview).to.not.match(TOOL_CALL_SYNTAX);
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
			const named = await captureStderr(() =>
				session.runCommand(`/selfskills restore deploy-checks ${backupIds(env)[0]}`),
			);
			expect(named, "a named backup without --yes only shows it").to.contain("Nothing was restored");
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
			const confirmed = await captureStderr(() =>
				session.runCommand(`/selfskills restore deploy-checks ${backupIds(env)[0]} --yes`),
			);
			expect(confirmed).to.match(/^restore landed/);
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
		});

		it("prints the start-up settings warning as one line of stderr", async function () {
			const env = getEnv();
			await piInstall(env, REPO_ROOT);
			writeFileSync(
				join(env.agentDir, "settings.json"),
				JSON.stringify({
					...JSON.parse(readFileSync(join(env.agentDir, "settings.json"), "utf8")),
					selfskills: { backupCap: 0 },
				}),
			);
			const run = await runPiPrint({ env, prompt: "/selfskills" });
			expect(
				run.stderr.split("\n").filter((line) => line.startsWith("selfskills: settings problem:")),
			).to.have.length(1);
			expect(run.stderr).to.match(/settings problems:\n {2}\S+: selfskills\.backupCap must be/);
		});

		it('works the same in the real CLI\'s print mode (pi -p "/selfskills …")', async function () {
			const env = getEnv();
			await piInstall(env, REPO_ROOT);
			const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
			const edit = await runPiPrint({ env, prompt: "fix deploy-checks", steps: EDIT_STEPS });
			expect(edit.exitCode, edit.stderr).to.equal(0);
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
			const status = await runPiPrint({ env, prompt: "/selfskills" });
			expect(status.stderr).to.contain("selfskills: enabled true, inject true");
			expect(status.stderr).to.match(/backups: 2 file\(s\)/);
			expect(status.calls, "a command makes no model call").to.have.length(0);
			const preview = await runPiPrint({ env, prompt: "/selfskills restore deploy-checks" });
			expect(preview.stderr).to.contain(
				`Would restore deploy-checks/SKILL.md to backup ${backupIds(env).at(-1) ?? ""}, ` +
					"the newest that differs from it now.",
			);
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
			const named = await runPiPrint({
				env,
				prompt: `/selfskills restore deploy-checks ${backupIds(env)[0]} --yes`,
			});
			expect(named.stderr).to.match(/restore landed/);
			expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
		});
	});

	describe("in RPC mode (the client answers pi's dialogs)", function () {
		this.timeout(150000);
		it("sends the diff in a confirm request, restores nothing on no, and restores on yes", async function () {
			const env = getEnv();
			await piInstall(env, REPO_ROOT);
			const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
			await runPiPrint({ env, prompt: "fix deploy-checks", steps: EDIT_STEPS });
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
			const declined = await rpcRestore(env, false);
			expect(declined.confirm?.message).to.contain("+2. Check the health page.");
			expect(declined.notices.at(-1)).to.equal("restore cancelled; nothing changed");
			expect(readFileSync(skillFile, "utf8")).to.equal(TWICE);
			const accepted = await rpcRestore(env, true);
			expect(accepted.notices.at(-1)).to.match(/^restore landed/);
			expect(readFileSync(skillFile, "utf8")).to.equal(PATCHED);
		});
	});
});

interface RpcUiRequest {
	type: string;
	id: string;
	method?: string;
	message?: string;
	title?: string;
}

/** An RPC line: a dialog or notify request, or a message event (its `message` is then the agent message). */
type RpcLineIn = Omit<RpcUiRequest, "message"> & {
	message?: string | { role?: string; customType?: string; content?: string };
};

/** `pi --mode rpc`: sends `/selfskills restore deploy-checks`, answers the confirm dialog, collects notices. */
function rpcRestore(env: TempEnv, confirmed: boolean): Promise<{ confirm?: RpcUiRequest; notices: string[] }> {
	const { cliPath, nodeBinary } = getPiLineInfo();
	const { NODE_OPTIONS: _dropped, ...inherited } = process.env;
	const child = spawn(nodeBinary, [cliPath, "--mode", "rpc", "--no-session", ...FAUX_CLI_ARGS], {
		cwd: env.projectDir,
		env: { ...inherited, HOME: env.home, PI_CODING_AGENT_DIR: env.agentDir, PI_OFFLINE: "1" },
		stdio: ["pipe", "pipe", "pipe"],
	});
	const notices: string[] = [];
	let confirm: RpcUiRequest | undefined;
	let buffer = "";
	const timer = setTimeout(() => child.kill("SIGKILL"), 30000);
	return new Promise((resolve, reject) => {
		child.on("error", reject);
		child.on("close", () => {
			clearTimeout(timer);
			resolve({ confirm, notices });
		});
		child.stdout.on("data", (chunk: Buffer) => {
			buffer += chunk.toString();
			for (let newline = buffer.indexOf("\n"); newline >= 0; newline = buffer.indexOf("\n")) {
				const line = buffer.slice(0, newline);
				buffer = buffer.slice(newline + 1);
				if (!line.startsWith("{")) continue;
				const parsed = JSON.parse(line) as RpcLineIn;
				const { message: body, ...rest } = parsed;
				if (
					typeof body !== "string" &&
					body?.role === "custom" &&
					body.customType === "selfskills" &&
					parsed.type === "message_end"
				) {
					// /selfskills outputs reach an RPC client as messages of the conversation
					notices.push(body.content ?? "");
					continue;
				}
				const message: RpcUiRequest = { ...rest, message: typeof body === "string" ? body : undefined };
				if (message.type === "extension_ui_request" && message.method === "confirm") {
					confirm = message;
					child.stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: message.id, confirmed })}\n`);
				}
				if (message.type === "extension_ui_request" && message.method === "notify")
					notices.push(message.message ?? "");
				if (message.type === "response" && message.id === "restore") child.stdin.end();
			}
		});
		child.stdin.write(
			`${JSON.stringify({ id: "restore", type: "prompt", message: "/selfskills restore deploy-checks" })}\n`,
		);
	});
}
