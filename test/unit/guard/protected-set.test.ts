// The protected set of one call: agentDir whole, the project's .pi and every .agents pi reads, skill
// roots and local packages from both settings files, git hooks and config, pi's own folder, the real
// target of each linked file pi loads — never the home folder itself.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getProtectedSet } from "../../../src/guard/protected-set.ts";
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

	it("holds git hooks and config of the common git folder, and the target of each link pi loads", function () {
		const env = getEnv();
		const common = join(env.root, "main-repo", ".git");
		const worktreeGit = join(common, "worktrees", "wt");
		mkdirSync(worktreeGit, { recursive: true });
		writeFileSync(join(worktreeGit, "commondir"), "../..\n");
		writeFileSync(join(env.projectDir, ".git"), `gitdir: ${worktreeGit}\n`);
		const dotfiles = join(env.root, "dotfiles");
		mkdirSync(join(dotfiles, "ext"), { recursive: true });
		writeFileSync(join(dotfiles, "settings.json"), "{}\n");
		symlinkSync(join(dotfiles, "settings.json"), join(env.agentDir, "settings.json"));
		mkdirSync(join(env.agentDir, "extensions"));
		symlinkSync(join(dotfiles, "ext"), join(env.agentDir, "extensions", "ext"));
		const set = getProtectedSet({
			cwd: env.projectDir,
			agentDir: env.agentDir,
			settings: { skillsDir: join(env.agentDir, "skills") },
			piDir: join(env.root, "pi-install"),
		});
		const reals = set.places.map((p) => p.real);
		expect(reals).to.include.members([
			join(common, "hooks"),
			join(common, "config"),
			join(dotfiles, "settings.json"),
			join(dotfiles, "ext"),
			join(env.root, "pi-install"),
			join(env.projectDir, ".pi"),
		]);
		expect(set.find(join(dotfiles, "ext", "index.ts"))?.real).to.equal(join(dotfiles, "ext"));
		expect(set.find(join(dotfiles, "notes.md"))).to.equal(undefined);
	});
	it("holds every submodule's git hooks and config, and each worktree's config.worktree git reads", function () {
		const env = getEnv();
		const git = join(env.projectDir, ".git");
		const gitFolder = (dir: string, config = "[core]\n") => {
			mkdirSync(join(dir, "hooks"), { recursive: true });
			writeFileSync(join(dir, "HEAD"), "ref: refs/heads/main\n");
			writeFileSync(join(dir, "config"), config);
		};
		gitFolder(git, "[extensions]\n\tworktreeConfig = true\n");
		// A submodule named with a slash, one nested in another, and a plain folder of the walk.
		gitFolder(join(git, "modules", "vendor", "lib"));
		gitFolder(join(git, "modules", "tools", "modules", "inner"));
		gitFolder(join(git, "modules", "tools"));
		mkdirSync(join(git, "worktrees", "wt"), { recursive: true });
		writeFileSync(join(git, "worktrees", "wt", "config.worktree"), "[core]\n");
		const reals = getProtectedSet({
			cwd: env.projectDir,
			agentDir: env.agentDir,
			settings: { skillsDir: join(env.agentDir, "skills") },
		}).places.map((p) => p.real);
		const points = (dir: string) => [join(dir, "hooks"), join(dir, "config")];
		expect(reals).to.include.members([
			...points(git),
			...points(join(git, "modules", "vendor", "lib")),
			...points(join(git, "modules", "tools")),
			...points(join(git, "modules", "tools", "modules", "inner")),
			// worktreeConfig is on: the main worktree's (missing, so held open) and the linked one's.
			join(git, "config.worktree"),
			join(git, "worktrees", "wt", "config.worktree"),
		]);
		expect(reals).to.not.include.members([join(git, "modules"), join(git, "modules", "vendor"), git]);
	});

	it("leaves a missing config.worktree out while git does not read one", function () {
		const env = getEnv();
		const git = join(env.projectDir, ".git");
		mkdirSync(join(git, "hooks"), { recursive: true });
		writeFileSync(join(git, "config"), "[core]\n");
		const reals = getProtectedSet({
			cwd: env.projectDir,
			agentDir: env.agentDir,
			settings: { skillsDir: join(env.agentDir, "skills") },
		}).places.map((p) => p.real);
		expect(reals).to.include.members([join(git, "hooks"), join(git, "config")]);
		expect(reals).to.not.include(join(git, "config.worktree"));
	});
});
