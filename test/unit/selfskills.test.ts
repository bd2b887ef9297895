// selfskills.ts, the entry: before the wiring loads, every npm dependency is looked up (not loaded),
// since most modules load at first use and a missing one would otherwise fail mid-session.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { missingDependency } from "../../src/selfskills.ts";
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
