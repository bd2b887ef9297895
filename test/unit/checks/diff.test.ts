// src/checks/diff.ts: a file is diffed only where it changed (the span that differs, widened to whole
// lines and three lines of context), with the hunk headers moved to the file's own line numbers. The
// patch it prints must be one `patch`/jsdiff applies to the old text to get the new one, and for a
// change with one obvious alignment, exactly the diff of the whole file.
import { applyPatch, createTwoFilesPatch } from "diff";
import { expect } from "chai";
import { diffChange } from "../../../src/checks/diff.ts";
import { createRandom } from "../../support/random.ts";
import type { FileChange } from "../../../src/pipeline/types.ts";

function change(before: string, after: string): FileChange {
	return {
		skill: "s",
		relPath: "SKILL.md",
		absPath: "/x/s/SKILL.md",
		before: Buffer.from(before),
		after: Buffer.from(after),
	};
}

/** jsdiff's diff of the two whole texts, as diffChange names and prints them. */
function wholeFileDiff(before: string, after: string): string {
	return createTwoFilesPatch("a/s/SKILL.md", "b/s/SKILL.md", before, after, undefined, undefined, {
		context: 3,
	}).replace(/^=+\n/, "");
}

describe("diff (src/checks/diff.ts)", function () {
	const big = Array.from({ length: 3000 }, (_, i) => `line ${i}: ${"x".repeat(i % 40)}`).join("\n");

	it("prints the whole-file diff of a one-line change in a large file, with the file's own line numbers", function () {
		for (const [i, tail] of [
			[1500, "\n"],
			[0, "\n"],
			[2999, "\n"],
			[2999, ""],
		] as const) {
			const before = `${big}${tail}`;
			const lines = before.split("\n");
			lines[i] = `${lines[i]} changed`;
			const after = lines.join("\n");
			const whole = wholeFileDiff(before, after);
			expect(diffChange(change(before, after)), `line ${i}`).to.equal(whole);
		}
	});

	it("shows a change at the very first byte, above an empty first line, and multi-byte characters whole", function () {
		const body = `${"é ünïcode line\n".repeat(3000)}`;
		for (const [before, after] of [
			[`\n${body}`, `X\n${body}`],
			[`\n\n${body}`, `\nX\n${body}`],
			[`${body}ü`, `${body}ö`],
			[`a\n${body}`, `${body}`],
		]) {
			const whole = wholeFileDiff(before, after);
			expect(diffChange(change(before, after))).to.equal(whole);
			expect(applyPatch(before, diffChange(change(before, after)))).to.equal(after);
		}
	});

	it("prints the whole-file diff of a one-line change in a SKILL.md of a few KiB", function () {
		const small = Array.from({ length: 60 }, (_, i) => `${i + 1}. Check item ${i + 1} and note it.`).join("\n");
		for (const i of [0, 1, 3, 30, 56, 59]) {
			const before = `${small}\n`;
			const lines = before.split("\n");
			lines[i] = `${lines[i]} changed`;
			const after = lines.join("\n");
			const whole = wholeFileDiff(before, after);
			expect(diffChange(change(before, after)), `line ${i}`).to.equal(whole);
		}
	});

	for (const [size, lineCount, seed] of [
		["a large file", 2000, 5],
		["a small file", 5, 6],
	] as const)
		it(`prints a patch that turns the old text into the new one, for 300 random edits of ${size}`, function () {
			const next = createRandom(seed);
			const words = ["alpha", "beta", "", "gamma", "alpha", "delta", "  "];
			for (let round = 0; round < 300; round++) {
				const lines = Array.from(
					{ length: lineCount + next(lineCount === 2000 ? 500 : 60) },
					() => words[next(words.length)] + (next(4) === 0 ? ` ${next(9)}` : ""),
				);
				const before = lines.join("\n") + (next(2) === 0 ? "\n" : "");
				const edited = [...lines];
				for (let k = 0, edits = 1 + next(3); k < edits; k++) {
					const at = next(edited.length);
					const kind = next(3);
					if (kind === 0) edited.splice(at, 1);
					else if (kind === 1) edited.splice(at, 0, `new ${next(100)}`);
					else edited[at] = `${edited[at]}!`;
				}
				const after = edited.join("\n") + (next(2) === 0 ? "\n" : "");
				if (after === before) continue;
				const patch = diffChange(change(before, after));
				expect(applyPatch(before, patch), `round ${round}`).to.equal(after);
			}
		});
});
