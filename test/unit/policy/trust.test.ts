// trust.ts: which projects count as trusted on a pi without native trust (the GLOBAL list), and
// that pi's own decision wins where the running pi has one.
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { findProjectRoot, isWithin } from "../../../src/base/paths.ts";
import {
	getCoveringEntries,
	getIgnoredEntries,
	getTrustRefusal,
	isListedTrusted,
	resolveProjectTrust,
	setListedTrust,
} from "../../../src/policy/trust.ts";
import { errno, faultyFs } from "../../support/faulty-fs.ts";
import { useTempEnv } from "../../support/temp-env.ts";
import { writeJson } from "../../support/fixtures.ts";

describe("trust", function () {
	const getEnv = useTempEnv();

	describe("the listed-trust rule", function () {
		it("trusts a project whose root is listed", function () {
			const { projectDir } = getEnv();
			expect(isListedTrusted(projectDir, [projectDir])).to.equal(true);
		});

		it("trusts a project below a listed ancestor", function () {
			const { root, projectDir } = getEnv();
			expect(isListedTrusted(projectDir, [root])).to.equal(true);
		});

		it("does not trust a sibling whose name merely starts with the listed name", function () {
			const { root } = getEnv();
			const listed = join(root, "proj");
			const evil = join(root, "proj-evil");
			mkdirSync(listed);
			mkdirSync(evil);
			expect(isListedTrusted(evil, [listed])).to.equal(false);
			expect(isWithin(listed, evil)).to.equal(false);
		});

		it("does not trust the parent of a listed project", function () {
			const { root, projectDir } = getEnv();
			expect(isListedTrusted(root, [projectDir])).to.equal(false);
		});

		it("does not trust anything when the list is empty", function () {
			expect(isListedTrusted(getEnv().projectDir, [])).to.equal(false);
		});

		it("decides on real paths: a symlink to a listed project, or a listed symlink's target, is trusted", function () {
			const { root, projectDir } = getEnv();
			const link = join(root, "link-to-project");
			symlinkSync(projectDir, link);
			expect(isListedTrusted(link, [projectDir])).to.equal(true);
			expect(isListedTrusted(projectDir, [link])).to.equal(true);
		});
	});

	describe("resolveProjectTrust", function () {
		it("takes the git root above cwd as the project root and trusts it when the root is listed", function () {
			const { projectDir } = getEnv();
			mkdirSync(join(projectDir, ".git"));
			const cwd = join(projectDir, "a", "b");
			mkdirSync(cwd, { recursive: true });
			expect(findProjectRoot(cwd)).to.equal(projectDir);
			expect(resolveProjectTrust({ cwd }, [projectDir])).to.deep.equal({
				trusted: true,
				source: "selfskills-list",
				projectRoot: projectDir,
			});
		});

		it("does not trust a repository when only a subfolder of it is listed", function () {
			const { projectDir } = getEnv();
			mkdirSync(join(projectDir, ".git"));
			const sub = join(projectDir, "sub");
			mkdirSync(sub);
			expect(resolveProjectTrust({ cwd: sub }, [sub]).trusted).to.equal(false);
		});

		it("uses cwd itself as the project root outside a repository", function () {
			const { projectDir } = getEnv();
			expect(findProjectRoot(projectDir)).to.equal(projectDir);
		});

		it("lets pi's native isProjectTrusted() win over the list in both directions", function () {
			const { projectDir } = getEnv();
			const untrustedByPi = { cwd: projectDir, isProjectTrusted: () => false };
			const trustedByPi = { cwd: projectDir, isProjectTrusted: () => true };
			expect(resolveProjectTrust(untrustedByPi, [projectDir])).to.deep.include({ trusted: false, source: "pi" });
			expect(resolveProjectTrust(trustedByPi, [])).to.deep.include({ trusted: true, source: "pi" });
		});

		it("falls back to the list when pi's isProjectTrusted() throws", function () {
			const { projectDir } = getEnv();
			const broken = {
				cwd: projectDir,
				isProjectTrusted: (): boolean => {
					throw new Error("no");
				},
			};
			expect(resolveProjectTrust(broken, [projectDir])).to.deep.include({
				trusted: true,
				source: "selfskills-list",
			});
		});
	});

	describe("setListedTrust", function () {
		it("adds the project to the global list and keeps every other settings key", function () {
			const { agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			writeJson(path, {
				packages: ["../pkg"],
				theme: "dark",
				selfskills: { inject: false, trustedProjects: ["/x/other"] },
			});
			const next = setListedTrust(agentDir, projectDir, true);
			expect(next).to.deep.equal(["/x/other", projectDir]);
			const json = JSON.parse(readFileSync(path, "utf8"));
			expect(json).to.deep.equal({
				packages: ["../pkg"],
				theme: "dark",
				selfskills: { inject: false, trustedProjects: ["/x/other", projectDir] },
			});
		});

		it("does not list a project twice", function () {
			const { agentDir, projectDir } = getEnv();
			setListedTrust(agentDir, projectDir, true);
			expect(setListedTrust(agentDir, projectDir, true)).to.deep.equal([projectDir]);
		});

		it("removes the project and keeps every other settings key", function () {
			const { agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			writeJson(path, {
				packages: ["../pkg"],
				selfskills: { backupCap: 3, trustedProjects: [projectDir, "/x/other"] },
			});
			expect(setListedTrust(agentDir, projectDir, false)).to.deep.equal(["/x/other"]);
			expect(JSON.parse(readFileSync(path, "utf8"))).to.deep.equal({
				packages: ["../pkg"],
				selfskills: { backupCap: 3, trustedProjects: ["/x/other"] },
			});
		});

		it("creates the global settings file when there is none", function () {
			const { agentDir, projectDir } = getEnv();
			setListedTrust(agentDir, projectDir, true);
			expect(JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8"))).to.deep.equal({
				selfskills: { trustedProjects: [projectDir] },
			});
		});

		it("refuses to rewrite a malformed settings file rather than lose it", function () {
			const { agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			writeFileSync(path, "{ broken");
			expect(() => setListedTrust(agentDir, projectDir, true)).to.throw(/refusing to rewrite/);
			expect(readFileSync(path, "utf8")).to.equal("{ broken");
		});

		it("writes through a symlinked settings.json to its target, keeping the link (dotfile managers)", function () {
			const { root, agentDir, projectDir } = getEnv();
			const target = join(root, "dotfiles", "pi-settings.json");
			mkdirSync(join(root, "dotfiles"));
			writeFileSync(target, JSON.stringify({ theme: "dark" }));
			const path = join(agentDir, "settings.json");
			symlinkSync(target, path);
			setListedTrust(agentDir, projectDir, true);
			expect(lstatSync(path).isSymbolicLink(), "the link is kept").to.equal(true);
			expect(JSON.parse(readFileSync(target, "utf8"))).to.deep.equal({
				theme: "dark",
				selfskills: { trustedProjects: [projectDir] },
			});
			expect(readdirSync(join(root, "dotfiles")), "no temp file left").to.deep.equal(["pi-settings.json"]);
		});

		it("refuses a dangling settings.json link instead of creating a file there", function () {
			const { root, agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			symlinkSync(join(root, "missing.json"), path);
			expect(() => setListedTrust(agentDir, projectDir, true)).to.throw(/symbolic link to a missing file/);
			expect(readlinkSync(path)).to.equal(join(root, "missing.json"));
		});

		it("writes through the FsOps seam, syncing file and folder; a failed rename changes nothing", function () {
			const { agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			writeFileSync(path, JSON.stringify({ theme: "dark" }));
			const spy = faultyFs();
			setListedTrust(agentDir, projectDir, true, spy);
			const calls = spy.log.map((c) => c.op);
			expect(calls).to.include.members(["open", "write", "fsync", "rename"]);
			expect(calls.filter((c) => c === "fsync").length, "file and folder synced").to.be.at.least(2);
			const failing = faultyFs({ rename: () => errno("EIO", "rename") });
			const before = readFileSync(path, "utf8");
			expect(() => setListedTrust(agentDir, join(projectDir, "other"), true, failing)).to.throw(/EIO/);
			expect(readFileSync(path, "utf8")).to.equal(before);
			expect(
				readdirSync(agentDir).filter((n) => n.includes("selfskills-tmp")),
				"temp file removed",
			).to.deep.equal([]);
		});
	});

	describe("entries that trust nothing", function () {
		it("an entry of / or the home folder covers no project and is named as ignored", function () {
			const { home, projectDir } = getEnv();
			const inHome = join(home, "webapp");
			mkdirSync(inHome);
			expect(isListedTrusted(inHome, ["/", home])).to.equal(false);
			expect(isListedTrusted(projectDir, ["/"])).to.equal(false);
			expect(getIgnoredEntries(["/", home, projectDir])).to.have.length(2);
			expect(getCoveringEntries(join(projectDir, "a"), ["/", projectDir])).to.deep.equal([projectDir]);
		});

		it("untrust removes the covering entries (project and ancestors) and keeps the ignored ones", function () {
			const { agentDir, projectDir, root } = getEnv();
			const sub = join(projectDir, "a", "b");
			mkdirSync(sub, { recursive: true });
			writeJson(join(agentDir, "settings.json"), {
				selfskills: { trustedProjects: ["/", projectDir, sub, join(root, "other")] },
			});
			expect(setListedTrust(agentDir, sub, false)).to.deep.equal(["/", join(root, "other")]);
		});
	});

	describe("getTrustRefusal", function () {
		it("refuses the filesystem root and the home folder, and nothing below them", function () {
			const { home, projectDir } = getEnv();
			expect(getTrustRefusal("/")).to.match(/filesystem root/);
			expect(getTrustRefusal(home)).to.match(/home folder/);
			expect(getTrustRefusal(join(home, "work"))).to.equal(undefined);
			expect(getTrustRefusal(projectDir)).to.equal(undefined);
		});
	});
});
