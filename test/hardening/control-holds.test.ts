// The protected set through pi's own edit and write, judged per call: blocked while a control is on
// whatever guardBuiltins says (symlinks resolved, paths that do not exist yet included), allowed when
// none is. Without a working bubblewrap (absent from PATH, or unable to create its namespaces) bash
// falls back to the text matcher, and /selfskills and the session start say so with the install line.
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { expect } from "chai";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { commandOutputs } from "../ux/ux-support.ts";

const tool = (name: string, args: Record<string, unknown>) => ({ toolCall: { name, arguments: args } });
const write = (path: string, content = "x\n") => tool("write", { path, content });

describe(`the protected set through pi's edit, write and fallback bash (pi ${getPiLine()})`, function () {
	this.timeout(60000);
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	/** A session whose extension probed bubblewrap with `path` as PATH (undefined: the real PATH). */
	async function start(env: TempEnv, selfskills: Record<string, unknown>, path?: string): Promise<void> {
		writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		const saved = process.env.PATH;
		if (path !== undefined) process.env.PATH = path;
		try {
			pi = await createPiSession({ env, packageDir: REPO_ROOT, settings: { selfskills } });
		} finally {
			process.env.PATH = saved;
		}
	}

	function setSelfskills(env: TempEnv, selfskills: Record<string, unknown>): void {
		const path = join(env.agentDir, "settings.json");
		const json = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
		writeFileSync(path, `${JSON.stringify({ ...json, selfskills }, null, 2)}\n`);
	}

	it("blocks edit and write into the protected set once a control is on, judged per call", async function () {
		const env = getEnv();
		await start(env, { guardBuiltins: "off" });
		const settings = join(env.agentDir, "settings.json");
		symlinkSync(env.agentDir, join(env.projectDir, "agent-link"));
		const off = await pi!.run("before", [write(join(env.agentDir, "extensions", "early.ts")), { text: "ok" }]);
		expect(off.toolResults[0].isError, off.toolResults[0].text).to.equal(false);
		// The person turns review on; the next calls see it.
		setSelfskills(env, { approval: "propose", guardBuiltins: "off" });
		const before = readFileSync(settings, "utf8");
		const targets = [
			join(env.agentDir, "extensions", "x.ts"),
			join(env.projectDir, ".pi", "settings.json"),
			join(env.projectDir, ".agents", "skills", "new-one", "SKILL.md"),
			join(env.agentDir, "skills", "new-one", "SKILL.md"),
			"agent-link/selfskills/created.jsonl",
			join(env.home, ".agents", "skills", "deploy-checks", "SKILL.md"),
		];
		const run = await pi!.run("try", [
			tool("edit", { path: settings, edits: [{ oldText: '"propose"', newText: '"auto"' }] }),
			...targets.map((path) => write(path)),
			write("notes.md", "notes\n"),
			{ text: "done" },
		]);
		const results = run.toolResults;
		for (const blocked of results.slice(0, targets.length + 1)) {
			expect(blocked.isError, blocked.text).to.equal(true);
			expect(blocked.text).to.match(/^selfskills: this (edit|write) call would change /);
			expect(blocked.text).to.contain('selfskills.approval "propose"');
		}
		expect(readFileSync(settings, "utf8")).to.equal(before);
		for (const path of targets) expect(existsSync(resolve(env.projectDir, path)), path).to.equal(false);
		expect(existsSync(join(env.agentDir, "selfskills", "created.jsonl"))).to.equal(false);
		expect(results[targets.length + 1].isError).to.equal(false);
		expect(readFileSync(join(env.projectDir, "notes.md"), "utf8")).to.equal("notes\n");
	});

	it("does not run pi 1.6's powershell tool while a control is on: nothing holds it to the set", async function () {
		if (getPiLine() !== "1.6") this.skip(); // pi 0.73 has no powershell tool
		const env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		const tools = ["read", "bash", "edit", "write", "powershell", "skill_manage"];
		pi = await createPiSession({ env, packageDir: REPO_ROOT, settings: { selfskills: { pinned: ["x-*"] } }, tools });
		const command = `Set-Content -Path ${join(env.agentDir, "settings.json")} -Value '{}'`;
		const on = await pi.run("try", [tool("powershell", { command }), { text: "done" }]);
		expect(on.toolResults[0].isError, on.toolResults[0].text).to.equal(true);
		expect(on.toolResults[0].text).to.match(/^selfskills: pi's powershell tool is neither sandboxed nor checked/);
		expect(on.toolResults[0].text).to.contain("pinned skills (x-*)");
		// Without a control it is pi's to run (pi runs it on Windows only: here pi's own error, not ours).
		setSelfskills(env, {});
		const off = await pi.run("again", [tool("powershell", { command: "Get-Date" }), { text: "done" }]);
		expect(off.toolResults[0].text).not.to.match(/^selfskills:/);
	});

	it("without bwrap on PATH falls back to the matcher and says how to install it", async function () {
		const env = getEnv();
		const empty = join(env.root, "empty-path");
		mkdirSync(empty);
		await start(env, { pinned: ["other-*"] }, empty);
		const settings = join(env.agentDir, "settings.json");
		const before = readFileSync(settings, "utf8");
		const run = await pi!.run("try", [
			tool("bash", { command: `echo '{}' > ${settings}` }),
			tool("bash", { command: `rm -rf ${dirname(env.agentDir)}` }),
			tool("bash", { command: `cat ${settings} >/dev/null && echo notes > notes.txt && rm -f *.log && echo ran` }),
			{ text: "done" },
		]);
		const [blocked, over, allowed] = run.toolResults;
		for (const refused of [blocked, over]) {
			expect(refused.isError, refused.text).to.equal(true);
			expect(refused.text).to.match(/^selfskills: this bash call would change /);
		}
		expect(readFileSync(settings, "utf8")).to.equal(before);
		expect(allowed.isError, allowed.text).to.equal(false);
		expect(allowed.text).to.contain("ran");
		expect(pi!.notifications.map((n) => n.message).join("\n")).to.contain(
			"bash: NOT sandboxed: bwrap was not found in a PATH folder outside the places the agent may write",
		);
		await pi!.runCommand("/selfskills");
		const status = commandOutputs(pi!).join("\n");
		expect(status).to.contain(
			"bash: NOT sandboxed: bwrap was not found in a PATH folder outside the places the agent may write",
		);
		expect(status).to.contain("only a text matcher guards bash (best effort)");
		expect(status).to.contain("apt-get install bubblewrap");
	});

	it("counts a bwrap that cannot create its namespaces as absent, and reports it", async function () {
		const env = getEnv();
		const fake = join(env.root, "fake-bwrap");
		mkdirSync(fake);
		writeFileSync(
			join(fake, "bwrap"),
			"#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
		);
		chmodSync(join(fake, "bwrap"), 0o755);
		await start(env, { approval: "ask" }, fake);
		// Not wrapped in the broken bwrap: the command runs (and a write elsewhere lands).
		const run = await pi!.run("try", [tool("bash", { command: "echo ran > ran.txt && echo ok" }), { text: "done" }]);
		expect(run.toolResults[0].isError, run.toolResults[0].text).to.equal(false);
		expect(readFileSync(join(env.projectDir, "ran.txt"), "utf8")).to.equal("ran\n");
		await pi!.runCommand("/selfskills");
		expect(commandOutputs(pi!).join("\n")).to.contain(
			`bash: NOT sandboxed: ${join(fake, "bwrap")} cannot create its sandbox here ` +
				"(bwrap: No permissions to create new namespace)",
		);
		// What to change is the kernel's setting, not an install.
		const status = commandOutputs(pi!).join("\n");
		expect(status).to.contain("sysctl -w kernel.unprivileged_userns_clone=1");
		expect(status).to.contain("kernel.apparmor_restrict_unprivileged_userns=0");
		expect(status).to.not.contain("apt-get install bubblewrap");
	});

	it("names at the next session a skill that appeared outside the tool while a control was on", async function () {
		const env = getEnv();
		await start(env, { approval: "propose" });
		await pi!.run("first", [{ text: "ok" }]);
		pi!.dispose();
		// What an escape through a root the sandbox could not mount would leave (.agents/skills did not exist).
		const sneaky = writeSkill(
			join(env.projectDir, ".agents", "skills"),
			"sneaky",
			DEPLOY_SKILL.replace(/deploy-checks/g, "sneaky"),
		);
		await start(env, { approval: "propose" });
		await pi!.run("second", [{ text: "ok" }]);
		const notices = pi!.notifications.map((n) => n.message).filter((m) => m.includes("appeared"));
		expect(notices, pi!.notifications.map((n) => n.message).join("\n")).to.have.length(1);
		expect(notices[0]).to.contain("1 skill file(s) appeared while your review was on");
		expect(notices[0]).to.contain(sneaky);
		expect(notices[0]).to.not.contain("deploy-checks");
		// Said once: the next prompt of the same session is quiet.
		await pi!.run("third", [{ text: "ok" }]);
		expect(pi!.notifications.filter((n) => n.message.includes("appeared"))).to.have.length(1);
	});
});
