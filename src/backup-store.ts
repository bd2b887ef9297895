// The content-addressed backup store. A person restores any backup with a plain `cp`:
//
//   <agentDir>/selfskills/backups/deploy-checks/SKILL.md/20261202-094501.123-3f2a9c0b1d.md
//   <agentDir>/selfskills/backups/deploy-checks/references/api.md/20261202-094502.004-0be71c22aa.md
//   <agentDir>/selfskills/backups/deploy-checks/__deleted__/20261202-095000.000/SKILL.md   (whole tree)
//   <agentDir>/selfskills/backups/deploy-checks/20250101-120000.000-3f2a9c0b1d.md           (old flat layout)
//
// The stamp is UTC, the hash is sha256 of the stored bytes (first 10 hex), stored bytes are the
// file exactly as it was. Identical content is kept once (re-stamped as the newest). A backup is
// always a copy, never a hard link of the skill file: a program that rewrites that file in place
// would change a linked backup too, and a copy of a few KiB costs no more than the link's fsyncs.

import { extname, join } from "node:path";
import * as refusals from "./errors.ts";
import type { Refusal } from "./errors.ts";
import { listDir, type FsOps } from "./fs-ops.ts";
import { sha256 } from "./read-ledger.ts";
import { mkdirDurable, syncDir, writeFileAtomic } from "./writer.ts";

export const DELETED_DIR = "__deleted__";
const ENTRY = /^(\d{8}-\d{6}\.\d{3})-([0-9a-f]{10})(\.[^/]*)?$/;
const SNAPSHOT = /^\d{8}-\d{6}\.\d{3}$/;
/**
 * In a skill's backup folder: the mode of each backed-up file, by the backup's path in that folder
 * (`{"modes":{"scripts/run.sh/20261202-094501.123-3f2a9c0b1d.sh":493,"__deleted__/<stamp>/SKILL.md":420}}`);
 * the backups themselves are owner-only. A file backup without an entry was 0644.
 */
const MODES = ".modes.json";

export interface BackupEntry {
	/** The backup's file name, which is also its id. */
	readonly id: string;
	readonly path: string;
	readonly stamp: string;
	readonly time: string;
	readonly hash: string;
	readonly size: number;
	readonly legacy: boolean;
	/** The mode the file had when it was backed up, where recorded (restore puts it back). */
	readonly mode?: number;
}

export interface SnapshotEntry {
	readonly id: string;
	readonly path: string;
	readonly time: string;
	/** Where the skill folder was, from the `<stamp>.json` note beside the snapshot. */
	readonly originDir: string | undefined;
}

export function getSelfSkillsDir(agentDir: string): string {
	return join(agentDir, "selfskills");
}

export function getBackupsDir(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "backups");
}

/** A skill name made safe as one folder name. */
export function skillFolderName(skill: string): string {
	const safe = skill.replace(/[^A-Za-z0-9._-]/g, "_");
	return safe === "" || safe === "." || safe === ".." || safe === DELETED_DIR ? `_${safe}_` : safe;
}

export function formatStamp(date: Date): string {
	const iso = date.toISOString(); // 2026-12-02T09:45:01.123Z
	return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 23)}`;
}

export function stampToIso(stamp: string): string {
	return `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 19)}Z`;
}

export interface BackupStore {
	readonly root: string;
	/** Stores a copy of `bytes` as the newest backup of skill/relPath durably; returns its entry. */
	store(skill: string, relPath: string, bytes: Uint8Array): BackupEntry;
	/** Backups of skill/relPath, newest first (old flat backups count for SKILL.md). */
	list(skill: string, relPath: string): BackupEntry[];
	/** Records the mode the file had when backup `id` of it was taken (see MODES). */
	recordMode(skill: string, relPath: string, id: string, mode: number): void;
	/** Reads a backup and checks its bytes still match the hash in its name. */
	read(entry: BackupEntry): Buffer | Refusal;
	/** Snapshots a whole skill tree under __deleted__/<stamp>/. */
	snapshot(skill: string, originDir: string, files: ReadonlyArray<{ relPath: string; bytes: Uint8Array; mode: number }>): SnapshotEntry;
	listSnapshots(skill: string): SnapshotEntry[];
	/** Files of a snapshot: relPath -> bytes. */
	readSnapshot(entry: SnapshotEntry): Array<{ relPath: string; bytes: Buffer; mode: number }>;
	/** Deletes the oldest backups past `cap`; never the newest. */
	prune(skill: string, relPath: string, cap: number): string[];
	/** The files and folders named as tracked files under a skill's backup folder. */
	trackedFiles(skill: string): string[];
}

export function createBackupStore(fs: FsOps, agentDir: string): BackupStore {
	const root = getBackupsDir(agentDir);
	const fileDir = (skill: string, relPath: string) => join(root, skillFolderName(skill), ...relPath.split("/"));

	const readEntries = (dir: string, legacy: boolean): BackupEntry[] => {
		let names: string[];
		try {
			names = fs.readdir(dir);
		} catch (error) {
			// No folder means no backups; any other error must not pass for "no backup" (no_backup).
			if (refusals.errnoCode(error) === "ENOENT" || refusals.errnoCode(error) === "ENOTDIR") return [];
			throw error;
		}
		const entries: BackupEntry[] = [];
		for (const name of names) {
			const match = ENTRY.exec(name);
			if (!match || (legacy && match[3] !== ".md")) continue;
			const path = join(dir, name);
			const stat = fs.lstat(path);
			if (!stat.isFile()) continue;
			entries.push({ id: name, path, stamp: match[1], time: stampToIso(match[1]), hash: match[2], size: stat.size, legacy });
		}
		return entries;
	};

	/**
	 * The store's own backups of one file by name alone, newest first: what store and prune need
	 * on every write, without a stat per backup (a folder squatting on a backup name is skipped
	 * where it matters: it is never read as a duplicate nor unlinked).
	 */
	const names = (skill: string, relPath: string): Array<{ id: string; path: string; stamp: string; hash: string }> => {
		const dir = fileDir(skill, relPath);
		return listDir(fs, dir)
			.flatMap((id) => {
				const match = ENTRY.exec(id);
				return match ? [{ id, path: join(dir, id), stamp: match[1], hash: match[2] }] : [];
			})
			.sort((a, b) => (a.stamp === b.stamp ? b.id.localeCompare(a.id) : b.stamp.localeCompare(a.stamp)));
	};

	const sameBytes = (path: string, bytes: Uint8Array): boolean => {
		try {
			return fs.lstat(path).isFile() && Buffer.compare(fs.readFile(path), Buffer.from(bytes)) === 0;
		} catch {
			return false;
		}
	};

	const list = (skill: string, relPath: string): BackupEntry[] => {
		const modes = readModes(fileDir(skill, ""));
		const own = readEntries(fileDir(skill, relPath), false).map((e) => {
			const mode = modes[`${relPath}/${e.id}`];
			return mode === undefined ? e : { ...e, mode };
		});
		const legacy = relPath === "SKILL.md" ? readEntries(join(root, skillFolderName(skill)), true) : [];
		return [...own, ...legacy].sort((a, b) => (a.stamp === b.stamp ? b.id.localeCompare(a.id) : b.stamp.localeCompare(a.stamp)));
	};

	/** A stamp strictly newer than every backup already held, so "latest" is always the last taken. */
	const nextStamp = (entries: readonly { stamp: string }[]): string => {
		const newest = entries[0]?.stamp;
		const newestMs = newest ? Date.parse(stampToIso(newest)) : Number.NaN;
		// One step past the newest, computed (a loop of 1 ms steps hangs on a far-future stamp).
		return formatStamp(new Date(Number.isFinite(newestMs) && newestMs >= Date.now() ? newestMs + 1 : Date.now()));
	};

	/** The mode record of a skill's backup folder; empty when absent, unreadable or not a file. */
	const readModes = (folder: string): Record<string, number> => {
		try {
			const path = join(folder, MODES);
			if (!fs.lstat(path).isFile()) return {};
			const record: unknown = JSON.parse(fs.readFile(path).toString("utf8"));
			const modes = typeof record === "object" && record !== null && "modes" in record ? record.modes : undefined;
			if (typeof modes !== "object" || modes === null) return {};
			return Object.fromEntries(Object.entries(modes).filter((e): e is [string, number] => Number.isInteger(e[1])));
		} catch {
			return {};
		}
	};

	const writeModes = (folder: string, modes: Record<string, number>): void => {
		mkdirDurable(fs, folder);
		writeFileAtomic(fs, join(folder, MODES), Buffer.from(`${JSON.stringify({ modes })}\n`), { mode: 0o600 });
	};

	const readOrigin = (path: string): string | undefined => {
		try {
			const note: unknown = JSON.parse(fs.readFile(path).toString("utf8"));
			return typeof note === "object" && note !== null && "originDir" in note && typeof note.originDir === "string" ? note.originDir : undefined;
		} catch {
			return undefined;
		}
	};

	return {
		root,
		list,
		store(skill, relPath, bytes) {
			const dir = fileDir(skill, relPath);
			mkdirDurable(fs, dir);
			const hash = sha256(bytes).slice(0, 10);
			const ext = extname(relPath);
			const existing = names(skill, relPath);
			const stamp = nextStamp(existing);
			const id = `${stamp}-${hash}${ext}`;
			const path = join(dir, id);
			const same = existing.find((e) => e.hash === hash && sameBytes(e.path, bytes));
			if (same) {
				fs.rename(same.path, path);
				syncDir(fs, dir);
			} else {
				writeFileAtomic(fs, path, bytes, { mode: 0o600 });
			}
			return { id, path, stamp, time: stampToIso(stamp), hash, size: bytes.length, legacy: false };
		},
		recordMode(skill, relPath, id, mode) {
			const folder = fileDir(skill, "");
			const held = new Set(names(skill, relPath).map((e) => `${relPath}/${e.id}`));
			const stale = (key: string) => key.startsWith(`${relPath}/`) && !key.slice(relPath.length + 1).includes("/") && !held.has(key);
			const modes = Object.fromEntries(Object.entries(readModes(folder)).filter(([key]) => !stale(key)));
			writeModes(folder, { ...modes, [`${relPath}/${id}`]: mode & 0o777 });
		},
		read(entry) {
			const bytes = fs.readFile(entry.path);
			const actual = sha256(bytes);
			return actual.startsWith(entry.hash) ? bytes : refusals.backupCorrupt(entry.path, entry.hash, actual);
		},
		snapshot(skill, originDir, files) {
			const base = join(root, skillFolderName(skill), DELETED_DIR);
			const existing = this.listSnapshots(skill).map((s) => ({ stamp: s.id }));
			const id = nextStamp(existing);
			const dir = join(base, id);
			for (const file of files) {
				const target = join(dir, ...file.relPath.split("/"));
				mkdirDurable(fs, join(target, ".."));
				writeFileAtomic(fs, target, file.bytes, { mode: file.mode & 0o777 });
			}
			mkdirDurable(fs, dir);
			const folder = join(base, "..");
			const modes = readModes(folder);
			for (const file of files) modes[`${DELETED_DIR}/${id}/${file.relPath}`] = file.mode & 0o777;
			writeModes(folder, modes);
			writeFileAtomic(fs, `${dir}.json`, Buffer.from(`${JSON.stringify({ skill, originDir })}\n`), { mode: 0o600 });
			return { id, path: dir, time: stampToIso(id), originDir };
		},
		listSnapshots(skill) {
			const base = join(root, skillFolderName(skill), DELETED_DIR);
			return listDir(fs, base)
				.filter((n) => SNAPSHOT.test(n))
				.sort()
				.reverse()
				.map((id) => ({ id, path: join(base, id), time: stampToIso(id), originDir: readOrigin(join(base, `${id}.json`)) }));
		},
		readSnapshot(entry) {
			const out: Array<{ relPath: string; bytes: Buffer; mode: number }> = [];
			const modes = readModes(join(entry.path, "..", ".."));
			const walk = (dir: string, prefix: string) => {
				for (const name of fs.readdir(dir).sort()) {
					const path = join(dir, name);
					const stat = fs.lstat(path);
					const rel = prefix ? `${prefix}/${name}` : name;
					if (stat.isDirectory()) walk(path, rel);
					else if (stat.isFile()) out.push({ relPath: rel, bytes: fs.readFile(path), mode: modes[`${DELETED_DIR}/${entry.id}/${rel}`] ?? stat.mode & 0o777 });
				}
			};
			walk(entry.path, "");
			return out;
		},
		prune(skill, relPath, cap) {
			// Runs after a change has landed: a failure here must not turn it into an error, so an
			// unreadable folder or a backup that cannot be removed is left for the next prune.
			const removed: string[] = [];
			try {
				for (const entry of names(skill, relPath).slice(Math.max(cap, 1))) {
					try {
						if (!fs.lstat(entry.path).isFile()) continue;
						fs.unlink(entry.path);
						removed.push(entry.id);
					} catch {
						// Kept one backup too many; harmless.
					}
				}
			} catch {
				// Nothing pruned this time.
			}
			return removed;
		},
		trackedFiles(skill) {
			const base = join(root, skillFolderName(skill));
			const out: string[] = [];
			const walk = (dir: string, prefix: string) => {
				for (const name of listDir(fs, dir)) {
					if (!prefix && name === DELETED_DIR) continue;
					const path = join(dir, name);
					if (!fs.lstat(path).isDirectory()) continue;
					const rel = prefix ? `${prefix}/${name}` : name;
					if (readEntries(path, false).length > 0) out.push(rel);
					walk(path, rel);
				}
			};
			walk(base, "");
			return out.sort();
		},
	};
}
