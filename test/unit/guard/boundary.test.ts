// One session's boundary: missing protected places inside the project held open as empty folders (and
// removed at the end), what appeared there anyway swept into the store, protected folders pinned by
// device and inode, the temp folder its own and removed at the end; writable places by pi's rule.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { createBoundary } from "../../../src/guard/boundary.ts";
import { loadSettings } from "../../../src/policy/settings.ts";
import { useTempEnv } from "../../support/temp-env.ts";

describe("boundary", function () {
	const getEnv = useTempEnv();
	const settingsOf = (cwd: string, agentDir: string) => loadSettings({ cwd, agentDir, trusted: false });

	it("holds a missing .pi/ open, sweeps what appears in it into the store, and removes it at the end", function () {
		const env = getEnv();
		const boundary = createBoundary();
		const input = {
			cwd: env.projectDir,
			agentDir: env.agentDir,
			settings: settingsOf(env.projectDir, env.agentDir).settings,
		};
		const layout = boundary.layout(input, boundary.places(input));
		const dotPi = join(env.projectDir, ".pi");
		expect(layout.protected).to.include(dotPi);
		expect(readdirSync(dotPi)).to.deep.equal([]);
		expect(layout.writable).to.include(env.projectDir).and.to.include(layout.tmpdir);
		writeFileSync(join(dotPi, "settings.json"), '{"shellPath":"/tmp/x"}');
		const moved = boundary.sweep(env.agentDir);
		expect(moved).to.have.length(1);
		expect(moved[0]).to.contain(join(dotPi, "settings.json"));
		expect(readdirSync(dotPi)).to.deep.equal([]);
		const stored = moved[0].split(" → ")[1];
		expect(stored.startsWith(join(env.agentDir, "selfskills", "appeared"))).to.equal(true);
		expect(readFileSync(stored, "utf8")).to.equal('{"shellPath":"/tmp/x"}');
		boundary.end();
		expect(existsSync(dotPi)).to.equal(false);
		expect(existsSync(layout.tmpdir)).to.equal(false);
	});

	it("tells a protected folder replaced by a copy from the one pinned at the start", function () {
		const env = getEnv();
		mkdirSync(join(env.agentDir, "skills"), { recursive: true });
		const boundary = createBoundary();
		const input = {
			cwd: env.projectDir,
			agentDir: env.agentDir,
			settings: settingsOf(env.projectDir, env.agentDir).settings,
		};
		boundary.start({ ...input, control: true });
		expect(boundary.movedPlace(boundary.places(input).set)).to.equal(undefined);
		renameSync(env.agentDir, `${env.agentDir}.old`);
		cpSync(`${env.agentDir}.old`, env.agentDir, { recursive: true });
		expect(boundary.movedPlace(boundary.places(input).set))
			.to.contain(env.agentDir)
			.and.to.contain("moved or replaced");
		boundary.end();
	});

	it("hands a call's places from its hook to its run once, and only for the same input", function () {
		const env = getEnv();
		const boundary = createBoundary();
		const settings = settingsOf(env.projectDir, env.agentDir).settings;
		const input = { cwd: env.projectDir, agentDir: env.agentDir, settings };
		const judged = boundary.places(input, { keep: "call-1" });
		expect(boundary.places({ ...input, settings: { ...settings } }, { take: "call-1" })).to.equal(judged);
		// Taken once: a second run of the same id reads the places again.
		const again = boundary.places(input, { take: "call-1" });
		expect(again).to.not.equal(judged);
		expect(again.set.places.map((p) => p.real)).to.deep.equal(judged.set.places.map((p) => p.real));
		// Other settings, another folder or another id: never the kept places.
		boundary.places(input, { keep: "call-2" });
		const network = { ...settings, sandbox: { ...settings.sandbox, network: !settings.sandbox.network } };
		expect(boundary.places({ ...input, settings: network }, { take: "call-2" })).to.not.equal(judged);
		const kept = boundary.places(input, { keep: "call-3" });
		expect(boundary.places({ ...input, cwd: env.home }, { take: "call-3" })).to.not.equal(kept);
		const kept4 = boundary.places(input, { keep: "call-4" });
		expect(boundary.places(input, { take: "call-5" })).to.not.equal(kept4);
		boundary.end();
	});

	it("makes no project writable at the home folder, and refuses home or / in sandbox.writable", function () {
		const env = getEnv();
		writeFileSync(
			join(env.agentDir, "settings.json"),
			JSON.stringify({
				selfskills: { sandbox: { writable: ["~", "/", join(env.root, "sibling")], network: false } },
			}),
		);
		const report = settingsOf(env.home, env.agentDir);
		expect(report.settings.sandbox).to.deep.equal({ writable: [join(env.root, "sibling")], network: false });
		expect(report.problems.join("\n"))
			.to.contain('"~" is the home folder')
			.and.to.contain('"/" is the filesystem root');
		const boundary = createBoundary();
		const { writable } = boundary.places({ cwd: env.home, agentDir: env.agentDir, settings: report.settings });
		const reals = writable.places.map((p) => p.real);
		expect(reals).to.not.include(env.home);
		expect(reals).to.include(join(env.root, "sibling"));
		expect(writable.notes.join("\n")).to.contain(`the project ${env.home} is not writable: it is the home folder`);
		boundary.end();
	});
});
