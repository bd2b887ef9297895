// settings.ts through an injected FsOps: the settings files are read and the skillsDir checks resolve
// paths through the `fs` of loadSettings, so a fault there becomes a reported problem, never a throw.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { loadSettings, readSettingsFile } from "../../../src/policy/settings.ts";
import { errno, faultyFs } from "../../support/faulty-fs.ts";
import { useTempEnv } from "../../support/temp-env.ts";

describe("settings through an injected FsOps", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-fs-seam-settings-" });

	it("reports a settings file the injected fs cannot read (EACCES) as a problem and uses the defaults", function () {
		const env = getEnv();
		const path = join(env.agentDir, "settings.json");
		writeFileSync(path, JSON.stringify({ selfskills: { inject: false } }));
		const fs = faultyFs({
			readFile: (call) => (call.args[0] === path ? errno("EACCES", "permission denied") : undefined),
		});
		const report = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: false, fs });
		expect(report.problems).to.have.length(1);
		expect(report.problems[0]).to.contain(`${path}: cannot read`).and.contain("EACCES");
		expect(report.settings.inject).to.equal(true);
		expect(report.source).to.equal(undefined);
		expect(fs.log.some((call) => call.op === "readFile" && call.args[0] === path)).to.equal(true);
	});

	it("reads what the injected fs returns, not what is on disk", function () {
		const env = getEnv();
		const path = join(env.agentDir, "settings.json");
		const fs = { ...realFs, readFile: () => Buffer.from('{ "selfskills": { "backupCap": 3 } }') };
		expect(readSettingsFile(path, fs)).to.deep.equal({ json: { selfskills: { backupCap: 3 } } });
		expect(
			loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: false, fs }).settings.backupCap,
		).to.equal(3);
	});

	it("treats an injected ENOENT as a missing file: no problem", function () {
		const env = getEnv();
		const fs = faultyFs({ readFile: () => errno("ENOENT", "no such file") });
		expect(readSettingsFile(join(env.agentDir, "settings.json"), fs)).to.deep.equal({ json: {} });
	});

	it("resolves a trusted project's skillsDir through the fs, refusing a realpath that leads outside", function () {
		const env = getEnv();
		mkdirSync(join(env.projectDir, ".git"));
		mkdirSync(join(env.projectDir, ".pi", "skills"), { recursive: true });
		writeFileSync(
			join(env.projectDir, ".pi", "settings.json"),
			JSON.stringify({ selfskills: { skillsDir: "skills" } }),
		);
		const inside = join(env.projectDir, ".pi", "skills");
		const elsewhere = join(env.root, "elsewhere");
		// The fs says the project's skills folder is really somewhere else (as a symlink would).
		const fs = { ...realFs, realpath: (path: string) => (path === inside ? elsewhere : realFs.realpath(path)) };
		const report = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: true, fs });
		expect(report.problems.join("\n")).to.contain(`selfskills.skillsDir ${inside} lies outside the project`);
		expect(report.settings.skillsDir).to.equal(join(env.agentDir, "skills"));
		const real = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: true });
		expect(real.problems).to.deep.equal([]);
		expect(real.settings.skillsDir).to.equal(inside);
	});

	it("reports a FIFO named settings.json as a problem instead of blocking on it", function () {
		const env = getEnv();
		const path = join(env.agentDir, "settings.json");
		execFileSync("mkfifo", [path]);
		const report = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: false });
		expect(report.problems).to.have.length(1);
		expect(report.problems[0]).to.contain(`${path}: cannot read`).and.contain("FIFO");
	});
});
