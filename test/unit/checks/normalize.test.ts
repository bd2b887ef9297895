// The one normalisation every content check reads: NFKC, invisibles and soft hyphens dropped, non-ASCII
// look-alikes folded to the ASCII letters they imitate (never ASCII to ASCII), whitespace collapsed with
// line breaks kept one for one, case folded.
import { expect } from "chai";
import { foldLookAlikes, normalizeText } from "../../../src/checks/normalize.ts";

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
});
