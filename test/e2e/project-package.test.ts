// A package installed for one project only (`pi install -l`) in a project that is not trusted:
// pi 0.73 loads its skills anyway, and list must give the real reason they are read-only.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { runPiCli } from "../support/pi-cli.ts";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";

describe(`a project-local package in an untrusted project (pi ${getPiLine()})`, function () {
	this.timeout(120000);
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("is read-only because the project is untrusted, not as 'added by another extension'", async function () {
		const env = getEnv();
		const pkg = join(env.root, "team-pkg");
		mkdirSync(join(pkg, "skills", "team-deploy"), { recursive: true });
		writeFileSync(
			join(pkg, "package.json"),
			JSON.stringify({ name: "team-pkg", keywords: ["pi-package"], pi: { skills: ["./skills"] } }),
		);
		writeFileSync(
			join(pkg, "skills", "team-deploy", "SKILL.md"),
			"---\nname: team-deploy\ndescription: Use when deploying the team app.\n---\n# Deploy\n",
		);
		const installed = await runPiCli(["install", "-l", pkg], { env });
		expect(installed.exitCode, installed.stderr).to.equal(0);
		pi = await createPiSession({ env, packageDir: REPO_ROOT, projectTrusted: false });
		const run = await pi.run("list", [call({ action: "list", skill: "team-deploy" }), { text: "ok" }]);
		const text = run.toolResults[0].text;
		// pi 1.6 does not load an untrusted project's packages at all; pi 0.73 does.
		if (/team-deploy —/.test(text)) {
			expect(text).to.match(/team-deploy — .* — patchable: no \(untrusted project/);
			expect(text).not.to.contain("another extension");
		} else expect(getPiLine(), text).to.equal("1.6");
	});
});
