// discovery.ts and roots.ts through an injected FsOps: the settings pi's package manager is given are
// read through it, and a local package folder it cannot see is no writable root.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { createDiscoveryCache } from "../../../src/policy/discovery-cache.ts";
import { discoverSkills } from "../../../src/policy/discovery.ts";
import { getWritableRoots } from "../../../src/policy/roots.ts";
import { loadSettings } from "../../../src/policy/settings.ts";
import { errno, faultyFs } from "../../support/faulty-fs.ts";
import { writeSkill } from "../../support/fixtures.ts";
import { useTempEnv } from "../../support/temp-env.ts";

describe("discovery and roots through an injected FsOps", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-fs-seam-discovery-" });

	it("reads pi's package settings through the fs: when it cannot, the package is not resolved", async function () {
		const env = getEnv();
		const pkg = join(env.root, "pkg");
		writeSkill(join(pkg, "skills"), "from-package");
		writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "pkg", pi: { skills: ["./skills"] } }));
		const settingsPath = join(env.agentDir, "settings.json");
		writeFileSync(settingsPath, JSON.stringify({ packages: [pkg] }));
		const settings = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: false }).settings;
		const base = { cwd: env.projectDir, agentDir: env.agentDir, trusted: false, settings };
		const seen = await discoverSkills(base);
		expect(seen.skills.map((s) => s.name)).to.include("from-package");
		const fs = faultyFs({ readFile: (call) => (call.args[0] === settingsPath ? errno("EACCES") : undefined) });
		const blind = await discoverSkills({ ...base, fs });
		expect(blind.skills.map((s) => s.name)).to.not.include("from-package");
		expect(fs.log.some((call) => call.op === "readFile" && call.args[0] === settingsPath)).to.equal(true);
	});

	it("makes a local package folder a root only when the fs can see it", function () {
		const env = getEnv();
		const pkg = join(env.root, "pkg");
		mkdirSync(pkg);
		const settings = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: false }).settings;
		const input = { cwd: env.projectDir, agentDir: env.agentDir, trusted: false, settings, localPackageDirs: [pkg] };
		expect(getWritableRoots(input).map((r) => r.kind)).to.include("local-package");
		const fs = faultyFs({ stat: (call) => (call.args[0] === pkg ? errno("ENOENT") : undefined) });
		expect(getWritableRoots({ ...input, fs }).map((r) => r.kind)).to.not.include("local-package");
	});

	it("fingerprints the discovery cache through the fs: a stat that fails counts as a change", async function () {
		const env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "alpha");
		const settings = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: false }).settings;
		let failStats = false;
		const fs = faultyFs({ stat: () => (failStats ? errno("EIO") : undefined) });
		const cache = createDiscoveryCache();
		const options = { cwd: env.projectDir, agentDir: env.agentDir, trusted: false, settings, fs };
		await cache.discover(options);
		const stamped = fs.log.filter((call) => call.op === "stat" || call.op === "readdirEntries").length;
		expect(stamped).to.be.greaterThan(0);
		await cache.discover(options);
		expect(cache.stats).to.include({ hits: 1, misses: 1 });
		failStats = true;
		await cache.discover(options);
		expect(cache.stats.misses).to.equal(2);
	});
});
