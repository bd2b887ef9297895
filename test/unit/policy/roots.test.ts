// roots.ts: createRootFinder, findWritableRootOfReal answered once per folder, gives the plain search's
// answer for every path in any order: nested roots, a root that is a folder's entry, names starting
// with `..`, paths and roots that are not normal, the filesystem root; and isInsideNodeModules.
import { expect } from "chai";
import {
	createRootFinder,
	findWritableRootOfReal,
	isInsideNodeModules,
	type WritableRoot,
} from "../../../src/policy/roots.ts";

const root = (realPath: string): WritableRoot => ({ kind: "skills-dir", path: realPath, realPath });

/** A fixed shuffle (a linear congruential generator), so a failure can be replayed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
	const out = [...items];
	let state = seed;
	for (let i = out.length - 1; i > 0; i--) {
		state = (state * 1103515245 + 12345) % 2147483648;
		const j = state % (i + 1);
		[out[i], out[j]] = [out[j], out[i]];
	}
	return out;
}

/** Every folder and entry the roots name, with siblings that are roots, hold roots or lie beside them. */
const PATHS = [
	"/",
	"/t",
	"/t/a",
	"/t/a/x",
	"/t/a/y",
	"/t/a/..x",
	"/t/a/.hidden",
	"/t/a/.",
	"/t/a/..",
	"/t/a/x/",
	"/t/a//y",
	"/t//a/y",
	"/t/b",
	"/t/b/x",
	"/t/b/inner",
	"/t/b/inner/x",
	"/t/b/inner/..x",
	"/t/c/x",
	"/t/c/x/y",
	"/t/d/e/x",
	"/t/d/f/x",
	"/u/x",
	"/x",
];

const ROOT_SETS: ReadonlyArray<readonly WritableRoot[]> = [
	// A root, a root inside another, a root that is an entry of a folder no root holds, one beside them.
	[root("/t/a"), root("/t/b/inner"), root("/t/b"), root("/t/c/x"), root("/t/d/e")],
	// The nested root first: the first root holding the folder is the answer.
	[root("/t/b/inner"), root("/t/b"), root("/t/a/x")],
	// A root whose realPath is not normal (isWithin resolves it, the exclusion compares strings).
	[root("/t/a/"), root("/t/b//inner"), root("/t/c/x/")],
	// A root that a path which is not normal names (isWithin resolves the path, the exclusion does not).
	[root("/t/a/y"), root("/t/c/x")],
	[root("/")],
	[],
];

describe("roots: createRootFinder", function () {
	it("gives findWritableRootOfReal's answer for every path, asked in any order", function () {
		for (const [r, roots] of ROOT_SETS.entries()) {
			for (let seed = 1; seed <= 20; seed++) {
				const rootOf = createRootFinder(roots);
				// Each path asked twice: the second answer comes from the folder's memo.
				for (const path of shuffled([...PATHS, ...PATHS], seed * 31 + r)) {
					expect(rootOf(path), `${path} (roots ${r}, seed ${seed})`).to.equal(findWritableRootOfReal(roots, path));
				}
			}
		}
	});

	it("keys by the folder itself: entries of two folders under one parent get each folder's own answer", function () {
		const roots = [root("/t/d/e")];
		const rootOf = createRootFinder(roots);
		expect(rootOf("/t/d/e/x")).to.equal(roots[0]);
		expect(rootOf("/t/d/f/x")).to.equal(undefined);
		expect(rootOf("/t/d/e/y")).to.equal(roots[0]);
	});

	it("never answers for a root itself, though its folder's other entries lie in a root", function () {
		const roots = [root("/t/b/inner"), root("/t/b")];
		const rootOf = createRootFinder(roots);
		expect(rootOf("/t/b/x")).to.equal(roots[1]);
		// /t/b/inner is a root, but only /t/b holds it.
		expect(rootOf("/t/b/inner")).to.equal(roots[1]);
		const alone = [root("/t/c/x")];
		const aloneOf = createRootFinder(alone);
		expect(aloneOf("/t/c/x")).to.equal(undefined);
		expect(aloneOf("/t/c/x/y")).to.equal(alone[0]);
	});
});

describe("roots: isInsideNodeModules", function () {
	it("is true exactly when a whole segment is node_modules", function () {
		const cases: Record<string, boolean> = {
			"/a/node_modules/b": true,
			"/a/node_modules": true,
			"node_modules/b": true,
			node_modules: true,
			"/a//node_modules//b": true,
			"/a/node_modules_x/b": false,
			"/a/xnode_modules/b": false,
			"/a/node_module/b": false,
			"/": false,
			"": false,
		};
		for (const [path, inside] of Object.entries(cases)) expect(isInsideNodeModules(path), path).to.equal(inside);
	});
});
