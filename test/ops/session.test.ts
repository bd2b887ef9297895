// `operations` as users get it: the package loaded by pi's own resource loader and driven by the
// faux model, and a batch killed mid-commit by SIGKILL in a real child process that the package
// puts back at its next start, saying so in /selfskills.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getJournalDir } from "../../src/base/paths.ts";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { expectedTree, snapshotTree, writeOldTree } from "../crash/scenario.ts";
import { call } from "../support/faux-script.ts";
import { commandOutputs } from "../ux/ux-support.ts";
import { skillText, writeFile, writeSkill } from "../support/fixtures.ts";
import { auditLines, runChild, useCrashChild } from "./support.ts";

const canonical = (tree: Record<string, string>) =>
	JSON.stringify(Object.entries(tree).sort(([a], [b]) => a.localeCompare(b)));

describe(`operations through a real pi session (pi ${getPiLine()})`, function () {
	this.timeout(120_000);
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	const getChild = useCrashChild();
	afterEach(() => pi?.dispose());

	it("lands a batch over two skills, refuses a bad one by op index, and shows a dry run's diff", async function () {
		const env = getEnv();
		const skills = join(env.agentDir, "skills");
		const alpha = writeSkill(skills, "alpha", skillText("alpha", "1. Run the build.\n"));
		writeSkill(skills, "beta", skillText("beta", "1. Deploy.\n"));
		const script = writeFile(join(skills, "beta", "scripts", "run.sh"), "echo run\n", 0o755);
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const ops = [
			{ action: "patch", skill: "alpha", old_string: "Run the build.", new_string: "Run npm run build." },
			{ action: "write", skill: "alpha", file: "references/notes.md", content: "notes\n" },
			{ action: "delete", skill: "beta", file: "scripts/run.sh" },
		];
		const run = await pi.run("fix both skills", [
			call({ action: "read", skill: "alpha" }),
			call({ action: "read", skill: "beta" }),
			call({
				action: "operations",
				operations: [ops[0], { action: "patch", skill: "beta", old_string: "nowhere", new_string: "x" }],
			}),
			call({ action: "operations", dry_run: true, operations: ops }),
			call({ action: "operations", operations: ops }),
			{ text: "done" },
		]);
		const [, , refused, dry, landed] = run.toolResults;
		expect(refused.isError).to.equal(true);
		expect(refused.text).to.match(/^not_found: operations\[1\] failed, nothing was written\./);
		expect((refused.details as Record<string, unknown>).operation).to.equal(1);
		expect(dry.isError, dry.text).to.equal(false);
		expect(dry.text)
			.to.contain("+++ b/alpha/SKILL.md")
			.and.contain("+++ b/alpha/references/notes.md")
			.and.contain("+++ /dev/null");
		expect(landed.isError, landed.text).to.equal(false);
		expect(landed.text).to.match(/^operations landed: 3 operation\(s\), 3 file\(s\) changed in alpha, beta\./);
		expect((landed.details as { operations: Array<{ fate: string }> }).operations.map((o) => o.fate)).to.deep.equal([
			"landed",
			"landed",
			"landed",
		]);
		expect(readFileSync(alpha, "utf8")).to.contain("Run npm run build.");
		expect(existsSync(script)).to.equal(false);
		expect(auditLines(env).map((l) => [l.operation, l.action])).to.deep.equal([
			[0, "patch"],
			[1, "write"],
			[2, "delete"],
		]);
	});

	async function killMidCommit(agentDir: string): Promise<void> {
		writeOldTree(agentDir);
		const count = mkdtempSync(join(getChild().root, "count-"));
		writeOldTree(count);
		const { journalRemovedAt } = JSON.parse((await runChild(getChild().script, [count, "0"])).stdout) as {
			journalRemovedAt: number;
		};
		// Killed right before the journal's removal (the commit point), every file is new.
		const killed = await runChild(getChild().script, [agentDir, String(journalRemovedAt)]);
		expect(killed.signal).to.equal("SIGKILL");
		expect(canonical(snapshotTree(agentDir))).to.equal(canonical({ ...expectedTree("new") }));
		expect(readdirSync(getJournalDir(agentDir)).filter((n) => n.endsWith(".json"))).to.have.length(1);
	}

	it("puts a batch killed mid-commit back at the next start and says so in /selfskills", async function () {
		const env = getEnv();
		await killMidCommit(env.agentDir);
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		expect(canonical(snapshotTree(env.agentDir)), "all-old after session_start").to.equal(
			canonical(expectedTree("old")),
		);
		await pi.runCommand("/selfskills");
		const status = commandOutputs(pi).join("\n");
		expect(status, status).to.match(/recovered interrupted batches:\n\s+\S+\.json: 5 file\(s\) put back/);
		expect(status).to.not.contain("unfinished batch journal");
		expect(readdirSync(getJournalDir(env.agentDir))).to.deep.equal([]);
	});

	it("leaves a file changed after the crash as found, and /selfskills names it with its backup", async function () {
		const env = getEnv();
		await killMidCommit(env.agentDir);
		const alpha = join(env.agentDir, "skills", "alpha", "SKILL.md");
		writeFileSync(alpha, skillText("alpha", "1. Edited by hand after the crash.\n"));
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		expect(readFileSync(alpha, "utf8")).to.contain("Edited by hand");
		expect(
			readFileSync(join(env.agentDir, "skills", "beta", "SKILL.md"), "utf8"),
			"the other files are put back",
		).to.contain("Check the page.");
		await pi.runCommand("/selfskills");
		const status = commandOutputs(pi).join("\n");
		expect(status).to.match(
			new RegExp(
				`left as found: ${alpha.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} ` +
					"\\(old bytes: \\S+selfskills/backups/alpha@[0-9a-f]{12}/SKILL\\.md/\\S+\\.md\\)",
			),
		);
		expect(status).to.contain("unfinished batch journal(s)");
		// Tried once and reported once: the next calls neither retry it nor repeat the report.
		await pi.run("list", [call({ action: "list" }), call({ action: "list" }), { text: "ok" }]);
		await pi.runCommand("/selfskills");
		const again = commandOutputs(pi).at(-1) ?? "";
		expect(again.match(/left as found/g)).to.have.length(1);
	});
});
