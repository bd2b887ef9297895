// paths.ts through an injected FsOps: resolveReal, findProjectRoot, getPiPlaces and getRootProblem
// ask the `fs` they are given, and a realpath that fails falls back as resolveReal documents.
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { findProjectRoot, getPiPlaces, getRootProblem, resolveReal } from "../../../src/base/paths.ts";
import { errno, faultyFs } from "../../support/faulty-fs.ts";
import { useTempEnv } from "../../support/temp-env.ts";

describe("paths through an injected FsOps", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-fs-seam-paths-" });

	it("resolveReal climbs to the folder of a link whose realpath fails (EACCES) and appends the rest", function () {
		const env = getEnv();
		mkdirSync(join(env.projectDir, "real"));
		const link = join(env.projectDir, "alias");
		symlinkSync(join(env.projectDir, "real"), link);
		const fs = faultyFs({
			realpath: (call) => (call.args[0] === link ? errno("EACCES", "permission denied") : undefined),
		});
		expect(resolveReal(join(link, "SKILL.md"))).to.equal(join(env.projectDir, "real", "SKILL.md"));
		// Through the fs: the link is unresolvable, so the path keeps its name below the real folder.
		expect(resolveReal(join(link, "SKILL.md"), fs)).to.equal(join(env.projectDir, "alias", "SKILL.md"));
		expect(fs.log.map((call) => call.args[0])).to.deep.equal([join(link, "SKILL.md"), link, env.projectDir]);
	});

	it("resolveReal: when not even the root resolves, the absolute path comes back as it is", function () {
		const fs = faultyFs({ realpath: () => errno("EIO", "i/o error") });
		expect(resolveReal("/a/b/../c", fs)).to.equal("/a/c");
	});

	it("findProjectRoot asks the fs whether a .git exists (stat, symlinks followed)", function () {
		const env = getEnv();
		const sub = join(env.projectDir, "deep", "er");
		mkdirSync(sub, { recursive: true });
		const seen = new Set([join(env.projectDir, ".git")]);
		const fs = {
			...realFs,
			stat: (path: string) => (seen.has(path) ? realFs.stat(env.projectDir) : undefined),
		};
		expect(findProjectRoot(sub, fs)).to.equal(env.projectDir);
		const blind = faultyFs({ stat: () => errno("EACCES") });
		expect(findProjectRoot(sub, blind)).to.equal(sub);
		expect(blind.log.every((call) => call.op === "stat" && String(call.args[0]).endsWith("/.git"))).to.equal(true);
	});

	it("getPiPlaces and getRootProblem resolve through the fs, refusing a root it maps into pi's folder", function () {
		const env = getEnv();
		const root = join(env.root, "skills-elsewhere");
		const fs = {
			...realFs,
			realpath: (path: string) => (path === root ? join(env.agentDir, "extensions") : realFs.realpath(path)),
		};
		const places = getPiPlaces(env.agentDir, fs);
		expect(places.agentDirReal).to.equal(env.agentDir);
		expect(getRootProblem(places, root)).to.equal(undefined);
		expect(getRootProblem(places, root, fs)).to.contain("inside pi's own folder");
	});
});
