// What `npm pack` ships: the extension entries of package.json "pi" and every module they import, the
// skills, README and the docs/*.md it links, CHANGELOG, LICENSE and package.json — and nothing else (no
// tests, fixtures, bench, .ci, screenshots or their scripts).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { expect } from "chai";
import { BUILT_START } from "../../src/selfskills.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import { runNpm } from "../support/registry.ts";

interface Manifest {
	files: string[];
	pi: { extensions: string[]; skills: string[]; image?: string };
	dependencies: Record<string, string>;
}

const DOCUMENTS = [
	"package.json",
	"README.md",
	"CHANGELOG.md",
	"LICENSE",
	...readdirSync(join(REPO_ROOT, "docs"))
		.filter((name) => name.endsWith(".md"))
		.map((name) => join("docs", name)),
];
/** Relative module specifiers in import/export statements, dynamic imports included. */
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;

/** What pi loads: the extension entries, and the two start-up modules the entry picks from by path. */
function loadedEntries(manifest: Manifest): string[] {
	return [...manifest.pi.extensions, BUILT_START, "src/index.ts"];
}

function readManifest(): Manifest {
	return JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as Manifest;
}

function packedFiles(): string[] {
	const stdout = runNpm(["pack", "--dry-run", "--json"], { cwd: REPO_ROOT });
	const [entry] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>;
	return entry.files.map((file) => file.path).sort();
}

/** The entry files and every module reachable from them through relative imports (repo-relative paths). */
function importClosure(entries: readonly string[]): Set<string> {
	const seen = new Set<string>();
	const pending = entries.map((entry) => normalize(entry));
	while (pending.length > 0) {
		const file = pending.pop() as string;
		if (seen.has(file)) continue;
		seen.add(file);
		const source = readFileSync(join(REPO_ROOT, file), "utf8");
		for (const match of source.matchAll(RELATIVE_IMPORT)) pending.push(normalize(join(dirname(file), match[1])));
	}
	return seen;
}

function filesUnder(dir: string): string[] {
	return readdirSync(join(REPO_ROOT, dir), { recursive: true, encoding: "utf8" })
		.map((name) => join(dir, name))
		.filter((path) => statSync(join(REPO_ROOT, path)).isFile());
}

describe("npm pack: what the published package holds", function () {
	this.timeout(60000);
	let packed: string[];
	let manifest: Manifest;

	before(function () {
		packed = packedFiles();
		manifest = readManifest();
	});

	it("ships every extension entry of package.json and every module it imports", function () {
		const needed = importClosure(loadedEntries(manifest));
		expect(needed.size).to.be.greaterThan(loadedEntries(manifest).length);
		for (const file of needed)
			expect(existsSync(join(REPO_ROOT, file)), `${file} is imported but missing`).to.equal(true);
		expect([...needed].filter((file) => !packed.includes(file))).to.deep.equal([]);
	});

	it("ships the doc-skill and the documents a user reads, every docs/ link of the README among them", function () {
		const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
		const linked = [...readme.matchAll(/\]\((docs\/[^)#\s]+\.md)/g)].map((m) => m[1]);
		expect(linked.length).to.be.greaterThan(0);
		for (const doc of linked) expect(DOCUMENTS, `${doc} is linked from the README`).to.include(doc);
		const skills = manifest.pi.skills.flatMap((dir) => filesUnder(normalize(dir)));
		expect(skills).to.include(join("skills", "selfskills", "SKILL.md"));
		expect([...skills, ...DOCUMENTS].filter((file) => !packed.includes(file))).to.deep.equal([]);
	});

	it("ships nothing else: no module it never imports, no tests, fixtures, bench, .ci or screenshots", function () {
		const wanted = new Set([
			...importClosure(loadedEntries(manifest)),
			...manifest.pi.skills.flatMap((dir) => filesUnder(normalize(dir))),
			...DOCUMENTS,
		]);
		expect(packed.filter((file) => !wanted.has(file))).to.deep.equal([]);
		expect(
			packed.filter(
				(file) =>
					/^(test|bench|\.ci|node_modules)\//.test(file) ||
					/\.test\.ts$/.test(file) ||
					(file.startsWith("docs/") && !file.endsWith(".md")),
			),
		).to.deep.equal([]);
	});

	it("names no placeholder or made-up URL: no homepage, repository, bugs or gallery image yet", function () {
		const text = readFileSync(join(REPO_ROOT, "package.json"), "utf8");
		expect(text).not.to.contain("OWNER");
		const raw = JSON.parse(text) as Record<string, unknown>;
		expect(Object.keys(raw)).not.to.include.members(["homepage", "repository", "bugs"]);
		// pi's gallery takes an image by URL only (docs/packages.md "Gallery Metadata"); there is none to name yet
		expect(manifest.pi).not.to.have.property("image");
	});

	it("keeps the runtime dependencies to what src imports, and the pi peers out of them", function () {
		const imported = new Set<string>();
		for (const file of importClosure(loadedEntries(manifest))) {
			const source = readFileSync(join(REPO_ROOT, file), "utf8");
			// Static imports, and what a module loads on first use through createRequire (normalize.ts's table).
			const loads = new RegExp(
				String.raw`^\s*import\s(?!type\s)[^;]*?from\s*["']([^"'.][^"']*)["']|` +
					String.raw`createRequire\([^)]*\)\(\s*["']([^"'.][^"']*)["']`,
				"gm",
			);
			for (const match of source.matchAll(loads)) {
				const id = match[1] ?? match[2];
				const name = id.startsWith("@") ? id.split("/").slice(0, 2).join("/") : id.split("/")[0];
				if (!name.startsWith("node:")) imported.add(name);
			}
		}
		const peers = ["@mariozechner/pi-ai", "@mariozechner/pi-coding-agent", "@mariozechner/pi-tui", "typebox"];
		expect(Object.keys(manifest.dependencies).sort()).to.deep.equal(
			[...imported].filter((name) => !peers.includes(name)).sort(),
		);
	});
});
