// The one normalisation every content check reads: NFKC, invisibles and soft hyphens dropped, non-ASCII
// look-alikes folded to the ASCII letters they imitate (never ASCII to ASCII), whitespace collapsed with
// line breaks kept one for one, case folded.
import { expect } from "chai";
import { foldLookAlikes, normalizeCased, normalizeLines, normalizeText } from "../../../src/checks/normalize.ts";

describe("the content normalisation", function () {
	it("folds small capitals, Cyrillic, Greek and full-width look-alikes to ASCII letters", function () {
		expect(normalizeText("\u1D04url")).to.equal("curl");
		expect(normalizeText("\u0280\u1D0D -\u0280\uA730")).to.equal("rm -rf");
		expect(normalizeText("\u0441url \u0455h")).to.equal("curl sh");
		expect(normalizeText("n\u03BFde \u0392ASH")).to.equal("node bash");
		expect(normalizeText("\uFF43\uFF55\uFF52\uFF4C")).to.equal("curl");
	});

	it("drops zero-width and soft-hyphen padding", function () {
		expect(normalizeText("de\u200Bp\u200Dlo\u00ADy\u2060")).to.equal("deploy");
	});

	it("never folds ASCII: a pipe stays a pipe, digits stay digits", function () {
		expect(normalizeText("curl x | sh 0 m rn")).to.equal("curl x | sh 0 m rn");
		expect(foldLookAlikes("|0Il")).to.equal("|0Il");
	});

	it("collapses spaces but keeps every line break, so line numbers hold", function () {
		expect(normalizeText("a  \t b\r\nc\rd\n\n  e")).to.equal("a b\nc\nd\n\ne");
		const text = "one\n\u200B\ntwo\r\n\u00AD\nthree";
		expect(normalizeText(text).split("\n")).to.have.length(text.split(/\r\n?|\n/).length);
	});

	it("reads a line of symbols next to ASCII as the full normalisation does, whichever it takes", function () {
		// A line whose characters past ASCII are inert symbols skips NFKC and the look-alikes; the result
		// must be the full one (NFKC, invisibles dropped, folded, lower case, folded) for every symbol.
		const full = (line: string) => foldLookAlikes(normalizeCased(line).toLowerCase());
		const ranges: Array<[number, number]> = [
			[0x2000, 0x2bff],
			[0x1f000, 0x1fbff],
		];
		let checked = 0;
		for (const [from, to] of ranges)
			for (let code = from; code <= to; code++) {
				const c = String.fromCodePoint(code);
				if (/\s/.test(c)) continue; // a space collapses: not what is compared here
				for (const line of [`Ab${c}=X`, `<${c}`, `${c}${c}K`, `${c}\u0338q`, `\u2014${c}\u200Bz`]) {
					expect(normalizeLines(line)[0], `U+${code.toString(16)} in ${JSON.stringify(line)}`).to.equal(
						full(line),
					);
					checked++;
				}
			}
		expect(checked).to.be.greaterThan(20_000);
		// The same lines given already split (as the risk scan passes them) read the same.
		const text = "A\u2192b\r\n\u0421url \u2014 x\n\u2500\u2500";
		expect(normalizeLines(text, text.split(/\r\n?|\n/))).to.deep.equal(normalizeLines(text));
	});
});
