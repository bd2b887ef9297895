// backup-store.ts: the exact on-disk layout a person restores from with `cp`, UTC stamps, hashes
// of the stored bytes, de-duplication, pruning, the old flat layout and tamper detection; one folder
// per skill folder, private modes, and no symlink followed inside the store.
import {
	chmodSync,
	copyFileSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	rmSync,
	statSync,
	symlinkSync,
	unlinkSync,
	writeFileSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { expect } from "chai";
import {
	backupFolderName,
	createBackupStore,
	formatStamp,
	skillFolderName,
	skillKey,
	type BackupEntry,
} from "../../../src/store/backup-store.ts";
import { isRefusal, type Refusal } from "../../../src/base/errors.ts";
import { realFs } from "../../../src/base/fs-ops.ts";
import { StoreLinkError } from "../../../src/base/writer.ts";
import { useTempEnv } from "../../support/temp-env.ts";

function thrownBy(fn: () => unknown): unknown {
	try {
		fn();
	} catch (error) {
		return error;
	}
	return undefined;
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
	try {
		await promise;
	} catch (error) {
		return error;
	}
	return undefined;
}

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
const ID = /^(\d{8}-\d{6}\.\d{3})-([0-9a-f]{10})(\.[^/]*)?$/;
const ALPHA = { name: "alpha", dir: "/skills/alpha" };
const BETA = { name: "beta", dir: "/skills/beta" };
const FOLDER = backupFolderName(ALPHA);
const ODD_BYTES = Buffer.concat([
	Buffer.from("\uFEFF---\r\nname: alpha\r\n---\r\ntrailing  \r\n", "utf8"),
	Buffer.from([0xe2, 0x80, 0xae, 0x0a]),
]);

describe("backup store", function () {
	const getEnv = useTempEnv();
	const store = () => createBackupStore(realFs, getEnv().agentDir);
	const backupsDir = () => join(getEnv().agentDir, "selfskills", "backups");
	let savedTz: string | undefined;
	beforeEach(() => {
		savedTz = process.env.TZ;
	});
	afterEach(() => {
		if (savedTz === undefined) delete process.env.TZ;
		else process.env.TZ = savedTz;
	});

	it("stores SKILL.md as <agentDir>/selfskills/backups/<skill>@<hash>/SKILL.md/<stamp>-<sha256[:10]>.md", function () {
		const bytes = Buffer.from("---\nname: alpha\ndescription: d\n---\n");
		const entry = store().store(ALPHA, "SKILL.md", bytes);
		expect(entry.path).to.equal(join(backupsDir(), FOLDER, "SKILL.md", entry.id));
		const match = ID.exec(entry.id);
		expect(match, entry.id).to.not.equal(null);
		expect(match?.[2]).to.equal(sha(bytes).slice(0, 10));
		expect(match?.[3]).to.equal(".md");
		expect(entry).to.deep.include({
			hash: sha(bytes).slice(0, 10),
			size: bytes.length,
			legacy: false,
			stamp: match?.[1],
		});
	});

	it("mirrors a bundled file's relative path and keeps its extension (none when it has none)", function () {
		const s = store();
		const sh = s.store(ALPHA, "scripts/run.sh", Buffer.from("echo hi\n"));
		const plain = s.store(ALPHA, "assets/LICENSE", Buffer.from("MIT\n"));
		expect(sh.path).to.equal(join(backupsDir(), FOLDER, "scripts", "run.sh", sh.id));
		expect(sh.id.endsWith(".sh")).to.equal(true);
		expect(plain.path).to.equal(join(backupsDir(), FOLDER, "assets", "LICENSE", plain.id));
		expect(ID.exec(plain.id)?.[3]).to.equal(undefined);
	});

	it("stamps in UTC whatever the local time zone is", function () {
		process.env.TZ = "Asia/Kolkata";
		const before = Date.now();
		const entry = store().store(ALPHA, "SKILL.md", Buffer.from("x"));
		const after = Date.now();
		expect(new Date(before).getHours()).to.not.equal(new Date(before).getUTCHours());
		expect(entry.stamp >= formatStamp(new Date(before)) && entry.stamp <= formatStamp(new Date(after + 5))).to.equal(
			true,
		);
		expect(entry.stamp.slice(9, 11)).to.equal(String(new Date(before).getUTCHours()).padStart(2, "0"));
		expect(entry.time).to.equal(new Date(Date.parse(entry.time)).toISOString());
	});

	it("stores the bytes exactly, so `cp` of the backup back over the file restores it byte for byte", function () {
		const { projectDir } = getEnv();
		const target = join(projectDir, "SKILL.md");
		writeFileSync(target, ODD_BYTES);
		const entry = store().store(ALPHA, "SKILL.md", readFileSync(target));
		writeFileSync(target, "changed");
		copyFileSync(entry.path, target);
		expect(readFileSync(target).equals(ODD_BYTES)).to.equal(true);
		expect(sha(readFileSync(entry.path)).startsWith(entry.hash)).to.equal(true);
	});

	it("writes backups readable by the owner only", function () {
		const entry = store().store(ALPHA, "SKILL.md", Buffer.from("x"));
		expect(statSync(entry.path).mode & 0o777).to.equal(0o600);
	});

	it("keeps identical content once, re-stamped as the newest", function () {
		const s = store();
		const first = s.store(ALPHA, "SKILL.md", Buffer.from("same"));
		s.store(ALPHA, "SKILL.md", Buffer.from("other"));
		const again = s.store(ALPHA, "SKILL.md", Buffer.from("same"));
		const files = readdirSync(join(backupsDir(), FOLDER, "SKILL.md"));
		expect(files).to.have.length(2);
		expect(files).to.not.include(first.id);
		expect(s.list(ALPHA, "SKILL.md").map((e) => e.id)).to.deep.equal([again.id, files.find((f) => f !== again.id)]);
	});

	it("lists newest first with strictly increasing stamps, even within one millisecond", function () {
		const s = store();
		const ids = [1, 2, 3, 4].map((n) => s.store(ALPHA, "SKILL.md", Buffer.from(`v${n}`)).id);
		expect(s.list(ALPHA, "SKILL.md").map((e) => e.id)).to.deep.equal([...ids].reverse());
		expect(new Set(ids.map((id) => id.slice(0, 19))).size).to.equal(4);
	});

	it("prunes the oldest backups past the cap and never the newest", function () {
		const s = store();
		const ids = [1, 2, 3, 4, 5].map((n) => s.store(ALPHA, "SKILL.md", Buffer.from(`v${n}`)).id);
		expect(s.prune(ALPHA, "SKILL.md", 3)).to.deep.equal([ids[1], ids[0]]);
		expect(s.list(ALPHA, "SKILL.md").map((e) => e.id)).to.deep.equal([ids[4], ids[3], ids[2]]);
		expect(s.prune(ALPHA, "SKILL.md", 0)).to.deep.equal([ids[3], ids[2]]);
		expect(s.list(ALPHA, "SKILL.md").map((e) => e.id)).to.deep.equal([ids[4]]);
	});

	it("stores a commit's backups together: each in place, modes not 0644 recorded, pruned from its list", async () => {
		const s = store();
		const held = [1, 2, 3].map((n) => s.store(ALPHA, "SKILL.md", Buffer.from(`v${n}`)).id);
		const stored = await s.storeAll([
			{ skill: ALPHA, relPath: "SKILL.md", bytes: Buffer.from("v4"), mode: 0o644 },
			{ skill: ALPHA, relPath: "scripts/run.sh", bytes: Buffer.from("#!/bin/sh\n"), mode: 0o755 },
			{ skill: BETA, relPath: "SKILL.md", bytes: Buffer.from("beta"), mode: 0o600 },
		]);
		expect(stored.entries.map((e) => readFileSync(e.path, "utf8"))).to.deep.equal(["v4", "#!/bin/sh\n", "beta"]);
		expect(stored.entries.map((e) => statSync(e.path).mode & 0o777)).to.deep.equal([0o600, 0o600, 0o600]);
		expect(s.list(ALPHA, "SKILL.md").map((e) => [e.id, e.mode])).to.deep.equal(
			[stored.entries[0].id, ...[...held].reverse()].map((id) => [id, undefined]),
		);
		expect(s.list(ALPHA, "scripts/run.sh").map((e) => e.mode)).to.deep.equal([0o755]);
		expect(s.list(BETA, "SKILL.md").map((e) => e.mode)).to.deep.equal([0o600]);
		stored.prune(2);
		expect(s.list(ALPHA, "SKILL.md").map((e) => e.id)).to.deep.equal([stored.entries[0].id, held[2]]);
		expect(s.list(ALPHA, "scripts/run.sh")).to.have.length(1);
	});

	it("walks the store's folders once for a commit's backups, and refuses a link planted before the next", async () => {
		const s = store();
		s.store(ALPHA, "SKILL.md", Buffer.from("v1"));
		s.store(BETA, "SKILL.md", Buffer.from("b1"));
		const lstats: string[] = [];
		const counting = createBackupStore(
			{
				...realFs,
				lstat: (path) => {
					lstats.push(path);
					return realFs.lstat(path);
				},
			},
			getEnv().agentDir,
		);
		await counting.storeAll([
			{ skill: ALPHA, relPath: "SKILL.md", bytes: Buffer.from("v2") },
			{ skill: BETA, relPath: "SKILL.md", bytes: Buffer.from("b2") },
		]);
		const steps = ["selfskills", "selfskills/backups"].map((step) => join(getEnv().agentDir, ...step.split("/")));
		for (const step of steps)
			expect(
				lstats.filter((p) => p === step),
				step,
			).to.have.length(1);
		const folder = join(backupsDir(), FOLDER, "SKILL.md");
		expect(lstats.filter((p) => p === folder)).to.have.length(1);
		const outside = join(getEnv().root, "outside");
		mkdirSync(outside);
		rmSync(folder, { recursive: true });
		symlinkSync(outside, folder);
		expect(
			await rejectionOf(counting.storeAll([{ skill: ALPHA, relPath: "SKILL.md", bytes: Buffer.from("v3") }])),
		).to.be.instanceOf(StoreLinkError);
		expect(readdirSync(outside)).to.deep.equal([]);
	});

	it("lists an old flat <skill>/<stamp>-<hash>.md backup for SKILL.md and reads it back", function () {
		const bytes = Buffer.from("---\nname: alpha\ndescription: old\n---\n");
		const id = `20250101-120000.000-${sha(bytes).slice(0, 10)}.md`;
		mkdirSync(join(backupsDir(), "alpha"), { recursive: true });
		writeFileSync(join(backupsDir(), "alpha", id), bytes);
		const s = store();
		const newer = s.store(ALPHA, "SKILL.md", Buffer.from("new"));
		const entries = s.list(ALPHA, "SKILL.md");
		expect(entries.map((e) => [e.id, e.legacy])).to.deep.equal([
			[newer.id, false],
			[id, true],
		]);
		expect((s.read(entries[1]) as Buffer).equals(bytes)).to.equal(true);
		expect(entries[1].time).to.equal("2025-01-01T12:00:00.000Z");
		expect(s.list(ALPHA, "references/api.md")).to.deep.equal([]);
	});

	it("never prunes an old flat backup", function () {
		const bytes = Buffer.from("legacy");
		const id = `20250101-120000.000-${sha(bytes).slice(0, 10)}.md`;
		mkdirSync(join(backupsDir(), "alpha"), { recursive: true });
		writeFileSync(join(backupsDir(), "alpha", id), bytes);
		const s = store();
		s.store(ALPHA, "SKILL.md", Buffer.from("a"));
		s.store(ALPHA, "SKILL.md", Buffer.from("b"));
		s.prune(ALPHA, "SKILL.md", 1);
		expect(s.list(ALPHA, "SKILL.md").map((e) => e.legacy)).to.deep.equal([false, true]);
	});

	it("refuses a backup changed after it was taken with backup_corrupt", function () {
		const s = store();
		const entry = s.store(ALPHA, "SKILL.md", Buffer.from("original"));
		writeFileSync(entry.path, "tampered");
		const result = s.read(entry);
		expect(isRefusal(result)).to.equal(true);
		const refusal = result as Refusal;
		expect(refusal.code).to.equal("backup_corrupt");
		expect(refusal.data).to.deep.include({ path: entry.path, expected: entry.hash, actual: sha("tampered") });
		expect(refusal.message).to.contain('"action":"history"');
	});

	it("snapshots a whole skill under __deleted__/<stamp>/ with a note of where it was", function () {
		const s = store();
		const files = [
			{ relPath: "SKILL.md", bytes: Buffer.from("skill"), mode: 0o644 },
			{ relPath: "scripts/run.sh", bytes: Buffer.from("#!/bin/sh\n"), mode: 0o755 },
		];
		const snap = s.snapshot("alpha", "/somewhere/alpha", files);
		expect(snap.path).to.equal(
			join(backupsDir(), backupFolderName({ name: "alpha", dir: "/somewhere/alpha" }), "__deleted__", snap.id),
		);
		expect(snap.id).to.match(/^\d{8}-\d{6}\.\d{3}$/);
		expect(readFileSync(join(snap.path, "scripts", "run.sh"), "utf8")).to.equal("#!/bin/sh\n");
		expect(statSync(join(snap.path, "scripts", "run.sh")).mode & 0o777, "the file's own mode").to.equal(0o755);
		expect(statSync(join(snap.path, "..")).mode & 0o777, "private: the store's folder above").to.equal(0o700);
		expect(JSON.parse(readFileSync(`${snap.path}.json`, "utf8"))).to.deep.equal({
			skill: "alpha",
			originDir: "/somewhere/alpha",
		});
		expect(s.listSnapshots("alpha")).to.deep.equal([snap]);
		expect(s.readSnapshot(snap).map((f) => [f.relPath, f.bytes.toString(), f.mode])).to.deep.equal([
			["SKILL.md", "skill", 0o644],
			["scripts/run.sh", "#!/bin/sh\n", 0o755],
		]);
	});

	it("lists the tracked files of a skill without the snapshots", function () {
		const s = store();
		s.store(ALPHA, "SKILL.md", Buffer.from("a"));
		s.store(ALPHA, "references/api.md", Buffer.from("b"));
		s.snapshot("alpha", ALPHA.dir, [{ relPath: "SKILL.md", bytes: Buffer.from("a"), mode: 0o644 }]);
		expect(s.trackedFiles(ALPHA)).to.deep.equal(["SKILL.md", "references/api.md"]);
	});

	it("makes every skill name one safe folder name", function () {
		expect(skillFolderName("deploy-checks")).to.equal("deploy-checks");
		expect(skillFolderName("../x")).to.equal(".._x");
		expect(skillFolderName("..")).to.equal("_.._");
		expect(skillFolderName("__deleted__")).to.equal("___deleted___");
	});

	it("ignores files in a backup folder that are not backups", function () {
		const s = store();
		const entry: BackupEntry = s.store(ALPHA, "SKILL.md", Buffer.from("a"));
		writeFileSync(join(backupsDir(), FOLDER, "SKILL.md", "notes.txt"), "x");
		expect(s.list(ALPHA, "SKILL.md").map((e) => e.id)).to.deep.equal([entry.id]);
	});

	describe("one folder per skill folder", function () {
		const other = (name: string, dir: string) => ({ name, dir });

		it("keeps names that map to one safe name apart: pruning one never touches the other's backups", function () {
			const s = store();
			const spaced = other("a b", "/skills/a b");
			const underscored = other("a_b", "/skills/a_b");
			expect(backupFolderName(spaced)).to.not.equal(backupFolderName(underscored));
			const kept = s.store(spaced, "SKILL.md", Buffer.from("only backup of a b"));
			for (const n of [1, 2, 3]) s.store(underscored, "SKILL.md", Buffer.from(`a_b v${n}`));
			s.prune(underscored, "SKILL.md", 1);
			expect(s.list(spaced, "SKILL.md").map((e) => e.id)).to.deep.equal([kept.id]);
			expect(s.list(underscored, "SKILL.md").map((e) => s.read(e).toString())).to.deep.equal(["a_b v3"]);
		});

		it("keeps same-named skills in different roots apart, and finds both by name alone", function () {
			const s = store();
			const user = other("deploy", "/home/me/.pi/agent/skills/deploy");
			const project = other("deploy", "/work/app/.pi/skills/deploy");
			const a = s.store(user, "SKILL.md", Buffer.from("user deploy"));
			const b = s.store(project, "SKILL.md", Buffer.from("project deploy"));
			expect(s.list(user, "SKILL.md").map((e) => e.id)).to.deep.equal([a.id]);
			expect(s.list(project, "SKILL.md").map((e) => e.id)).to.deep.equal([b.id]);
			expect(s.list("deploy", "SKILL.md").map((e) => e.id)).to.deep.equal([b.id, a.id]);
			s.snapshot("deploy", project.dir, [
				{ relPath: "SKILL.md", bytes: Buffer.from("project deploy"), mode: 0o644 },
			]);
			expect(s.listSnapshots("deploy").map((e) => e.originDir)).to.deep.equal([project.dir]);
			expect(s.listSnapshots(user)).to.deep.equal([]);
			expect(s.skillNames()).to.deep.equal(["deploy"]);
		});

		it("writes a note beside each folder naming the skill folder it belongs to", function () {
			store().store(ALPHA, "SKILL.md", Buffer.from("x"));
			expect(JSON.parse(readFileSync(join(backupsDir(), `${FOLDER}.json`), "utf8"))).to.deep.equal(ALPHA);
			expect(FOLDER).to.match(/^alpha@[0-9a-f]{12}$/);
		});

		it("keys a bundled file, SKILL.md and a single-file skill to their skill", function () {
			expect(skillKey("alpha", "/skills/alpha/SKILL.md")).to.deep.equal(ALPHA);
			expect(skillKey("alpha", "/skills/alpha/references/deep/api.md", "references/deep/api.md")).to.deep.equal(
				ALPHA,
			);
			expect(skillKey("solo", "/skills/solo.md")).to.deep.equal({ name: "solo", dir: "/skills/solo.md" });
		});
	});

	it("counts backup files and snapshot files for status, not the notes beside them", function () {
		const s = store();
		s.store(ALPHA, "SKILL.md", Buffer.from("12345"));
		s.recordMode(ALPHA, "SKILL.md", s.store(ALPHA, "SKILL.md", Buffer.from("123")).id, 0o755);
		s.snapshot("alpha", ALPHA.dir, [{ relPath: "scripts/run.sh", bytes: Buffer.from("1"), mode: 0o755 }]);
		expect(s.usage()).to.deep.equal({ files: 3, bytes: 9 });
	});

	describe("private and never followed through a symlink", function () {
		it("makes folders 0700 and files 0600, tightening looser old ones; snapshot files keep their modes", function () {
			mkdirSync(join(backupsDir()), { recursive: true, mode: 0o755 });
			chmodSync(backupsDir(), 0o755);
			const s = store();
			s.store(ALPHA, "references/api.md", Buffer.from("api"));
			s.snapshot("alpha", ALPHA.dir, [
				{ relPath: "scripts/run.sh", bytes: Buffer.from("#!/bin/sh\n"), mode: 0o755 },
			]);
			const walk = (dir: string): string[] =>
				readdirSync(dir).flatMap((n) =>
					statSync(join(dir, n)).isDirectory() ? [join(dir, n), ...walk(join(dir, n))] : [join(dir, n)],
				);
			const all = [join(getEnv().agentDir, "selfskills"), backupsDir(), ...walk(backupsDir())];
			const inSnapshot = (p: string) => /\/__deleted__\/\d{8}-\d{6}\.\d{3}\//.test(p);
			const script = all.filter((p) => inSnapshot(p) && p.endsWith("run.sh"));
			expect(script.map((p) => statSync(p).mode & 0o777)).to.deep.equal([0o755]);
			const loose = all.filter(
				(p) => !inSnapshot(p) && (statSync(p).mode & 0o777) !== (statSync(p).isDirectory() ? 0o700 : 0o600),
			);
			expect(loose.map((p) => `${p} ${(statSync(p).mode & 0o777).toString(8)}`)).to.deep.equal([]);
		});

		it("refuses a symlink planted at any step of the store, never writing or reading through it", function () {
			const outside = join(getEnv().root, "outside");
			mkdirSync(outside);
			const steps = [
				"selfskills",
				"selfskills/backups",
				`selfskills/backups/${FOLDER}`,
				`selfskills/backups/${FOLDER}/SKILL.md`,
			];
			for (const step of steps) {
				const s = store();
				s.store(ALPHA, "SKILL.md", Buffer.from("before"));
				const at = join(getEnv().agentDir, ...step.split("/"));
				rmSync(at, { recursive: true });
				symlinkSync(outside, at);
				const error = thrownBy(() => s.store(ALPHA, "SKILL.md", Buffer.from("after")));
				expect(error, step).to.be.instanceOf(StoreLinkError);
				expect((error as StoreLinkError).path, step).to.equal(at);
				expect(() => s.list(ALPHA, "SKILL.md"), step).to.throw(StoreLinkError);
				expect(readdirSync(outside), step).to.deep.equal([]);
				unlinkSync(at);
				rmSync(join(getEnv().agentDir, "selfskills"), { recursive: true, force: true });
			}
		});

		it("refuses a planted backup that links to a file outside the store", function () {
			const s = store();
			const secret = join(getEnv().root, "secret.txt");
			writeFileSync(secret, "secret\n");
			const entry = s.store(ALPHA, "SKILL.md", Buffer.from("secret\n"));
			rmSync(entry.path);
			symlinkSync(secret, entry.path);
			expect(s.list(ALPHA, "SKILL.md")).to.deep.equal([]);
			expect(() => s.read(entry)).to.throw(StoreLinkError);
		});
	});
});
