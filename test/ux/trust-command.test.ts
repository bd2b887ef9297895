// `/selfskills trust` where nobody can be asked: the real pi CLI in print mode changes no trust
// without an explicit --yes, never trusts the filesystem root or the home folder, and says that
// the folders below the project are covered too. On pi 1.6 the decision is pi's own.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { piInstall, runPiPrint } from "../support/pi-cli.ts";
import { isPi16, REPO_ROOT } from "../support/pi-line.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";

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
