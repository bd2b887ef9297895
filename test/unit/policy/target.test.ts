// target.ts: every path rule of `file` (refused with bad_file_path), skill lookup by name or path
// with near names for unknown_skill, and the `@` models put in front of paths.
import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { expect } from "chai";
import type { DiscoveredSkill } from "../../../src/policy/discovery.ts";
import { isRefusal, type Refusal } from "../../../src/base/errors.ts";
import {
	checkFileArgument,
	findSkill,
	nearNames,
	normalizeUserPath,
	resolveFileTarget,
	type FileTarget,
} from "../../../src/policy/target.ts";
import { useTempEnv } from "../../support/temp-env.ts";

function makeSkill(parent: string, name: string): DiscoveredSkill {
	const dir = join(parent, name);
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, "SKILL.md"), `---\nname: ${name}\ndescription: d\n---\n`);
	return {
		name,
		description: "d",
		filePath: join(dir, "SKILL.md"),
		dir,
		origin: { kind: "auto", scope: "user" },
		patchable: true,
		reason: undefined,
	};
}

function expectRefusal(value: unknown, code: string): Refusal {
	expect(isRefusal(value), `expected a refusal, got ${JSON.stringify(value)}`).to.equal(true);
	const refusal = value as Refusal;
	expect(refusal.code).to.equal(code);
	expect(refusal.message.startsWith(`${code}: `)).to.equal(true);
	return refusal;
}

describe("target", function () {
	const getEnv = useTempEnv();

	describe("the file path rules", function () {
		const refused: Array<[string, string, RegExp]> = [
			["../other/SKILL.md", "a parent segment", /'\.\.' segments/],
			["references/../../x.md", "a parent segment in the middle", /'\.\.' segments/],
			["/etc/passwd", "an absolute path", /absolute/],
			["C:/x.md", "a drive-letter path", /absolute/],
			["~/x.md", "a home path", /absolute/],
			["references\\api.md", "a backslash", /backslash/],
			["refs/a\u0000.md", "a NUL byte", /NUL/],
			[".env", "a hidden file", /hidden/],
			["references/.secret/x.md", "a hidden folder", /hidden/],
			["skill.md", "a lowercase alias of SKILL.md", /only in case/],
			["Skill.MD", "a mixed-case alias of SKILL.md", /only in case/],
			["./skill.md", "a dotted case alias of SKILL.md", /only in case/],
			["re\u0301f.md", "an NFD (decomposed) name", /NFC/],
			["node_modules/x.js", "a node_modules folder", /node_modules/],
			["", "an empty path", /empty/],
			[" refs.md", "a leading space", /spaces/],
			[".", "the skill folder itself", /hidden|folder itself/],
			[`${"a".repeat(256)}.md`, "an over-long segment", /too long/],
			// The temp file and the backup name add up to ~45 bytes: 230 failed with ENAMETOOLONG mid-write.
			[`${"a".repeat(227)}.md`, "a 230-byte name", /too long/],
			["references/", "a trailing separator", /names a folder/],
			["references/.", "a trailing /.", /names a folder/],
			["./", "a bare ./", /folder itself|names a folder/],
		];
		for (const [file, what, reason] of refused) {
			it(`refuses ${what} (${JSON.stringify(file.slice(0, 40))}) with bad_file_path`, function () {
				const refusal = expectRefusal(checkFileArgument(file), "bad_file_path");
				expect(refusal.data.file).to.equal(file);
				expect(String(refusal.data.reason)).to.match(reason);
			});
		}

		it("refuses control characters in a name with bad_file_path, naming each by code point, not raw", function () {
			const raw = /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;
			const cases: Array<[string, string]> = [
				["a\u001b[31m.md", "U+001B"],
				["a\u0007.md", "U+0007"],
				["refs/\u202Egnp.md", "U+202E"],
				["a\u007f.md", "U+007F"],
				["a\u0085.md", "U+0085"],
				["a\u2028.md", "U+2028"],
				["a\tb.md", "U+0009"],
				["a\nb.md", "U+000A"],
				["a\rb.md", "U+000D"],
				["a\u2066b.md", "U+2066"],
			];
			for (const [file, char] of cases) {
				const refusal = expectRefusal(checkFileArgument(file), "bad_file_path");
				expect(String(refusal.data.reason), JSON.stringify(file)).to.contain(`control character ${char}`);
				expect(raw.test(refusal.message), JSON.stringify(refusal.message)).to.equal(false);
			}
		});

		it("accepts a 200-byte name, the longest the temp and backup names leave room for", function () {
			expect(checkFileArgument(`${"a".repeat(197)}.md`)).to.equal(`${"a".repeat(197)}.md`);
		});

		it("accepts a plain bundled path and normalises ./ and double slashes", function () {
			expect(checkFileArgument("references/api.md")).to.equal("references/api.md");
			expect(checkFileArgument("./scripts//run.sh")).to.equal("scripts/run.sh");
		});

		it("accepts exactly SKILL.md and an NFC non-ASCII name", function () {
			expect(checkFileArgument("SKILL.md")).to.equal("SKILL.md");
			expect(checkFileArgument("r\u00e9f.md")).to.equal("r\u00e9f.md");
		});

		it("resolves a file under the skill folder, and SKILL.md to the skill file itself", function () {
			const skill = makeSkill(getEnv().agentDir, "alpha");
			const bundled = resolveFileTarget(skill, "references/api.md") as FileTarget;
			expect(bundled).to.deep.include({
				relPath: "references/api.md",
				absPath: join(skill.dir ?? "", "references", "api.md"),
				isSkillFile: false,
			});
			expect(resolveFileTarget(skill, undefined)).to.deep.include({
				relPath: "SKILL.md",
				absPath: skill.filePath,
				isSkillFile: true,
			});
			expect(resolveFileTarget(skill, "./SKILL.md")).to.deep.include({ relPath: "SKILL.md", isSkillFile: true });
		});

		it("refuses a file reached through a symlinked folder that leads out of the skill", function () {
			const { agentDir, root } = getEnv();
			const skill = makeSkill(join(agentDir, "skills"), "alpha");
			mkdirSync(join(root, "elsewhere"));
			symlinkSync(join(root, "elsewhere"), join(skill.dir ?? "", "references"));
			const refusal = expectRefusal(resolveFileTarget(skill, "references/api.md"), "bad_file_path");
			expect(String(refusal.data.reason)).to.contain("outside the skill folder");
		});

		it("refuses a file that is itself a symlink leading out of the skill", function () {
			const { agentDir, root } = getEnv();
			const skill = makeSkill(join(agentDir, "skills"), "alpha");
			writeFileSync(join(root, "secret.md"), "x");
			symlinkSync(join(root, "secret.md"), join(skill.dir ?? "", "notes.md"));
			expectRefusal(resolveFileTarget(skill, "notes.md"), "bad_file_path");
		});

		it("refuses a folder named as the file with bad_file_path and the read that lists the files", function () {
			const skill = makeSkill(join(getEnv().agentDir, "skills"), "alpha");
			mkdirSync(join(skill.dir ?? "", "references"));
			const refusal = expectRefusal(resolveFileTarget(skill, "references"), "bad_file_path");
			expect(String(refusal.data.reason))
				.to.contain("is a folder")
				.and.contain('"references/notes.md"')
				.and.contain('{"action":"read","skill":"alpha"}');
		});

		it("refuses a FIFO, a socket and a device with bad_file_path without opening them", async function () {
			const skill = makeSkill(join(getEnv().agentDir, "skills"), "alpha");
			const dir = skill.dir ?? "";
			execFileSync("mkfifo", [join(dir, "p.md")]);
			const server = createServer();
			await new Promise<void>((done) => server.listen(join(dir, "s.md"), done));
			try {
				expect(String(expectRefusal(resolveFileTarget(skill, "p.md"), "bad_file_path").data.reason)).to.contain(
					"a FIFO",
				);
				expect(String(expectRefusal(resolveFileTarget(skill, "s.md"), "bad_file_path").data.reason)).to.contain(
					"a socket",
				);
				symlinkSync(join(dir, "p.md"), join(dir, "link.md"));
				expect(String(expectRefusal(resolveFileTarget(skill, "link.md"), "bad_file_path").data.reason)).to.contain(
					"a FIFO",
				);
			} finally {
				server.close();
			}
			try {
				execFileSync("mknod", [join(dir, "null.md"), "c", "1", "3"], { stdio: "ignore" });
			} catch {
				return; // No mknod here (not root, or a container without the capability).
			}
			expect(String(expectRefusal(resolveFileTarget(skill, "null.md"), "bad_file_path").data.reason)).to.contain(
				"a device",
			);
		});

		it("refuses bundled files of a single-file skill", function () {
			const { agentDir } = getEnv();
			const skill: DiscoveredSkill = { ...makeSkill(agentDir, "solo"), dir: undefined };
			expectRefusal(resolveFileTarget(skill, "references/x.md"), "bad_file_path");
		});
	});

	describe("finding the skill", function () {
		it("finds a skill by name", function () {
			const skills = [makeSkill(getEnv().agentDir, "deploy-checks")];
			expect(findSkill(skills, { skill: "deploy-checks" }, getEnv().projectDir)).to.equal(skills[0]);
		});

		it("refuses an unknown name with unknown_skill and near names", function () {
			const { agentDir, projectDir } = getEnv();
			const skills = ["deploy-checks", "deploy-rollback", "release-notes", "zzz"].map((n) => makeSkill(agentDir, n));
			const refusal = expectRefusal(findSkill(skills, { skill: "deploy-check" }, projectDir), "unknown_skill");
			expect(refusal.data.skill).to.equal("deploy-check");
			expect(refusal.data.nearNames).to.deep.equal(["deploy-checks"]);
			expect(refusal.message).to.contain('Did you mean "deploy-checks"?').and.contain('{"action":"list"}');
		});

		it("offers no near names when nothing is close", function () {
			const { agentDir, projectDir } = getEnv();
			const refusal = expectRefusal(
				findSkill([makeSkill(agentDir, "alpha")], { skill: "completely-different" }, projectDir),
				"unknown_skill",
			);
			expect(refusal.data.nearNames).to.deep.equal([]);
			expect(refusal.message).to.not.contain("Did you mean");
		});

		it("ranks near names by closeness and returns at most three", function () {
			expect(nearNames("lint", ["lint-js", "lint-py", "lint-go", "lint-rs", "print"])).to.have.length(3);
			expect(nearNames("deploy-chekcs", ["deploy-checks", "release"])).to.deep.equal(["deploy-checks"]);
			expect(nearNames("deploy-chekcs", ["deploy-checks", "deploy"])).to.include("deploy-checks");
		});

		it("finds a skill by its folder, by its SKILL.md, relative to cwd, and with a leading @", function () {
			const { agentDir, projectDir } = getEnv();
			const skill = makeSkill(join(projectDir, "skills"), "alpha");
			for (const path of [
				skill.dir ?? "",
				skill.filePath,
				"skills/alpha",
				"@skills/alpha/SKILL.md",
				`@${skill.filePath}`,
			]) {
				expect(findSkill([skill], { path }, projectDir), path).to.equal(skill);
			}
			expect(normalizeUserPath("@~/x", agentDir)).to.equal(join(getEnv().home, "x"));
		});

		it("finds a skill through a symlink to its folder", function () {
			const { agentDir, root, projectDir } = getEnv();
			const skill = makeSkill(join(agentDir, "skills"), "alpha");
			symlinkSync(skill.dir ?? "", join(root, "alias"));
			expect(findSkill([skill], { path: join(root, "alias") }, projectDir)).to.equal(skill);
		});

		it("refuses a skill and a path that name two different skills with invalid_arguments naming both", function () {
			const { agentDir, projectDir } = getEnv();
			const skills = [makeSkill(join(agentDir, "skills"), "alpha"), makeSkill(join(agentDir, "skills"), "beta")];
			const refusal = expectRefusal(
				findSkill(skills, { skill: "alpha", path: skills[1].dir, action: "patch" }, projectDir),
				"invalid_arguments",
			);
			expect(refusal.message)
				.to.contain('"alpha"')
				.and.contain('"beta"')
				.and.contain('action "patch"')
				.and.contain('{"skill":"beta"}');
			expect(refusal.data).to.deep.include({ skill: "alpha", path: skills[1].dir, pathSkill: "beta" });
			expect(findSkill(skills, { skill: "beta", path: skills[1].filePath }, projectDir)).to.equal(skills[1]);
		});

		it("never trims a path: a trailing space names another folder", function () {
			const { agentDir, projectDir } = getEnv();
			const skill = makeSkill(join(agentDir, "skills"), "alpha");
			expectRefusal(findSkill([skill], { path: `${skill.dir} ` }, projectDir), "unknown_skill");
			expectRefusal(findSkill([skill], { path: ` ${skill.dir}` }, projectDir), "unknown_skill");
			expect(normalizeUserPath("skills/alpha ", projectDir)).to.equal(join(projectDir, "skills", "alpha "));
		});

		it("refuses control characters in a skill name or path: unknown_skill, near names, none echoed raw", function () {
			const { agentDir, projectDir } = getEnv();
			const skill = makeSkill(join(agentDir, "skills"), "alpha");
			for (const selector of [
				{ skill: "alpha\u001b[2J" },
				{ skill: "al\u202Epha" },
				{ path: `${skill.dir}\u0007` },
				{ skill: "alpha\u0085" },
			]) {
				const refusal = expectRefusal(findSkill([skill], selector, projectDir), "unknown_skill");
				expect(/[\u0000-\u001F\u007F-\u009F\u202E]/.test(refusal.message), refusal.message).to.equal(false);
				expect(refusal.data.nearNames, JSON.stringify(selector)).to.deep.equal(["alpha"]);
			}
		});

		it("refuses an unknown path with unknown_skill, suggesting by the folder name", function () {
			const { agentDir, projectDir } = getEnv();
			const skill = makeSkill(join(agentDir, "skills"), "alpha-skill");
			const refusal = expectRefusal(
				findSkill([skill], { path: "/nowhere/alpha-skil/SKILL.md" }, projectDir),
				"unknown_skill",
			);
			expect(refusal.data.nearNames).to.deep.equal(["alpha-skill"]);
		});
	});
});
