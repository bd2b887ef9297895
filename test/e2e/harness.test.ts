// Proves the test harness itself on the active pi line (SELFSKILLS_PI_LINE) with the harness-mini fixture:
// in-process session from settings.packages, module identity with pi's loader, project trust, real CLI and RPC.
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { expect } from "chai";
import { loadSkillsFromDir, withFileMutationQueue } from "@mariozechner/pi-coding-agent";
import { HARNESS_MINI_PROBE, type HarnessMiniProbe } from "../fixtures/harness-mini/src/index.ts";
import { getRpcCommands, piInstall, runPiPrint } from "../support/pi-cli.ts";
import {
	getPiLine,
	getPiLineInfo,
	getProjectTrustCliArgs,
	isPi16,
	REPO_ROOT,
	setProjectTrust,
} from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { skillText, writeSkill } from "../support/fixtures.ts";

const MINI_DIR = join(REPO_ROOT, "test", "fixtures", "harness-mini");
const ECHO = { toolCall: { name: "harness_echo", arguments: { text: "hello" } } };

function writeProjectSkill(projectDir: string): void {
	writeSkill(
		join(projectDir, ".pi", "skills"),
		"project-only-skill",
		skillText("project-only-skill", "# Project only\n", "Lives in the project's .pi/skills."),
	);
}

describe(`test harness on pi ${getPiLine()}`, function () {
	const getEnv = useTempEnv();
	let piSession: PiSession | undefined;
	afterEach(() => piSession?.dispose());

	it("reports the active line, its CLI and a node binary that can run it", function () {
		const info = getPiLineInfo();
		const version = (JSON.parse(readFileSync(join(info.packageDir, "package.json"), "utf8")) as { version: string })
			.version;
		expect(version.startsWith(isPi16() ? "1.6." : "0.73.")).to.equal(true);
		expect(info.cliPath.endsWith(join("dist", "cli.js"))).to.equal(true);
		if (isPi16()) expect(process.versions.node.startsWith("22.")).to.equal(true);
	});

	describe("in-process session", function () {
		it("lists the package in settings.packages relative to the agent dir, like `pi install`", async function () {
			const env = getEnv();
			piSession = await createPiSession({ env, packageDir: MINI_DIR });
			const settings = JSON.parse(readFileSync(join(env.agentDir, "settings.json"), "utf8")) as {
				packages: string[];
			};
			expect(settings.packages).to.deep.equal([relative(env.agentDir, MINI_DIR)]);
		});

		it("loads the package's tool, command and skill through pi's resource loader", async function () {
			piSession = await createPiSession({ env: getEnv(), packageDir: MINI_DIR });
			const { session } = piSession;
			expect(session.getAllTools().map((tool) => tool.name)).to.include("harness_echo");
			expect(session.extensionRunner?.getCommand("harness-mini")).to.not.equal(undefined);
			expect(session.resourceLoader.getSkills().skills.map((skill) => skill.name)).to.include("harness-mini-skill");
		});

		it("gives the extension the same pi module instances the test imports", async function () {
			piSession = await createPiSession({ env: getEnv(), packageDir: MINI_DIR });
			const probe = Reflect.get(globalThis, HARNESS_MINI_PROBE) as HarnessMiniProbe | undefined;
			expect(probe?.withFileMutationQueue === withFileMutationQueue).to.equal(true);
			expect(probe?.loadSkillsFromDir === loadSkillsFromDir).to.equal(true);
		});

		it("runs scripted tool calls and reports results, errors, prompts and tools per model call", async function () {
			piSession = await createPiSession({ env: getEnv(), packageDir: MINI_DIR });
			const failing = { toolCall: { name: "harness_echo", arguments: { text: "throw" } } };
			const result = await piSession.run("echo twice", [ECHO, failing, { text: "done" }]);
			expect(result.toolResults.map((r) => [r.isError, r.text])).to.deep.equal([
				[false, "echo: hello"],
				[true, "harness_echo was asked to throw"],
			]);
			expect(result.toolResults[0]?.details).to.deep.equal({ echoed: "hello" });
			expect(result.calls).to.have.length(3);
			expect(result.pendingSteps).to.equal(0);
			expect(result.calls[0]?.toolNames).to.include("harness_echo");
			expect(result.calls[0]?.systemPrompt).to.include("<name>harness-mini-skill</name>");
		});

		it("runs a slash command without a model call and captures notify", async function () {
			piSession = await createPiSession({ env: getEnv(), packageDir: MINI_DIR });
			await piSession.runCommand("/harness-mini a b");
			expect(piSession.notifications).to.deep.equal([
				{ message: 'harness-mini: args="a b" hasUI=true', type: "info" },
			]);
			expect(piSession.calls).to.have.length(0);
			expect(piSession.extensionErrors).to.deep.equal([]);
		});

		it("keeps the faux model working after /reload", async function () {
			piSession = await createPiSession({ env: getEnv(), packageDir: MINI_DIR });
			await piSession.runCommand("/reload");
			const result = await piSession.run("still there?", [{ text: "yes" }]);
			expect(result.calls).to.have.length(1);
		});

		it("loads project .pi/skills unless the session is untrusted (pi 1.6 only has trust)", async function () {
			const env = getEnv();
			writeProjectSkill(env.projectDir);
			piSession = await createPiSession({ env, projectTrusted: false });
			const names = piSession.session.resourceLoader.getSkills().skills.map((skill) => skill.name);
			expect(names.includes("project-only-skill")).to.equal(!isPi16());
			piSession.dispose();
			piSession = await createPiSession({ env, projectTrusted: true });
			expect(piSession.session.resourceLoader.getSkills().skills.map((skill) => skill.name)).to.include(
				"project-only-skill",
			);
		});
	});

	describe("real pi CLI", function () {
		it("`pi install` + print mode: the package's tool reaches the model; pi prints the answer", async function () {
			const env = getEnv();
			await piInstall(env, MINI_DIR);
			const result = await runPiPrint({ env, prompt: "echo please", steps: [ECHO, { text: "created it" }] });
			expect(result.exitCode, result.stderr).to.equal(0);
			expect(result.stdout.trim()).to.equal("created it");
			expect(result.calls).to.have.length(2);
			expect(result.calls[0]?.toolNames).to.include("harness_echo");
			expect(result.calls[1]?.lastMessage).to.include({ role: "toolResult", toolName: "harness_echo" });
		});

		it("RPC get_commands lists the package's command and skill", async function () {
			const env = getEnv();
			await piInstall(env, MINI_DIR);
			const commands = await getRpcCommands(env);
			expect(commands.map((command) => command.name)).to.include.members([
				"harness-mini",
				"skill:harness-mini-skill",
			]);
		});

		it("setProjectTrust() lets a print run load project skills (pi 1.6 ignores them otherwise)", async function () {
			const env = getEnv();
			writeProjectSkill(env.projectDir);
			const untrusted = await runPiPrint({ env, prompt: "hi", steps: [{ text: "ok" }] });
			expect(untrusted.calls[0]?.systemPrompt.includes("project-only-skill")).to.equal(!isPi16());
			setProjectTrust(env.agentDir, env.projectDir, true);
			const trusted = await runPiPrint({ env, prompt: "hi", steps: [{ text: "ok" }] });
			expect(trusted.calls[0]?.systemPrompt).to.include("project-only-skill");
		});

		it("getProjectTrustCliArgs(true) approves the project for one run", async function () {
			const env = getEnv();
			writeProjectSkill(env.projectDir);
			const result = await runPiPrint({
				env,
				prompt: "hi",
				steps: [{ text: "ok" }],
				extraArgs: getProjectTrustCliArgs(true),
			});
			expect(result.calls[0]?.systemPrompt).to.include("project-only-skill");
		});
	});
});
