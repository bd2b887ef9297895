// validation.ts: what a valid skill is, decided by the running pi's own loader plus the strict
// rules, and the corrected frontmatter offered for the usual YAML pitfalls.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { expect } from "chai";
import { checkSkillContent, newDiagnostics, nameProblems, suggestFrontmatter } from "../../../src/checks/validation.ts";
import { REPO_ROOT } from "../../support/pi-line.ts";

const skill = (frontmatter: string, body = "# Body\n") => `---\n${frontmatter}\n---\n${body}`;

/** Replaces the frontmatter of `content` with `frontmatter` (as suggestFrontmatter returns it). */
function applySuggestion(content: string, frontmatter: string): string {
	const end = content.indexOf("\n---", 3);
	return `${frontmatter}${content.slice(end + 4)}`;
}

describe("validation", function () {
	describe("checkSkillContent", function () {
		it("accepts a well-formed skill with no diagnostic and the name pi loads it under", function () {
			expect(checkSkillContent(skill("name: alpha\ndescription: Does alpha things."), "alpha")).to.deep.equal({
				name: "alpha",
				description: "Does alpha things.",
				diagnostics: [],
				loaderDiagnostics: [],
			});
		});

		it("reports pi's own 'description is required' and that pi would not load it", function () {
			const check = checkSkillContent(skill("name: alpha"), "alpha");
			expect(check.name).to.equal(undefined);
			expect(check.diagnostics.map((d) => d.message)).to.include.members([
				"description is required",
				"pi does not load it as a skill",
			]);
		});

		it("reports the YAML error for an unquoted ': ' inside a value", function () {
			const check = checkSkillContent(skill("name: alpha\ndescription: Use when: deploying"), "alpha");
			expect(check.name).to.equal(undefined);
			expect(check.diagnostics.some((d) => /map|yaml|nested|implicit/i.test(d.message))).to.equal(true);
		});

		it("reports a name that does not match its folder, on both pi lines", function () {
			const check = checkSkillContent(skill("name: beta\ndescription: d"), "alpha");
			expect(check.diagnostics.some((d) => d.message.includes("beta") && d.message.includes("alpha"))).to.equal(
				true,
			);
		});

		it("reports a byte order mark, which pi 0.73 cannot parse and pi 1.6 strips", function () {
			const check = checkSkillContent(`\uFEFF${skill("name: alpha\ndescription: d")}`, "alpha");
			expect(check.diagnostics.map((d) => d.message)).to.include("file starts with a byte order mark");
		});

		it("reports a non-string description, an over-long description and an invalid name", function () {
			expect(
				checkSkillContent(skill("name: alpha\ndescription: [a, b]"), "alpha").diagnostics.length,
			).to.be.greaterThan(0);
			const long = checkSkillContent(skill(`name: alpha\ndescription: ${"x".repeat(1025)}`), "alpha");
			expect(long.diagnostics.some((d) => d.message.includes("1024"))).to.equal(true);
			const bad = checkSkillContent(skill("name: Alpha_One\ndescription: d"), "Alpha_One");
			expect(bad.diagnostics.length).to.be.greaterThan(0);
		});

		it("counts only diagnostics the file did not already have as new", function () {
			const before = [{ type: "warning", message: "old" }];
			expect(
				newDiagnostics(before, [
					{ type: "warning", message: "old" },
					{ type: "warning", message: "new" },
				]),
			).to.deep.equal([{ type: "warning", message: "new" }]);
		});

		it("checks names against the Agent Skills rules", function () {
			expect(nameProblems("deploy-checks")).to.deep.equal([]);
			expect(nameProblems("")).to.have.length(1);
			expect(nameProblems("a".repeat(65))).to.have.length(1);
			for (const bad of ["Deploy", "-lead", "trail-", "dou--ble", "under_score"])
				expect(nameProblems(bad), bad).to.have.length(1);
		});
	});

	describe("the scratch folder pi's loader reads", function () {
		/**
		 * A child process that checks one skill and exits; returns the name pi loaded and the scratch
		 * folder the child made (read from its own module state, so other pi processes on the machine
		 * and their scratch folders never enter the test).
		 */
		async function checkInChild(): Promise<{ name: string; root: string; pid: number }> {
			const module = pathToFileURL(join(REPO_ROOT, "src", "checks", "validation.ts")).href;
			const script = [
				`import { checkSkillContent } from ${JSON.stringify(module)};`,
				`const name = checkSkillContent("---\\nname: alpha\\ndescription: A.\\n---\\n", "alpha").name;`,
				`const root = globalThis[Symbol.for("pi-selfskills.validation-scratch")].root;`,
				"console.log(JSON.stringify({ name, root, pid: process.pid, " +
					'existed: (await import("node:fs")).existsSync(root) }));',
			].join("\n");
			const { stdout } = await promisify(execFile)(
				process.execPath,
				["--import", "tsx", "--input-type=module", "-e", script],
				{ cwd: REPO_ROOT },
			);
			const seen = JSON.parse(stdout.trim()) as { name: string; root: string; pid: number; existed: boolean };
			expect(seen.existed, "the child's scratch folder while it ran").to.equal(true);
			return seen;
		}

		it("is removed when the process exits", async function () {
			const { name, root, pid } = await checkInChild();
			expect(name).to.equal("alpha");
			expect(basename(root)).to.match(new RegExp(`^selfskills-validate-${pid}-`));
			expect(existsSync(root), root).to.equal(false);
		});

		it("left by a killed process is swept by the next one, and a live process's is kept", async function () {
			const dead = spawnSync(process.execPath, ["-e", ""]).pid;
			const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
			const left = join(base, `selfskills-validate-${dead}-left`);
			const live = join(base, `selfskills-validate-${process.pid}-live`);
			for (const dir of [left, live]) mkdirSync(join(dir, "0", "alpha"), { recursive: true });
			try {
				expect((await checkInChild()).name).to.equal("alpha");
				expect(existsSync(left), "the dead process's folder").to.equal(false);
				expect(existsSync(live), "this live process's folder").to.equal(true);
			} finally {
				for (const dir of [left, live]) rmSync(dir, { recursive: true, force: true });
			}
		});
	});

	describe("suggestFrontmatter", function () {
		const cases: Array<[string, string, string | undefined]> = [
			[
				"an unquoted ': ' in the description",
				skill("name: alpha\ndescription: Use when: the deploy fails"),
				undefined,
			],
			[
				"tab indentation",
				skill("name: alpha\ndescription: Does things.\nmetadata:\n\tauthor: me\n\tversion: one"),
				undefined,
			],
			["a missing description (previous one known)", skill("name: alpha"), "The previous description."],
			["a missing description (no previous one)", skill("name: alpha\ndescription:"), undefined],
			[
				"an unquoted ': ' and tabs together",
				skill("name: alpha\ndescription: Note: tabs\nmetadata:\n\tk: v"),
				undefined,
			],
		];
		for (const [what, content, previous] of cases) {
			it(`offers a frontmatter pi accepts with no diagnostic for ${what}`, function () {
				expect(checkSkillContent(content, "alpha").name, "the input itself must fail").to.equal(undefined);
				const suggestion = suggestFrontmatter(content, "alpha", previous);
				expect(suggestion).to.be.a("string");
				const fixed = applySuggestion(content, suggestion ?? "");
				const check = checkSkillContent(fixed, "alpha");
				expect(check).to.deep.include({ name: "alpha", diagnostics: [] });
				expect(check.description).to.be.a("string").that.is.not.empty;
				expect(suggestFrontmatter(content, "alpha", previous), "deterministic").to.equal(suggestion);
			});
		}

		it("keeps the description's words, quoting them", function () {
			const suggestion = suggestFrontmatter(
				skill("name: alpha\ndescription: Use when: the deploy fails"),
				"alpha",
				undefined,
			);
			expect(suggestion).to.equal('---\nname: alpha\ndescription: "Use when: the deploy fails"\n---');
		});

		it("falls back to the previous description when the patch removed it", function () {
			const suggestion = suggestFrontmatter(skill("name: alpha"), "alpha", "Deploys alpha.");
			expect(suggestion).to.equal('---\nname: alpha\ndescription: "Deploys alpha."\n---');
		});

		it("replaces tabs at the start of a line with two spaces each", function () {
			const suggestion = suggestFrontmatter(
				skill("name: alpha\ndescription: d\nmetadata:\n\tauthor: me"),
				"alpha",
				undefined,
			);
			expect(suggestion).to.equal("---\nname: alpha\ndescription: d\nmetadata:\n  author: me\n---");
		});

		it("handles CRLF and a BOM in the broken file", function () {
			const content = `\uFEFF---\r\nname: alpha\r\ndescription: When: now\r\n---\r\n# Body\r\n`;
			expect(suggestFrontmatter(content, "alpha", undefined)).to.equal(
				'---\nname: alpha\ndescription: "When: now"\n---',
			);
		});

		it("offers nothing when there is no frontmatter to fix", function () {
			expect(suggestFrontmatter("# Just a body\n", "alpha", undefined)).to.equal(undefined);
			expect(suggestFrontmatter("---\nname: alpha\nno end", "alpha", undefined)).to.equal(undefined);
		});
	});
});
