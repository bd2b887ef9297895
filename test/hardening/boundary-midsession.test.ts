// A control turned on mid-session (the boundary skipped at session start, started at its first call):
// through the real pi of the active line, a session starts with no control, the person's global
// settings then ask for approval, and the model's bash cannot write into pi's install folder or a
// protected place while its write in the project lands. In-process (SDK: argv[1] is mocha, so pi's
// folder is known only from the loaded pi) and as the CLI, with pi installed inside the project (a
// writable place, so only the pi-folder protection keeps it read-only).
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { expect } from "chai";
import { probeSandbox } from "../../src/guard/sandbox.ts";
import type { FauxStep } from "../support/faux-script.ts";
import { piInstall, runPiPrint } from "../support/pi-cli.ts";
import { getPiLine, getPiLineInfo, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession, type ToolResultView } from "../support/pi-session.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";

const tool = (name: string, args: Record<string, unknown>): FauxStep => ({ toolCall: { name, arguments: args } });
const bash = (command: string): FauxStep => tool("bash", { command });
const s = JSON.stringify;

/** A refusal or a failed write: an error result, or output that says the filesystem refused. */
function refused(result: ToolResultView): boolean {
	return result.isError || /Read-only file system|Device or resource busy|Permission denied/i.test(result.text);
}

/** `<agentDir>/settings.json` with `selfskills` replaced, as the person would edit it (on one line). */
function withSelfskills(agentDir: string, selfskills: Record<string, unknown>): string {
	const json = JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8")) as Record<string, unknown>;
	return JSON.stringify({ ...json, selfskills });
}

/**
 * A throw-away install of the active line's pi at `<project>/node_modules/<scope>/pi-coding-agent`: its
 * files copied, every other package of its node_modules linked (their code is not under test here).
 */
function installPiInto(projectDir: string): string {
	const source = getPiLineInfo().packageDir;
	const scope = basename(dirname(source));
	const modules = dirname(dirname(source));
	const into = join(projectDir, "node_modules");
	mkdirSync(join(into, scope), { recursive: true });
	for (const name of readdirSync(modules)) {
		if (name !== scope && name !== ".bin") symlinkSync(join(modules, name), join(into, name));
	}
	for (const name of readdirSync(join(modules, scope))) {
		if (name !== "pi-coding-agent") symlinkSync(join(modules, scope, name), join(into, scope, name));
	}
	const piDir = join(into, scope, "pi-coding-agent");
	cpSync(source, piDir, { recursive: true });
	return piDir;
}

describe(`a control turned on mid-session holds pi's folder and the protected places (pi ${getPiLine()})`, function () {
	this.timeout(120000);
	let env: TempEnv | undefined;
	let pi: PiSession | undefined;

	before(function () {
		expect(probeSandbox(), "bubblewrap must work here (apt-get install bubblewrap)").to.include({ available: true });
	});
	afterEach(async () => {
		pi?.dispose();
		pi = undefined;
		env?.cleanup({ keep: process.env.SELFSKILLS_KEEP_TMP === "1" });
		env = undefined;
	});

	it("in-process: once settings ask for approval, pi's folder and .pi/ refuse the model", async function () {
		env = createTempEnv();
		const piDir = getPiLineInfo().packageDir;
		pi = await createPiSession({ env, packageDir: REPO_ROOT, settings: { selfskills: {} } });
		const before = await pi.run("start", [bash("echo before > before.txt"), { text: "done" }]);
		expect(before.toolResults[0].isError, before.toolResults[0].text).to.equal(false);
		writeFileSync(join(env.agentDir, "settings.json"), withSelfskills(env.agentDir, { approval: "ask" }));
		const probe = join(piDir, "selfskills-midsession-probe");
		const written = join(piDir, "selfskills-midsession-probe.js");
		const dotPi = join(env.projectDir, ".pi", "settings.json");
		try {
			const run = await pi.run("try", [
				bash(`touch ${s(probe)}`),
				tool("write", { path: written, content: "x" }),
				bash(`mkdir -p .pi && echo '{}' > .pi/settings.json`),
				bash("echo work > work.txt"),
				{ text: "done" },
			]);
			const [touched, write, settings, work] = run.toolResults;
			expect(refused(touched), touched.text).to.equal(true);
			expect(write.isError, write.text).to.equal(true);
			// pi's folder lies inside this checkout (protected as the package), so the touch fails either
			// way; the write's refusal names pi's install folder only if the boundary started and found it.
			expect(write.text).to.contain(`inside ${piDir} (pi's own install folder`);
			expect(refused(settings), settings.text).to.equal(true);
			expect(existsSync(dotPi), dotPi).to.equal(false);
			expect(work.isError, work.text).to.equal(false);
			expect(readFileSync(join(env.projectDir, "work.txt"), "utf8")).to.equal("work\n");
			for (const path of [probe, written]) expect(existsSync(path), path).to.equal(false);
		} finally {
			for (const path of [probe, written]) rmSync(path, { force: true });
		}
	});

	it("as the CLI, pi installed in the project: its folder is read-only once a control is on", async function () {
		env = createTempEnv();
		const piDir = installPiInto(env.projectDir);
		await piInstall(env, REPO_ROOT);
		const settingsPath = join(env.agentDir, "settings.json");
		const probe = join(piDir, "dist", "selfskills-midsession-probe.js");
		const dotPi = join(env.projectDir, ".pi", "settings.json");
		const result = await runPiPrint({
			env,
			cliPath: join(piDir, "dist", "cli.js"),
			prompt: "work",
			steps: [
				// No control yet: pi's own bash runs, and the settings it writes turn one on for what follows.
				bash(`printf '%s' ${s(withSelfskills(env.agentDir, { approval: "ask" }))} > ${s(settingsPath)}`),
				bash(`echo planted > ${s(probe)}`),
				bash(`mkdir -p .pi && echo '{}' > .pi/settings.json`),
				bash("echo work > work.txt"),
				{ text: "done" },
			],
			timeoutMs: 60000,
		});
		const output = `${result.stdout}\n${result.stderr}`;
		expect(result.exitCode, output).to.equal(0);
		expect(JSON.parse(readFileSync(settingsPath, "utf8")).selfskills, output).to.deep.equal({ approval: "ask" });
		expect(existsSync(probe), `${probe}\n${output}`).to.equal(false);
		expect(existsSync(dotPi), dotPi).to.equal(false);
		expect(readFileSync(join(env.projectDir, "work.txt"), "utf8"), output).to.equal("work\n");
	});
});
