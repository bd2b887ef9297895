// Landing a plan (gates 7 and 8 of the contract), called while the caller holds the file locks:
// re-check every file against its planned `before`, take durable backups of all of them, journal
// a multi-file commit, then write the files atomically step by step (all new bytes synced in temp
// files, each target re-checked right before its rename, each folder synced once), load changed
// skills again with pi's loader, and on any failure put every file already written back from the
// bytes just backed up, checking each one, so the result can say what each file became.

import { dirname, join } from "node:path";
import {
	DELETED_DIR,
	skillKey,
	type BackupRequest,
	type BackupStore,
	type SnapshotEntry,
	type StoredBackups,
} from "../store/backup-store.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { failedAt, type FsOps } from "../base/fs-ops.ts";
import { releaseJournal, removeEmptyDirs, removeJournal, writeJournal, type JournalEntry } from "../store/journal.ts";
import type { LockGuard } from "../base/locks.ts";
import type { LandedCheck } from "../checks/validation.ts";
import {
	discardWrite,
	finishWrite,
	mkdirDurable,
	prepareWrite,
	removeFile,
	removeFileDurable,
	StoreLinkError,
	SymlinkTargetError,
	sweepTempFiles,
	syncDirs,
	syncWrites,
	writeFileAtomic,
	type PreparedWrite,
} from "../base/writer.ts";
import { errnoCode, listDir, readIfExists, tryLstat, tryMode } from "../base/fs-reads.ts";
import { tryHash } from "../base/hash.ts";
import { hashOrNull } from "../base/hash.ts";
import type { CommitPlan, FateReport, FileChange, LandedChange, SnapshotPlan } from "./types.ts";

export interface CommitContext {
	readonly fs: FsOps;
	readonly agentDir: string;
	readonly store: BackupStore;
	readonly backupCap: number;
	readonly guard: LockGuard;
	/** Loads a written SKILL.md again the way pi does (validation.ts `checkLanded`). */
	readonly checkLanded: (filePath: string) => LandedCheck;
	readonly signal?: AbortSignal;
	/** "stale" for a single call (re-read and retry), "conflict" for a batch. */
	readonly changedCode: "stale" | "conflict";
}

export type CommitOutcome =
	| { readonly ok: true; readonly landed: readonly LandedChange[]; readonly snapshots: readonly SnapshotEntry[] }
	| {
			readonly ok: false;
			readonly refusal: Refusal;
			readonly fates: readonly FateReport[];
			readonly failedPath?: string;
	  };

class VerifyError extends Error {
	constructor(
		readonly path: string,
		readonly diagnostics: ReadonlyArray<{ type: string; message: string }>,
		/** The refusal to answer with, when not pi's verdict on the file (invalid_skill). */
		readonly refusal?: Refusal,
	) {
		super(`${path} no longer loads as a skill`);
	}
}

class ChangedError extends Error {
	constructor(readonly refusal: Refusal) {
		super(refusal.message);
	}
}

/** What a re-check found: the file as planned, with its mode (undefined: absent), or the refusal saying it is not. */
type Rechecked = { readonly refusal: Refusal } | { readonly mode: number | undefined };

/** The file is still exactly what the plan was made from (its bytes read now), or the refusal that says it is not. */
function recheckOne(ctx: CommitContext, change: FileChange): Rechecked {
	const stat = tryLstat(ctx.fs, change.absPath);
	if (stat?.isSymbolicLink()) return { refusal: refusals.conflict(change.absPath, "it became a symbolic link") };
	let bytes: Buffer | null;
	try {
		bytes = readIfExists(ctx.fs, change.absPath);
	} catch (error) {
		return { refusal: refusals.ioError(change.absPath, error) };
	}
	// The fresh bytes compared as bytes (no hash to compute); the hashes only name a difference.
	if (bytes === null ? change.before === null : change.before !== null && bytes.equals(change.before))
		return { mode: stat === undefined ? undefined : stat.mode & 0o7777 };
	const now = hashOrNull(bytes);
	const planned = hashOrNull(change.before);
	if (ctx.changedCode === "stale") {
		return {
			refusal: refusals.stale(
				change.absPath,
				planned ?? "(absent)",
				now ?? "(deleted)",
				change.skill,
				change.relPath === "SKILL.md" ? undefined : change.relPath,
			),
		};
	}
	return { refusal: refusals.conflict(change.absPath, "its content changed after the batch was planned") };
}

/** Folders a write of `dir` would create, deepest first (rolled back with the file). */
function missingDirs(fs: FsOps, dir: string): string[] {
	const missing: string[] = [];
	for (
		let current = dir;
		tryMode(fs, current) === undefined && dirname(current) !== current;
		current = dirname(current)
	)
		missing.push(current);
	return missing;
}

/**
 * A write's first step: its new bytes synced in a temp file beside the target (nothing for a
 * delete); no target changes. `mode`: the file's mode when the commit began (an overwrite keeps it).
 */
function prepareChange(ctx: CommitContext, change: FileChange, mode: number | undefined): PreparedWrite | undefined {
	if (change.after === null) return undefined;
	if (change.before === null) mkdirDurable(ctx.fs, dirname(change.absPath));
	const keep = change.before === null ? (change.mode ?? 0o644) : (change.restoreMode ?? mode);
	return prepareWrite(ctx.fs, change.absPath, change.after, {
		deferSync: true,
		...(keep === undefined ? {} : { mode: keep }),
	});
}

/**
 * Its second: the target re-checked under its lock right before the rename or unlink, so a
 * program that wrote the file in place while the new bytes were written and synced is seen and
 * its bytes kept, not replaced. The folder is synced by the caller.
 */
function replaceChange(ctx: CommitContext, change: FileChange, write: PreparedWrite | undefined): void {
	const recheck = () => {
		ctx.guard.assertHeld(change.absPath);
		const checked = recheckOne(ctx, change);
		if ("refusal" in checked) throw new ChangedError(checked.refusal);
	};
	if (write === undefined) removeFile(ctx.fs, change.absPath, recheck);
	else finishWrite(ctx.fs, write, recheck);
}

/** Each folder a commit renamed into or removed from, once, with the first change that touched it. */
function foldersOf(
	changes: readonly FileChange[],
	writes: ReadonlyArray<PreparedWrite | undefined>,
): Map<string, number> {
	const folders = new Map<string, number>();
	changes.forEach((change, i) => {
		const dir = writes[i]?.realDir ?? dirname(change.absPath);
		if (!folders.has(dir)) folders.set(dir, i);
	});
	return folders;
}

/** Where writing stopped: how many targets were replaced or removed, the change the error belongs to, and why. */
interface Stop {
	readonly replaced: number;
	readonly failed: number;
	readonly error: unknown;
}

/**
 * Writes every file by step rather than one after the other: all new bytes written to temp files,
 * then all synced at once (until then no target has changed), then in order each target re-checked
 * and renamed or removed, then every folder synced at once. Returns where it stopped, or undefined
 * when all landed. While a sync runs, calls on other files go on; the lock guard and the file are
 * checked again right before each rename, after the last await.
 */
async function writeFiles(
	ctx: CommitContext,
	plan: CommitPlan,
	modes: ReadonlyArray<number | undefined>,
): Promise<Stop | undefined> {
	const { changes } = plan;
	const writes: Array<PreparedWrite | undefined> = [];
	let at = 0;
	let replaced = 0;
	try {
		for (; at < changes.length; at++) writes.push(prepareChange(ctx, changes[at], modes[at]));
		// A failed sync is reported on the file whose sync failed (every file is still not written).
		await syncWrites(ctx.fs, writes).catch((error: unknown) => {
			at = failedAt(error) ?? 0;
			throw error;
		});
		for (at = 0; at < changes.length; at++) {
			replaceChange(ctx, changes[at], writes[at]);
			replaced = at + 1;
		}
		const folders = foldersOf(changes, writes);
		// A folder's failed sync is reported on the first change in that folder.
		await syncDirs(ctx.fs, [...folders.keys()]).catch((error: unknown) => {
			at = [...folders.values()][failedAt(error) ?? 0] ?? 0;
			throw error;
		});
		return undefined;
	} catch (error) {
		return { replaced, failed: at, error };
	} finally {
		for (const write of writes.slice(replaced)) if (write) discardWrite(ctx.fs, write);
	}
}

/** Puts one written file back and checks its bytes; false when it is not back. */
function undoChange(ctx: CommitContext, change: FileChange, entry: JournalEntry): boolean {
	try {
		if (change.before === null) {
			if (tryMode(ctx.fs, change.absPath) !== undefined) removeFileDurable(ctx.fs, change.absPath);
			removeEmptyDirs(ctx.fs, entry.createdDirs ?? []);
		} else {
			mkdirDurable(ctx.fs, dirname(change.absPath));
			writeFileAtomic(ctx.fs, change.absPath, change.before, entry.mode === undefined ? {} : { mode: entry.mode });
		}
	} catch {
		// Judged below by what is on disk, not by which call failed.
	}
	return tryHash(ctx.fs, change.absPath) === entry.beforeHash;
}

function verify(ctx: CommitContext, change: FileChange): LandedCheck | undefined {
	if (change.expectName === undefined || change.after === null) return undefined;
	const landed = ctx.checkLanded(change.absPath);
	if (!landed.loaded || landed.name !== change.expectName) throw new VerifyError(change.absPath, landed.diagnostics);
	return landed;
}

/** The SKILL.md of the skill a change belongs to (its relPath is relative to the skill folder). */
function skillFileOf(change: FileChange): string {
	return change.relPath === "SKILL.md"
		? change.absPath
		: join(change.absPath, ...change.relPath.split("/").map(() => ".."), "SKILL.md");
}

/**
 * Every skill the commit touched still loads, or, deleted whole, is gone entirely: a folder left
 * without its SKILL.md is a skill neither restore nor create can bring back.
 */
function checkSkills(ctx: CommitContext, plan: CommitPlan): void {
	const deleted = new Set(plan.snapshots.map((s) => s.dir));
	const checked = new Set(
		plan.changes.filter((c) => c.expectName !== undefined && c.after !== null).map((c) => c.absPath),
	);
	for (const change of plan.changes) {
		const skillFile = skillFileOf(change);
		if (checked.has(skillFile)) continue;
		checked.add(skillFile);
		const dir = dirname(skillFile);
		if (deleted.has(dir)) {
			if (tryMode(ctx.fs, dir) === undefined) continue;
			const left = listDir(ctx.fs, dir);
			throw new VerifyError(
				skillFile,
				[],
				refusals.conflict(
					dir,
					`the folder still holds ${left.join(", ") || "entries"} after the whole-skill delete, ` +
						"which the delete did not plan for; the skill was put back as it was",
				),
			);
		}
		const landed = ctx.checkLanded(skillFile);
		if (!landed.loaded) throw new VerifyError(skillFile, landed.diagnostics);
	}
}

function failureRefusal(error: unknown, change: FileChange | undefined): Refusal {
	if (error instanceof ChangedError) return error.refusal;
	if (error instanceof VerifyError)
		return (
			error.refusal ??
			refusals.invalidSkill(error.path, [
				...error.diagnostics,
				{ type: "error", message: "the written file did not load again; it was rolled back" },
			])
		);
	if (error instanceof SymlinkTargetError) return refusals.conflict(error.path, "it became a symbolic link");
	if (error instanceof StoreLinkError) return refusals.ioError(error.path, error);
	const code = errnoCode(error);
	if (code === "ECOMPROMISED")
		return refusals.conflict(change?.absPath ?? "(lock)", "the cross-process lock was lost");
	return refusals.ioError(change?.absPath ?? "(commit)", error);
}

/** A journal whose files are all back; if it cannot be removed, recovery finds them untouched. */
function forgetJournal(ctx: CommitContext, journal: string): void {
	try {
		removeJournal(ctx.fs, journal);
	} catch {
		releaseJournal(journal);
	}
}

interface TakenSnapshot {
	readonly plan: SnapshotPlan;
	readonly entry: SnapshotEntry;
}

/**
 * The copy of a file inside a whole-skill snapshot, when it holds exactly the file's old bytes (an
 * earlier op of the batch may have changed the file before the delete); else the file gets its own.
 */
function snapshotCopy(
	change: FileChange,
	snapshots: readonly TakenSnapshot[],
): { id: string; path: string } | undefined {
	const before = change.before;
	if (before === null) return undefined;
	for (const { plan, entry } of snapshots) {
		const file = plan.files.find((f) => join(plan.dir, ...f.relPath.split("/")) === change.absPath);
		if (file && before.equals(file.bytes))
			return { id: `${DELETED_DIR}/${entry.id}`, path: join(entry.path, ...file.relPath.split("/")) };
	}
	return undefined;
}

interface Prepared {
	readonly landed: LandedChange[];
	readonly entries: JournalEntry[];
	readonly snapshots: SnapshotEntry[];
	/** The files' own backups (not those kept in a snapshot), pruned after the commit. */
	readonly stored: StoredBackups;
}

/**
 * Gate 7 for every file before any target is touched: backups durable, rollback data known.
 * `modes`: each file's mode when the commit began (it goes with the backup when not 0644, so a
 * restore puts it back; a snapshot keeps its own).
 */
async function backUpAll(
	ctx: CommitContext,
	plan: CommitPlan,
	modes: ReadonlyArray<number | undefined>,
): Promise<Prepared> {
	const taken = plan.snapshots.map((s) => ({ plan: s, entry: ctx.store.snapshot(s.skill, s.dir, s.files) }));
	const copies = plan.changes.map((change) => snapshotCopy(change, taken));
	const requests: BackupRequest[] = [];
	const own: number[] = [];
	plan.changes.forEach((change, i) => {
		if (change.before === null || copies[i]) return;
		own[i] = requests.length;
		const skill = skillKey(change.skill, change.absPath, change.relPath);
		requests.push({ skill, relPath: change.relPath, bytes: change.before, mode: modes[i] });
	});
	const stored = await ctx.store.storeAll(requests);
	const landed: LandedChange[] = [];
	const entries: JournalEntry[] = [];
	plan.changes.forEach((change, i) => {
		const backup = copies[i] ?? (own[i] === undefined ? undefined : stored.entries[own[i]]);
		const oldHash = hashOrNull(change.before);
		const newHash = hashOrNull(change.after);
		landed.push({
			skill: change.skill,
			relPath: change.relPath,
			absPath: change.absPath,
			oldHash,
			newHash,
			backupId: backup?.id ?? null,
			backupPath: backup?.path ?? null,
		});
		const createdDirs = change.before === null ? missingDirs(ctx.fs, dirname(change.absPath)) : [];
		entries.push({
			absPath: change.absPath,
			beforeHash: oldHash,
			afterHash: newHash,
			backupPath: backup?.path ?? null,
			mode: modes[i],
			...(createdDirs.length > 0 ? { createdDirs } : {}),
		});
	});
	return { landed, entries, snapshots: taken.map((t) => t.entry), stored };
}

function notWritten(plan: CommitPlan, error: unknown): CommitOutcome {
	return {
		ok: false,
		refusal: failureRefusal(error, undefined),
		fates: plan.changes.map((c) => ({ path: c.absPath, fate: "not_written", backupPath: null })),
	};
}

/** Where a failed commit stopped: what was backed up, its journal, where writing stopped, and why. */
interface Failure extends Stop {
	readonly prepared: Prepared;
	readonly journal: string | undefined;
}

/**
 * Puts every write that began back from its backup, newest first, and reports each file's fate.
 * The write that failed may have got as far as its rename: it is checked and undone like the
 * others, unless it found its file changed. Folders made for new files that never landed go too.
 * The journal goes once every file is back; one that could not be put back keeps it for the next
 * recovery.
 */
function rollBack(ctx: CommitContext, plan: CommitPlan, failure: Failure): CommitOutcome {
	const { prepared, journal, replaced, failed, error } = failure;
	const backupOf = (i: number) => prepared.landed[i].backupPath;
	const fates: FateReport[] = plan.changes.map((c, i) => ({
		path: c.absPath,
		fate: "not_written",
		backupPath: backupOf(i),
	}));
	for (let i = plan.changes.length - 1; i >= 0; i--) {
		const change = plan.changes[i];
		const entry = prepared.entries[i];
		const reached = i < replaced || (i === failed && !(error instanceof ChangedError));
		if (!reached || (i >= replaced && tryHash(ctx.fs, change.absPath) === entry.beforeHash)) {
			removeEmptyDirs(ctx.fs, entry.createdDirs ?? []);
			continue;
		}
		fates[i] = {
			path: change.absPath,
			fate: undoChange(ctx, change, entry) ? "rolled_back" : "rollback_failed",
			backupPath: backupOf(i),
		};
	}
	if (journal && fates.every((f) => f.fate !== "rollback_failed")) forgetJournal(ctx, journal);
	else if (journal) releaseJournal(journal);
	const last = plan.changes[Math.min(failed, plan.changes.length - 1)];
	return {
		ok: false,
		refusal: failureRefusal(error, failed < plan.changes.length ? plan.changes[failed] : undefined),
		fates,
		failedPath: error instanceof VerifyError ? error.path : last?.absPath,
	};
}

export async function commitPlan(plan: CommitPlan, ctx: CommitContext): Promise<CommitOutcome> {
	const modes: Array<number | undefined> = [];
	for (const change of plan.changes) {
		const checked = recheckOne(ctx, change);
		if ("refusal" in checked) return { ok: false, refusal: checked.refusal, fates: [], failedPath: change.absPath };
		modes.push(checked.mode);
	}
	if (ctx.signal?.aborted) return { ok: false, refusal: refusals.aborted(), fates: [] };
	for (const dir of new Set(plan.changes.map((c) => dirname(c.absPath)))) sweepTempFiles(ctx.fs, dir);

	let prepared: Prepared;
	try {
		prepared = await backUpAll(ctx, plan, modes);
	} catch (error) {
		return notWritten(plan, error);
	}
	let journal: string | undefined;
	try {
		if (plan.changes.length > 1) journal = writeJournal(ctx.fs, ctx.agentDir, prepared.entries);
	} catch (error) {
		return notWritten(plan, error);
	}
	const stop = await writeFiles(ctx, plan, modes);
	if (stop) return rollBack(ctx, plan, { prepared, journal, ...stop });
	let landed = prepared.landed;
	try {
		const loaded = plan.changes.map((change) => verify(ctx, change));
		landed = landed.map((change, i) => (loaded[i] ? { ...change, loaded: loaded[i] } : change));
		removeEmptyDirs(ctx.fs, plan.removeDirs);
		checkSkills(ctx, plan);
		// The commit point: from here on a crash leaves all-new; before it, recovery rolls back.
		if (journal) removeJournal(ctx.fs, journal);
	} catch (error) {
		const all = plan.changes.length;
		return rollBack(ctx, plan, { prepared, journal, replaced: all, failed: all, error });
	}
	prepared.stored.prune(ctx.backupCap);
	return { ok: true, landed, snapshots: prepared.snapshots };
}
