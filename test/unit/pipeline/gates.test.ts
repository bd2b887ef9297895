// gates.ts: each gate's refusal code and the data behind it, exact replacement, and (through the
// tool) that a patch changes only the replaced bytes: BOM, CRLF, trailing spaces and odd Unicode stay.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "chai";
import type { DiscoveredSkill } from "../../../src/policy/discovery.ts";
import type { Refusal } from "../../../src/base/errors.ts";
import {
	checkOldString,
	checkRead,
	checkUnchanged,
	checkUnique,
	closestLines,
	findAll,
	replaceExact,
} from "../../../src/pipeline/gates.ts";
import { createReadLedger } from "../../../src/store/read-ledger.ts";
import type { FileTarget } from "../../../src/policy/target.ts";
import { createRandom } from "../../support/random.ts";
import { useTempEnv } from "../../support/temp-env.ts";
import { skillText, writeSkill } from "../../support/fixtures.ts";
import { createHarness } from "../../support/harness.ts";

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

function target(dir: string, rel = "SKILL.md"): FileTarget {
	const skill: DiscoveredSkill = {
		name: "alpha",
		description: "d",
		filePath: join(dir, "SKILL.md"),
		dir,
		origin: { kind: "auto", scope: "user" },
		patchable: true,
		reason: undefined,
	};
	return { skill, relPath: rel, absPath: join(dir, rel), isSkillFile: rel === "SKILL.md" };
}

function expectCode(refusal: Refusal | undefined, code: string): Refusal {
	expect(refusal?.code).to.equal(code);
	expect(refusal?.message.startsWith(`${code}: `)).to.equal(true);
	return refusal as Refusal;
}

describe("gates", function () {
	describe("one by one", function () {
		it("gate 1 refuses an empty old_string with empty_old_string", function () {
			expectCode(checkOldString("", "x"), "empty_old_string");
		});

		it("gate 1 refuses an old_string equal to new_string with no_change", function () {
			expect(expectCode(checkOldString("same", "same"), "no_change").message).to.contain("new_string");
			expect(checkOldString("a", "b")).to.equal(undefined);
		});

		it("gate 2 refuses a SKILL.md not read this session with not_read and the read call to make", function () {
			const t = target("/s/alpha");
			const refusal = expectCode(checkRead(createReadLedger(), t), "not_read");
			expect(refusal.data).to.deep.equal({ path: "/s/alpha/SKILL.md", skill: "alpha", file: "SKILL.md" });
			expect(refusal.message).to.contain('{"action":"read","skill":"alpha"}');
		});

		it("gate 2 refuses a bundled file that was not read even when SKILL.md was", function () {
			const ledger = createReadLedger();
			ledger.record("/s/alpha/SKILL.md", "h");
			const refusal = expectCode(checkRead(ledger, target("/s/alpha", "references/api.md")), "not_read");
			expect(refusal.data).to.deep.include({ file: "references/api.md" });
			expect(refusal.message).to.contain('"file":"references/api.md"');
		});

		it("gate 2 does not let reading a bundled file unlock its skill", function () {
			const ledger = createReadLedger();
			ledger.record("/s/alpha/references/api.md", "h");
			expect(expectCode(checkRead(ledger, target("/s/alpha", "references/api.md")), "not_read").data.file).to.equal(
				"SKILL.md",
			);
		});

		it("gate 3 refuses a changed file with stale and both hashes", function () {
			const ledger = createReadLedger();
			ledger.record("/s/alpha/SKILL.md", "a".repeat(64));
			const refusal = expectCode(checkUnchanged(ledger, target("/s/alpha"), "b".repeat(64)), "stale");
			expect(refusal.data).to.deep.equal({
				path: "/s/alpha/SKILL.md",
				readHash: "a".repeat(64),
				currentHash: "b".repeat(64),
			});
			expect(checkUnchanged(ledger, target("/s/alpha"), "a".repeat(64))).to.equal(undefined);
		});

		it("gate 3 reports a deleted file as stale", function () {
			const ledger = createReadLedger();
			ledger.record("/s/alpha/SKILL.md", "a".repeat(64));
			expect(expectCode(checkUnchanged(ledger, target("/s/alpha"), null), "stale").data.currentHash).to.equal(
				"(deleted)",
			);
		});

		it("gate 5 refuses a repeated old_string with not_unique, the count and the line numbers", function () {
			const text = "one\nstep\ntwo\nstep\nthree\nstep\n";
			const refusal = expectCode(checkUnique(text, "step", false, "/p"), "not_unique");
			expect(refusal.data).to.deep.equal({ path: "/p", count: 3, lines: [2, 4, 6] });
			expect(refusal.message).to.contain("lines 2, 4, 6").and.contain('"replace_all": true');
			expect(checkUnique(text, "step", true, "/p")).to.equal(undefined);
		});

		it("gate 5 refuses a missing old_string with not_found and the closest lines with their numbers", function () {
			const text = "# Deploy\n\nRun npm run build first.\nThen run npm test.\nUnrelated line here.\n";
			const refusal = expectCode(checkUnique(text, "Run npm run built first.", false, "/p"), "not_found");
			const closest = refusal.data.closest as Array<{ line: number; text: string }>;
			expect(closest[0]).to.deep.equal({ line: 3, text: "Run npm run build first." });
			expect(refusal.message).to.contain("  3: Run npm run build first.");
		});

		it("gate 5 tells the model to write \\r\\n when the file uses CRLF and old_string has bare LF", function () {
			const text = "line one\r\nline two\r\n";
			const refusal = expectCode(checkUnique(text, "line one\nline two", false, "/p"), "not_found");
			expect(refusal.message).to.contain("CRLF line endings");
			const closest = refusal.data.closest as Array<{ line: number; text: string }>;
			expect(closest[0]).to.deep.equal({ line: 1, text: "line one" });
			expect(checkUnique(text, "line one\r\nline two", false, "/p")).to.equal(undefined);
		});

		it("finds no closest lines when nothing resembles old_string", function () {
			expect(closestLines("alpha\nbeta\n", "zzzz qqqq")).to.deep.equal([]);
		});
	});

	describe("replaceExact", function () {
		it("takes $&, $1, $$ and $` in new_string literally", function () {
			expect(replaceExact("a X b", "X", "$& $1 $$ $` $'", false)).to.equal("a $& $1 $$ $` $' b");
			expect(replaceExact("X X", "X", "$&", true)).to.equal("$& $&");
		});

		it("replaces only the first occurrence unless replace_all is set", function () {
			expect(replaceExact("x.x.x", "x", "y", false)).to.equal("y.x.x");
			expect(replaceExact("x.x.x", "x", "y", true)).to.equal("y.y.y");
		});
	});

	describe("the search, linear and bounded", function () {
		it("agrees with a naive search on overlapping, repeated and self-similar needles", function () {
			const naive = (text: string, needle: string, overlapping: boolean) => {
				const hits: number[] = [];
				for (
					let i = text.indexOf(needle);
					i !== -1;
					i = text.indexOf(needle, i + (overlapping ? 1 : needle.length))
				)
					hits.push(i);
				return hits;
			};
			const texts = ["aaaaaa", "abababab", "abaababaabaab", "aabaabaaab\naab", "xyz", "🙂🙂a🙂"];
			const needles = ["a", "aa", "aaa", "ab", "aba", "abaab", "aab", "b", "xyzx", "🙂", "🙂a"];
			for (const text of texts) {
				for (const needle of needles) {
					expect(findAll(text, needle), `${text} / ${needle}`).to.deep.equal(naive(text, needle, false));
					const unique = checkUnique(text, needle, false, "/p");
					const overlapping = naive(text, needle, true);
					if (overlapping.length === 0) expect(unique?.code).to.equal("not_found");
					else if (overlapping.length === 1) expect(unique).to.equal(undefined);
					else expect(unique?.data.count, `${text} / ${needle}`).to.equal(overlapping.length);
				}
			}
			expect(replaceExact("aaaaa", "aa", "b", true)).to.equal("bba");
			expect(replaceExact("xab", "ab", "", false)).to.equal("x");
		});

		it("lists at most 20 distinct line numbers of a not_unique, with the exact count", function () {
			const refusal = expectCode(checkUnique("x x\n".repeat(50), "x", false, "/p"), "not_unique");
			expect(refusal.data.count).to.equal(100);
			expect(refusal.data.lines).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 1));
		});

		it("finds the closest line to a 1 MiB old_string's first line, and escapes control characters", function () {
			const text = "# Deploy\n\nRun \u001b[31mnpm\u001b[0m run build first.\u0007\nThen run npm test.\n";
			const oldString = `Run npm run build first.\n${"junk ".repeat(200_000)}`;
			const closest = closestLines(text, oldString);
			expect(closest[0]).to.deep.equal({ line: 3, text: "Run \\u001b[31mnpm\\u001b[0m run build first.\\u0007" });
			const refusal = expectCode(checkUnique(text, `\u001b]0;x\u0007${oldString}`, false, "/p"), "not_found");
			expect(/[\u0000-\u0008\u000B-\u001F]/.test(refusal.message), refusal.message).to.equal(false);
		});
	});

	describe("byte-exactness through the tool", function () {
		const getEnv = useTempEnv();

		it("keeps a BOM, CRLF, trailing spaces and odd Unicode outside the replaced span of a file", async function () {
			const { agentDir, projectDir } = getEnv();
			const original = Buffer.from(
				"\uFEFFTitle  \r\n\ttabbed\t\r\nfix me\r\nnbsp\u00a0here, e\u0301 vs \u00e9, \u{1F600}, \uFFFD, " +
					"\u2028sep  \r\nend without newline",
				"utf8",
			);
			const dir = dirname(
				writeSkill(join(agentDir, "skills"), "alpha", skillText("alpha"), { "references/notes.md": original }),
			);
			const tool = createHarness({ agentDir, projectDir });
			expect((await tool.call({ action: "read", skill: "alpha" })).ok).to.equal(true);
			expect((await tool.call({ action: "read", skill: "alpha", file: "references/notes.md" })).ok).to.equal(true);
			const result = await tool.call({
				action: "patch",
				skill: "alpha",
				file: "references/notes.md",
				old_string: "fix me",
				new_string: "fixed $& $1",
			});
			expect(result.code, result.text).to.equal(undefined);
			const expected = Buffer.from(
				original.toString("utf8").replace("fix me", () => "fixed $& $1"),
				"utf8",
			);
			expect(readFileSync(join(dir, "references", "notes.md")).equals(expected)).to.equal(true);
			expect(
				readFileSync(join(dir, "references", "notes.md"))
					.subarray(0, 3)
					.equals(Buffer.from([0xef, 0xbb, 0xbf])),
			).to.equal(true);
		});

		it("keeps CRLF line endings and trailing spaces of SKILL.md outside the replaced span", async function () {
			const { agentDir, projectDir } = getEnv();
			const original =
				"---\r\nname: alpha\r\ndescription: Use when testing alpha.  \r\n---\r\n" +
				"# Alpha  \r\n\r\nStep one.\t\r\nStep two.\r\n";
			const dir = dirname(writeSkill(join(agentDir, "skills"), "alpha", original));
			const tool = createHarness({ agentDir, projectDir });
			await tool.call({ action: "read", skill: "alpha" });
			const result = await tool.call({
				action: "patch",
				skill: "alpha",
				old_string: "Step two.",
				new_string: "Step two, done.",
			});
			expect(result.code, result.text).to.equal(undefined);
			expect(readFileSync(join(dir, "SKILL.md"), "utf8")).to.equal(original.replace("Step two.", "Step two, done."));
		});

		it("refuses to patch a file that is not valid UTF-8 instead of repairing it", async function () {
			const { agentDir, projectDir } = getEnv();
			const bytes = Buffer.concat([Buffer.from("ok line\n"), Buffer.from([0xc3, 0x28]), Buffer.from("\n")]);
			const dir = dirname(
				writeSkill(join(agentDir, "skills"), "alpha", skillText("alpha"), { "references/latin1.md": bytes }),
			);
			const tool = createHarness({ agentDir, projectDir });
			await tool.call({ action: "read", skill: "alpha" });
			const read = await tool.call({ action: "read", skill: "alpha", file: "references/latin1.md" });
			expect(read.code).to.equal("binary_file");
			expect(readFileSync(join(dir, "references", "latin1.md")).equals(bytes)).to.equal(true);
		});

		it("records the new hash after a landed patch, so the read ledger matches the file", async function () {
			const { agentDir, projectDir } = getEnv();
			const dir = dirname(
				writeSkill(join(agentDir, "skills"), "alpha", skillText("alpha", "# alpha\n\nStep one.\n")),
			);
			const tool = createHarness({ agentDir, projectDir });
			await tool.call({ action: "read", skill: "alpha" });
			await tool.call({ action: "patch", skill: "alpha", old_string: "Step one.", new_string: "Step 1." });
			expect(tool.state.ledger.get(join(dir, "SKILL.md"))).to.equal(sha(readFileSync(join(dir, "SKILL.md"))));
		});
	});
});

describe("gate 5's search (src/pipeline/gates.ts checkUnique, replaceExact)", function () {
	/** Every overlapping start index, the slow obvious way. */
	function naiveHits(text: string, needle: string): number[] {
		const hits: number[] = [];
		for (let i = 0; i + needle.length <= text.length; i++) if (text.startsWith(needle, i)) hits.push(i);
		return hits;
	}

	it("agrees with a naive search on 20,000 seeded random cases, needles short and past 250 characters", function () {
		const next = createRandom(11);
		const word = (length: number) => Array.from({ length }, () => "ab\n"[next(3)]).join("");
		for (let round = 0; round < 20_000; round++) {
			const long = next(20) === 0;
			const needle = long ? `${"a".repeat(240 + next(30))}${word(next(4))}` : word(1 + next(5));
			const text = long
				? `${word(next(40))}${next(2) ? needle : ""}${word(next(40))}${next(3) ? "" : needle}`
				: word(next(60));
			const hits = naiveHits(text, needle);
			const refusal = checkUnique(text, needle, false, "/x");
			const expected = hits.length === 0 ? "not_found" : hits.length > 1 ? "not_unique" : undefined;
			expect(refusal?.code, JSON.stringify({ text, needle })).to.equal(expected);
			if (refusal?.code === "not_unique") expect(refusal.data.count).to.equal(hits.length);
			if (hits.length === 1) {
				const replaced = `${text.slice(0, hits[0])}X${text.slice(hits[0] + needle.length)}`;
				expect(replaceExact(text, needle, "X", false)).to.equal(replaced);
			}
			expect(checkUnique(text, needle, true, "/x")?.code).to.equal(hits.length === 0 ? "not_found" : undefined);
		}
	});
});
