// origins.ts: a skill the package created stays "own" across processes and after a delete and a
// restore into the same folder; any other skill is "others"; a torn line never breaks the log.
import { appendFileSync, existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { originOfSkill, recordCreated } from "../../../src/store/origins.ts";
import { getCreatedPath } from "../../../src/base/paths.ts";
import { useTempEnv } from "../../support/temp-env.ts";
import { createHarness, expectOk } from "../../support/harness.ts";

describe("origins: the skills this package created", function () {
	const getEnv = useTempEnv();

	it("are own after create and after a whole-skill delete and restore; a person's skill is others", async function () {
		const env = getEnv();
		const tool = createHarness(env);
		expectOk(
			await tool.call({
				action: "create",
				name: "release-notes",
				description: "Use when writing release notes.",
				body: "# Notes\n",
			}),
		);
		const dir = join(env.agentDir, "skills", "release-notes");
		expect(originOfSkill(realFs, env.agentDir, dir)).to.equal("own");
		expect(statSync(getCreatedPath(env.agentDir)).mode & 0o777).to.equal(0o600);
		expectOk(await tool.call({ action: "read", skill: "release-notes" }));
		expectOk(await tool.call({ action: "delete", skill: "release-notes" }));
		expect(existsSync(dir)).to.equal(false);
		expectOk(await tool.call({ action: "restore", skill: "release-notes" }));
		// A new harness is a new session: only the log on disk can tell.
		expect(originOfSkill(realFs, env.agentDir, dir)).to.equal("own");
		mkdirSync(join(env.agentDir, "skills", "hand-made"), { recursive: true });
		expect(originOfSkill(realFs, env.agentDir, join(env.agentDir, "skills", "hand-made"))).to.equal("others");
	});

	it("skips a torn last line", function () {
		const env = getEnv();
		recordCreated(realFs, env.agentDir, "a", join(env.agentDir, "skills", "a"));
		appendFileSync(getCreatedPath(env.agentDir), '{"name":"b","dir":"/x/b"');
		expect(originOfSkill(realFs, env.agentDir, join(env.agentDir, "skills", "a"))).to.equal("own");
		expect(originOfSkill(realFs, env.agentDir, "/x/b")).to.equal("others");
	});
});
