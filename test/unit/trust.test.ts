// trust.ts: which projects count as trusted on a pi without native trust (the GLOBAL list), and
// that pi's own decision wins where the running pi has one.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { findProjectRoot, isWithin } from "../../src/paths.ts";
import { isListedTrusted, resolveProjectTrust, setListedTrust } from "../../src/trust.ts";
import { useTempEnv } from "../support/temp-env.ts";

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

		it("decides on resolved paths, so a symlink to a listed project is trusted and a listed symlink trusts its target", function () {
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
			expect(resolveProjectTrust({ cwd }, [projectDir])).to.deep.equal({ trusted: true, source: "selfskills-list", projectRoot: projectDir });
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
			expect(resolveProjectTrust(broken, [projectDir])).to.deep.include({ trusted: true, source: "selfskills-list" });
		});
	});

	describe("setListedTrust", function () {
		it("adds the project to the global list and keeps every other settings key", function () {
			const { agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			writeFileSync(path, JSON.stringify({ packages: ["../pkg"], theme: "dark", selfskills: { inject: false, trustedProjects: ["/x/other"] } }));
			const next = setListedTrust(agentDir, projectDir, true);
			expect(next).to.deep.equal(["/x/other", projectDir]);
			const json = JSON.parse(readFileSync(path, "utf8"));
			expect(json).to.deep.equal({ packages: ["../pkg"], theme: "dark", selfskills: { inject: false, trustedProjects: ["/x/other", projectDir] } });
		});

		it("does not list a project twice", function () {
			const { agentDir, projectDir } = getEnv();
			setListedTrust(agentDir, projectDir, true);
			expect(setListedTrust(agentDir, projectDir, true)).to.deep.equal([projectDir]);
		});

		it("removes the project and keeps every other settings key", function () {
			const { agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			writeFileSync(path, JSON.stringify({ packages: ["../pkg"], selfskills: { backupCap: 3, trustedProjects: [projectDir, "/x/other"] } }));
			expect(setListedTrust(agentDir, projectDir, false)).to.deep.equal(["/x/other"]);
			expect(JSON.parse(readFileSync(path, "utf8"))).to.deep.equal({ packages: ["../pkg"], selfskills: { backupCap: 3, trustedProjects: ["/x/other"] } });
		});

		it("creates the global settings file when there is none", function () {
			const { agentDir, projectDir } = getEnv();
			setListedTrust(agentDir, projectDir, true);
			expect(JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8"))).to.deep.equal({ selfskills: { trustedProjects: [projectDir] } });
		});

		it("refuses to rewrite a malformed settings file rather than lose it", function () {
			const { agentDir, projectDir } = getEnv();
			const path = join(agentDir, "settings.json");
			writeFileSync(path, "{ broken");
			expect(() => setListedTrust(agentDir, projectDir, true)).to.throw(/refusing to rewrite/);
			expect(readFileSync(path, "utf8")).to.equal("{ broken");
		});
	});
});
