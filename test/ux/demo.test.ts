// `npm run demo` runs, offline, and tells a story worth copying: install; the agent runs its skill's
// build command, it fails, npm names the real one, one patch (refused, repaired) fixes the skill; a
// recurring routine becomes a skill, named before any reload; a step the user asks for is added; the
// human reviews with /selfskills and undoes that step with the command history gave them; pi lists the
// new skill after a reload. It leaves no temp folder.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";

function runDemo(): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
	const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "test", "demo", "run-demo.ts")], {
		cwd: REPO_ROOT,
		env: { ...process.env, SELFSKILLS_KEEP_TMP: "" },
		stdio: ["ignore", "pipe", "pipe"],
	});
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

	it("says at once that it started, then opens with a whole sentence", function () {
		const [progress, first] = demo.stdout.split("\n");
		expect(progress, "a line before pi's modules load").to.match(/^pi-selfskills demo: loading pi/);
		expect(first).to.match(
			new RegExp(
				/^This demo runs the real pi \S+ CLI .* offline with a scripted model, /.source +
					/in the temp dir \S+ \(deleted at the end\)\.$/.source,
			),
		);
	});

	it("shows each tool call and its exact result, from the failing documented command to the added step", function () {
		const out = demo.stdout;
		const steps = [
			[
				'→ skill_manage {"action":"list","skill":"deploy"}',
				"deploy-checks — Use when deploying the web app to staging.",
			],
			['→ skill_manage {"action":"read","skill":"deploy-checks"}', "1. Build with `npm build`."],
			['→ bash {"command":"npm build"}', '← ERROR (isError: true)\n    │ Unknown command: "build"'],
			['→ bash {"command":"npm run build"}', "← ok"],
			[
				'→ skill_manage {"action":"patch","skill":"deploy-checks",' +
					'"old_string":"npm build","new_string":"npm run build"}',
				"← ERROR (isError: true)\n    │ not_unique: old_string occurs 2 times",
			],
			['"replace_all":true}', "← ok\n    │ patch landed: 1 file(s) changed in deploy-checks."],
			['→ skill_manage {"action":"create","name":"staging-smoke-test"', "create landed"],
			['→ bash {"command":"npm run smoke:staging"}', "3 of 3 passed"],
			['→ skill_manage {"action":"patch","skill":"deploy-checks","old_string":"# Deploy checks', "patch landed"],
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

	it("has the agent change its skill only for what it verified or was told, and never undo its own work", function () {
		const out = demo.stdout;
		const transcript = out.slice(0, out.indexOf("━━ deploy-checks on disk"));
		const built = transcript.indexOf('→ bash {"command":"npm run build"}\n  ← ok');
		expect(built, "npm run build ran and passed").to.be.greaterThan(-1);
		expect(transcript.indexOf('"action":"patch"'), "the fix comes after the check").to.be.greaterThan(built);
		expect(transcript).to.not.contain('"action":"restore"');
		expect(
			transcript.match(/→ skill_manage \{"action":"patch"/g),
			"the refused call, its repair and the step asked for",
		).to.have.length(3);
	});

	it("shows the rules on every call, and the new skill named before any reload, then read by the model", function () {
		expect(demo.stdout).to.match(/carried the standing rules: (\d+) of \1 calls/);
		expect(demo.stdout).to.match(
			new RegExp(
				/- staging-smoke-test \(create\): Use after every staging deploy.* — /.source +
					/\S+\/agent\/skills\/staging-smoke-test\/SKILL\.md/.source,
			),
		);
		expect(demo.stdout).to.match(
			/→ read \{"path":"\S+staging-smoke-test\/SKILL\.md"\}\n {2}← ok\n {4}│ ---\n {4}│ name: staging-smoke-test/,
		);
	});

	it("shows the human reviewing with /selfskills and undoing the newest change with history's command", function () {
		const out = demo.stdout;
		expect(out).to.match(/\n\/selfskills\n {4}selfskills: enabled true, inject true/);
		expect(out).to.match(/backups: \d+ file\(s\), \d+ bytes/);
		expect(out).to.match(/\/selfskills history deploy-checks\n {4}2 backup\(s\) of deploy-checks\/SKILL\.md/);
		const restore = new RegExp(
			/Restore one \(you see the change and confirm first\): /.source +
				/\/selfskills restore deploy-checks SKILL\.md (\S+)/.source,
		).exec(out);
		expect(restore, "history names the restore command").to.not.equal(null);
		const id = restore?.[1] ?? "";
		expect(out).to.contain(
			"\n/selfskills restore deploy-checks\n" +
				`    Would restore deploy-checks/SKILL.md to backup ${id}, the newest that differs from it now.`,
		);
		expect(out).to.contain("-Deploy staging from the `release` branch.");
		expect(out).to.contain("Nothing was restored: without a UI pi cannot ask you first.");
		expect(out).to.contain(
			`\n/selfskills restore deploy-checks SKILL.md ${id} --yes\n` +
				`    restore landed: deploy-checks/SKILL.md is back to backup ${id}.`,
		);
		expect(out).to.match(
			/The version it replaced is backup \S+; \/selfskills restore deploy-checks SKILL\.md \S+ puts it back\./,
		);
		const after = out.slice(out.indexOf("deploy-checks on disk now"), out.indexOf("━━ a new pi process"));
		expect(after, "the build fix stays").to.contain("1. Build with `npm run build`.");
		expect(after, "the release-branch step is gone").to.not.contain("`release` branch");
		expect(after, "not the original broken skill").to.not.contain("`npm build`");
	});

	it("shows pi listing the created skill itself in a fresh process", function () {
		expect(demo.stdout).to.match(
			/<available_skills>[\s\S]*<name>staging-smoke-test<\/name>[\s\S]*<\/available_skills>/,
		);
	});
});
