// The package under the REAL pi CLI of the active line: `pi install <checkout>` into an empty agent dir,
// then print and RPC runs with an offline scripted model — the same scenario on pi 0.73.1 and pi 1.6.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getRpcCommands, piInstall, runPiPrint, runPiRpc } from "../support/pi-cli.ts";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";
import { call } from "../support/faux-script.ts";

function toolResultText(message: unknown): string {
	const content = (message as { content?: Array<{ type: string; text?: string }> }).content ?? [];
	return content.map((c) => c.text ?? "").join("\n");
}

describe(`skill_manage under the real pi CLI (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();

	it("is installed with `pi install` and brings the /selfskills command and the selfskills skill", async function () {
		const env = getEnv();
		await piInstall(env, REPO_ROOT);
		const commands = await getRpcCommands(env);
		const names = commands.map((c) => c.name);
		expect(names).to.include("selfskills");
		expect(names).to.include("skill:selfskills");
	});

	it("walks list, read, patch and create in print mode, with the rules block on every model call", async function () {
		const env = getEnv();
		const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		await piInstall(env, REPO_ROOT);
		const result = await runPiPrint({
			env,
			prompt: "fix the deploy skill",
			steps: [
				call({ action: "list" }),
				call({ action: "read", skill: "deploy-checks" }),
				call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
				call({
					action: "create",
					name: "release-notes",
					description: "Use when writing release notes.",
					body: "# Release notes\n",
				}),
				{ text: "all done" },
			],
		});
		expect(result.exitCode, result.stderr).to.equal(0);
		expect(result.stdout).to.contain("all done");
		expect(result.calls).to.have.length(5);
		expect(
			result.calls.every(
				(c) => c.toolNames.includes("skill_manage") && c.systemPrompt.includes("<selfskills-rules>"),
			),
		).to.equal(true);
		expect(result.calls[0].systemPrompt).to.contain("<name>selfskills</name>");
		expect(toolResultText(result.calls[1].lastMessage)).to.match(
			/deploy-checks — Use when deploying the app\. .* patchable: yes/,
		);
		expect(toolResultText(result.calls[3].lastMessage)).to.match(/^patch landed/);
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL.replace("npm build", "npm run build"));
		expect(readFileSync(join(env.agentDir, "skills", "release-notes", "SKILL.md"), "utf8")).to.contain(
			"name: release-notes",
		);
	});

	it("prints /selfskills status in print mode without calling the model", async function () {
		const env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		await piInstall(env, REPO_ROOT);
		const result = await runPiPrint({ env, prompt: "/selfskills" });
		expect(result.calls).to.have.length(0);
		expect(result.stdout + result.stderr).to.contain("selfskills: enabled true, inject true");
		expect(result.stdout + result.stderr).to.match(/deploy-checks: patchable/);
	});

	it("registers nothing and injects nothing when selfskills.enabled is false", async function () {
		const env = getEnv();
		await piInstall(env, REPO_ROOT);
		const settingsPath = join(env.agentDir, "settings.json");
		const settings = JSON.parse(readFileSync(settingsPath, "utf8")) as Record<string, unknown>;
		writeFileSync(settingsPath, JSON.stringify({ ...settings, selfskills: { enabled: false } }));
		const result = await runPiPrint({ env, prompt: "hi", steps: [{ text: "hello" }] });
		expect(result.calls[0].toolNames).to.not.include("skill_manage");
		expect(result.calls[0].systemPrompt).to.not.contain("<selfskills-rules>");
		const rpc = await runPiRpc({ env, commands: [{ id: "c", type: "get_commands" }] });
		const data = rpc.responses.get("c")?.data as { commands: Array<{ name: string }> };
		expect(data.commands.map((c) => c.name)).to.not.include("selfskills");
	});
});
