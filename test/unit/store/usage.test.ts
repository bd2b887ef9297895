// usage.ts: one append per use, folded past a size into one line per skill, read back as count,
// first and last use; skills not used for N days, never-used ones included.
import { existsSync, readFileSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { getUsagePath } from "../../../src/base/paths.ts";
import { findUnused, readUsage, recordUse } from "../../../src/store/usage.ts";
import { useTempEnv } from "../../support/temp-env.ts";

describe("usage", function () {
	const getEnv = useTempEnv();

	it("counts uses per skill with their first and last time, in a private file", function () {
		const { agentDir } = getEnv();
		recordUse(realFs, agentDir, "deploy", new Date("2026-11-01T10:00:00Z"));
		recordUse(realFs, agentDir, "deploy", new Date("2026-11-03T10:00:00Z"));
		recordUse(realFs, agentDir, "notes", new Date("2026-11-02T10:00:00Z"));
		const usage = readUsage(realFs, agentDir);
		expect(usage.get("deploy")).to.deep.equal({
			count: 2,
			first: "2026-11-01T10:00:00.000Z",
			last: "2026-11-03T10:00:00.000Z",
		});
		expect(usage.get("notes")?.count).to.equal(1);
		expect(statSync(getUsagePath(agentDir)).mode & 0o777).to.equal(0o600);
	});

	it("folds a large log into one line per skill and keeps every count", function () {
		const { agentDir } = getEnv();
		const path = getUsagePath(agentDir);
		mkdirSync(dirname(path), { recursive: true });
		const line = (i: number) =>
			JSON.stringify({ skill: `s${i % 7}`, time: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString() });
		writeFileSync(path, `${Array.from({ length: 6000 }, (_, i) => line(i)).join("\n")}\n`);
		recordUse(realFs, agentDir, "s0", new Date("2027-01-01T00:00:00Z"));
		const text = readFileSync(path, "utf8").trim().split("\n");
		expect(text).to.have.length(7);
		const usage = readUsage(realFs, agentDir);
		expect([...usage.values()].reduce((sum, u) => sum + u.count, 0)).to.equal(6001);
		expect(usage.get("s0")?.last).to.equal("2027-01-01T00:00:00.000Z");
		expect(usage.get("s0")?.first).to.equal("2026-01-01T00:00:00.000Z");
	});

	it("lists skills unused for N days, never-used first", function () {
		const now = new Date("2026-12-03T00:00:00Z");
		const usage = new Map([
			["old", { count: 3, first: "2026-09-01T00:00:00Z", last: "2026-10-01T00:00:00Z" }],
			["fresh", { count: 1, first: "2026-12-01T00:00:00Z", last: "2026-12-01T00:00:00Z" }],
		]);
		expect(findUnused(usage, ["fresh", "old", "never"], 30, now)).to.deep.equal([
			{ skill: "never", last: undefined },
			{ skill: "old", last: "2026-10-01T00:00:00Z" },
		]);
	});

	it("never throws when the store cannot be written", function () {
		const { agentDir } = getEnv();
		writeFileSync(`${agentDir}/selfskills`, "a file where the folder belongs");
		expect(() => recordUse(realFs, agentDir, "deploy")).not.to.throw();
		expect(existsSync(getUsagePath(agentDir))).to.equal(false);
	});
});
