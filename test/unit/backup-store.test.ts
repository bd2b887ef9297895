// backup-store.ts: the exact on-disk layout a person restores from with `cp`, UTC stamps, hashes
// of the stored bytes, de-duplication, pruning, the old flat layout and tamper detection.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { expect } from "chai";
import { createBackupStore, formatStamp, skillFolderName, type BackupEntry } from "../../src/backup-store.ts";
import { isRefusal, type Refusal } from "../../src/errors.ts";
import { realFs } from "../../src/fs-ops.ts";
import { useTempEnv } from "../support/temp-env.ts";

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
const ID = /^(\d{8}-\d{6}\.\d{3})-([0-9a-f]{10})(\.[^/]*)?$/;
const ODD_BYTES = Buffer.concat([Buffer.from("\uFEFF---\r\nname: alpha\r\n---\r\ntrailing  \r\n", "utf8"), Buffer.from([0xe2, 0x80, 0xae, 0x0a])]);

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

	it("stores SKILL.md as <agentDir>/selfskills/backups/<skill>/SKILL.md/<stamp>-<sha256[:10]>.md", function () {
		const bytes = Buffer.from("---\nname: alpha\ndescription: d\n---\n");
		const entry = store().store("alpha", "SKILL.md", bytes);
		expect(entry.path).to.equal(join(backupsDir(), "alpha", "SKILL.md", entry.id));
		const match = ID.exec(entry.id);
		expect(match, entry.id).to.not.equal(null);
		expect(match?.[2]).to.equal(sha(bytes).slice(0, 10));
		expect(match?.[3]).to.equal(".md");
		expect(entry).to.deep.include({ hash: sha(bytes).slice(0, 10), size: bytes.length, legacy: false, stamp: match?.[1] });
	});

	it("mirrors a bundled file's relative path and keeps its extension (none when it has none)", function () {
		const s = store();
		const sh = s.store("alpha", "scripts/run.sh", Buffer.from("echo hi\n"));
		const plain = s.store("alpha", "assets/LICENSE", Buffer.from("MIT\n"));
		expect(sh.path).to.equal(join(backupsDir(), "alpha", "scripts", "run.sh", sh.id));
		expect(sh.id.endsWith(".sh")).to.equal(true);
		expect(plain.path).to.equal(join(backupsDir(), "alpha", "assets", "LICENSE", plain.id));
		expect(ID.exec(plain.id)?.[3]).to.equal(undefined);
	});

	it("stamps in UTC whatever the local time zone is", function () {
		process.env.TZ = "Asia/Kolkata";
		const before = Date.now();
		const entry = store().store("alpha", "SKILL.md", Buffer.from("x"));
		const after = Date.now();
		expect(new Date(before).getHours()).to.not.equal(new Date(before).getUTCHours());
		expect(entry.stamp >= formatStamp(new Date(before)) && entry.stamp <= formatStamp(new Date(after + 5))).to.equal(true);
		expect(entry.stamp.slice(9, 11)).to.equal(String(new Date(before).getUTCHours()).padStart(2, "0"));
		expect(entry.time).to.equal(new Date(Date.parse(entry.time)).toISOString());
	});

	it("stores the bytes exactly, so `cp` of the backup back over the file restores it byte for byte", function () {
		const { projectDir } = getEnv();
		const target = join(projectDir, "SKILL.md");
		writeFileSync(target, ODD_BYTES);
		const entry = store().store("alpha", "SKILL.md", readFileSync(target));
		writeFileSync(target, "changed");
		copyFileSync(entry.path, target);
		expect(readFileSync(target).equals(ODD_BYTES)).to.equal(true);
		expect(sha(readFileSync(entry.path)).startsWith(entry.hash)).to.equal(true);
	});

	it("writes backups readable by the owner only", function () {
		const entry = store().store("alpha", "SKILL.md", Buffer.from("x"));
		expect(statSync(entry.path).mode & 0o777).to.equal(0o600);
	});

	it("keeps identical content once, re-stamped as the newest", function () {
		const s = store();
		const first = s.store("alpha", "SKILL.md", Buffer.from("same"));
		s.store("alpha", "SKILL.md", Buffer.from("other"));
		const again = s.store("alpha", "SKILL.md", Buffer.from("same"));
		const files = readdirSync(join(backupsDir(), "alpha", "SKILL.md"));
		expect(files).to.have.length(2);
		expect(files).to.not.include(first.id);
		expect(s.list("alpha", "SKILL.md").map((e) => e.id)).to.deep.equal([again.id, files.find((f) => f !== again.id)]);
	});

	it("lists newest first with strictly increasing stamps, even within one millisecond", function () {
		const s = store();
		const ids = [1, 2, 3, 4].map((n) => s.store("alpha", "SKILL.md", Buffer.from(`v${n}`)).id);
		expect(s.list("alpha", "SKILL.md").map((e) => e.id)).to.deep.equal([...ids].reverse());
		expect(new Set(ids.map((id) => id.slice(0, 19))).size).to.equal(4);
	});

	it("prunes the oldest backups past the cap and never the newest", function () {
		const s = store();
		const ids = [1, 2, 3, 4, 5].map((n) => s.store("alpha", "SKILL.md", Buffer.from(`v${n}`)).id);
		expect(s.prune("alpha", "SKILL.md", 3)).to.deep.equal([ids[1], ids[0]]);
		expect(s.list("alpha", "SKILL.md").map((e) => e.id)).to.deep.equal([ids[4], ids[3], ids[2]]);
		expect(s.prune("alpha", "SKILL.md", 0)).to.deep.equal([ids[3], ids[2]]);
		expect(s.list("alpha", "SKILL.md").map((e) => e.id)).to.deep.equal([ids[4]]);
	});

	it("lists an old flat <skill>/<stamp>-<hash>.md backup for SKILL.md and reads it back", function () {
		const bytes = Buffer.from("---\nname: alpha\ndescription: old\n---\n");
		const id = `20250101-120000.000-${sha(bytes).slice(0, 10)}.md`;
		mkdirSync(join(backupsDir(), "alpha"), { recursive: true });
		writeFileSync(join(backupsDir(), "alpha", id), bytes);
		const s = store();
		const newer = s.store("alpha", "SKILL.md", Buffer.from("new"));
		const entries = s.list("alpha", "SKILL.md");
		expect(entries.map((e) => [e.id, e.legacy])).to.deep.equal([[newer.id, false], [id, true]]);
		expect((s.read(entries[1]) as Buffer).equals(bytes)).to.equal(true);
		expect(entries[1].time).to.equal("2025-01-01T12:00:00.000Z");
		expect(s.list("alpha", "references/api.md")).to.deep.equal([]);
	});

	it("never prunes an old flat backup", function () {
		const bytes = Buffer.from("legacy");
		const id = `20250101-120000.000-${sha(bytes).slice(0, 10)}.md`;
		mkdirSync(join(backupsDir(), "alpha"), { recursive: true });
		writeFileSync(join(backupsDir(), "alpha", id), bytes);
		const s = store();
		s.store("alpha", "SKILL.md", Buffer.from("a"));
		s.store("alpha", "SKILL.md", Buffer.from("b"));
		s.prune("alpha", "SKILL.md", 1);
		expect(s.list("alpha", "SKILL.md").map((e) => e.legacy)).to.deep.equal([false, true]);
	});

	it("refuses a backup changed after it was taken with backup_corrupt", function () {
		const s = store();
		const entry = s.store("alpha", "SKILL.md", Buffer.from("original"));
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
		expect(snap.path).to.equal(join(backupsDir(), "alpha", "__deleted__", snap.id));
		expect(snap.id).to.match(/^\d{8}-\d{6}\.\d{3}$/);
		expect(readFileSync(join(snap.path, "scripts", "run.sh"), "utf8")).to.equal("#!/bin/sh\n");
		expect(statSync(join(snap.path, "scripts", "run.sh")).mode & 0o777).to.equal(0o755);
		expect(JSON.parse(readFileSync(`${snap.path}.json`, "utf8"))).to.deep.equal({ skill: "alpha", originDir: "/somewhere/alpha" });
		expect(s.listSnapshots("alpha")).to.deep.equal([snap]);
		expect(s.readSnapshot(snap).map((f) => [f.relPath, f.bytes.toString()])).to.deep.equal([["SKILL.md", "skill"], ["scripts/run.sh", "#!/bin/sh\n"]]);
	});

	it("lists the tracked files of a skill without the snapshots", function () {
		const s = store();
		s.store("alpha", "SKILL.md", Buffer.from("a"));
		s.store("alpha", "references/api.md", Buffer.from("b"));
		s.snapshot("alpha", "/x", [{ relPath: "SKILL.md", bytes: Buffer.from("a"), mode: 0o644 }]);
		expect(s.trackedFiles("alpha")).to.deep.equal(["SKILL.md", "references/api.md"]);
	});

	it("makes every skill name one safe folder name", function () {
		expect(skillFolderName("deploy-checks")).to.equal("deploy-checks");
		expect(skillFolderName("../x")).to.equal(".._x");
		expect(skillFolderName("..")).to.equal("_.._");
		expect(skillFolderName("__deleted__")).to.equal("___deleted___");
	});

	it("ignores files in a backup folder that are not backups", function () {
		const s = store();
		const entry: BackupEntry = s.store("alpha", "SKILL.md", Buffer.from("a"));
		writeFileSync(join(backupsDir(), "alpha", "SKILL.md", "notes.txt"), "x");
		expect(s.list("alpha", "SKILL.md").map((e) => e.id)).to.deep.equal([entry.id]);
	});
});
