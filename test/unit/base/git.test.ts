// git.ts recentCommits: the newest commits that touched a file, looked for among HEAD's newest
// HISTORY_DEPTH commits only, so history costs a bounded walk however long the repository's past.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { HISTORY_COMMITS, HISTORY_DEPTH, recentCommits } from "../../../src/base/git.ts";
import { useTempEnv } from "../../support/temp-env.ts";

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" });

/** `count` commits on top of HEAD, each changing `file` (one fast-import stream). */
function addCommits(repo: string, file: string, count: number, from: number): void {
	const stream: string[] = [];
	for (let i = 0; i < count; i++) {
		const data = `change ${from + i}\n`;
		stream.push(
			"commit refs/heads/main",
			`committer t <t@example.invalid> ${1767225600 + (from + i) * 60} +0000`,
			"data 5",
			"work",
			...(i === 0 ? ["from main^0"] : []),
			`M 100644 inline ${file}`,
			`data ${data.length}`,
			data,
		);
	}
	execFileSync("git", ["fast-import", "--quiet", "--force"], { cwd: repo, input: `${stream.join("\n")}\n` });
}

describe("git recentCommits", function () {
	const getEnv = useTempEnv();

	it("lists the newest commits of a file, at most HISTORY_COMMITS, within HISTORY_DEPTH of HEAD", function () {
		const repo = getEnv().projectDir;
		git(repo, "init", "-q", "-b", "main");
		writeFileSync(join(repo, "old.md"), "old\n");
		writeFileSync(join(repo, "busy.md"), "busy\n");
		git(repo, "add", "-A");
		git(repo, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "-m", "first");
		addCommits(repo, "busy.md", HISTORY_DEPTH + 5, 0);
		git(repo, "reset", "-q", "--hard", "main");
		expect(recentCommits(repo, "busy.md")).to.have.length(HISTORY_COMMITS);
		expect(recentCommits(repo, "busy.md")[0].subject).to.equal("work");
		expect(recentCommits(repo, "old.md"), "changed only before the newest HISTORY_DEPTH commits").to.deep.equal([]);
		git(repo, "reset", "-q", "--hard", `HEAD~${HISTORY_DEPTH}`);
		expect(
			recentCommits(repo, "old.md").map((c) => c.subject),
			"a short history is looked through whole",
		).to.deep.equal(["first"]);
	});
});
