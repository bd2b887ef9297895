// settings.ts on the real filesystem: which file wins, when the project counts, and how every bad
// value falls back to its default with a problem reported instead of a crash.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import {
	controlIsOn,
	DEFAULT_SIMILARITY,
	findPin,
	loadSettings,
	readSettingsFile,
} from "../../../src/policy/settings.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";

function writeGlobal(env: TempEnv, json: unknown): string {
	const path = join(env.agentDir, "settings.json");
	writeFileSync(path, typeof json === "string" ? json : JSON.stringify(json));
	return path;
}

function writeProject(env: TempEnv, json: unknown): string {
	mkdirSync(join(env.projectDir, ".pi"), { recursive: true });
	const path = join(env.projectDir, ".pi", "settings.json");
	writeFileSync(path, typeof json === "string" ? json : JSON.stringify(json));
	return path;
}

describe("settings", function () {
	const getEnv = useTempEnv();
	const load = (env: TempEnv, trusted: boolean) =>
		loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted });

	it("uses the defaults when neither file has the selfskills key", function () {
		const env = getEnv();
		writeGlobal(env, { theme: "dark" });
		const report = load(env, true);
		expect(report.source).to.equal(undefined);
		expect(report.problems).to.deep.equal([]);
		expect(report.settings).to.deep.equal({
			enabled: true,
			inject: true,
			skillsDir: join(env.agentDir, "skills"),
			backupCap: 10,
			patchPackages: true,
			patchProjectAgents: true,
			trustedProjects: [],
			approval: "auto",
			pinned: [],
			guardBuiltins: "backup",
			contentReview: "escalate",
			similarity: DEFAULT_SIMILARITY,
			git: "off",
			sandbox: { writable: [], network: true },
		});
	});

	it("uses a trusted project's block whole when its file has the key, without merging the global one", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { backupCap: 5, inject: true } });
		const projectPath = writeProject(env, { selfskills: { inject: false } });
		const report = load(env, true);
		expect(report.source).to.equal(projectPath);
		expect(report.settings.inject).to.equal(false);
		expect(report.settings.backupCap).to.equal(10);
	});

	it("falls through to the global file when the trusted project's file lacks the key", function () {
		const env = getEnv();
		const globalPath = writeGlobal(env, { selfskills: { backupCap: 5 } });
		writeProject(env, { theme: "light" });
		const report = load(env, true);
		expect(report.source).to.equal(globalPath);
		expect(report.settings.backupCap).to.equal(5);
	});

	it("ignores the project's file entirely when the project is not trusted", function () {
		const env = getEnv();
		const globalPath = writeGlobal(env, { selfskills: { backupCap: 5 } });
		writeProject(env, { selfskills: { inject: false, enabled: false, skillsDir: "/tmp/evil" } });
		const report = load(env, false);
		expect(report.source).to.equal(globalPath);
		expect(report.settings.inject).to.equal(true);
		expect(report.settings.enabled).to.equal(true);
		expect(report.settings.skillsDir).to.equal(join(env.agentDir, "skills"));
		expect(report.problems).to.deep.equal([]);
	});

	it("does not even report a malformed project file when the project is not trusted", function () {
		const env = getEnv();
		writeProject(env, "{ not json");
		expect(load(env, false).problems).to.deep.equal([]);
	});

	const badValues: Array<[string, unknown]> = [
		["enabled", "yes"],
		["inject", 1],
		["skillsDir", ""],
		["skillsDir", 42],
		["skillsDir", "a\u0000b"],
		["backupCap", 0],
		["backupCap", 1001],
		["backupCap", 2.5],
		["backupCap", "10"],
		["patchPackages", null],
		["patchProjectAgents", "false"],
		["trustedProjects", "/x/proj"],
		["trustedProjects", ["/x/proj", 7]],
		["contentReview", "refuse-all"],
		["similarity", 1.5],
		["similarity", true],
		["git", "push"],
	];
	for (const [key, value] of badValues) {
		it(`falls back to the default and reports it when selfskills.${key} is ${JSON.stringify(value)}`, function () {
			const env = getEnv();
			const globalPath = writeGlobal(env, { selfskills: { [key]: value } });
			const defaults = load({ ...env, agentDir: join(env.root, "no-such-agent") } as TempEnv, false).settings;
			const report = load(env, false);
			const actual = report.settings[key as keyof typeof report.settings];
			const expected = key === "skillsDir" ? join(env.agentDir, "skills") : defaults[key as keyof typeof defaults];
			expect(actual).to.deep.equal(expected);
			expect(report.problems).to.have.length(1);
			expect(report.problems[0]).to.contain(globalPath).and.contain(`selfskills.${key}`).and.contain("default used");
		});
	}

	it("keeps the good values of a block that also holds a bad one", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { backupCap: 3, inject: "no" } });
		const report = load(env, false);
		expect(report.settings.backupCap).to.equal(3);
		expect(report.settings.inject).to.equal(true);
		expect(report.problems).to.have.length(1);
	});

	for (const block of ["on", null, [1, 2], 5]) {
		it(`uses the defaults and reports it when the selfskills block itself is ${JSON.stringify(block)}`, function () {
			const env = getEnv();
			writeGlobal(env, { selfskills: block });
			const report = load(env, false);
			expect(report.settings.backupCap).to.equal(10);
			expect(report.problems).to.have.length(1);
			expect(report.problems[0]).to.contain('"selfskills" must be an object');
		});
	}

	it("reports an unknown key and ignores it", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { writableRoots: ["/"] } });
		const report = load(env, false);
		expect(report.problems).to.have.length(1);
		expect(report.problems[0]).to.contain("unknown key selfskills.writableRoots");
	});

	it("reports a malformed global file and uses the defaults", function () {
		const env = getEnv();
		const path = writeGlobal(env, '{ "selfskills": { "inject": false, }');
		const report = load(env, false);
		expect(report.settings.inject).to.equal(true);
		expect(report.problems).to.have.length(1);
		expect(report.problems[0]).to.contain(path).and.contain("invalid JSON");
	});

	it("reports a malformed trusted project file and falls through to the global block", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { backupCap: 4 } });
		const path = writeProject(env, "[1,");
		const report = load(env, true);
		expect(report.settings.backupCap).to.equal(4);
		expect(report.problems.some((p) => p.includes(path) && p.includes("invalid JSON"))).to.equal(true);
	});

	it("reports a settings file that is JSON but not an object", function () {
		const env = getEnv();
		const path = writeGlobal(env, "[]");
		expect(readSettingsFile(path).problem).to.contain("not a JSON object");
		expect(load(env, false).problems).to.have.length(1);
	});

	it("treats a missing or empty settings file as empty without a problem", function () {
		const env = getEnv();
		expect(readSettingsFile(join(env.agentDir, "settings.json"))).to.deep.equal({ json: {} });
		writeGlobal(env, "  \n");
		expect(load(env, false).problems).to.deep.equal([]);
	});

	it("reports a settings path that cannot be read (a folder) instead of throwing", function () {
		const env = getEnv();
		mkdirSync(join(env.agentDir, "settings.json"));
		const report = load(env, false);
		expect(report.problems).to.have.length(1);
		expect(report.problems[0]).to.contain("cannot read");
	});

	it("reads trustedProjects from the global file only, even when the trusted project's block wins", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { trustedProjects: ["/x/proj"] } });
		const projectPath = writeProject(env, { selfskills: { inject: false, trustedProjects: ["/", "/x/other"] } });
		const report = load(env, true);
		expect(report.source).to.equal(projectPath);
		expect(report.settings.trustedProjects).to.deep.equal(["/x/proj"]);
		expect(
			report.problems.some(
				(p) => p.includes(projectPath) && p.includes("trustedProjects is read from the global settings only"),
			),
		).to.equal(true);
	});

	it("reads sandbox from the global file only, ~ expanded; a project cannot add a writable folder", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { sandbox: { writable: ["~/sibling"], network: false } } });
		const projectPath = writeProject(env, { selfskills: { inject: false, sandbox: { writable: ["/etc"] } } });
		const report = load(env, true);
		expect(report.source).to.equal(projectPath);
		expect(report.settings.sandbox).to.deep.equal({ writable: [join(env.home, "sibling")], network: false });
		expect(
			report.problems.some(
				(p) => p.includes(projectPath) && p.includes("selfskills.sandbox is read from the global"),
			),
		).to.equal(true);
		writeGlobal(env, { selfskills: { sandbox: { writable: "/x", colour: 1 } } });
		const bad = load(env, false);
		expect(bad.settings.sandbox).to.deep.equal({ writable: [], network: true });
		expect(bad.problems.join("\n")).to.contain('selfskills.sandbox must be { "writable": [folder paths]');
	});

	it("expands ~ in skillsDir against $HOME", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { skillsDir: "~/my-skills" } });
		expect(load(env, false).settings.skillsDir).to.equal(join(env.home, "my-skills"));
	});

	it("expands ~ in trustedProjects against $HOME", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { trustedProjects: ["~/code/proj"] } });
		expect(load(env, false).settings.trustedProjects).to.deep.equal([join(env.home, "code", "proj")]);
	});

	it("resolves a relative skillsDir against the folder of the settings file that set it", function () {
		const env = getEnv();
		writeGlobal(env, { selfskills: { skillsDir: "../mine" } });
		expect(load(env, false).settings.skillsDir).to.equal(join(env.root, "mine"));
		writeProject(env, { selfskills: { skillsDir: "../team-skills" } });
		expect(load(env, true).settings.skillsDir).to.equal(join(env.projectDir, "team-skills"));
	});

	describe("human control: approval, pins and the side-door guard", function () {
		it("accepts every approval form and refuses the rest with the expected shape", function () {
			const env = getEnv();
			for (const approval of ["auto", "ask", "propose", { own: "auto", others: "ask" }]) {
				writeGlobal(env, { selfskills: { approval } });
				const report = load(env, false);
				expect(report.problems, JSON.stringify(approval)).to.deep.equal([]);
				expect(report.settings.approval).to.deep.equal(approval);
			}
			// An invalid value fails closed: "propose" for the origins it may govern, the valid side holds.
			const cases: Array<[unknown, unknown, RegExp]> = [
				["yes", "propose", /selfskills\.approval must be "auto", "ask", "propose" or .*"propose" used/],
				["propse", "propose", /"propse"; "propose" used \(fails closed\)/],
				[3, "propose", /not 3; "propose" used/],
				[null, "propose", /not null; "propose" used/],
				[{ own: "ask" }, { own: "ask", others: "propose" }, /approval\.others is missing/],
				[{ own: "auto" }, { own: "auto", others: "propose" }, /approval\.others is missing/],
				[{ own: "ask", others: "never" }, { own: "ask", others: "propose" }, /approval\.others is "never"/],
				[{ own: "ask", others: "ask", extra: "ask" }, "ask", /unknown key\(s\) extra ignored/],
				[{}, "propose", /approval\.own is missing/],
			];
			for (const [approval, expected, problem] of cases) {
				writeGlobal(env, { selfskills: { approval } });
				const report = load(env, false);
				expect(report.settings.approval, JSON.stringify(approval)).to.deep.equal(expected);
				expect(report.problems.join("\n"), JSON.stringify(approval)).to.match(problem);
				expect(controlIsOn(report.settings), JSON.stringify(approval)).to.equal(true);
			}
		});

		it("skips an invalid pin entry alone, reported, and lets * alone pin every skill", function () {
			const env = getEnv();
			writeGlobal(env, { selfskills: { pinned: ["deploy-checks", 7, "", "a b", "x*y", "notes-*"] } });
			const report = load(env, false);
			expect(report.settings.pinned).to.deep.equal(["deploy-checks", "notes-*"]);
			const problems = report.problems.join("\n");
			for (const entry of ["7", '""', '"a b"', '"x*y"'])
				expect(problems).to.contain(`entry ${entry} skipped`).and.contain("the other pins hold");
			writeGlobal(env, { selfskills: { pinned: ["*"] } });
			const all = load(env, false);
			expect(all.problems).to.deep.equal([]);
			expect(all.settings.pinned).to.deep.equal(["*"]);
			expect(findPin(all.settings.pinned, "anything-at-all")).to.equal("*");
			writeGlobal(env, { selfskills: { pinned: "deploy-checks" } });
			expect(load(env, false).settings.pinned).to.deep.equal(["deploy-checks"]);
		});

		it("keeps the last valid settings of a file that stops parsing, and says so", function () {
			const env = getEnv();
			const path = writeGlobal(env, { selfskills: { approval: "propose", pinned: ["deploy-checks"] } });
			expect(load(env, false).settings.approval).to.equal("propose");
			for (const broken of ['{ "selfskills": { "approval": "auto" ', "[1]", ""]) {
				writeFileSync(path, broken);
				const report = load(env, false);
				expect(report.settings.approval, JSON.stringify(broken)).to.equal("propose");
				expect(report.settings.pinned).to.deep.equal(["deploy-checks"]);
				expect(report.problems.join("\n"))
					.to.contain(path)
					.and.contain("the last valid settings read from it are kept");
			}
			writeGlobal(env, { selfskills: { approval: "ask" } });
			expect(load(env, false).settings.approval).to.equal("ask");
		});

		it("lets a trusted project make approval and the guard stricter, never looser, and adds its pins", function () {
			const env = getEnv();
			writeGlobal(env, {
				selfskills: { approval: { own: "auto", others: "ask" }, pinned: ["deploy-*"], guardBuiltins: "backup" },
			});
			const path = writeProject(env, {
				selfskills: {
					approval: { own: "propose", others: "auto" },
					pinned: ["release-notes"],
					guardBuiltins: "off",
				},
			});
			const report = load(env, true);
			expect(report.settings.approval).to.deep.equal({ own: "propose", others: "ask" });
			expect(report.settings.pinned).to.deep.equal(["deploy-*", "release-notes"]);
			expect(report.settings.guardBuiltins).to.equal("backup");
			expect(report.problems).to.have.length(2);
			expect(report.problems.join("\n"))
				.to.include(path)
				.and.match(/approval may only be stricter/)
				.and.match(/guardBuiltins may only be stricter/);
			writeProject(env, { selfskills: { approval: "propose", guardBuiltins: "block" } });
			const stricter = load(env, true);
			expect(stricter.problems).to.deep.equal([]);
			expect(stricter.settings.approval).to.equal("propose");
			expect(stricter.settings.guardBuiltins).to.equal("block");
		});

		it("keeps the global modes for a trusted project whose block leaves them out", function () {
			const env = getEnv();
			writeGlobal(env, { selfskills: { approval: "ask", guardBuiltins: "block", pinned: ["a"] } });
			writeProject(env, { selfskills: { backupCap: 3 } });
			const report = load(env, true);
			expect(report.problems).to.deep.equal([]);
			expect(report.settings).to.include({ approval: "ask", guardBuiltins: "block", backupCap: 3 });
			expect(report.settings.pinned).to.deep.equal(["a"]);
		});

		it("lets a trusted project make contentReview stricter, never looser", function () {
			const env = getEnv();
			writeGlobal(env, { selfskills: { contentReview: "escalate" } });
			const path = writeProject(env, { selfskills: { contentReview: "off" } });
			const looser = load(env, true);
			expect(looser.settings.contentReview).to.equal("escalate");
			expect(looser.problems.join("\n"))
				.to.include(path)
				.and.match(/contentReview may only be stricter/);
			writeProject(env, { selfskills: { contentReview: "refuse" } });
			const stricter = load(env, true);
			expect(stricter.problems).to.deep.equal([]);
			expect(stricter.settings.contentReview).to.equal("refuse");
		});

		it("counts a control on for approval other than auto, any pin, or refused risky content", function () {
			const off = { approval: "auto", pinned: [], contentReview: "escalate" } as const;
			expect(controlIsOn(off)).to.equal(false);
			expect(controlIsOn({ ...off, approval: { own: "auto", others: "ask" } })).to.equal(true);
			expect(controlIsOn({ ...off, approval: "propose" })).to.equal(true);
			expect(controlIsOn({ ...off, pinned: ["notes"] })).to.equal(true);
			expect(controlIsOn({ ...off, contentReview: "refuse" })).to.equal(true);
			expect(controlIsOn({ ...off, contentReview: "off" })).to.equal(false);
		});

		it("matches pins by name or by a prefix ending in *", function () {
			expect(findPin(["deploy-*", "notes"], "deploy-checks")).to.equal("deploy-*");
			expect(findPin(["deploy-*", "notes"], "notes")).to.equal("notes");
			expect(findPin(["deploy-*", "notes"], "notes-2")).to.equal(undefined);
			expect(findPin(["deploy-*"], "redeploy")).to.equal(undefined);
		});
	});

	describe("a skillsDir in pi's own places is never a writable root", function () {
		const cases: Array<[string, (env: TempEnv) => string, RegExp]> = [
			["pi's extensions folder", (env) => join(env.agentDir, "extensions"), /pi's own folder/],
			["the agent folder itself", (env) => env.agentDir, /is \(or holds\) pi's own folder/],
			["a folder of the agent folder", (env) => join(env.agentDir, "mine"), /pi's own folder/],
			["the home folder", (env) => env.home, /home folder/],
			["a parent of the home folder", (env) => env.root, /home folder/],
			["a node_modules folder", (env) => join(env.root, "lib", "node_modules", "x"), /node_modules/],
			["another project's .pi folder", (env) => join(env.root, "other", ".pi"), /\.pi folder/],
			["another project's .pi/extensions", (env) => join(env.root, "other", ".pi", "extensions"), /\.pi folder/],
		];
		for (const [what, dir, reason] of cases) {
			it(`falls back to <agentDir>/skills and says why for ${what}`, function () {
				const env = getEnv();
				const path = writeGlobal(env, { selfskills: { skillsDir: dir(env) } });
				const report = load(env, false);
				expect(report.settings.skillsDir).to.equal(join(env.agentDir, "skills"));
				expect(report.problems).to.have.length(1);
				expect(report.problems[0]).to.include(path).and.match(reason).and.include(join(env.agentDir, "skills"));
			});
		}

		it("keeps a trusted project's skillsDir inside that project, through symlinks too", function () {
			const env = getEnv();
			writeGlobal(env, { selfskills: { skillsDir: "../mine" } });
			mkdirSync(join(env.root, "outside"));
			symlinkSync(join(env.root, "outside"), join(env.projectDir, "escape"));
			for (const skillsDir of [join(env.agentDir, "extensions"), "../../outside", "../escape", env.home]) {
				const path = writeProject(env, { selfskills: { skillsDir } });
				const report = load(env, true);
				expect(report.settings.skillsDir, skillsDir).to.equal(join(env.root, "mine"));
				expect(report.problems.join("\n"), skillsDir)
					.to.include(path)
					.and.match(/outside the project|pi's own folder|home folder/);
			}
		});

		it("reports nothing about skillsDir when a trusted project's block does not set it", function () {
			const env = getEnv();
			writeProject(env, { selfskills: { backupCap: 3 } });
			const report = load(env, true);
			expect(report.problems).to.deep.equal([]);
			expect(report.settings.skillsDir).to.equal(join(env.agentDir, "skills"));
		});

		it("refuses the project's own .pi folder other than .pi/skills", function () {
			const env = getEnv();
			const path = writeProject(env, { selfskills: { skillsDir: "extensions" } });
			const report = load(env, true);
			expect(report.settings.skillsDir).to.equal(join(env.agentDir, "skills"));
			expect(report.problems.join("\n"))
				.to.include(path)
				.and.match(/\.pi folder/);
			writeProject(env, { selfskills: { skillsDir: "skills" } });
			expect(load(env, true).settings.skillsDir).to.equal(join(env.projectDir, ".pi", "skills"));
		});
	});
});
