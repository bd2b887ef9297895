// Every tool result is bounded: a diff of a huge one-line asset, the deletion of a 2 MB file, a
// dry run, a batch of many large files, a read of a folder of many files and a list of many skills
// each stop at the read limit and say what was cut; `details` carry no unbounded copy either.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { READ_CHAR_LIMIT, RESULT_CHAR_LIMIT } from "../../src/checks/content-guard.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, textOf, type Harness, type Result } from "../support/harness.ts";

/** The result text and the details, as pi would hand them to the model and the session file. */
function expectBounded(r: Result, what: string): void {
	expect(textOf(r).length, `${what}: text`).to.be.at.most(RESULT_CHAR_LIMIT + 200);
	expect(JSON.stringify(r.details).length, `${what}: details`).to.be.below(RESULT_CHAR_LIMIT + 20_000);
}

describe("hardening: output bounds", function () {
	this.timeout(60_000);
	const getEnv = useTempEnv({ prefix: "selfskills-bounds-" });
	let env: TempEnv;
	let tool: Harness;
	let dir: string;
	beforeEach(async function () {
		env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "deploy");
		dir = join(env.agentDir, "skills", "deploy");
		mkdirSync(join(dir, "assets"));
		tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "deploy" }));
	});

	it("cuts the diff of a one-word patch of a 300 KB one-line asset, and says so", async function () {
		writeFileSync(join(dir, "assets", "bundle.js"), `${"var x=1;".repeat(37_500)} end\n`);
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "assets/bundle.js" }));
		for (const dryRun of [true, false]) {
			const r = await tool.call({
				action: "patch",
				skill: "deploy",
				file: "assets/bundle.js",
				old_string: " end",
				new_string: " fin",
				...(dryRun ? { dry_run: true } : {}),
			});
			expectOk(r);
			expectBounded(r, `patch (dry run ${dryRun})`);
			expect(textOf(r), "the cut is named").to.match(/line cut: \d+ more characters/);
			expect(String(r.details.diff).length).to.be.at.most(READ_CHAR_LIMIT + 200);
		}
	});

	it("cuts the diff of deleting a 2 MB file at 30,000 characters, and says so", async function () {
		writeFileSync(join(dir, "assets", "log.txt"), "a line of an old log that nobody reads any more\n".repeat(42_000));
		for (const dryRun of [true, false]) {
			const r = await tool.call({
				action: "delete",
				skill: "deploy",
				file: "assets/log.txt",
				...(dryRun ? { dry_run: true } : {}),
			});
			expectOk(r);
			expectBounded(r, `delete (dry run ${dryRun})`);
			expect(String(r.details.diff)).to.match(/\[diff cut at 30000 of \d+ characters\]/);
		}
	});

	it("diffs no more files once the limit is reached, and counts the rest", async function () {
		const operations = Array.from({ length: 40 }, (_, i) => ({
			action: "write",
			skill: "deploy",
			file: `references/r${i}.md`,
			content: `line ${i}\n`.repeat(20_000),
		}));
		const r = await tool.call({ action: "operations", operations, dry_run: true });
		expectOk(r);
		expectBounded(r, "batch dry run");
		expect(textOf(r)).to.match(/\[\d+ more file\(s\) changed, not shown\]/);
	});

	it("shows a summary instead of a diff too costly to compute", async function () {
		const before = Array.from({ length: 20_000 }, (_, i) => `old ${i}`).join("\n");
		const after = Array.from({ length: 20_000 }, (_, i) => `new ${i}`).join("\n");
		writeFileSync(join(dir, "references.md"), `${before}\n`);
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references.md" }));
		const start = process.cpuUsage();
		const r = await tool.call({
			action: "write",
			skill: "deploy",
			file: "references.md",
			content: `${after}\n`,
			dry_run: true,
		});
		const used = process.cpuUsage(start);
		expectOk(r);
		expect(textOf(r)).to.contain("too many changes to show a diff: 20000 line(s) before, 20000 after");
		expect((used.user + used.system) / 1000, "CPU ms").to.be.below(1500);
	});

	it("lists at most 100 bundled files in a read, saying there are more", async function () {
		mkdirSync(join(dir, "references"));
		for (let i = 0; i < 600; i++)
			writeFileSync(join(dir, "references", `note-${String(i).padStart(4, "0")}-${"x".repeat(60)}.md`), "x\n");
		const r = await tool.call({ action: "read", skill: "deploy" });
		expectOk(r);
		expectBounded(r, "read");
		expect(textOf(r)).to.contain("… (more than 100)");
		expect((r.details.bundled as string[]).length).to.equal(100);
	});

	it("stops a list of many skills at the limit and says how to filter", async function () {
		for (let i = 0; i < 300; i++) {
			const name = `skill-${i}`;
			writeSkill(
				join(env.agentDir, "skills"),
				name,
				`---\nname: ${name}\ndescription: Use when ${"testing a long list ".repeat(20)}\n---\nBody.\n`,
			);
		}
		const r = await tool.call({ action: "list" });
		expectOk(r);
		expect(textOf(r).length).to.be.at.most(READ_CHAR_LIMIT + 200);
		expect(textOf(r)).to.match(
			/\[\d+ more skill\(s\) not shown; pass \{"action":"list","skill":"<part of a name>"\} to filter\]/,
		);
		expect(r.details.total).to.equal(301);
	});
});
