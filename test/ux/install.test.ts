// What a new user meets when installing: a local-path install without `npm ci --omit=dev` keeps
// pi running and says once what to run (real pi CLI), /reload then starts it, pi's banner names the
// extension after the package, and the pi 1.6 test install is quiet (its .npmrc) while npm errors show.
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InteractiveMode } from "@mariozechner/pi-coding-agent";
import { piInstall, runPiPrint } from "../support/pi-cli.ts";
import { getPiLine, PI16_DIR, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { commandOutputs } from "./ux-support.ts";
import { missingDependencyMessage } from "../../src/selfskills.ts";

/** The dependency a bare checkout's stand-in names: the first one package.json lists (none is installed). */
const FIRST_DEPENDENCY = Object.keys(
	(JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> })
		.dependencies,
)[0];

interface LoadedExtension {
	path: string;
	sourceInfo?: unknown;
}
type LabelFn = (extensions: LoadedExtension[]) => string[];

describe(`installing the package (pi ${getPiLine()})`, function () {
	this.timeout(60000);
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	/** A copy of this checkout without node_modules, installed with `pi install` as the README's step 3. */
	async function installBareCheckout(env: TempEnv): Promise<string> {
		const checkout = join(env.root, "pi-selfskills");
		for (const entry of ["src", "skills", "package.json"])
			cpSync(join(REPO_ROOT, entry), join(checkout, entry), { recursive: true });
		await piInstall(env, checkout);
		return checkout;
	}

	it("keeps pi running and says once what to run when a local checkout has no node_modules", async function () {
		const env = getEnv();
		const checkout = await installBareCheckout(env);
		const message = missingDependencyMessage(FIRST_DEPENDENCY, checkout);
		expect(message).to.contain(`Run \`npm ci --omit=dev\` in ${checkout}`);
		const run = await runPiPrint({ env, prompt: "/selfskills" });
		expect(run.exitCode, run.stderr).to.equal(0);
		const ours = run.stderr
			.split("\n")
			.filter(
				(line) => line.includes("pi-selfskills") || line.includes("Require stack") || line.includes("    at "),
			);
		expect(ours, run.stderr).to.deep.equal([message]);
		// pi goes on: the model answers a prompt, and the package's tool is absent rather than broken
		const asked = await runPiPrint({ env, prompt: "hello", steps: [{ text: "pi answered" }] });
		expect(asked.exitCode, asked.stderr).to.equal(0);
		expect(asked.stdout).to.contain("pi answered");
		expect(asked.stderr).to.contain(message);
		expect(asked.calls[0].toolNames).not.to.include("skill_manage");
	});

	it("starts for real after `npm ci --omit=dev` and /reload in the same pi session", async function () {
		const env = getEnv();
		const checkout = await installBareCheckout(env);
		pi = await createPiSession({ env });
		expect(pi.notifications.map((n) => n.message)).to.deep.equal([
			missingDependencyMessage(FIRST_DEPENDENCY, checkout),
		]);
		expect(pi.session.getAllTools().map((t) => t.name)).not.to.include("skill_manage");
		// what `npm ci --omit=dev` gives the checkout: its dependencies
		symlinkSync(join(REPO_ROOT, "node_modules"), join(checkout, "node_modules"));
		await pi.session.reload();
		expect(pi.session.getAllTools().map((t) => t.name)).to.include("skill_manage");
		await pi.runCommand("/selfskills");
		expect(commandOutputs(pi).at(-1)).to.match(/^selfskills: enabled true/);
	});

	it("is named after the package in pi's banner, not `src`", async function () {
		const env = getEnv();
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const extensions = pi.session.resourceLoader.getExtensions().extensions as LoadedExtension[];
		const ours = extensions.filter((e) => e.path.startsWith(join(REPO_ROOT, "src")));
		expect(ours.map((e) => e.path)).to.deep.equal([join(REPO_ROOT, "src", "selfskills.ts")]);
		// pi's own label function (interactive mode, both lines) on the loaded list
		const labels = (Reflect.get(InteractiveMode.prototype, "getCompactExtensionLabels") as LabelFn).call(
			Object.create(InteractiveMode.prototype),
			extensions,
		);
		expect(labels[extensions.indexOf(ours[0])]).to.equal("selfskills.ts");
		// installed from npm, the same entry is shown under the package's name
		const fromNpm = extensions.map((e) =>
			e === ours[0]
				? { ...e, sourceInfo: { ...(e.sourceInfo as object), source: "npm:pi-selfskills", baseDir: REPO_ROOT } }
				: e,
		);
		const npmLabels = (Reflect.get(InteractiveMode.prototype, "getCompactExtensionLabels") as LabelFn).call(
			Object.create(InteractiveMode.prototype),
			fromNpm,
		);
		expect(npmLabels[extensions.indexOf(ours[0])]).to.equal("pi-selfskills:src/selfskills.ts");
	});

	it("installs pi 1.6 for the tests hiding npm's EBADENGINE and install-scripts warnings, not errors", function () {
		const npm = (args: string[]) => spawnSync("npm", args, { cwd: REPO_ROOT, encoding: "utf8" });
		expect(npm(["config", "get", "loglevel", "--prefix", PI16_DIR]).stdout.trim()).to.equal("error");
		const env = getEnv();
		const broken = join(env.root, "pi16-copy");
		mkdirSync(broken);
		copyFileSync(join(PI16_DIR, ".npmrc"), join(broken, ".npmrc"));
		writeFileSync(join(broken, "package.json"), JSON.stringify({ name: "no-lockfile", version: "1.0.0" }));
		const failed = npm(["ci", "--prefix", broken, "--no-audit", "--no-fund"]);
		expect(failed.status).to.not.equal(0);
		expect(failed.stderr).to.match(/^npm error/m);
	});
});
