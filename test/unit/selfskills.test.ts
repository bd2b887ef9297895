// selfskills.ts, the entry: before the wiring loads, every npm dependency is looked up (not loaded),
// since most modules load at first use and a missing one would otherwise fail mid-session; the wiring
// comes from dist/start.ts only while that is built from the sources as they are.
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { buildStart } from "../support/build-start.ts";
import { BUILT_START, missingDependency, readBuiltHeader, startModule } from "../../src/selfskills.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import { useTempEnv } from "../support/temp-env.ts";

describe("the entry's dependency check", function () {
	const getEnv = useTempEnv();

	it("finds every dependency of this checkout", function () {
		expect(missingDependency(REPO_ROOT)).to.equal(undefined);
	});

	it("names the first dependency, in package.json order, that is not installed", function () {
		const dir = join(getEnv().root, "bare");
		mkdirSync(dir);
		const dependencies = { "selfskills-absent-one": "1.0.0", "selfskills-absent-two": "1.0.0" };
		writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "bare", dependencies }));
		expect(missingDependency(dir)).to.equal("selfskills-absent-one");
	});
});

describe("the entry's start-up module", function () {
	this.timeout(30000);
	const getEnv = useTempEnv();

	/** A copy of this checkout's sources and built start-up module. */
	function copyPackage(): string {
		const dir = join(getEnv().root, "package");
		for (const part of ["src", "dist"]) cpSync(join(REPO_ROOT, part), join(dir, part), { recursive: true });
		return dir;
	}

	it("is built from the sources as they are (run `npm run build` after changing one)", async function () {
		expect(await buildStart(), `${BUILT_START} is stale: run \`npm run build\``).to.equal(
			readFileSync(join(REPO_ROOT, BUILT_START), "utf8"),
		);
	});

	it("holds index.ts and what it imports, not the working half", function () {
		const sources = readBuiltHeader(readFileSync(join(REPO_ROOT, BUILT_START), "utf8"))?.sources;
		expect(sources).to.include.members(["src/index.ts", "src/policy/settings.ts", "src/face/tool-schema.ts"]);
		expect(sources).not.to.include.members(["src/face/session.ts"]);
		expect(sources).to.have.length.below(16);
	});

	it("is what pi loads while its sources match, and src/index.ts once one of them changes", function () {
		const dir = copyPackage();
		expect(startModule(dir)).to.equal(join(dir, BUILT_START));
		appendFileSync(join(dir, "src", "policy", "settings.ts"), "\n// edited\n");
		expect(startModule(dir)).to.equal(join(dir, "src", "index.ts"));
	});

	it("falls back to src/index.ts when the built module or a source it names is missing", function () {
		const dir = copyPackage();
		rmSync(join(dir, "src", "face", "names.ts"));
		expect(startModule(dir)).to.equal(join(dir, "src", "index.ts"));
		rmSync(join(dir, "dist"), { recursive: true });
		expect(startModule(dir)).to.equal(join(dir, "src", "index.ts"));
	});
});
