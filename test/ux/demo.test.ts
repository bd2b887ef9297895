// `npm run demo` runs, offline, and its transcript covers every step of the main job: install, list,
// read, a refused patch and its repair, create, history, restore, the block naming the new skill, the
// /selfskills commands without a UI, and pi listing the new skill after a reload. It leaves no temp folder.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";

function runDemo(): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
	const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "test", "demo", "run-demo.ts")], { cwd: REPO_ROOT, env: { ...process.env, SELFSKILLS_KEEP_TMP: "" }, stdio: ["ignore", "pipe", "pipe"] });
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
	child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
	const timer = setTimeout(() => child.kill("SIGKILL"), 170000);
	return new Promise((resolve, reject) => {
		child.on("error", reject);
		child.on("close", (exitCode) => {
			clearTimeout(timer);
			resolve({ stdout, stderr, exitCode });
		});
	});
}

describe(`npm run demo (pi ${getPiLine()})`, function () {
	this.timeout(180000);
	let demo: { stdout: string; stderr: string; exitCode: number | null };
	before(async function () {
		demo = await runDemo();
	});

	it("finishes with exit code 0 and removes its temp folder", function () {
		expect(demo.exitCode, `${demo.stdout}\n${demo.stderr}`).to.equal(0);
		const root = /temp dir (\S+)/.exec(demo.stdout)?.[1];
		expect(root, "the first line names the temp dir").to.be.a("string");
		expect(existsSync(root ?? "/nonexistent"), `${root} is gone`).to.equal(false);
		expect(demo.stdout).to.match(/Demo finished in [\d.]+ s/);
	});

	it("installs the package with the real pi CLI", function () {
		expect(demo.stdout).to.contain(`━━ pi install ${REPO_ROOT}`);
		expect(demo.stdout).to.contain(`Installed ${REPO_ROOT}`);
	});

	it("shows each tool call and the exact result text: list, read, a refusal and its repair, create, history, restore", function () {
		const out = demo.stdout;
		const steps = [
			['→ skill_manage {"action":"list","skill":"deploy"}', "deploy-checks — Use when deploying the web app to staging."],
			['→ skill_manage {"action":"read","skill":"deploy-checks"}', "1. Build with `npm build`."],
			['→ skill_manage {"action":"patch","skill":"deploy-checks","old_string":"npm build","new_string":"npm run build"}', "← ERROR (isError: true)\n    │ not_unique: old_string occurs 2 times"],
			['"replace_all":true}', "← ok\n    │ patch landed: 1 file(s) changed in deploy-checks."],
			['→ skill_manage {"action":"create","name":"staging-rollback"', "create landed"],
			['→ skill_manage {"action":"history","skill":"deploy-checks"}', "2 backup(s) of deploy-checks/SKILL.md"],
			['→ skill_manage {"action":"restore","skill":"deploy-checks"}', "restore landed"],
		];
		let from = 0;
		for (const [callText, resultText] of steps) {
			const at = out.indexOf(callText, from);
			expect(at, `call ${callText} after offset ${from}`).to.be.greaterThan(-1);
			expect(out.indexOf(resultText, at), `result ${resultText}`).to.be.greaterThan(at);
			from = at + callText.length;
		}
		expect(out).to.contain("pi lists the new skill after /reload");
	});

	it("shows the standing rules on every call and the new skill named before any reload, then read by the model", function () {
		expect(demo.stdout).to.match(/carried the standing rules: (\d+) of \1 calls/);
		expect(demo.stdout).to.match(/- staging-rollback \(create\): Use when a staging deploy must be undone.* — \S+\/agent\/skills\/staging-rollback\/SKILL\.md/);
		expect(demo.stdout).to.match(/→ read \{"path":"\S+staging-rollback\/SKILL\.md"\}\n {2}← ok\n {4}│ ---\n {4}│ name: staging-rollback/);
	});

	it("shows the human's /selfskills status, history, a restore preview that writes nothing, and a named restore", function () {
		const out = demo.stdout;
		expect(out).to.match(/\/selfskills\n {4}selfskills: enabled true, inject true/);
		expect(out).to.match(/backups: 3 file\(s\), \d+ bytes/);
		expect(out).to.match(/\/selfskills history deploy-checks\n {4}3 backup\(s\) of deploy-checks\/SKILL\.md/);
		expect(out).to.match(/\/selfskills restore deploy-checks\n {4}Would restore deploy-checks \(latest backup\)/);
		expect(out).to.contain("Without a UI nothing is restored unless you name the backup id");
		expect(out).to.match(/\/selfskills restore deploy-checks \d{8}-\d{6}\.\d{3}-[0-9a-f]{10}\n {4}restore landed/);
	});

	it("shows pi listing the created skill itself in a fresh process", function () {
		expect(demo.stdout).to.match(/<available_skills>[\s\S]*<name>staging-rollback<\/name>[\s\S]*<\/available_skills>/);
	});
});
