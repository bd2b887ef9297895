// src/base/paths.ts isWithin: the fast segment comparison for normal absolute paths agrees with the
// path.relative definition on every path, normal or not (random paths with `.`, `..`, `..x`,
// doubled and trailing separators, relative ones), seeded so a failure can be replayed.
import { isAbsolute, relative } from "node:path";
import { expect } from "chai";
import { isWithin } from "../../../src/base/paths.ts";
import { createRandom } from "../../support/random.ts";

/** The definition: `child` is `parent` or below it, after resolving both. */
function reference(parent: string, child: string): boolean {
	const rel = relative(parent, child);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

describe("paths (src/base/paths.ts)", function () {
	it("isWithin agrees with the path.relative definition on 100,000 random path pairs", function () {
		const next = createRandom(17);
		const parts = ["a", "b", "..", ".", "..x", ".x", "", "ab", "a b", "a.."];
		const path = () => {
			const head = next(10) === 0 ? "" : "/";
			const body = Array.from({ length: next(5) }, () => parts[next(parts.length)]).join("/");
			return `${head}${body}${next(8) === 0 ? "/" : ""}` || "/";
		};
		const differ: string[] = [];
		for (let i = 0; i < 100_000; i++) {
			const parent = path();
			const child = next(3) === 0 ? `${parent}/${path()}` : path();
			if (isWithin(parent, child) !== reference(parent, child)) differ.push(`${parent} ~ ${child}`);
		}
		expect(differ.slice(0, 5)).to.deep.equal([]);
	});

	it("compares whole segments, never a string prefix", function () {
		expect(isWithin("/a/skills", "/a/skills")).to.equal(true);
		expect(isWithin("/a/skills", "/a/skills/x/SKILL.md")).to.equal(true);
		expect(isWithin("/a/skills", "/a/skills-evil/x")).to.equal(false);
		expect(isWithin("/", "/anything")).to.equal(true);
		expect(isWithin("/a/skills", "/a/skills/../other")).to.equal(false);
	});
});
