// What the filesystem lets this user write, checked up front: a skill folder, a bundled sub-folder,
// a skills dir or the backup store that is not writable makes list say read-only and a mutation
// refuse before any backup, naming the folder; an unusable lock folder is an io_error naming it;
// a dry run writes nothing anywhere; a read-only mount (EROFS) is named as one, with no chmod advice.
// We run as root, so EACCES and EROFS are injected through FsOps.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import { expect } from "chai";
import { getBackupsDir } from "../../src/base/paths.ts";
import { formatStatus, type CommandDeps } from "../../src/face/command.ts";
import { refusalForHuman } from "../../src/face/command-text.ts";
import { folderNotWritable } from "../../src/base/errors.ts";
import { discoverSkills } from "../../src/policy/discovery.ts";
import { realFs, type FsOps } from "../../src/base/fs-ops.ts";
import { checkWritable } from "../../src/pipeline/gates.ts";
import { getLockDir } from "../../src/base/locks.ts";
import { loadSettings } from "../../src/policy/settings.ts";
import type { FileTarget } from "../../src/policy/target.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { errno, faultyFs } from "../support/faulty-fs.ts";
import { fingerprint, skillText, walkFiles, writeSkill } from "../support/fixtures.ts";
import {
	createHarness,
	expectOk,
	expectRefused,
	expectSameTree,
	type Harness,
	type Result,
	textOf,
	sessionDeps,
} from "../support/harness.ts";

/** realFs, except that access() refuses EACCES for the listed folders (as for a non-root user without w on them). */
function deniedFs(folders: readonly string[]): FsOps {
	return faultyFs({
		access: ({ args }) =>
			folders.includes(String(args[0]))
				? errno("EACCES", `permission denied, access '${String(args[0])}'`)
				: undefined,
	});
}

/** Reads deploy (so a patch may follow), then patches its "Run the build." to `newString`. */
async function readThenPatch(tool: Harness, newString: string, extra: Record<string, unknown> = {}): Promise<Result> {
	expectOk(await tool.call({ action: "read", skill: "deploy" }));
	return tool.call({
		action: "patch",
		skill: "deploy",
		old_string: "Run the build.",
		new_string: newString,
		...extra,
	});
}

describe("hardening: what this user may write", function () {
	this.timeout(60_000);
	const getEnv = useTempEnv({ prefix: "selfskills-writable-" });
	let env: TempEnv;
	let skillsRoot: string;
	let skillDir: string;
	let skillFile: string;
	beforeEach(function () {
		env = getEnv();
		skillsRoot = join(env.agentDir, "skills");
		skillFile = writeSkill(skillsRoot, "deploy", skillText("deploy"));
		skillDir = join(skillsRoot, "deploy");
	});

	const backupsHeld = () => walkFiles(getBackupsDir(env.agentDir));
	/** realFs, except that opening the commit's temp file in the skill folder fails with `fault(path)`. */
	const commitOpenFails = (fault: (path: string) => Error): FsOps =>
		faultyFs({
			open: ({ args: [path] }) =>
				typeof path === "string" && path.includes("selfskills-tmp-") && path.startsWith(skillDir)
					? fault(path)
					: undefined,
		});

	describe("a skill folder not writable by the user", function () {
		it("is listed read-only: folder not writable by you, naming the folder", async function () {
			const tool = createHarness(env, deniedFs([skillDir]));
			const listed = await tool.call({ action: "list" });
			expectOk(listed);
			expect(textOf(listed)).to.include(`patchable: no (folder not writable by you: ${skillDir})`);
			const read = await tool.call({ action: "read", skill: "deploy" });
			expect(textOf(read)).to.include(`read-only: folder not writable by you: ${skillDir}`);
		});

		it("is read-only in /selfskills status too, with the same reason", async function () {
			const deps: CommandDeps = { ...sessionDeps(env.agentDir, deniedFs([skillDir])), knownSkills: [] };
			const status = await formatStatus(deps, { cwd: env.projectDir } as unknown as ExtensionCommandContext);
			expect(status).to.include(`deploy: read-only (folder not writable by you: ${skillDir})`);
			expect(status).to.not.match(/deploy: patchable/);
		});

		for (const dryRun of [false, true]) {
			const patch = dryRun ? "dry-run patch" : "patch";
			it(`refuses a ${patch} with not_writable naming the folder, before any backup`, async function () {
				const tool = createHarness(env, deniedFs([skillDir]));
				const r = await readThenPatch(tool, "Run npm run build.", dryRun ? { dry_run: true } : {});
				expectRefused(r, "not_writable");
				expect(textOf(r)).to.include(`folder not writable by you (${skillDir}, EACCES)`);
				expect(textOf(r)).to.not.match(/selfskills-tmp|EACCES: EACCES|\(skill_manage\)/);
				expect(r.details).to.include({ folder: skillDir, errno: "EACCES" });
				expect(readFileSync(skillFile, "utf8")).to.equal(skillText("deploy"));
				expect(backupsHeld()).to.deep.equal([]);
				const history = await tool.call({ action: "history", skill: "deploy" });
				expect(history.details.backups, textOf(history)).to.deep.equal([]);
			});
		}

		it("refuses write, delete and a batch the same way, naming the folder", async function () {
			const tool = createHarness(env, deniedFs([skillDir]));
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			const calls = [
				{ action: "write", skill: "deploy", file: "notes.md", content: "x\n" },
				{ action: "delete", skill: "deploy" },
				{
					action: "operations",
					operations: [{ action: "patch", skill: "deploy", old_string: "Run the build.", new_string: "Build." }],
				},
			];
			for (const call of calls) {
				const r = await tool.call(call);
				expectRefused(r, "not_writable");
				expect(textOf(r), call.action).to.include(skillDir);
			}
			expect(backupsHeld()).to.deep.equal([]);
		});
	});

	it("reports a permission error only the commit meets once, naming the folder to make writable", async function () {
		// The folder changed after the check. Node's message: "EACCES: permission denied, open '<tmp file>'".
		const fs = commitOpenFails((path) =>
			Object.assign(errno("EACCES", `permission denied, open '${path}'`), { path, syscall: "open" }),
		);
		const r = await readThenPatch(createHarness(env, fs), "Run npm run build.");
		expectRefused(r, "io_error");
		expect(textOf(r)).to.not.include("EACCES: EACCES");
		expect(textOf(r)).to.include(`The folder ${skillDir} must be writable by you`);
		expect(r.details).to.include({ errno: "EACCES", folder: skillDir });
		expect(readFileSync(skillFile, "utf8")).to.equal(skillText("deploy"));
	});

	describe("a read-only mount (injected EROFS): the fix named is a remount, never chmod", function () {
		const erofs = (path: string, syscall: string) =>
			Object.assign(errno("EROFS", `read-only file system, ${syscall} '${path}'`), { path, syscall });

		it("the commit's write: io_error naming the folder and the read-only mount", async function () {
			const r = await readThenPatch(
				createHarness(
					env,
					commitOpenFails((path) => erofs(path, "open")),
				),
				"B.",
			);
			expectRefused(r, "io_error");
			expect(textOf(r)).to.include(`${skillDir} is on a read-only mount (EROFS), which chmod cannot change`);
			expect(textOf(r)).to.not.include("chmod u+w");
			expect(r.details).to.include({ errno: "EROFS", folder: skillDir });
			expect(readFileSync(skillFile, "utf8")).to.equal(skillText("deploy"));
		});

		it("the up-front check of the skill folder and of the backup store say the same", async function () {
			const roFs = (folders: readonly string[]) =>
				faultyFs({
					access: ({ args: [path] }) =>
						folders.includes(String(path)) ? erofs(String(path), "access") : undefined,
				});
			const tool = createHarness(env, roFs([skillDir]));
			const r = await readThenPatch(tool, "B.");
			expectRefused(r, "not_writable");
			expect(textOf(r)).to.include("read-only mount (EROFS)");
			expect(textOf(r)).to.not.include("chmod u+w");
			expect(refusalForHuman(folderNotWritable(skillFile, skillDir, "EROFS", []))).to.match(
				/read-only mount \(EROFS\), which chmod cannot change: remount it read-write\.$/,
			);
			const store = join(env.agentDir, "selfskills");
			mkdirSync(store, { recursive: true });
			const storeTool = createHarness(env, roFs([store]));
			const s = await readThenPatch(storeTool, "B.");
			expectRefused(s, "io_error");
			expect(textOf(s)).to.include(`${store} is on a read-only mount (EROFS)`);
			expect(textOf(s)).to.not.include("chmod u+w");
		});
	});

	describe("the gate itself (checkWritable with an injected filesystem)", function () {
		const targetOf = async (
			relPath: string,
		): Promise<{ target: FileTarget; roots: Awaited<ReturnType<typeof discoverSkills>>["roots"] }> => {
			const settings = loadSettings({ cwd: env.projectDir, agentDir: env.agentDir, trusted: false }).settings;
			const discovery = await discoverSkills({
				cwd: env.projectDir,
				agentDir: env.agentDir,
				trusted: false,
				settings,
			});
			const skill = discovery.skills.find((s) => s.name === "deploy");
			if (!skill) throw new Error("deploy not discovered");
			return {
				target: { skill, relPath, absPath: join(skillDir, relPath), isSkillFile: relPath === "SKILL.md" },
				roots: discovery.roots,
			};
		};

		it("refuses a bundled file whose own sub-folder is not writable, naming that sub-folder", async function () {
			mkdirSync(join(skillDir, "references"));
			const { target, roots } = await targetOf("references/api.md");
			const refused = checkWritable(
				{ roots, agentDir: env.agentDir, fs: deniedFs([join(skillDir, "references")]) },
				target,
			);
			expect(refused?.code).to.equal("not_writable");
			expect(refused?.data).to.include({ folder: join(skillDir, "references"), errno: "EACCES" });
		});

		it("names the nearest folder that exists for a file whose folders are not made yet", async function () {
			const { target, roots } = await targetOf("scripts/new/run.sh");
			const refused = checkWritable({ roots, agentDir: env.agentDir, fs: deniedFs([skillDir]) }, target);
			expect(refused?.data).to.include({ folder: skillDir });
		});

		it("refuses with io_error naming the backup store when the agent dir's store is not writable", async function () {
			mkdirSync(join(env.agentDir, "selfskills"));
			const { target, roots } = await targetOf("SKILL.md");
			const refused = checkWritable(
				{ roots, agentDir: env.agentDir, fs: deniedFs([join(env.agentDir, "selfskills")]) },
				target,
			);
			expect(refused?.code).to.equal("io_error");
			expect(refused?.message).to.match(
				/^io_error: the backup store \S+selfskills is not writable by you \(EACCES\)/,
			);
			expect(refused?.data).to.include({ folder: join(env.agentDir, "selfskills"), errno: "EACCES" });
		});

		it("passes a folder the user may write", async function () {
			const { target, roots } = await targetOf("SKILL.md");
			expect(checkWritable({ roots, agentDir: env.agentDir, fs: realFs }, target)).to.equal(undefined);
		});
	});

	describe("the lock folder", function () {
		it("refuses a patch with io_error naming a planted lock folder, before any backup", async function () {
			symlinkSync(env.home, join(env.runtimeDir, "pi-selfskills"));
			const tool = createHarness(env);
			const r = await readThenPatch(tool, "Run npm run build.");
			expectRefused(r, "io_error");
			expect(textOf(r)).to.include(`the lock folder ${join(env.runtimeDir, "pi-selfskills")} is a symbolic link`);
			expect(textOf(r)).to.not.include("(skill_manage)");
			expect(readFileSync(skillFile, "utf8")).to.equal(skillText("deploy"));
			expect(backupsHeld()).to.deep.equal([]);
		});
	});

	describe("a dry run", function () {
		it("writes nothing: the agent dir, the skill and the lock folder are as before", async function () {
			const tool = createHarness(env);
			expectOk(await tool.call({ action: "read", skill: "deploy" }));
			writeFileSync(join(skillDir, "notes.md"), "notes\n");
			expectOk(await tool.call({ action: "read", skill: "deploy", file: "notes.md" }));
			const locks = getLockDir();
			const before = [fingerprint(env.agentDir), fingerprint(locks)];
			const calls = [
				{
					action: "patch",
					skill: "deploy",
					old_string: "Run the build.",
					new_string: "Run npm run build.",
					dry_run: true,
				},
				{ action: "write", skill: "deploy", file: "notes.md", content: "new\n", dry_run: true },
				{ action: "delete", skill: "deploy", file: "notes.md", dry_run: true },
				{
					action: "create",
					name: "fresh",
					description: "Use when testing a dry create. Does nothing.",
					body: "# Fresh\n",
					dry_run: true,
				},
			];
			for (const call of calls) {
				const r = await tool.call(call);
				expectOk(r);
				expect(r.details.dryRun, call.action).to.equal(true);
			}
			expectSameTree(before[0], fingerprint(env.agentDir), "the agent dir");
			expectSameTree(before[1], fingerprint(locks), "the lock folder");
		});
	});
});
