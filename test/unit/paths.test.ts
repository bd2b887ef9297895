// src/paths.ts isWithin: the fast segment comparison for normal absolute paths agrees with the
// path.relative definition on every path, normal or not (random paths with `.`, `..`, `..x`,
// doubled and trailing separators, relative ones), seeded so a failure can be replayed.
import { isAbsolute, relative } from "node:path";
import { expect } from "chai";
import { isWithin } from "../../src/paths.ts";

/** The definition: `child` is `parent` or below it, after resolving both. */
function reference(parent: string, child: string): boolean {
	const rel = relative(parent, child);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** mulberry32: a small seeded generator. */
function random(seed: number): (n: number) => number {
	let a = seed;
	return (n) => {
		a = (a + 0x6d2b79f5) | 0;
		let t = Math.imul(a ^ (a >>> 15), 1 | a);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
	};
}

describe("paths (src/paths.ts)", function () {
	it("isWithin agrees with the path.relative definition on 100,000 random path pairs", function () {
		const next = random(17);
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
