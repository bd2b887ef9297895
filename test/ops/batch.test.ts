// `operations` planned and committed as one: ops compose on an overlay, a planning refusal names
// the op and writes nothing, and commit-time faults (a failing rename, ENOSPC on a backup, a file
// edited by another process between plan and commit, a rollback that cannot finish) leave every
// file byte-for-byte as it was, with each op's fate reported and no audit line or event for it.
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { backupFolderName, skillKey } from "../../src/store/backup-store.ts";
import { skillBackupDir } from "../support/backups.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { recoverJournals } from "../../src/store/journal.ts";
import { getLockPath } from "../../src/base/locks.ts";
import { MAX_OPERATIONS } from "../../src/pipeline/mutate.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { checkBackups, sharedBackups } from "../hardening/crash-support.ts";
import { errno, faultyFs } from "../support/faulty-fs.ts";
import { skillText, writeFile, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectRefused, textOf, type Harness, type Result } from "../support/harness.ts";
import { auditLines, journals } from "./support.ts";

const sha = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

interface Fixture {
	readonly harness: Harness;
	readonly alpha: string;
	readonly notes: string;
	readonly beta: string;
	readonly script: string;
	/** path -> mode and bytes of every skill file now. */
	snapshot(): Record<string, string>;
}

const ALPHA = skillText("alpha", "1. Run the build.\n2. Check the page.\n");
const BETA = skillText("beta", "1. Deploy.\n");

async function setUp(env: TempEnv): Promise<Fixture> {
	const skills = join(env.agentDir, "skills");
	const alpha = writeSkill(skills, "alpha", ALPHA);
	const notes = writeFile(join(skills, "alpha", "references", "notes.md"), "old notes\n", 0o640);
	const beta = writeSkill(skills, "beta", BETA);
	const script = writeFile(join(skills, "beta", "scripts", "run.sh"), "#!/bin/sh\necho run\n", 0o755);
	const harness = createHarness(env);
	for (const args of [{ skill: "alpha" }, { skill: "alpha", file: "references/notes.md" }, { skill: "beta" }]) {
		const read = await harness.call({ action: "read", ...args });
		expect(read.details.ok, textOf(read)).to.equal(true);
	}
	const snapshot = () =>
		Object.fromEntries(
			[alpha, notes, beta, script].map((p) => [
				p,
				existsSync(p) ? `${(lstatSync(p).mode & 0o777).toString(8)} ${readFileSync(p, "utf8")}` : "(absent)",
			]),
		);
	return { harness, alpha, notes, beta, script, snapshot };
}

/** Three ops over two skills: patch alpha/SKILL.md, overwrite alpha's notes, delete beta's script. */
const THREE_OPS = [
	{ action: "patch", skill: "alpha", old_string: "1. Run the build.", new_string: "1. Run npm run build." },
	{ action: "write", skill: "alpha", file: "references/notes.md", content: "new notes\n" },
	{ action: "delete", skill: "beta", file: "scripts/run.sh" },
];

const fatesOf = (result: Result) => (result.details.operations as Array<{ fate: string }>).map((o) => o.fate);

describe("operations: planned on an overlay, committed all-or-nothing", function () {
	const getEnv = useTempEnv();

	it("lets a later op see an earlier one on the same file; one audit line and one event per op", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const result = await f.harness.call({
			action: "operations",
			operations: [
				{
					action: "patch",
					skill: "alpha",
					old_string: "1. Run the build.",
					new_string: "1. Run npm run build.",
				},
				{
					action: "patch",
					skill: "alpha",
					old_string: "1. Run npm run build.\n2. Check the page.",
					new_string: "1. Run npm run build.\n2. Check the health endpoint.",
				},
				{ action: "write", skill: "alpha", file: "references/notes.md", content: "new notes\n" },
			],
		});
		expect(result.details.ok, textOf(result)).to.equal(true);
		expect(readFileSync(f.alpha, "utf8")).to.equal(
			skillText("alpha", "1. Run npm run build.\n2. Check the health endpoint.\n"),
		);
		expect(fatesOf(result)).to.deep.equal(["landed", "landed", "landed"]);
		const lines = auditLines(env);
		expect(lines.map((l) => [l.operation, l.action, l.file])).to.deep.equal([
			[0, "patch", "SKILL.md"],
			[1, "patch", "SKILL.md"],
			[2, "write", "references/notes.md"],
		]);
		expect(lines[0].oldHash).to.equal(sha(ALPHA));
		expect(lines[1].oldHash, "op 1 starts where op 0 ended").to.equal(lines[0].newHash);
		expect(lines[1].newHash).to.equal(sha(readFileSync(f.alpha)));
		expect(lines[0].backup).to.be.a("string").and.equal(lines[1].backup);
		expect(
			readFileSync(join(skillBackupDir(env.agentDir, "alpha"), "SKILL.md", String(lines[0].backup)), "utf8"),
		).to.equal(ALPHA);
		expect(f.harness.events.map((e) => e.action)).to.deep.equal(["patch", "patch", "write"]);
		expect(journals(env)).to.deep.equal([]);
		// The read record moved to the landed hash: another patch needs no re-read.
		const again = await f.harness.call({
			action: "patch",
			skill: "alpha",
			old_string: "health endpoint",
			new_string: "/health",
		});
		expect(again.details.ok, textOf(again)).to.equal(true);
	});

	it("refuses the whole batch when one op fails a gate, naming its index, code and fix", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		const result = await f.harness.call({
			action: "operations",
			operations: [THREE_OPS[0], { action: "patch", skill: "beta", old_string: "e", new_string: "E" }, THREE_OPS[2]],
		});
		expectRefused(result, "not_unique");
		expect(textOf(result)).to.match(
			new RegExp(
				/^not_unique: operations\[1\] failed, nothing was written\. /.source +
					/old_string occurs \d+ times .*Add surrounding lines/.source,
			),
		);
		expect(result.details.operation).to.equal(1);
		expect(f.snapshot()).to.deep.equal(before);
		expect(existsSync(join(env.agentDir, "selfskills", "backups")), "no backup taken").to.equal(false);
		expect(auditLines(env)).to.deep.equal([]);
		expect(f.harness.events).to.deep.equal([]);
	});

	it("refuses an op on a file an earlier op deleted, by its index", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const result = await f.harness.call({
			action: "operations",
			operations: [
				THREE_OPS[2],
				{ action: "write", skill: "beta", file: "scripts/run.sh", content: "again\n" },
				{ action: "delete", skill: "beta", file: "scripts/run.sh" },
				{ action: "delete", skill: "beta", file: "scripts/run.sh" },
			],
		});
		expectRefused(result, "bad_file_path");
		expect(result.details.operation).to.equal(3);
		expect(existsSync(f.script)).to.equal(true);
	});

	it(`refuses more than ${MAX_OPERATIONS} operations with too_many_operations`, async function () {
		const env = getEnv();
		const f = await setUp(env);
		const result = await f.harness.call({
			action: "operations",
			operations: Array.from({ length: MAX_OPERATIONS + 1 }, () => THREE_OPS[0]),
		});
		expectRefused(result, "too_many_operations");
		expect(result.details).to.include({ count: MAX_OPERATIONS + 1, limit: MAX_OPERATIONS });
	});

	it("returns the combined diff of the whole batch on dry_run and writes nothing", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		const result = await f.harness.call({
			action: "operations",
			dry_run: true,
			operations: [
				...THREE_OPS,
				{ action: "patch", skill: "alpha", old_string: "npm run build", new_string: "npm ci && npm run build" },
			],
		});
		expect(result.details.ok, textOf(result)).to.equal(true);
		const diff = String(result.details.diff);
		expect(diff).to.contain("+1. Run npm ci && npm run build.").and.contain("-1. Run the build.");
		expect(diff).to.contain("+new notes").and.contain("--- a/beta/scripts/run.sh\n+++ /dev/null");
		expect(diff.match(/^--- /gm)).to.have.length(3);
		expect(f.snapshot()).to.deep.equal(before);
		expect(auditLines(env)).to.deep.equal([]);
	});
});

describe("operations: commit-time faults roll every written op back", function () {
	const getEnv = useTempEnv();

	function expectNothingLanded(env: TempEnv, f: Fixture, before: Record<string, string>): void {
		expect(f.snapshot(), "every file byte-for-byte (and mode) as before").to.deep.equal(before);
		expect(auditLines(env), "no audit line for a rolled-back op").to.deep.equal([]);
		expect(f.harness.events, "no event for a rolled-back op").to.deep.equal([]);
		expect(journals(env), "no journal left").to.deep.equal([]);
		checkBackups(env);
		expect(sharedBackups(env), "a backup still linked to a file the batch left in place").to.deep.equal([]);
		for (const dir of [
			join(env.agentDir, "skills", "alpha"),
			join(env.agentDir, "skills", "alpha", "references"),
			join(env.agentDir, "skills", "beta", "scripts"),
		]) {
			expect(
				readdirSync(dir).filter((n) => n.includes("selfskills-tmp")),
				`temp files in ${dir}`,
			).to.deep.equal([]);
		}
	}

	it("a rename failing on op 2 of 3: op 1 rolled back, ops 2 and 3 not written, fates reported", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		f.harness.fs = faultyFs(({ op: name, args }) => {
			if (name === "rename" && args[1] === f.notes) throw errno("EIO", "injected rename failure");
		});
		const result = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expectRefused(result, "io_error");
		expect(result.details).to.include({ errno: "EIO", operation: 1 });
		expect(fatesOf(result)).to.deep.equal(["rolled_back", "not_written", "not_written"]);
		expect(textOf(result)).to.match(
			/^io_error: operations\[1\] failed at commit; every op already written was rolled back\./,
		);
		expect(textOf(result))
			.to.contain("operations[0] patch alpha: rolled back")
			.and.contain("operations[2] delete beta: not written");
		expectNothingLanded(env, f, before);
		// Nothing moved under the agent: the same batch lands once the fault is gone, without a re-read.
		f.harness.fs = realFs;
		const retry = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expect(retry.details.ok, textOf(retry)).to.equal(true);
		expect(existsSync(f.script)).to.equal(false);
		expect(auditLines(env)).to.have.length(3);
	});

	it("a failing unlink on the last op brings the others back and keeps the script's mode", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		f.harness.fs = faultyFs(({ op: name, args }) => {
			if (name === "unlink" && args[0] === f.script) throw errno("EACCES", "injected unlink failure");
		});
		const result = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expectRefused(result, "io_error");
		expect(result.details.operation).to.equal(2);
		expect(fatesOf(result)).to.deep.equal(["rolled_back", "rolled_back", "not_written"]);
		expectNothingLanded(env, f, before);
	});

	it("ENOSPC while a backup is written: nothing is written, no temp file is left", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		let backupOpen = false;
		f.harness.fs = faultyFs(({ op: name, args }) => {
			if (name === "link" && String(args[1]).includes(join("selfskills", "backups", "beta")))
				throw errno("ENOSPC", "no space left on device");
			if (name === "open") backupOpen = String(args[0]).includes(join("selfskills", "backups", "beta"));
			if (name === "write" && backupOpen) throw errno("ENOSPC", "no space left on device");
		});
		const result = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expectRefused(result, "io_error");
		expect(result.details.errno).to.equal("ENOSPC");
		expect(fatesOf(result)).to.deep.equal(["not_written", "not_written", "not_written"]);
		expectNothingLanded(env, f, before);
		const backupDir = join(
			env.agentDir,
			"selfskills",
			"backups",
			backupFolderName(skillKey("beta", f.beta)),
			"scripts",
			"run.sh",
		);
		expect(existsSync(backupDir) ? readdirSync(backupDir) : []).to.deep.equal([]);
	});

	it("a file edited elsewhere before the commit: conflict, earlier ops rolled back, the edit kept", async function () {
		const env = getEnv();
		const f = await setUp(env);
		let edited = false;
		f.harness.fs = faultyFs(({ op: name, args }) => {
			// While op 1's write lands, someone else rewrites the script op 3 is about to delete.
			if (name === "rename" && args[1] === f.alpha && !edited) {
				edited = true;
				writeFileSync(f.script, "#!/bin/sh\necho edited elsewhere\n");
			}
		});
		const before = { ...f.snapshot(), [f.script]: "755 #!/bin/sh\necho edited elsewhere\n" };
		const result = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expectRefused(result, "conflict");
		expect(result.details.operation).to.equal(2);
		expect(fatesOf(result)).to.deep.equal(["rolled_back", "rolled_back", "not_written"]);
		expect(textOf(result)).to.contain(f.script);
		expectNothingLanded(env, f, before);
	});

	it("the last op's lock taken over while op 1 lands: conflict at op 3, earlier ops rolled back", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		// Each write checks its own file's lock: the one taken here is found when op 3 comes to it.
		const scriptLock = getLockPath(f.script);
		let stolen = false;
		f.harness.fs = faultyFs(({ op: name, args }) => {
			if (name === "rename" && args[1] === f.alpha && !stolen) {
				stolen = existsSync(scriptLock);
				rmSync(scriptLock, { recursive: true, force: true });
				mkdirSync(scriptLock);
			}
		});
		const result = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expect(stolen, "the script's lock was held during the commit").to.equal(true);
		expectRefused(result, "conflict");
		expect(textOf(result)).to.match(/lock was lost/);
		expect(result.details.operation).to.equal(2);
		expect(fatesOf(result)).to.deep.equal(["rolled_back", "rolled_back", "not_written"]);
		expectNothingLanded(env, f, before);
		rmSync(scriptLock, { recursive: true, force: true });
	});

	it("a rollback that cannot finish names the file and its backup, and recovery finishes it", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		let alphaRenames = 0;
		f.harness.fs = faultyFs(({ op: name, args }) => {
			if (name === "unlink" && args[0] === f.script) throw errno("EIO", "injected unlink failure");
			if (name === "rename" && args[1] === f.alpha && ++alphaRenames > 1)
				throw errno("EIO", "injected rollback failure");
		});
		const result = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expectRefused(result, "io_error");
		expect(fatesOf(result)).to.deep.equal(["rollback_failed", "rolled_back", "not_written"]);
		const fates = result.details.fates as Array<{ path: string; fate: string; backupPath: string }>;
		const broken = fates.find((x) => x.fate === "rollback_failed");
		expect(broken?.path).to.equal(f.alpha);
		expect(readFileSync(String(broken?.backupPath), "utf8"), "the named backup holds the old bytes").to.equal(ALPHA);
		expect(textOf(result))
			.to.contain("did NOT finish")
			.and.contain(`${f.alpha} differs from before (old bytes: ${broken?.backupPath})`);
		expect(readFileSync(f.alpha, "utf8")).to.not.equal(ALPHA);
		expect(journals(env)).to.have.length(1);
		expect(auditLines(env)).to.deep.equal([]);
		// What index.ts runs before the next call: the journal this process gave up on is finished.
		f.harness.fs = realFs;
		const reports = recoverJournals(realFs, env.agentDir);
		expect(reports).to.have.length(1);
		expect(reports[0].restored).to.deep.equal([f.alpha]);
		expect(reports[0].differs).to.deep.equal([]);
		expectNothingLanded(env, f, before);
	});

	it("keeps the journal of a commit still running in this process away from recovery", async function () {
		const env = getEnv();
		const f = await setUp(env);
		let reports: ReturnType<typeof recoverJournals> | undefined;
		f.harness.fs = faultyFs(({ op: name, args }) => {
			if (name === "rename" && args[1] === f.notes && reports === undefined)
				reports = recoverJournals(realFs, env.agentDir);
		});
		const result = await f.harness.call({ action: "operations", operations: THREE_OPS });
		expect(result.details.ok, textOf(result)).to.equal(true);
		expect(reports).to.deep.equal([]);
		expect(readFileSync(f.alpha, "utf8")).to.contain("npm run build");
	});
});

describe("operations: whole-skill deletes in a batch", function () {
	const getEnv = useTempEnv();

	it("snapshots each deleted skill, and backs up a file an earlier op changed with its old bytes", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const ops = [THREE_OPS[0], { action: "delete", skill: "alpha" }, { action: "delete", skill: "beta" }];
		const result = await f.harness.call({ action: "operations", operations: ops });
		expect(result.details.ok, textOf(result)).to.equal(true);
		expect(existsSync(join(env.agentDir, "skills", "alpha")), "alpha's folder removed").to.equal(false);
		expect(existsSync(join(env.agentDir, "skills", "beta")), "beta's folder removed").to.equal(false);
		const snapshots = result.details.snapshots as string[];
		expect(snapshots).to.have.length(2);
		expect(
			readFileSync(
				join(
					skillBackupDir(env.agentDir, "beta"),
					"__deleted__",
					readdirSync(join(skillBackupDir(env.agentDir, "beta"), "__deleted__")).find(
						(n) => !n.endsWith(".json"),
					) ?? "",
					"scripts",
					"run.sh",
				),
				"utf8",
			),
		).to.equal("#!/bin/sh\necho run\n");
		// alpha/SKILL.md was patched by op 0 first: its snapshot copy is the patched text, so the
		// bytes from before the batch got a backup of their own.
		const alphaLines = auditLines(env).filter((l) => l.skill === "alpha" && l.file === "SKILL.md");
		expect(alphaLines.map((l) => l.operation)).to.deep.equal([0, 1]);
		const ownBackup = readdirSync(join(skillBackupDir(env.agentDir, "alpha"), "SKILL.md"));
		expect(ownBackup).to.have.length(1);
		expect(readFileSync(join(skillBackupDir(env.agentDir, "alpha"), "SKILL.md", ownBackup[0]), "utf8")).to.equal(
			ALPHA,
		);
	});

	it("puts both deleted skills back byte-for-byte when the last file cannot be removed", async function () {
		const env = getEnv();
		const f = await setUp(env);
		const before = f.snapshot();
		f.harness.fs = faultyFs(({ op: name, args }) => {
			if (name === "unlink" && args[0] === f.script) throw errno("EBUSY", "injected unlink failure");
		});
		const result = await f.harness.call({
			action: "operations",
			operations: [THREE_OPS[0], { action: "delete", skill: "alpha" }, { action: "delete", skill: "beta" }],
		});
		expectRefused(result, "io_error");
		expect(result.details.operation).to.equal(2);
		expect(fatesOf(result)).to.deep.equal(["rolled_back", "rolled_back", "rolled_back"]);
		expect(f.snapshot()).to.deep.equal(before);
		expect(journals(env)).to.deep.equal([]);
		expect(auditLines(env)).to.deep.equal([]);
	});
});
