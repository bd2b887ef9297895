// The content-addressed backup store, private to its owner (folders 0700, files 0600) and never
// followed through a symlink. One folder per skill folder: the skill's name made safe, `@`, and the
// first 12 hex of sha256(name NUL folder), with a note beside it saying whose it is. A person
// restores any backup with a plain `cp`:
//
//   <agentDir>/selfskills/backups/deploy-checks@6b0e13c2a4f1.json
//     {"name":"deploy-checks","dir":"/home/me/.pi/agent/skills/deploy-checks"}   (the note's content)
//   <agentDir>/selfskills/backups/deploy-checks@6b0e13c2a4f1/SKILL.md/20261202-094501.123-3f2a9c0b1d.md
//   <agentDir>/selfskills/backups/deploy-checks@6b0e13c2a4f1/references/api.md/20261202-094502.004-0be71c22aa.md
//   <agentDir>/selfskills/backups/deploy-checks@6b0e13c2a4f1/__deleted__/20261202-095000.000/SKILL.md   (whole tree,
//     its own modes: `cp -rp` puts it back as it was; the 0700 folders above keep it private)
//   <agentDir>/selfskills/backups/deploy-checks@6b0e13c2a4f1/__deleted__/20261202-095000.000.json
//     {"skill":"deploy-checks","originDir":"/home/me/.pi/agent/skills/deploy-checks"}   (where it was)
//   <agentDir>/selfskills/backups/deploy-checks@6b0e13c2a4f1/.modes.json   (modes other than 0644, see MODES)
//   <agentDir>/selfskills/backups/deploy-checks/20250101-120000.000-3f2a9c0b1d.md   (pi-selfskills 0.3's flat layout)
//
// The stamp is UTC, the hash is sha256 of the stored bytes (first 10 hex), stored bytes are the
// file exactly as it was. Identical content is kept once (re-stamped as the newest). A backup is
// always a copy, never a hard link of the skill file: a program that rewrites that file in place
// would change a linked backup too, and a copy of a few KiB costs no more than the link's fsyncs.
// The flat SKILL.md backups of pi-selfskills 0.3 stay where they are: listed, read, never pruned or written.

import { constants, type Stats } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import type { FsOps } from "../base/fs-ops.ts";
import { getBackupsDir } from "../base/paths.ts";
import {
	assertNoLinkBelow,
	assertNotLink,
	createPrivateDirs,
	discardWrite,
	finishWrite,
	prepareWrite,
	StoreLinkError,
	sweepTempNames,
	syncDir,
	syncDirs,
	syncWrites,
	writePrivate,
	writeFileAtomic,
	type PreparedWrite,
	type PrivateDirs,
} from "../base/writer.ts";
import { errnoCode, listDir, walkTree, tryReadJson, tryReadRegular } from "../base/fs-reads.ts";
import { sha256, sha256Once } from "../base/hash.ts";

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

/** A skill folder, the unit backups belong to: its name and where it lives (see `skillKey`). */
export interface SkillKey {
	readonly name: string;
	/** The skill folder, or the file itself for a root-level single-file skill. */
	readonly dir: string;
}

/** A skill by key, or by name alone: then every skill folder of that name with backups (a deleted skill). */
export type SkillRef = SkillKey | string;

/** The key of the skill that `absPath` (the file `relPath` of it) belongs to. */
export function skillKey(name: string, absPath: string, relPath = "SKILL.md"): SkillKey {
	if (relPath === "SKILL.md") return { name, dir: basename(absPath) === "SKILL.md" ? dirname(absPath) : absPath };
	return { name, dir: relPath.split("/").reduce((dir) => dirname(dir), absPath) };
}

/**
 * The backup folder of one skill folder: its safe name for a person to read, `@` (never in a safe
 * name, so no flat-layout folder looks like one), and a hash of name and place that tells apart
 * names that map to one safe name and same-named skills in different roots.
 */
export function backupFolderName(key: SkillKey): string {
	return `${skillFolderName(key.name)}@${sha256(`${key.name}\0${key.dir}`).slice(0, 12)}`;
}

/** A skill name made safe as one folder name (alone, the folder of 0.3's flat layout). */
export function skillFolderName(skill: string): string {
	const safe = skill.replace(/[^A-Za-z0-9._-]/g, "_");
	return safe === "" || safe === "." || safe === ".." || safe === DELETED_DIR ? `_${safe}_` : safe;
}

export function formatStamp(date: Date): string {
	const iso = date.toISOString(); // 2026-12-02T09:45:01.123Z
	return (
		`${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-` +
		`${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 23)}`
	);
}

export function stampToIso(stamp: string): string {
	return (
		`${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T` +
		`${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 19)}Z`
	);
}

/** One file's backup to take: its skill, its path in the skill folder, its bytes now. */
export interface BackupRequest {
	readonly skill: SkillKey;
	readonly relPath: string;
	readonly bytes: Uint8Array;
	/** The file's mode now; recorded with the backup (MODES) when it is not 0644. */
	readonly mode?: number;
}

/** The backups of one commit, all durable; `prune` trims each file's backups from what was listed then. */
export interface StoredBackups {
	readonly entries: readonly BackupEntry[];
	/** Deletes each file's oldest backups past `cap`, never the newest; a failure is left for the next prune. */
	prune(cap: number): void;
}

export interface BackupStore {
	readonly root: string;
	/** Stores a copy of `bytes` as the newest backup of skill/relPath durably; returns its entry. */
	store(skill: SkillKey, relPath: string, bytes: Uint8Array): BackupEntry;
	/**
	 * Stores the backups of one commit (each file once): every one durable (file and folder entry
	 * synced) when it returns, the store's folders checked once for all of them.
	 */
	storeAll(requests: readonly BackupRequest[]): Promise<StoredBackups>;
	/** Backups of skill/relPath, newest first (0.3's flat SKILL.md backups count too). */
	list(skill: SkillRef, relPath: string): BackupEntry[];
	/** Records the mode the file had when backup `id` of it was taken (see MODES). */
	recordMode(skill: SkillKey, relPath: string, id: string, mode: number): void;
	/** Reads a backup and checks its bytes still match the hash in its name. */
	read(entry: BackupEntry): Buffer | Refusal;
	/** Snapshots a whole skill tree under __deleted__/<stamp>/. */
	snapshot(
		skill: string,
		originDir: string,
		files: ReadonlyArray<{ relPath: string; bytes: Uint8Array; mode: number }>,
	): SnapshotEntry;
	listSnapshots(skill: SkillRef): SnapshotEntry[];
	/** Files of a snapshot: relPath -> bytes. */
	readSnapshot(entry: SnapshotEntry): Array<{ relPath: string; bytes: Buffer; mode: number }>;
	/** Deletes the oldest backups past `cap`; never the newest. */
	prune(skill: SkillKey, relPath: string, cap: number): string[];
	/** The files of a skill that have backups (relative paths). */
	trackedFiles(skill: SkillRef): string[];
	/** Names of the skills that have backups, deleted ones included. */
	skillNames(): string[];
	/** How many backup files (snapshot files included, notes not) the store holds, and their bytes. */
	usage(): { files: number; bytes: number };
}

/** The store as every function below sees it: its filesystem, the agent dir its guard starts from, its root. */
interface Store {
	readonly fs: FsOps;
	readonly agentDir: string;
	readonly root: string;
}

/** Every step from the agent dir down is checked: a planted link is refused, never followed. */
function guard(s: Store, path: string): void {
	assertNoLinkBelow(s.fs, s.agentDir, path);
}

function keyedDir(s: Store, key: SkillKey): string {
	return join(s.root, backupFolderName(key));
}

function fileDir(s: Store, key: SkillKey, relPath: string): string {
	return join(keyedDir(s, key), ...relPath.split("/").filter((part) => part !== ""));
}

const nameOf = (ref: SkillRef): string => (typeof ref === "string" ? ref : ref.name);
/** Newest stamp first, then by id; compared by code point (localeCompare costs a collator per call, on every write). */
const byNewest = (a: { stamp: string; id: string }, b: { stamp: string; id: string }): number =>
	a.stamp === b.stamp ? descending(a.id, b.id) : descending(a.stamp, b.stamp);
const descending = (a: string, b: string): number => (a < b ? 1 : a > b ? -1 : 0);

/** The note beside a skill's backup folder; `stat`: its lstat, when the caller has it. */
function readNote(s: Store, path: string, stat?: Stats): SkillKey | undefined {
	if (stat !== undefined && !stat.isFile()) return undefined;
	const note = tryReadJson(s.fs, path);
	if (typeof note !== "object" || note === null || !("name" in note) || !("dir" in note)) return undefined;
	return typeof note.name === "string" && typeof note.dir === "string"
		? { name: note.name, dir: note.dir }
		: undefined;
}

/** The skill folders of one name that have backups, from the notes beside their folders. */
function keysNamed(s: Store, name: string): SkillKey[] {
	guard(s, s.root);
	const prefix = `${skillFolderName(name)}@`;
	return listDir(s.fs, s.root)
		.filter((n) => n.startsWith(prefix) && n.endsWith(".json"))
		.flatMap((n) => {
			const key = readNote(s, join(s.root, n));
			return key && key.name === name && `${backupFolderName(key)}.json` === n ? [key] : [];
		});
}

/** The backup folders of a skill: its own, or by name alone every one of that name. */
function skillDirs(s: Store, ref: SkillRef): string[] {
	return (typeof ref === "string" ? keysNamed(s, ref) : [ref]).map((key) => keyedDir(s, key));
}

/**
 * The skill's own folder, made (private, its note first) when missing; refuses one that is another
 * skill's. `dirs`: the folders this operation made sure of.
 */
function ensureKeyed(s: Store, dirs: PrivateDirs, key: SkillKey): string {
	const dir = keyedDir(s, key);
	dirs.ensure(s.root);
	const notePath = `${dir}.json`;
	let stat: Stats | undefined;
	try {
		stat = s.fs.lstat(notePath);
	} catch (error) {
		if (errnoCode(error) !== "ENOENT") throw error;
	}
	if (stat?.isSymbolicLink()) throw new StoreLinkError(notePath);
	const note = stat?.isFile() ? readNote(s, notePath, stat) : undefined;
	if (note === undefined)
		writePrivate(s.fs, dirs, notePath, Buffer.from(`${JSON.stringify({ name: key.name, dir: key.dir })}\n`));
	else if (note.name !== key.name || note.dir !== key.dir)
		throw Object.assign(new Error(`${dir} holds the backups of ${note.dir}, not of ${key.dir}`), { code: "EEXIST" });
	dirs.ensure(dir);
	return dir;
}

function readEntries(s: Store, dir: string, legacy: boolean): BackupEntry[] {
	guard(s, dir);
	let names: string[];
	try {
		names = s.fs.readdir(dir);
	} catch (error) {
		// No folder means no backups; any other error must not pass for "no backup" (no_backup).
		if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR") return [];
		throw error;
	}
	const entries: BackupEntry[] = [];
	for (const name of names) {
		const match = ENTRY.exec(name);
		if (!match || (legacy && match[3] !== ".md")) continue;
		const path = join(dir, name);
		const stat = s.fs.lstat(path);
		if (!stat.isFile()) continue;
		entries.push({
			id: name,
			path,
			stamp: match[1],
			time: stampToIso(match[1]),
			hash: match[2],
			size: stat.size,
			legacy,
		});
	}
	return entries;
}

/**
 * The store's own backups of one file by name alone, newest first: what store and prune need
 * on every write, without a stat per backup (a folder squatting on a backup name is skipped
 * where it matters: it is never read as a duplicate nor unlinked).
 */
function names(s: Store, key: SkillKey, relPath: string): NamedBackup[] {
	const dir = fileDir(s, key, relPath);
	guard(s, dir);
	return namedBackups(dir, listDir(s.fs, dir));
}

interface NamedBackup {
	readonly id: string;
	readonly path: string;
	readonly stamp: string;
	readonly hash: string;
}

/** The backups among a folder's `listed` entries, newest first. */
function namedBackups(dir: string, listed: readonly string[]): NamedBackup[] {
	return listed
		.flatMap((id) => {
			const match = ENTRY.exec(id);
			return match ? [{ id, path: join(dir, id), stamp: match[1], hash: match[2] }] : [];
		})
		.sort(byNewest);
}

function sameBytes(s: Store, path: string, bytes: Uint8Array): boolean {
	const held = tryReadRegular(s.fs, path);
	return held !== undefined && Buffer.compare(held, Buffer.from(bytes)) === 0;
}

function list(s: Store, ref: SkillRef, relPath: string): BackupEntry[] {
	const own = skillDirs(s, ref).flatMap((folder) => {
		const modes = readModes(s, folder);
		return readEntries(s, join(folder, ...relPath.split("/")), false).map((e) => {
			const mode = modes[`${relPath}/${e.id}`];
			return mode === undefined ? e : { ...e, mode };
		});
	});
	const flat = relPath === "SKILL.md" ? readEntries(s, join(s.root, skillFolderName(nameOf(ref))), true) : [];
	return [...own, ...flat].sort(byNewest);
}

/** A stamp strictly newer than every backup already held, so "latest" is always the last taken. */
function nextStamp(entries: readonly { stamp: string }[]): string {
	const newest = entries[0]?.stamp;
	const newestMs = newest ? Date.parse(stampToIso(newest)) : Number.NaN;
	// One step past the newest, computed (a loop of 1 ms steps hangs on a far-future stamp).
	return formatStamp(new Date(Number.isFinite(newestMs) && newestMs >= Date.now() ? newestMs + 1 : Date.now()));
}

/**
 * The mode record of a skill's backup folder; empty when absent, unreadable or not a file.
 * `walk` false: the folders down to it were checked by this operation already.
 */
function readModes(s: Store, folder: string, walk = true): Record<string, number> {
	try {
		const path = join(folder, MODES);
		if (walk) guard(s, path);
		if (!s.fs.lstat(path).isFile()) return {};
		const record: unknown = JSON.parse(s.fs.readFile(path).toString("utf8"));
		const modes = typeof record === "object" && record !== null && "modes" in record ? record.modes : undefined;
		if (typeof modes !== "object" || modes === null) return {};
		return Object.fromEntries(Object.entries(modes).filter((e): e is [string, number] => Number.isInteger(e[1])));
	} catch {
		return {};
	}
}

function writeModes(s: Store, dirs: PrivateDirs, folder: string, modes: Record<string, number>): void {
	writePrivate(s.fs, dirs, join(folder, MODES), Buffer.from(`${JSON.stringify({ modes })}\n`));
}

function readOrigin(s: Store, path: string): string | undefined {
	const note = tryReadJson(s.fs, path);
	return typeof note === "object" && note !== null && "originDir" in note && typeof note.originDir === "string"
		? note.originDir
		: undefined;
}

/** One backup of a commit, planned: where it goes, and the held backup it re-stamps when the bytes are held already. */
interface PlannedBackup {
	readonly request: BackupRequest;
	readonly dir: string;
	readonly entry: BackupEntry;
	/** The file's backups before this one, newest first. */
	readonly existing: readonly NamedBackup[];
	readonly same: NamedBackup | undefined;
}

function planBackup(s: Store, dirs: PrivateDirs, request: BackupRequest): PlannedBackup {
	const { skill: key, relPath, bytes } = request;
	ensureKeyed(s, dirs, key);
	const dir = fileDir(s, key, relPath);
	dirs.ensure(dir);
	const listed = listDir(s.fs, dir);
	sweepTempNames(s.fs, dir, listed);
	const hash = sha256Once(bytes).slice(0, 10);
	const existing = namedBackups(dir, listed);
	const stamp = nextStamp(existing);
	const id = `${stamp}-${hash}${extname(relPath)}`;
	const path = join(dir, id);
	// A fresh name, newer than every one listed: only something planted since can sit there.
	if (listed.includes(id) && s.fs.lstat(path).isSymbolicLink()) throw new StoreLinkError(path);
	const same = existing.find((e) => e.hash === hash && sameBytes(s, e.path, bytes));
	const entry = { id, path, stamp, time: stampToIso(stamp), hash, size: bytes.length, legacy: false };
	return { request, dir, entry, existing, same };
}

/** A commit's backups planned, their new copies in temp files (a held copy of the same bytes needs none). */
interface BegunStore {
	readonly dirs: PrivateDirs;
	readonly planned: readonly PlannedBackup[];
	readonly writes: ReadonlyArray<PreparedWrite | undefined>;
}

/** Plans every backup and writes each new copy to its temp file (synced now, or by syncWrites when `deferSync`). */
function beginStore(s: Store, requests: readonly BackupRequest[], deferSync: boolean): BegunStore {
	const dirs = createPrivateDirs(s.fs, s.agentDir);
	const planned = requests.map((request) => planBackup(s, dirs, request));
	const writes: Array<PreparedWrite | undefined> = [];
	try {
		for (const p of planned)
			writes.push(
				p.same ? undefined : prepareWrite(s.fs, p.entry.path, p.request.bytes, { mode: 0o600, dirs, deferSync }),
			);
	} catch (error) {
		for (const write of writes) if (write) discardWrite(s.fs, write);
		throw error;
	}
	return { dirs, planned, writes };
}

/** Puts each synced copy in place (a held copy of the same bytes re-stamped instead); a failure discards the rest. */
function placeStored(s: Store, begun: BegunStore): void {
	let placed = 0;
	try {
		for (; placed < begun.planned.length; placed++) {
			const p = begun.planned[placed];
			const write = begun.writes[placed];
			if (write) finishWrite(s.fs, write);
			else if (p.same) s.fs.rename(p.same.path, p.entry.path);
		}
	} finally {
		for (const write of begun.writes.slice(placed)) if (write) discardWrite(s.fs, write);
	}
}

/** The last step, once every backup is durable: the modes recorded, and the prune that goes with them. */
function endStore(s: Store, begun: BegunStore): StoredBackups {
	recordModes(s, begun.dirs, begun.planned);
	const { planned } = begun;
	return {
		entries: planned.map((p) => p.entry),
		prune: (cap) => {
			for (const p of planned) pruneNamed(s, heldAfter(p).slice(Math.max(cap, 1)));
		},
	};
}

const backupFolders = (begun: BegunStore): string[] => [...new Set(begun.planned.map((p) => p.dir))];

/**
 * The backups of one commit, grouped by step rather than by file: every new copy written, then all
 * fsynced at once, then each put in place, then every folder synced at once. When this resolves,
 * every backup is durable.
 */
async function storeAll(s: Store, requests: readonly BackupRequest[]): Promise<StoredBackups> {
	const begun = beginStore(s, requests, true);
	try {
		await syncWrites(s.fs, begun.writes);
	} catch (error) {
		for (const write of begun.writes) if (write) discardWrite(s.fs, write);
		throw error;
	}
	placeStored(s, begun);
	await syncDirs(s.fs, backupFolders(begun));
	return endStore(s, begun);
}

/** One backup, synchronously (the side doors' store): its copy synced, put in place, its folder synced. */
function storeOne(s: Store, request: BackupRequest): BackupEntry {
	const begun = beginStore(s, [request], false);
	placeStored(s, begun);
	for (const dir of backupFolders(begun)) syncDir(s.fs, dir);
	return endStore(s, begun).entries[0];
}

/** The file's backups once `p` was stored, newest first (the new one; a re-stamped one under its new name only). */
function heldAfter(p: PlannedBackup): NamedBackup[] {
	return [p.entry, ...p.existing.filter((e) => e !== p.same)];
}

/** The modes of a commit's backups that are not 0644, one record per skill backup folder. */
function recordModes(s: Store, dirs: PrivateDirs, planned: readonly PlannedBackup[]): void {
	const byFolder = new Map<string, PlannedBackup[]>();
	for (const p of planned) {
		const mode = p.request.mode;
		if (mode === undefined || (mode & 0o777) === 0o644) continue;
		const folder = keyedDir(s, p.request.skill);
		byFolder.set(folder, [...(byFolder.get(folder) ?? []), p]);
	}
	for (const [folder, group] of byFolder) {
		let modes = readModes(s, folder, false);
		for (const p of group) {
			const { relPath, mode = 0o644 } = p.request;
			modes = withMode(modes, relPath, new Set(heldAfter(p).map((e) => e.id)), p.entry.id, mode);
		}
		writeModes(s, dirs, folder, modes);
	}
}

/** `modes` with backup `id` of relPath recorded, and entries of relPath backups no longer `held` dropped. */
function withMode(
	modes: Record<string, number>,
	relPath: string,
	held: ReadonlySet<string>,
	id: string,
	mode: number,
): Record<string, number> {
	const stale = (key: string) => {
		if (!key.startsWith(`${relPath}/`)) return false;
		const rest = key.slice(relPath.length + 1);
		return !rest.includes("/") && !held.has(rest);
	};
	return {
		...Object.fromEntries(Object.entries(modes).filter(([key]) => !stale(key))),
		[`${relPath}/${id}`]: mode & 0o777,
	};
}

function recordMode(s: Store, key: SkillKey, relPath: string, id: string, mode: number): void {
	const folder = keyedDir(s, key);
	const held = new Set(names(s, key, relPath).map((e) => e.id));
	const modes = withMode(readModes(s, folder), relPath, held, id, mode);
	writeModes(s, createPrivateDirs(s.fs, s.agentDir), folder, modes);
}

function readBackup(s: Store, entry: BackupEntry): Buffer | Refusal {
	guard(s, entry.path);
	const bytes = s.fs.readFile(entry.path);
	const actual = sha256(bytes);
	return actual.startsWith(entry.hash) ? bytes : refusals.backupCorrupt(entry.path, entry.hash, actual);
}

function takeSnapshot(
	s: Store,
	skill: string,
	originDir: string,
	files: ReadonlyArray<{ relPath: string; bytes: Uint8Array; mode: number }>,
): SnapshotEntry {
	const key = { name: skill, dir: originDir };
	const dirs = createPrivateDirs(s.fs, s.agentDir);
	const base = join(ensureKeyed(s, dirs, key), DELETED_DIR);
	const existing = listSnapshots(s, key).map((snapshot) => ({ stamp: snapshot.id }));
	const id = nextStamp(existing);
	const dir = join(base, id);
	// The files keep their own modes (and are recorded in MODES too) and the snapshot's folders the skill
	// folders' modes, so `cp -rp` of the snapshot gives the skill back as it was; the store's 0700
	// folders above it keep it private.
	for (const file of files) writeKeepingMode(s, dirs, join(dir, ...file.relPath.split("/")), file);
	dirs.ensure(dir);
	copyFolderModes(s, dir, originDir, files);
	const folder = join(base, "..");
	const modes = readModes(s, folder, false);
	for (const file of files) modes[`${DELETED_DIR}/${id}/${file.relPath}`] = file.mode & 0o777;
	writeModes(s, dirs, folder, modes);
	writePrivate(s.fs, dirs, `${dir}.json`, Buffer.from(`${JSON.stringify({ skill, originDir })}\n`));
	return { id, path: dir, time: stampToIso(id), originDir };
}

/** A snapshot file with the skill file's own mode, kept readable by its owner (the store reads it back). */
function writeKeepingMode(s: Store, dirs: PrivateDirs, path: string, file: { bytes: Uint8Array; mode: number }): void {
	dirs.ensure(dirname(path));
	assertNotLink(s.fs, path);
	writeFileAtomic(s.fs, path, file.bytes, { mode: (file.mode & 0o777) | 0o400, dirs });
}

/**
 * Each folder of the snapshot (itself and those holding files) takes the mode of the skill's folder
 * it copies, which still exists while the snapshot is taken; the owner keeps rwx so the store can
 * manage it. A folder that cannot be read keeps 0700.
 */
function copyFolderModes(s: Store, dir: string, originDir: string, files: ReadonlyArray<{ relPath: string }>): void {
	const rels = new Set([""]);
	for (const file of files) {
		const parts = file.relPath.split("/").slice(0, -1);
		for (let i = 1; i <= parts.length; i++) rels.add(parts.slice(0, i).join("/"));
	}
	for (const rel of rels) {
		let mode: number;
		try {
			const stat = s.fs.lstat(join(originDir, ...rel.split("/")));
			if (!stat.isDirectory()) continue;
			mode = (stat.mode & 0o777) | 0o700;
		} catch {
			continue;
		}
		const fd = s.fs.open(
			join(dir, ...rel.split("/")),
			constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
			0,
		);
		try {
			s.fs.fchmod(fd, mode);
		} finally {
			s.fs.close(fd);
		}
	}
}

function listSnapshots(s: Store, ref: SkillRef): SnapshotEntry[] {
	return skillDirs(s, ref)
		.flatMap((folder) => {
			const base = join(folder, DELETED_DIR);
			guard(s, base);
			return listDir(s.fs, base)
				.filter((n) => SNAPSHOT.test(n))
				.map((id) => ({
					id,
					path: join(base, id),
					time: stampToIso(id),
					originDir: readOrigin(s, join(base, `${id}.json`)),
				}));
		})
		.sort((a, b) => b.id.localeCompare(a.id));
}

function readSnapshot(s: Store, entry: SnapshotEntry): Array<{ relPath: string; bytes: Buffer; mode: number }> {
	guard(s, entry.path);
	const modes = readModes(s, join(entry.path, "..", ".."));
	return walkTree(s.fs, entry.path, { strict: true }).files.map((f) => ({
		relPath: f.relPath,
		bytes: s.fs.readFile(f.absPath),
		mode: modes[`${DELETED_DIR}/${entry.id}/${f.relPath}`] ?? f.stat.mode & 0o777,
	}));
}

function prune(s: Store, key: SkillKey, relPath: string, cap: number): string[] {
	// Runs after a change has landed: a failure here must not turn it into an error, so an
	// unreadable folder or a backup that cannot be removed is left for the next prune.
	try {
		return pruneNamed(s, names(s, key, relPath).slice(Math.max(cap, 1)));
	} catch {
		return []; // Nothing pruned this time.
	}
}

/** Unlinks each of these backups that is a file (a folder squatting on a backup name is left); returns their ids. */
function pruneNamed(s: Store, past: readonly NamedBackup[]): string[] {
	const removed: string[] = [];
	for (const entry of past) {
		try {
			if (!s.fs.lstat(entry.path).isFile()) continue;
			s.fs.unlink(entry.path);
			removed.push(entry.id);
		} catch {
			// Kept one backup too many; harmless.
		}
	}
	return removed;
}

function trackedFiles(s: Store, ref: SkillRef): string[] {
	const out = new Set<string>();
	const walk = (dir: string, prefix: string) => {
		for (const name of listDir(s.fs, dir)) {
			if (!prefix && name === DELETED_DIR) continue;
			const path = join(dir, name);
			if (!s.fs.lstat(path).isDirectory()) continue;
			const rel = prefix ? `${prefix}/${name}` : name;
			if (readEntries(s, path, false).length > 0) out.add(rel);
			walk(path, rel);
		}
	};
	for (const folder of skillDirs(s, ref)) {
		guard(s, folder);
		walk(folder, "");
	}
	return [...out].sort();
}

function skillNames(s: Store): string[] {
	guard(s, s.root);
	const found = listDir(s.fs, s.root).flatMap((n) => {
		if (!n.includes("@")) return n.endsWith(".json") ? [] : [n];
		const key = n.endsWith(".json") ? readNote(s, join(s.root, n)) : undefined;
		return key ? [key.name] : [];
	});
	return [...new Set(found)].sort();
}

function usage(s: Store): { files: number; bytes: number } {
	guard(s, s.root);
	// A backup is a file named <stamp>-<hash><ext>, or any file inside a deletion snapshot.
	const inSnapshot = (relPath: string) =>
		relPath
			.split("/")
			.some((part, i, parts) => part === DELETED_DIR && SNAPSHOT.test(parts[i + 1] ?? "") && i + 2 < parts.length);
	const backups = walkTree(s.fs, s.root).files.filter((f) => inSnapshot(f.relPath) || ENTRY.test(basename(f.relPath)));
	return { files: backups.length, bytes: backups.reduce((sum, f) => sum + f.stat.size, 0) };
}

export function createBackupStore(fs: FsOps, agentDir: string): BackupStore {
	const s: Store = { fs, agentDir, root: getBackupsDir(agentDir) };
	return {
		root: s.root,
		list: (ref, relPath) => list(s, ref, relPath),
		store: (key, relPath, bytes) => storeOne(s, { skill: key, relPath, bytes }),
		storeAll: (requests) => storeAll(s, requests),
		recordMode: (key, relPath, id, mode) => recordMode(s, key, relPath, id, mode),
		read: (entry) => readBackup(s, entry),
		snapshot: (skill, originDir, files) => takeSnapshot(s, skill, originDir, files),
		listSnapshots: (ref) => listSnapshots(s, ref),
		readSnapshot: (entry) => readSnapshot(s, entry),
		prune: (key, relPath, cap) => prune(s, key, relPath, cap),
		trackedFiles: (ref) => trackedFiles(s, ref),
		skillNames: () => skillNames(s),
		usage: () => usage(s),
	};
}
