// The protected set of one call: agentDir whole, the project's .pi and every .agents pi reads, skill
// roots and local packages from both settings files, never the home folder itself; and how the sandbox
// mounts it (missing places in the home folder made, missing ones in the project left to the matcher).
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getProtectedSet } from "../../../src/guard/protected-set.ts";
import { planMounts, sandboxCommand, shellQuote } from "../../../src/guard/sandbox.ts";
import { execFileSync } from "node:child_process";
import { writeJson } from "../../support/fixtures.ts";
import { useTempEnv } from "../../support/temp-env.ts";

describe("protected set", function () {
	const getEnv = useTempEnv();

	it("holds agentDir, .pi, every .agents up to the git root, settings skill roots and local packages", function () {
		const env = getEnv();
		mkdirSync(join(env.projectDir, ".git"));
		const sub = join(env.projectDir, "a", "b");
		mkdirSync(sub, { recursive: true });
		writeJson(join(env.agentDir, "settings.json"), {
			skills: ["../shared-skills", "!../ignored/**"],
			packages: ["../local-pkg", "npm:remote-pkg", { source: "../other-pkg" }],
			selfskills: { skillsDir: join(env.root, "made") },
		});
		const set = getProtectedSet({
			cwd: sub,
			agentDir: env.agentDir,
			settings: { skillsDir: join(env.root, "made") },
		});
		const paths = set.places.map((p) => p.path);
		expect(paths).to.include.members([
			env.agentDir,
			join(sub, ".pi"),
			join(sub, ".agents"),
			join(env.projectDir, "a", ".agents"),
			join(env.projectDir, ".agents"),
			join(env.home, ".agents", "skills"),
			join(env.root, "made"),
			join(env.root, "shared-skills"),
			join(env.root, "local-pkg"),
			join(env.root, "other-pkg"),
			join(env.root, "ignored"),
		]);
		expect(paths).to.not.include(join(env.root, ".agents"));
		expect(paths.some((p) => p.includes("remote-pkg"))).to.equal(false);
		// Symlinks resolved: a link into agentDir is found, a sibling of it is not.
		symlinkSync(env.agentDir, join(env.projectDir, "link"));
		const real = join(env.agentDir, "extensions", "x.ts");
		expect(set.find(real)?.path).to.equal(env.agentDir);
		expect(set.find(join(env.projectDir, "notes.md"))).to.equal(undefined);
	});

	it("never holds the home folder or the filesystem root, whatever a setting names", function () {
		const env = getEnv();
		writeJson(join(env.agentDir, "settings.json"), { skills: ["~", "/"] });
		const set = getProtectedSet({ cwd: env.projectDir, agentDir: env.agentDir, settings: { skillsDir: env.home } });
		expect(set.places.map((p) => p.real)).to.not.include.members([env.home, "/"]);
		expect(set.find(join(env.home, "notes.md"))).to.equal(undefined);
	});

	it("mounts what exists, makes missing places in the home folder, leaves missing ones in the project", function () {
		const env = getEnv();
		const set = getProtectedSet({
			cwd: env.projectDir,
			agentDir: env.agentDir,
			settings: { skillsDir: join(env.agentDir, "skills") },
		});
		const mounts = planMounts(set, env.projectDir);
		expect(mounts.readOnly).to.include.members([env.agentDir, join(env.home, ".agents", "skills")]);
		expect(existsSync(join(env.home, ".agents", "skills"))).to.equal(true);
		expect(mounts.uncovered.map((p) => p.path)).to.include.members([
			join(env.projectDir, ".pi"),
			join(env.projectDir, ".agents"),
		]);
		expect(existsSync(join(env.projectDir, ".pi"))).to.equal(false);
	});

	it("quotes any command text for the shell, and the sandboxed command runs it unchanged", function () {
		const text = `echo 'it''s' "$HOME" \`x\` $(y) \\ ; exit`;
		expect(execFileSync("/bin/sh", ["-c", `printf %s ${shellQuote(text)}`], { encoding: "utf8" })).to.equal(text);
		const wrapped = sandboxCommand("echo hi", { bwrap: "/usr/bin/bwrap", readOnly: ["/a b"], prefix: "set -e" });
		expect(wrapped).to.match(/^exec '\/usr\/bin\/bwrap' --unshare-user --disable-userns --cap-drop ALL /);
		expect(wrapped).to.contain("--ro-bind '/a b' '/a b'");
		expect(wrapped).to.match(/-- "\$0" -c 'set -e\necho hi'$/);
	});
});
