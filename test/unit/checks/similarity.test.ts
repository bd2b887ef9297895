// The near-duplicate score, calibrated on the real skills of the corpus: no real skill reaches the
// default threshold against another, and a reworded copy of each (new name, paraphrased description,
// test/fixtures/similarity-paraphrases.json) reaches it against its original; the score itself.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parseFrontmatter } from "@mariozechner/pi-coding-agent";
import { findSimilar, scoreAgainst, similarityScore, similarPairs, stem } from "../../../src/checks/similarity.ts";
import { DEFAULT_SIMILARITY } from "../../../src/policy/settings.ts";
import { REPO_ROOT } from "../../support/pi-line.ts";

const CORPUS = "/work/shared/corpus/real-skills";

function corpusCards(): Array<{ name: string; description: string; path: string }> {
	return readdirSync(CORPUS, { withFileTypes: true })
		.filter((d) => d.isDirectory())
		.flatMap((d) =>
			readdirSync(join(CORPUS, d.name), { withFileTypes: true })
				.filter((s) => s.isDirectory())
				.map((s) => join(CORPUS, d.name, s.name, "SKILL.md")),
		)
		.map((path) => {
			const fm = parseFrontmatter<Record<string, string>>(readFileSync(path, "utf8")).frontmatter;
			return { name: fm.name, description: fm.description, path };
		});
}

const paraphrases = JSON.parse(
	readFileSync(join(REPO_ROOT, "test", "fixtures", "similarity-paraphrases.json"), "utf8"),
) as Record<string, { name: string; description: string }>;

describe("the near-duplicate score", function () {
	it("finds no real skill of the corpus too similar to another", function () {
		const cards = corpusCards();
		expect(cards).to.have.length(20);
		const pairs = similarPairs(cards, 0);
		expect(pairs[0].score, `${pairs[0].a.name} ~ ${pairs[0].b.name}`).to.be.below(DEFAULT_SIMILARITY);
		expect(similarPairs(cards, DEFAULT_SIMILARITY)).to.deep.equal([]);
	});

	it("finds a reworded copy of every real skill too similar to its original, and to no other", function () {
		const cards = corpusCards();
		for (const card of cards) {
			const copy = paraphrases[card.name];
			expect(copy, card.name).to.not.equal(undefined);
			expect(copy.name).to.not.equal(card.name);
			const similar = findSimilar(copy, cards, DEFAULT_SIMILARITY);
			expect(
				similar.map((s) => s.name),
				`${copy.name}: ${scoreAgainst(copy, cards).map((s) => s.toFixed(2))}`,
			).to.deep.equal([card.name]);
		}
	});

	it("scores the same text 1, unrelated text 0, and folds inflections and case", function () {
		const a = { name: "deploy-checks", description: "Use when deploying the app. Lists the checks to run." };
		expect(similarityScore(a, a)).to.be.closeTo(1, 1e-9);
		expect(similarityScore(a, { name: "pdf-merge", description: "Merges PDF files into one." })).to.equal(0);
		const b = { name: "deployment-check", description: "USE WHEN DEPLOYING THE APPS; lists checks that are run." };
		expect(similarityScore(a, b)).to.be.above(0.8);
		expect(stem("creating")).to.equal(stem("creates"));
		expect(stem("created")).to.equal(stem("create"));
	});

	it("scores a copy padded with zero-width spaces or spelled with look-alikes as the plain copy", function () {
		const cards = corpusCards();
		const original = cards.find((c) => c.name === "gmcli")!;
		const plain = { name: "mail-helper", description: original.description };
		const padded = { ...plain, description: [...original.description].join("\u200B") };
		// Cyrillic а, е, о, р, с and Greek ο for their Latin twins, soft hyphens inside words.
		const lookAlike = {
			...plain,
			description: original.description
				.replace(/a/g, "\u0430")
				.replace(/e/g, "\u0435")
				.replace(/o/g, "\u03BF")
				.replace(/p/g, "\u0440")
				.replace(/c/g, "\u0441")
				.replace(/(\w{3})(\w{3})/g, "$1\u00AD$2"),
		};
		const score = similarityScore(plain, original, cards);
		expect(score).to.be.at.least(DEFAULT_SIMILARITY);
		for (const copy of [padded, lookAlike]) {
			expect(copy.description).to.not.equal(original.description);
			expect(similarityScore(copy, original, cards)).to.equal(score);
			expect(findSimilar(copy, cards, DEFAULT_SIMILARITY).map((s) => s.name)).to.include("gmcli");
		}
	});

	it("leaves out the skill's own name and those it says it differs from", function () {
		const cards = corpusCards();
		const copy = paraphrases.gmcli;
		expect(findSimilar(copy, cards, DEFAULT_SIMILARITY, ["gmcli"])).to.deep.equal([]);
		expect(findSimilar({ ...copy, name: "gmcli" }, cards, DEFAULT_SIMILARITY)).to.deep.equal([]);
	});

	it("scores a 1,000-skill library quickly", function () {
		const cards = Array.from({ length: 1000 }, (_, i) => ({
			name: `skill-${i}`,
			description: `Use when working on component ${i} of service ${i % 37}: build, deploy with tool${i % 91}.`,
		}));
		const start = process.cpuUsage();
		findSimilar({ name: "new-one", description: "Use when deploying service 3 with tool7." }, cards, 0.37);
		const used = process.cpuUsage(start);
		expect((used.user + used.system) / 1000).to.be.below(200);
	});
});
