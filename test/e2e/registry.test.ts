// The package installed the way users install it: `npm pack`, published to a throw-away verdaccio registry,
// `pi install npm:pi-selfskills` by the real pi CLI of the active line, used, then `pi remove`d.
// pi 0.73 installs with `npm install -g` (its global prefix is pointed into the temp folder); pi 1.6
// into <agentDir>/npm.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { call, type CapturedCall } from "../support/faux-script.ts";
import { runPiCli, runPiPrint } from "../support/pi-cli.ts";
import { getPiLine, isPi16 } from "../support/pi-line.ts";
import { packPackage, publishTarball, startLocalRegistry, type LocalRegistry } from "../support/registry.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";

const SOURCE = "npm:pi-selfskills";
const READ_ONLY = "installed npm package: an update would overwrite the change";
/** Names that must never be installed with the package: pi and its peers come from the pi that loads it. */
const PEERS = ["@mariozechner", "@earendil-works", "@sinclair", "typebox"];

function resultText(captured: CapturedCall): string {
	const content = (captured.lastMessage as { content?: Array<{ text?: string }> }).content ?? [];
	return content.map((c) => c.text ?? "").join("\n");
}

/** Every package folder name under a node_modules tree (scoped ones as @scope/name), nested ones included. */
function listInstalled(nodeModules: string): string[] {
	if (!existsSync(nodeModules)) return [];
	return readdirSync(nodeModules).flatMap((name) => {
		if (name.startsWith(".")) return [];
		const names = name.startsWith("@")
			? readdirSync(join(nodeModules, name)).map((inner) => `${name}/${inner}`)
			: [name];
		return names.flatMap((pkg) => [pkg, ...listInstalled(join(nodeModules, pkg, "node_modules"))]);
	});
}

describe(`pi install npm:pi-selfskills from a registry (pi ${getPiLine()})`, function () {
	this.timeout(120000);
	let work: string;
	let registry: LocalRegistry | undefined;
	let env: TempEnv;
	/** Where the line's npm puts global packages (0.73) — inside the test's own folder. */
	let npmPrefix: string;
	const savedNpmEnv = new Map<string, string | undefined>();
	const startedAt = Date.now();

	/** The folder pi installed the package into: the global root on 0.73, the agent dir's npm folder on 1.6. */
	const installedDir = (): string =>
		isPi16()
			? join(env.agentDir, "npm", "node_modules", "pi-selfskills")
			: join(npmPrefix, "lib", "node_modules", "pi-selfskills");

	before(async function () {
		work = realpathSync(mkdtempSync(join(tmpdir(), "selfskills-registry-")));
		mkdirSync(join(work, "registry"));
		mkdirSync(join(work, "pack"));
		registry = await startLocalRegistry(join(work, "registry"));
		publishTarball(registry, packPackage(join(work, "pack")), work);
		env = createTempEnv({ prefix: "selfskills-registry-env-" });
		npmPrefix = join(env.root, "npm-global");
		// Every pi child inherits these: installs and pi's own `npm root -g` at start-up see the same prefix and
		// registry. Under `npm test`, npm exports its own prefix, cache and user config; these replace them too.
		const npmEnv = {
			npm_config_registry: registry.url,
			npm_config_prefix: npmPrefix,
			npm_config_global_prefix: npmPrefix,
			npm_config_cache: join(env.root, "npm-cache"),
			npm_config_userconfig: join(env.home, ".npmrc"),
			npm_config_update_notifier: "false",
			npm_config_fund: "false",
			npm_config_audit: "false",
		};
		for (const [key, value] of Object.entries(npmEnv)) {
			savedNpmEnv.set(key, process.env[key]);
			process.env[key] = value;
		}
	});

	after(async function () {
		for (const [key, value] of savedNpmEnv) {
			if (value === undefined) delete process.env[key];
			else process.env[key] = value;
		}
		await registry?.stop();
		const keep = process.env.SELFSKILLS_KEEP_TMP === "1";
		env?.cleanup({ keep });
		if (work && !keep) rmSync(work, { recursive: true, force: true });
		if (process.env.SELFSKILLS_TIMING === "1")
			console.log(`      registry install suite: ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
	});

	it("installs from the registry with its runtime dependencies only, never a second pi", async function () {
		const result = await runPiCli(["install", SOURCE], { env, timeoutMs: 90000 });
		expect(result.exitCode, `${result.stdout}\n${result.stderr}`).to.equal(0);
		const settings = JSON.parse(readFileSync(join(env.agentDir, "settings.json"), "utf8")) as {
			packages?: unknown[];
		};
		expect(settings.packages).to.deep.equal([SOURCE]);
		const manifest = JSON.parse(readFileSync(join(installedDir(), "package.json"), "utf8")) as {
			pi: { extensions: string[]; skills: string[] };
			dependencies: Record<string, string>;
		};
		for (const entry of [...manifest.pi.extensions, ...manifest.pi.skills])
			expect(existsSync(join(installedDir(), entry)), entry).to.equal(true);
		const installed = isPi16()
			? listInstalled(join(env.agentDir, "npm", "node_modules"))
			: listInstalled(join(npmPrefix, "lib", "node_modules"));
		for (const dependency of Object.keys(manifest.dependencies)) expect(installed, dependency).to.include(dependency);
		// npm installs non-optional peer dependencies: with the pi peers required, pi 0.73's `npm install -g`
		// pulled a whole second pi (189 packages, ~50 s) under the package.
		expect(
			installed.filter((name) => PEERS.some((peer) => name === peer || name.startsWith(`${peer}/`))),
		).to.deep.equal([]);
	});

	it("registers skill_manage, lists the doc-skill as read-only and lands a patch with its backup", async function () {
		const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		const result = await runPiPrint({
			env,
			prompt: "fix the deploy skill",
			steps: [
				call({ action: "list" }),
				call({ action: "read", skill: "deploy-checks" }),
				call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
				call({ action: "read", skill: "selfskills" }),
				call({ action: "patch", skill: "selfskills", old_string: "skill_manage", new_string: "skill-manage" }),
				{ text: "all done" },
			],
		});
		expect(result.exitCode, result.stderr).to.equal(0);
		expect(result.calls).to.have.length(6);
		expect(result.calls[0].toolNames).to.include("skill_manage");
		expect(result.calls[0].systemPrompt).to.contain("<selfskills-rules>");
		expect(result.calls[0].systemPrompt).to.contain("<name>selfskills</name>");
		expect(result.calls[0].systemPrompt).to.contain(join(installedDir(), "skills", "selfskills", "SKILL.md"));
		const docSkillLine = resultText(result.calls[1])
			.split("\n")
			.find((line) => line.startsWith("selfskills — "));
		expect(docSkillLine, resultText(result.calls[1]))
			.to.match(/patchable: no/)
			.and.to.contain(READ_ONLY);
		expect(resultText(result.calls[1])).to.match(/deploy-checks — .* patchable: yes/);
		expect(resultText(result.calls[3])).to.match(/^patch landed/);
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL.replace("npm build", "npm run build"));
		// the backup store's layout is its own business here: one file under it holds the old bytes
		const backupDir = join(env.agentDir, "selfskills", "backups");
		const backups = readdirSync(backupDir, { recursive: true, encoding: "utf8" }).filter((name) =>
			/(^|\/)SKILL\.md\/[^/]+$/.test(name),
		);
		expect(backups, backups.join(", ")).to.have.length(1);
		expect(readFileSync(join(backupDir, backups[0]), "utf8")).to.equal(DEPLOY_SKILL);
		expect(resultText(result.calls[5]))
			.to.match(/^not_writable: /)
			.and.to.contain(READ_ONLY);
		expect(readFileSync(join(installedDir(), "skills", "selfskills", "SKILL.md"), "utf8")).to.contain("skill_manage");
	});

	it("prints /selfskills with the installed doc-skill read-only", async function () {
		const result = await runPiPrint({ env, prompt: "/selfskills" });
		const output = result.stdout + result.stderr;
		expect(result.calls).to.have.length(0);
		expect(result.exitCode, output).to.equal(0);
		expect(output).to.match(new RegExp(`selfskills\\b.*read-only.*${READ_ONLY}`));
		expect(output).to.match(/deploy-checks\b.*patchable/);
	});

	it("is gone after `pi remove npm:pi-selfskills`: no files, no settings entry, no tool", async function () {
		const removed = await runPiCli(["remove", SOURCE], { env, timeoutMs: 90000 });
		expect(removed.exitCode, `${removed.stdout}\n${removed.stderr}`).to.equal(0);
		expect(existsSync(installedDir())).to.equal(false);
		const settings = JSON.parse(readFileSync(join(env.agentDir, "settings.json"), "utf8")) as {
			packages?: unknown[];
		};
		expect(settings.packages ?? []).to.deep.equal([]);
		const result = await runPiPrint({ env, prompt: "hi", steps: [{ text: "hello" }] });
		expect(result.exitCode, result.stderr).to.equal(0);
		expect(result.calls[0].toolNames).to.not.include("skill_manage");
		expect(result.calls[0].systemPrompt).to.not.contain("<selfskills-rules>");
		expect(result.calls[0].systemPrompt).to.not.contain("<name>selfskills</name>");
	});
});
