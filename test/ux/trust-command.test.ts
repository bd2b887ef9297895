// `/selfskills trust` where nobody can be asked: the real pi CLI in print mode changes no trust
// without an explicit --yes, never trusts the filesystem root or the home folder, and says that
// the folders below the project are covered too; it takes no path, untrust names the entry it removes
// (an ancestor covers every project under it), and an entry of / or home trusts nothing and is
// reported. On pi 1.6 the decision is pi's own.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { piInstall, runPiPrint } from "../support/pi-cli.ts";
import { isPi16, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { commandOutputs } from "./ux-support.ts";

const trustedList = (env: TempEnv): unknown => {
	const path = join(env.agentDir, "settings.json");
	if (!existsSync(path)) return undefined;
	return (JSON.parse(readFileSync(path, "utf8")) as { selfskills?: { trustedProjects?: unknown } }).selfskills
		?.trustedProjects;
};

describe("/selfskills trust in print mode (the real pi CLI)", function () {
	this.timeout(120000);
	const getEnv = useTempEnv({ prefix: "selfskills-trust-cli-" });

	it("trusts nothing without --yes, and the project (and what lies below it) with it", async function () {
		const env = getEnv();
		await piInstall(env, REPO_ROOT);
		const asked = await runPiPrint({ env, prompt: "/selfskills trust" });
		expect(asked.exitCode, asked.stderr).to.equal(0);
		if (isPi16()) {
			expect(asked.stderr).to.match(/This pi decides project trust itself/);
			expect(trustedList(env)).to.equal(undefined);
			return;
		}
		expect(asked.stderr).to.contain(`Trust ${env.projectDir} and every folder below it?`);
		expect(asked.stderr).to.contain("/selfskills trust --yes");
		expect(trustedList(env)).to.equal(undefined);
		const confirmed = await runPiPrint({ env, prompt: "/selfskills trust --yes" });
		expect(confirmed.stderr).to.contain(`trusted: ${env.projectDir}`);
		expect(trustedList(env)).to.deep.equal([env.projectDir]);
		const untrustAsked = await runPiPrint({ env, prompt: "/selfskills untrust" });
		expect(untrustAsked.stderr).to.contain("/selfskills untrust --yes");
		expect(trustedList(env)).to.deep.equal([env.projectDir]);
		await runPiPrint({ env, prompt: "/selfskills untrust --yes" });
		expect(trustedList(env)).to.deep.equal([]);
	});

	it("never trusts the home folder, even with --yes", async function () {
		if (isPi16()) this.skip();
		const env = getEnv();
		await piInstall(env, REPO_ROOT);
		const fromHome = await runPiPrint({ env: { ...env, projectDir: env.home }, prompt: "/selfskills trust --yes" });
		expect(fromHome.stderr).to.match(/Not trusted: .* is your home folder/);
		expect(trustedList(env)).to.equal(undefined);
	});
});

describe("/selfskills trust and untrust say what they change (pi 0.73's own list)", function () {
	this.timeout(120000);
	const getEnv = useTempEnv({ prefix: "selfskills-trust-entries-" });
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());
	beforeEach(function () {
		if (isPi16()) this.skip();
	});

	const writeList = (env: TempEnv, list: string[]) =>
		writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify({ selfskills: { trustedProjects: list } }));

	it("takes no path: `trust /` and `trust <folder>` change nothing and say so", async function () {
		const env = getEnv();
		await piInstall(env, REPO_ROOT);
		for (const prompt of ["/selfskills trust / --yes", `/selfskills trust ${env.root} --yes`]) {
			const run = await runPiPrint({ env, prompt });
			expect(run.stderr).to.contain(
				`/selfskills trust takes no path; it acts on the project pi runs in, ${env.projectDir}`,
			);
			expect(run.stderr).to.contain("Nothing changed");
			expect(trustedList(env)).to.equal(undefined);
		}
		const untrust = await runPiPrint({ env, prompt: "/selfskills untrust / --yes" });
		expect(untrust.stderr).to.contain("/selfskills untrust takes no path");
	});

	it("untrust in a sub-project names the ancestor entry and that it covers every project under it", async function () {
		const env = getEnv();
		const sub = join(env.projectDir, "a", "b");
		mkdirSync(sub, { recursive: true });
		const other = join(env.root, "elsewhere");
		writeList(env, [env.projectDir, other]);
		await piInstall(env, REPO_ROOT);
		const asked = await runPiPrint({ env: { ...env, projectDir: sub }, prompt: "/selfskills untrust" });
		expect(asked.stderr).to.contain(`Stop trusting ${sub}?`);
		expect(asked.stderr).to.contain(
			`the selfskills.trustedProjects entry "${env.projectDir}", which covers every project under it, ` +
				"not only this one",
		);
		expect(asked.stderr).to.contain("/selfskills untrust --yes");
		expect(trustedList(env), "nothing removed before --yes").to.deep.equal([env.projectDir, other]);
		const done = await runPiPrint({ env: { ...env, projectDir: sub }, prompt: "/selfskills untrust --yes" });
		expect(done.stderr).to.contain(`removed: "${env.projectDir}"`);
		expect(trustedList(env)).to.deep.equal([other]);
		const again = await runPiPrint({ env: { ...env, projectDir: sub }, prompt: "/selfskills untrust --yes" });
		expect(again.stderr).to.contain(`Nothing changed: ${sub} is not trusted`);
		expect(trustedList(env)).to.deep.equal([other]);
	});

	it("asks in the UI with the covering entry named, and removes nothing when the person says no", async function () {
		const env = getEnv();
		const sub = join(env.projectDir, "sub");
		mkdirSync(sub);
		writeList(env, [env.projectDir]);
		const dialogs: string[] = [];
		const confirm = (_title: string, message: string) => {
			dialogs.push(message);
			return false;
		};
		pi = await createPiSession({ env: { ...env, projectDir: sub }, packageDir: REPO_ROOT, ui: { confirm } });
		await pi.runCommand("/selfskills untrust");
		expect(dialogs).to.have.length(1);
		expect(dialogs[0]).to.contain(`"${env.projectDir}", which covers every project under it`);
		expect(commandOutputs(pi).at(-1)).to.equal("nothing changed");
		expect(trustedList(env)).to.deep.equal([env.projectDir]);
	});

	it("an entry of / or the home folder trusts nothing and /selfskills reports it", async function () {
		const env = getEnv();
		writeList(env, ["/", "~"]);
		await piInstall(env, REPO_ROOT);
		const inHome = join(env.home, "webapp");
		mkdirSync(inHome);
		const run = await runPiPrint({ env: { ...env, projectDir: inHome }, prompt: "/selfskills" });
		expect(run.stderr).to.contain(`project ${inHome}: untrusted (selfskills.trustedProjects)`);
		expect(run.stderr).to.match(/selfskills\.trustedProjects entry "\/" trusts nothing: \/ is the filesystem root/);
		expect(run.stderr).to.contain(`selfskills.trustedProjects entry "${env.home}" trusts nothing`);
		const untrust = await runPiPrint({ env: { ...env, projectDir: inHome }, prompt: "/selfskills untrust --yes" });
		expect(untrust.stderr).to.contain("Nothing changed");
		expect(trustedList(env)).to.deep.equal(["/", "~"]);
	});
});
