// Uninstalling as the README says: the package installed the way `pi install` writes it, used (a
// landed patch with its backup and lock, a created skill, a pin, a proposal exported as a branch), then
// `pi remove` and the README's "Uninstall" commands, run as written. Nothing of the package is left —
// settings key, store, lock folder, scratch folders, selfskills/* branches — and every skill stays.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { call } from "../support/faux-script.ts";
import { DEPLOY_SKILL, walkFiles, writeSkill } from "../support/fixtures.ts";
import { git, initRepo } from "../support/git-repo.ts";
import { piInstall, runPiCli, runPiPrint } from "../support/pi-cli.ts";
import { getPiLine, getPiLineInfo, REPO_ROOT } from "../support/pi-line.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";

/** The shell block of the README's "Uninstall" section, as a person copies it. */
function readmeUninstallBlock(): string {
	const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
	const section = readme.slice(readme.indexOf("\n## Uninstall\n"));
	const block = /```bash\n([\s\S]*?)```/.exec(section)?.[1];
	if (!block) throw new Error("the README has no bash block under ## Uninstall");
	return block;
}

const settingsOf = (env: TempEnv) =>
	JSON.parse(readFileSync(join(env.agentDir, "settings.json"), "utf8")) as Record<string, unknown>;

describe(`uninstalling as the README says (pi ${getPiLine()})`, function () {
	this.timeout(180000);
	const getEnv = useTempEnv({ prefix: "selfskills-uninstall-" });

	it("leaves no settings key, store, lock, scratch folder or branch, and every skill", async function () {
		const env = getEnv();
		// The temp folder pi and the README's commands see: this test's own, not the machine's.
		const tmp = join(env.root, "tmp");
		mkdirSync(tmp);
		const extraEnv = { TMPDIR: tmp };
		const skills = join(env.agentDir, "skills");
		const skillFile = writeSkill(skills, "deploy-checks", DEPLOY_SKILL);
		initRepo(skills);
		await piInstall(env, REPO_ROOT);
		const print = (prompt: string, steps: Parameters<typeof runPiPrint>[0]["steps"] = []) =>
			runPiPrint({ env, prompt, steps }).then((r) => {
				expect(r.exitCode, r.stderr).to.equal(0);
				return r;
			});
		const run = (args: string[]) => runPiCli(args, { env, extraEnv });

		// Use it: a landed patch (backup, lock), a created skill, then review on and a proposal.
		await print("fix it", [
			call({ action: "read", skill: "deploy-checks" }),
			call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
			call({
				action: "create",
				name: "staging-smoke",
				description: "Use after a staging deploy: runs the smoke tests.",
				body: "# Smoke\n\n1. Run `npm run smoke`.\n",
			}),
			{ text: "done" },
		]);
		git(skills, "add", "-A");
		git(skills, "commit", "-q", "-m", "the agent's changes");
		const pinned = await run(["-p", "--no-session", "/selfskills pin deploy-checks --yes"]);
		expect(pinned.stderr).to.contain("pinned: deploy-checks");
		const withReview = settingsOf(env);
		withReview.selfskills = { ...(withReview.selfskills as object), approval: "propose" };
		writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify(withReview, null, 2));
		const propose = await print("more", [
			call({ action: "read", skill: "staging-smoke" }),
			call({ action: "patch", skill: "staging-smoke", old_string: "smoke`.", new_string: "smoke` twice`." }),
			{ text: "proposed" },
		]);
		const id = /proposal (p-[0-9a-f]{8})/.exec(JSON.stringify(propose.calls.at(-1)))?.[1] ?? "";
		expect(id, "under review the patch is a proposal").to.match(/^p-/);
		const exported = await run(["-p", "--no-session", `/selfskills export ${id} --branch`]);
		expect(git(skills, "branch", "--list", "selfskills/*"), exported.stderr).to.contain(`selfskills/${id}`);
		const skillsAfterUse = new Map(
			walkFiles(skills)
				.filter((f) => !f.includes("/.git/"))
				.map((f) => [f, readFileSync(f, "utf8")]),
		);
		expect(existsSync(join(env.agentDir, "selfskills", "backups"))).to.equal(true);
		expect(existsSync(join(env.runtimeDir, "pi-selfskills", "locks")), "the lock folder").to.equal(true);
		expect(settingsOf(env)).to.have.property("selfskills");

		// Uninstall: pi remove with the path it was installed from, then the README's commands as written.
		const removed = await run(["remove", REPO_ROOT]);
		expect(removed.exitCode, removed.stderr).to.equal(0);
		const { cliPath, nodeBinary } = getPiLineInfo();
		const script = `pi() { "${nodeBinary}" "${cliPath}" "$@"; }\n${readmeUninstallBlock()}`;
		execFileSync("bash", ["-c", script], {
			cwd: skills,
			env: {
				...process.env,
				HOME: env.home,
				PI_CODING_AGENT_DIR: env.agentDir,
				XDG_RUNTIME_DIR: env.runtimeDir,
				...extraEnv,
			},
			stdio: ["ignore", "pipe", "pipe"],
		});

		const settings = settingsOf(env);
		expect(settings, "the settings key").not.to.have.property("selfskills");
		expect(JSON.stringify(settings.packages ?? []), "the package entry").not.to.contain("selfskills");
		expect(existsSync(join(env.agentDir, "selfskills")), "the store").to.equal(false);
		expect(existsSync(join(env.runtimeDir, "pi-selfskills")), "the lock folder").to.equal(false);
		const uid = process.getuid?.() ?? "user";
		expect(existsSync(join(tmp, `pi-selfskills-${uid}`))).to.equal(false);
		expect(
			readdirSync(tmp).filter((name) => name.includes("selfskills")),
			"scratch folders",
		).to.deep.equal([]);
		const shm = existsSync("/dev/shm") ? readdirSync("/dev/shm") : [];
		for (const name of shm.filter((n) => n.startsWith("selfskills-validate-"))) {
			const pid = /^selfskills-validate-(\d+)-/.exec(name)?.[1];
			expect(existsSync(`/proc/${pid}`), `${name} belongs to a running process`).to.equal(true);
		}
		expect(git(skills, "branch", "--list", "selfskills/*").trim(), "the review branches").to.equal("");
		// Every skill stays: the person's, and the one the agent created for them, byte for byte.
		for (const [file, text] of skillsAfterUse) expect(readFileSync(file, "utf8"), file).to.equal(text);
		expect(readFileSync(skillFile, "utf8")).to.contain("npm run build");
		expect(existsSync(join(skills, "staging-smoke", "SKILL.md"))).to.equal(true);
	});
});
