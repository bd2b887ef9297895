// The path jail under attack: sibling-prefix folders, `..`, absolute paths, NUL, backslashes, leaf,
// dangling and parent symlinks, symlinks planted between check and write, hard links, the root
// itself, case and Unicode aliases. Every attempt is refused with a clear code, and a fingerprint
// of the folders outside every root proves nothing there was created, changed or deleted.
import {
	existsSync,
	linkSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	renameSync,
	statSync,
	symlinkSync,
	unlinkSync,
	writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { expect } from "chai";
import { skillBackupDir } from "../support/backups.ts";
import { isWithin } from "../../src/base/paths.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { faultyFs, type FsCall } from "../support/faulty-fs.ts";
import { fingerprint, skillText, walkFiles, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, expectSameTree, textOf, type Harness } from "../support/harness.ts";

function setGlobalSettings(env: TempEnv, settings: Record<string, unknown>): void {
	writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify(settings));
}

/** Every file anywhere under the temp root, relative, for "no stray lock/temp file" checks. */
const allFiles = (root: string): string[] => walkFiles(root).map((path) => relative(root, path));

/** The per-user lock folder, relative to the temp env's root (its XDG_RUNTIME_DIR is run/). */
const LOCKS = join("run", "pi-selfskills", "locks");

describe("hardening: the path jail", function () {
	let env: TempEnv;
	let tool: Harness;
	let outside: string;
	let skillsRoot: string;
	let before: Map<string, string>;

	afterEach(function () {
		if (this.currentTest?.state === "failed") return;
		expectSameTree(before, fingerprint(outside), "the folder outside every root");
		const files = allFiles(env.root);
		const stray = [
			...files.filter((f) => /\.lock$/.test(f) && !f.startsWith(LOCKS)),
			// A write aborted by a folder swap may leave its temp file in the target's own folder (hidden, swept later).
			...files.filter(
				(f) =>
					/selfskills-tmp-/.test(f) &&
					!f.startsWith(join("agent", "skills")) &&
					!f.startsWith(join("agent", "selfskills")),
			),
		];
		expect(stray, "lock or temp files outside the private folder").to.deep.equal([]);
	});
	// Registered after the check above, so the temp folder is removed only once it has run.
	const getEnv = useTempEnv({ prefix: "selfskills-jail-" });

	beforeEach(function () {
		env = getEnv();
		tool = createHarness(env);
		skillsRoot = join(env.agentDir, "skills");
		outside = join(env.root, "outside");
		mkdirSync(join(outside, "dir"), { recursive: true });
		writeFileSync(join(outside, "secret.md"), "outside secret\n");
		writeFileSync(join(outside, "dir", "notes.md"), "outside notes\n");
		writeSkill(outside, "foreign");
		writeSkill(skillsRoot, "deploy");
		before = fingerprint(outside);
	});

	const readDeploy = async () => expectOk(await tool.call({ action: "read", skill: "deploy" }));

	it("tells a sibling folder that shares the root's name prefix apart from the root", async function () {
		expect(isWithin("/w/skills", "/w/skills-evil/x")).to.equal(false);
		expect(isWithin("/w/skills", "/w/skills/../skills-evil")).to.equal(false);
		expect(isWithin("/w/skills", "/w/skills/x")).to.equal(true);
		const evil = join(env.agentDir, "skills-evil");
		writeSkill(evil, "evil");
		setGlobalSettings(env, { skills: [evil] });
		const evilBefore = fingerprint(evil);
		expectOk(await tool.call({ action: "read", skill: "evil" }));
		expectRefused(
			await tool.call({ action: "patch", skill: "evil", old_string: "Run the build", new_string: "Run rm -rf" }),
			"not_writable",
		);
		expectRefused(
			await tool.call({ action: "write", skill: "evil", file: "references/x.md", content: "x" }),
			"not_writable",
		);
		expectRefused(await tool.call({ action: "delete", skill: "evil" }), "not_writable");
		// A symlink inside the root that leads into the sibling is judged by where it leads.
		symlinkSync(join(evil, "evil"), join(skillsRoot, "evil-link"));
		setGlobalSettings(env, {});
		const list = await tool.call({ action: "list" });
		expect(textOf(list)).to.match(/evil — .* patchable: no \(outside every writable root/);
		expectOk(await tool.call({ action: "read", skill: "evil" }));
		expectRefused(
			await tool.call({ action: "patch", skill: "evil", old_string: "Run the build", new_string: "Run rm -rf" }),
			"not_writable",
		);
		expectSameTree(evilBefore, fingerprint(evil), "the sibling folder");
	});

	it("refuses `..`, absolute, home, drive, NUL, backslash, hidden and node_modules file paths", async function () {
		await readDeploy();
		const bad = [
			"../foreign/SKILL.md",
			"references/../../deploy/SKILL.md",
			"references/../../../outside/secret.md",
			"..",
			join(outside, "secret.md"),
			"/etc/passwd",
			"~/secret.md",
			"C:/Windows/x.md",
			"c:\\x.md",
			"references\\..\\..\\x.md",
			"refs/a\0.md",
			"\0",
			"",
			" ",
			" references/a.md",
			".",
			"./",
			".git/config",
			"references/.hidden.md",
			"node_modules/x/index.js",
			`${"a".repeat(256)}.md`,
		];
		for (const file of bad) {
			for (const args of [
				{ action: "write", skill: "deploy", file, content: "pwned\n" },
				{ action: "read", skill: "deploy", file },
				{ action: "delete", skill: "deploy", file },
				{ action: "patch", skill: "deploy", file, old_string: "a", new_string: "b" },
			]) {
				const r = await tool.call(args);
				expect(r.details.ok, `${JSON.stringify(file)} ${args.action}: ${textOf(r)}`).to.equal(false);
				expect(["bad_file_path"], `${JSON.stringify(file)} ${args.action}: ${textOf(r)}`).to.include(
					r.details.code,
				);
			}
		}
		expect(readdirSync(join(skillsRoot, "deploy"))).to.deep.equal(["SKILL.md"]);
	});

	it("finds a path only among discovered skills: outside folders, the root and NUL are unknown", async function () {
		for (const path of [
			join(outside, "foreign"),
			join(outside, "foreign", "SKILL.md"),
			skillsRoot,
			env.agentDir,
			"/",
			"../outside/foreign",
			`${skillsRoot}/deploy\0`,
			"@/etc",
		]) {
			expectRefused(await tool.call({ action: "read", path }), "unknown_skill");
			expectRefused(await tool.call({ action: "delete", path }), "unknown_skill");
		}
		for (const skill of ["../outside/foreign", "deploy/..", "Deploy", "DEPLOY", "deploy\0", "deploy/SKILL.md"]) {
			expectRefused(await tool.call({ action: "read", skill }), "unknown_skill");
		}
	});

	it("refuses a leaf symlink to a file outside, for read, write, patch and delete", async function () {
		mkdirSync(join(skillsRoot, "deploy", "references"));
		symlinkSync(join(outside, "secret.md"), join(skillsRoot, "deploy", "references", "leak.md"));
		await readDeploy();
		for (const fields of [
			{ action: "read" },
			{ action: "write", content: "pwned\n" },
			{ action: "patch", old_string: "outside", new_string: "pwned" },
			{ action: "delete" },
		])
			expectRefused(await tool.call({ skill: "deploy", file: "references/leak.md", ...fields }), "bad_file_path");
		// Deleting the whole skill refuses to snapshot a tree that holds symlinks.
		expectRefused(await tool.call({ action: "delete", skill: "deploy" }), "not_writable");
		expect(existsSync(join(skillsRoot, "deploy", "SKILL.md"))).to.equal(true);
	});

	it("refuses a link between two files of a skill (the link, not its target, would be replaced)", async function () {
		const refs = join(skillsRoot, "deploy", "references");
		mkdirSync(refs);
		writeFileSync(join(refs, "real.md"), "real\n");
		symlinkSync("real.md", join(refs, "alias.md"));
		await readDeploy();
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/alias.md" }));
		for (const fields of [
			{ action: "write", content: "changed\n" },
			{ action: "patch", old_string: "real", new_string: "fake" },
		])
			expectRefused(await tool.call({ skill: "deploy", file: "references/alias.md", ...fields }), "not_writable");
		expect(readFileSync(join(refs, "real.md"), "utf8")).to.equal("real\n");
	});

	it("refuses a SKILL.md that is a symlink to a skill file outside every root", async function () {
		const dir = join(skillsRoot, "proxy");
		mkdirSync(dir);
		writeFileSync(join(outside, "proxy.md"), skillText("proxy"));
		before = fingerprint(outside);
		symlinkSync(join(outside, "proxy.md"), join(dir, "SKILL.md"));
		expectOk(await tool.call({ action: "read", skill: "proxy" }));
		expect(textOf(await tool.call({ action: "list", skill: "proxy" }))).to.match(/patchable: no/);
		expectRefused(
			await tool.call({ action: "patch", skill: "proxy", old_string: "Run the build", new_string: "Run rm" }),
			"not_writable",
		);
		expectRefused(await tool.call({ action: "delete", skill: "proxy" }), "not_writable");
		expectRefused(
			await tool.call({ action: "write", skill: "proxy", file: "references/x.md", content: "x\n" }),
			"not_writable",
		);
	});

	it("refuses a dangling symlink, wherever it points", async function () {
		const refs = join(skillsRoot, "deploy", "references");
		mkdirSync(refs);
		symlinkSync(join(outside, "created-by-attack.md"), join(refs, "dangling.md"));
		symlinkSync("../../../../outside/created2.md", join(refs, "dangling2.md"));
		await readDeploy();
		for (const file of ["references/dangling.md", "references/dangling2.md"]) {
			const r = await tool.call({ action: "write", skill: "deploy", file, content: "pwned\n" });
			expect(["not_writable", "bad_file_path"], textOf(r)).to.include(r.details.code);
			const d = await tool.call({ action: "delete", skill: "deploy", file });
			expect(["not_writable", "bad_file_path"], textOf(d)).to.include(d.details.code);
		}
		expect(existsSync(join(outside, "created-by-attack.md"))).to.equal(false);
	});

	it("refuses files under a symlinked parent folder that leads outside", async function () {
		symlinkSync(join(outside, "dir"), join(skillsRoot, "deploy", "references"));
		await readDeploy();
		expectRefused(
			await tool.call({ action: "write", skill: "deploy", file: "references/new.md", content: "pwned\n" }),
			"bad_file_path",
		);
		expectRefused(
			await tool.call({ action: "write", skill: "deploy", file: "references/notes.md", content: "pwned\n" }),
			"bad_file_path",
		);
		expectRefused(await tool.call({ action: "read", skill: "deploy", file: "references/notes.md" }), "bad_file_path");
		expectRefused(
			await tool.call({ action: "delete", skill: "deploy", file: "references/notes.md" }),
			"bad_file_path",
		);
		// And a skill folder that is itself a symlink to a folder outside is read-only.
		symlinkSync(join(outside, "foreign"), join(skillsRoot, "foreign"));
		expectOk(await tool.call({ action: "read", skill: "foreign" }));
		expectRefused(
			await tool.call({ action: "patch", skill: "foreign", old_string: "Run the build", new_string: "Run rm" }),
			"not_writable",
		);
		expectRefused(await tool.call({ action: "delete", skill: "foreign" }), "not_writable");
	});

	it("never writes outside when a symlink is planted at the leaf between check and write", async function () {
		const refs = join(skillsRoot, "deploy", "references");
		mkdirSync(refs);
		const file = join(refs, "a.md");
		writeFileSync(file, "original\n");
		let planted = false;
		const fs = faultyFs({
			open: ({ args }) => {
				const path = String(args[0]);
				if (!planted && path.includes(".a.md.selfskills-tmp-")) {
					planted = true;
					renameSync(file, `${file}.moved`);
					symlinkSync(join(outside, "secret.md"), file);
				}
				return undefined;
			},
		});
		const racing = createHarness(env, fs);
		expectOk(await racing.call({ action: "read", skill: "deploy" }));
		expectOk(await racing.call({ action: "read", skill: "deploy", file: "references/a.md" }));
		const r = await racing.call({ action: "write", skill: "deploy", file: "references/a.md", content: "new\n" });
		expect(planted).to.equal(true);
		// Either refused, or the link itself was replaced: the outside file is untouched (afterEach).
		expect(["written", "conflict", "io_error"]).to.include(r.details.ok === true ? "written" : r.details.code);
	});

	it("never writes outside when a parent folder is swapped for a symlink between check and write", async function () {
		const refs = join(skillsRoot, "deploy", "references");
		mkdirSync(refs);
		writeFileSync(join(refs, "notes.md"), "inside notes\n");
		const attacks: Array<{ op: "open" | "write" | "fsync"; when: (path: string) => boolean }> = [
			{ op: "open", when: (p) => p.includes(".notes.md.selfskills-tmp-") },
			{ op: "write", when: () => true },
			{ op: "fsync", when: () => true },
		];
		for (const attack of attacks) {
			let planted = false;
			const plant = ({ args }: FsCall) => {
				if (planted || !attack.when(String(args[0]))) return undefined;
				planted = true;
				renameSync(refs, `${refs}.moved`);
				symlinkSync(join(outside, "dir"), refs);
				return undefined;
			};
			const racing = createHarness(env, faultyFs({ [attack.op]: plant }));
			expectOk(await racing.call({ action: "read", skill: "deploy" }));
			expectOk(await racing.call({ action: "read", skill: "deploy", file: "references/notes.md" }));
			const r = await racing.call({
				action: "write",
				skill: "deploy",
				file: "references/notes.md",
				content: "pwned\n",
			});
			expect(planted, attack.op).to.equal(true);
			expect(r.details.ok, `${attack.op}: ${textOf(r)}`).to.equal(false);
			expectSameTree(before, fingerprint(outside), `outside after a swap at ${attack.op}`);
			// Undo the swap for the next attack.
			renameSync(refs, `${refs}.link`);
			renameSync(`${refs}.moved`, refs);
			expect(readFileSync(join(refs, "notes.md"), "utf8")).to.equal("inside notes\n");
			unlinkSync(`${refs}.link`);
		}
	});

	it("replaces a hard link to a file outside instead of writing through it", async function () {
		const refs = join(skillsRoot, "deploy", "references");
		mkdirSync(refs);
		linkSync(join(outside, "secret.md"), join(refs, "hard.md"));
		before = fingerprint(outside);
		expect(statSync(join(outside, "secret.md")).nlink).to.equal(2);
		await readDeploy();
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/hard.md" }));
		expectOk(
			await tool.call({
				action: "patch",
				skill: "deploy",
				file: "references/hard.md",
				old_string: "outside secret",
				new_string: "inside now",
			}),
		);
		expect(readFileSync(join(refs, "hard.md"), "utf8")).to.equal("inside now\n");
		expect(readFileSync(join(outside, "secret.md"), "utf8")).to.equal("outside secret\n");
		// The link is broken, so the outside file's link count drops; its bytes are untouched.
		expect(statSync(join(outside, "secret.md")).nlink).to.equal(1);
		before = fingerprint(outside);
		// Delete unlinks only the name inside the skill.
		linkSync(join(outside, "dir", "notes.md"), join(refs, "hard2.md"));
		expectOk(await tool.call({ action: "delete", skill: "deploy", file: "references/hard2.md" }));
		expect(readFileSync(join(outside, "dir", "notes.md"), "utf8")).to.equal("outside notes\n");
		// The backup of the replaced content is a copy, not another link to the outside file.
		const backupDir = join(skillBackupDir(env.agentDir, "deploy"), "references", "hard.md");
		for (const name of readdirSync(backupDir)) expect(statSync(join(backupDir, name)).nlink).to.equal(1);
	});

	it("never treats a writable root itself as a skill folder it may delete", async function () {
		const pkg = join(env.root, "pkg");
		mkdirSync(pkg);
		writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "pkg", pi: { skills: ["./SKILL.md"] } }));
		writeFileSync(join(pkg, "SKILL.md"), skillText("pkg"));
		setGlobalSettings(env, { packages: [pkg] });
		const pkgBefore = fingerprint(pkg);
		const list = await tool.call({ action: "list" });
		if (/pkg —/.test(textOf(list))) {
			expectOk(await tool.call({ action: "read", skill: "pkg" }));
			expectRefused(await tool.call({ action: "delete", skill: "pkg" }), "not_writable");
		}
		expectRefused(await tool.call({ action: "delete", path: skillsRoot }), "unknown_skill");
		expectSameTree(pkgBefore, fingerprint(pkg), "the package root");
		expect(existsSync(skillsRoot)).to.equal(true);
	});

	it("refuses case and Unicode-normalisation aliases of SKILL.md and of skill names", async function () {
		await readDeploy();
		for (const file of ["skill.md", "Skill.md", "SKILL.MD", "references/../SKILL.md", "./SKILL.md"]) {
			const r = await tool.call({ action: "write", skill: "deploy", file, content: "x\n" });
			expect(["bad_file_path", "patch_only"], `${file}: ${textOf(r)}`).to.include(r.details.code);
		}
		const nfd = "references/cafe\u0301.md";
		expectRefused(await tool.call({ action: "write", skill: "deploy", file: nfd, content: "x\n" }), "bad_file_path");
		expectOk(await tool.call({ action: "write", skill: "deploy", file: "references/caf\u00e9.md", content: "x\n" }));
		expectRefused(await tool.call({ action: "delete", skill: "deploy", file: "SKILL.md" }), "invalid_arguments");
		expectRefused(await tool.call({ action: "delete", skill: "deploy", file: "skill.md" }), "bad_file_path");
		expectRefused(await tool.call({ action: "create", name: "Deploy", description: "d", body: "b" }), "invalid_name");
		expectRefused(
			await tool.call({ action: "create", name: "d\u0435ploy", description: "d", body: "b" }),
			"invalid_name",
		);
		expectRefused(await tool.call({ action: "create", name: "deploy", description: "d", body: "b" }), "exists");
		expect(readdirSync(join(skillsRoot, "deploy")).sort()).to.deep.equal(["SKILL.md", "references"]);
	});

	it("keeps every lock in the private folder and every temp file in the target's own folder", async function () {
		await readDeploy();
		const seen: string[] = [];
		const fs = faultyFs({ open: ({ args }) => void seen.push(String(args[0])) });
		const watched = createHarness(env, fs);
		expectOk(await watched.call({ action: "read", skill: "deploy" }));
		expectOk(
			await watched.call({
				action: "patch",
				skill: "deploy",
				old_string: "Run the build.",
				new_string: "Run npm run build.",
			}),
		);
		expectOk(await watched.call({ action: "write", skill: "deploy", file: "references/new.md", content: "new\n" }));
		const temps = seen.filter((p) => p.includes("selfskills-tmp-"));
		expect(temps.length).to.be.greaterThan(0);
		const allowed = [
			join(skillsRoot, "deploy"),
			join(skillsRoot, "deploy", "references"),
			join(env.agentDir, "selfskills"),
		];
		for (const temp of temps)
			expect(
				allowed.some((dir) => isWithin(dir, temp)),
				temp,
			).to.equal(true);
		const locks = allFiles(env.root).filter((f) => f.endsWith(".lock"));
		expect(
			locks.every((f) => f.startsWith(LOCKS)),
			locks.join(","),
		).to.equal(true);
	});
});
