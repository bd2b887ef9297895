// Landing a plan (gates 7 and 8 of the contract), called while the caller holds the file locks:
// re-check every file against its planned `before`, take durable backups of all of them, journal
// a multi-file commit, then write each file atomically (re-checking its hash right before), load
// changed skills again with pi's loader, and on any failure put every file already written back
// from the bytes just backed up, checking each one, so the result can say what each file became.

import { dirname, join } from "node:path";
import { DELETED_DIR, skillKey, type BackupStore, type SnapshotEntry } from "./backup-store.ts";
import * as refusals from "./errors.ts";
import type { Refusal } from "./errors.ts";
import { listDir, type FsOps } from "./fs-ops.ts";
import { releaseJournal, removeEmptyDirs, removeJournal, writeJournal, type JournalEntry } from "./journal.ts";
import type { LockGuard } from "./locks.ts";
import { diskHash, hashOrNull, readOrNull, type Fate, type FileChange, type SnapshotPlan } from "./plan.ts";
import type { LandedCheck } from "./validation.ts";
import {
	mkdirDurable,
	removeFileDurable,
	StoreLinkError,
	SymlinkTargetError,
	sweepTempFiles,
	writeFileAtomic,
} from "./writer.ts";

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

/** What one commit lands: each file once, whole-skill snapshots, folders emptied by deletes. */
export interface CommitPlan {
	readonly changes: readonly FileChange[];
	/** Whole-skill deletes: each tree is snapshotted before any file is touched. */
	readonly snapshots: readonly SnapshotPlan[];
	/** Folders to remove once empty (deepest first), after the commit. */
	readonly removeDirs: readonly string[];
}

export interface LandedChange {
	readonly skill: string;
	readonly relPath: string;
	readonly absPath: string;
	readonly oldHash: string | null;
	readonly newHash: string | null;
	readonly backupId: string | null;
	readonly backupPath: string | null;
	/** The bytes written (null: removed), when the commit knows them: a follower compares, not rehashes. */
	readonly after?: Buffer | null;
}

export interface FateReport {
	readonly path: string;
	readonly fate: Fate;
	/** The backup holding the file's bytes from before the commit (null: it did not exist). */
	readonly backupPath: string | null;
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

function isSymlink(fs: FsOps, path: string): boolean {
	try {
		return fs.lstat(path).isSymbolicLink();
	} catch {
		return false;
	}
}

function fileMode(fs: FsOps, path: string): number | undefined {
	try {
		return fs.lstat(path).mode & 0o7777;
	} catch {
		return undefined;
	}
}

/** The file is still exactly what the plan was made from, or the refusal that says it is not. */
function recheckOne(ctx: CommitContext, change: FileChange): Refusal | undefined {
	if (isSymlink(ctx.fs, change.absPath)) return refusals.conflict(change.absPath, "it became a symbolic link");
	let bytes: Buffer | null;
	try {
		bytes = readOrNull(ctx.fs, change.absPath);
	} catch (error) {
		return refusals.ioError(change.absPath, error);
	}
	// The fresh bytes compared as bytes (no hash to compute); the hashes only name a difference.
	if (bytes === null ? change.before === null : change.before !== null && bytes.equals(change.before))
		return undefined;
	const now = hashOrNull(bytes);
	const planned = hashOrNull(change.before);
	if (ctx.changedCode === "stale") {
		return refusals.stale(
			change.absPath,
			planned ?? "(absent)",
			now ?? "(deleted)",
			change.skill,
			change.relPath === "SKILL.md" ? undefined : change.relPath,
		);
	}
	return refusals.conflict(change.absPath, "its content changed after the batch was planned");
}

/** Folders a write of `dir` would create, deepest first (rolled back with the file). */
function missingDirs(fs: FsOps, dir: string): string[] {
	const missing: string[] = [];
	for (
		let current = dir;
		fileMode(fs, current) === undefined && dirname(current) !== current;
		current = dirname(current)
	)
		missing.push(current);
	return missing;
}

function applyChange(ctx: CommitContext, change: FileChange): void {
	// Checked first, and again right before the rename or unlink: a program that writes the file in
	// place while the new bytes are written and synced is seen and its bytes kept, not replaced.
	const recheck = () => {
		ctx.guard.assertHeld(change.absPath);
		const changed = recheckOne(ctx, change);
		if (changed) throw new ChangedError(changed);
	};
	recheck();
	if (change.after === null) {
		removeFileDurable(ctx.fs, change.absPath, recheck);
		return;
	}
	mkdirDurable(ctx.fs, dirname(change.absPath));
	const options =
		change.before === null
			? { mode: change.mode ?? 0o644 }
			: change.restoreMode === undefined
				? {}
				: { mode: change.restoreMode };
	writeFileAtomic(ctx.fs, change.absPath, change.after, { ...options, beforeRename: recheck });
}

/** Puts one written file back and checks its bytes; false when it is not back. */
function undoChange(ctx: CommitContext, change: FileChange, entry: JournalEntry): boolean {
	try {
		if (change.before === null) {
			if (fileMode(ctx.fs, change.absPath) !== undefined) removeFileDurable(ctx.fs, change.absPath);
			removeEmptyDirs(ctx.fs, entry.createdDirs ?? []);
		} else {
			mkdirDurable(ctx.fs, dirname(change.absPath));
			writeFileAtomic(ctx.fs, change.absPath, change.before, entry.mode === undefined ? {} : { mode: entry.mode });
		}
	} catch {
		// Judged below by what is on disk, not by which call failed.
	}
	return diskHash(ctx.fs, change.absPath) === entry.beforeHash;
}

function verify(ctx: CommitContext, change: FileChange): void {
	if (change.expectName === undefined || change.after === null) return;
	const landed = ctx.checkLanded(change.absPath);
	if (!landed.loaded || landed.name !== change.expectName) throw new VerifyError(change.absPath, landed.diagnostics);
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
			if (fileMode(ctx.fs, dir) === undefined) continue;
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
	const code = refusals.errnoCode(error);
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
 * The backup of one file: its copy inside a whole-skill snapshot when that copy holds exactly the
 * old bytes (an earlier op of the batch may have changed the file before the delete), else its own.
 */
function takeBackup(
	ctx: CommitContext,
	change: FileChange,
	snapshots: readonly TakenSnapshot[],
): { id: string | null; path: string | null; inSnapshot: boolean } {
	const before = change.before;
	if (before === null) return { id: null, path: null, inSnapshot: false };
	for (const { plan, entry } of snapshots) {
		const file = plan.files.find((f) => join(plan.dir, ...f.relPath.split("/")) === change.absPath);
		if (file && before.equals(file.bytes))
			return {
				id: `${DELETED_DIR}/${entry.id}`,
				path: join(entry.path, ...file.relPath.split("/")),
				inSnapshot: true,
			};
	}
	const entry = ctx.store.store(skillKey(change.skill, change.absPath, change.relPath), change.relPath, before);
	sweepTempFiles(ctx.fs, dirname(entry.path));
	recordMode(ctx, change, entry.id);
	return { id: entry.id, path: entry.path, inSnapshot: false };
}

/** The file's mode goes with its backup when it is not 0644, so a restore puts it back (a snapshot keeps its own). */
function recordMode(ctx: CommitContext, change: FileChange, id: string): void {
	const mode = fileMode(ctx.fs, change.absPath);
	if (mode !== undefined && (mode & 0o777) !== 0o644)
		ctx.store.recordMode(skillKey(change.skill, change.absPath, change.relPath), change.relPath, id, mode);
}

interface Prepared {
	readonly landed: LandedChange[];
	readonly entries: JournalEntry[];
	readonly snapshots: SnapshotEntry[];
	/** Files whose own backup folder gets pruned after the commit (not those kept in a snapshot). */
	readonly pruned: FileChange[];
}

/** Gate 7 for every file before any target is touched: backups durable, rollback data known. */
function backUpAll(ctx: CommitContext, plan: CommitPlan): Prepared {
	const taken = plan.snapshots.map((s) => ({ plan: s, entry: ctx.store.snapshot(s.skill, s.dir, s.files) }));
	const landed: LandedChange[] = [];
	const entries: JournalEntry[] = [];
	const pruned: FileChange[] = [];
	for (const change of plan.changes) {
		const backup = takeBackup(ctx, change, taken);
		if (change.before !== null && !backup.inSnapshot) pruned.push(change);
		const oldHash = hashOrNull(change.before);
		const newHash = hashOrNull(change.after);
		landed.push({
			skill: change.skill,
			relPath: change.relPath,
			absPath: change.absPath,
			oldHash,
			newHash,
			backupId: backup.id,
			backupPath: backup.path,
			after: change.after,
		});
		const createdDirs = change.before === null ? missingDirs(ctx.fs, dirname(change.absPath)) : [];
		entries.push({
			absPath: change.absPath,
			beforeHash: oldHash,
			afterHash: newHash,
			backupPath: backup.path,
			mode: fileMode(ctx.fs, change.absPath),
			...(createdDirs.length > 0 ? { createdDirs } : {}),
		});
	}
	return { landed, entries, snapshots: taken.map((t) => t.entry), pruned };
}

function notWritten(plan: CommitPlan, error: unknown): CommitOutcome {
	return {
		ok: false,
		refusal: failureRefusal(error, undefined),
		fates: plan.changes.map((c) => ({ path: c.absPath, fate: "not_written", backupPath: null })),
	};
}

/** Where a failed commit stopped: what was backed up, its journal, how many writes began, and why. */
interface Failure {
	readonly prepared: Prepared;
	readonly journal: string | undefined;
	/** Index of the write that failed (or plan.changes.length when a check after the writes failed). */
	readonly done: number;
	readonly error: unknown;
}

/**
 * Puts every write that began back from its backup, newest first, and reports each file's fate.
 * The write that failed may have got as far as its rename (a folder sync failed after it), or made
 * folders: it is checked and undone like the others, unless it found its file changed. The journal
 * goes once every file is back; one that could not be put back keeps it for the next recovery.
 */
function rollBack(ctx: CommitContext, plan: CommitPlan, failure: Failure): CommitOutcome {
	const { prepared, journal, done, error } = failure;
	const backupOf = (i: number) => prepared.landed[i].backupPath;
	const fates: FateReport[] = plan.changes.map((c, i) => ({
		path: c.absPath,
		fate: "not_written",
		backupPath: backupOf(i),
	}));
	const reached = done < plan.changes.length && !(error instanceof ChangedError) ? done + 1 : done;
	for (let i = reached - 1; i >= 0; i--) {
		const change = plan.changes[i];
		const entry = prepared.entries[i];
		if (i === done && diskHash(ctx.fs, change.absPath) === entry.beforeHash) {
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
	const failed = plan.changes[Math.min(done, plan.changes.length - 1)];
	return {
		ok: false,
		refusal: failureRefusal(error, done < plan.changes.length ? plan.changes[done] : undefined),
		fates,
		failedPath: error instanceof VerifyError ? error.path : failed?.absPath,
	};
}

export function commitPlan(plan: CommitPlan, ctx: CommitContext): CommitOutcome {
	for (const change of plan.changes) {
		const changed = recheckOne(ctx, change);
		if (changed) return { ok: false, refusal: changed, fates: [], failedPath: change.absPath };
	}
	if (ctx.signal?.aborted) return { ok: false, refusal: refusals.aborted(), fates: [] };
	for (const dir of new Set(plan.changes.map((c) => dirname(c.absPath)))) sweepTempFiles(ctx.fs, dir);

	let prepared: Prepared;
	try {
		prepared = backUpAll(ctx, plan);
	} catch (error) {
		return notWritten(plan, error);
	}
	let journal: string | undefined;
	try {
		if (plan.changes.length > 1) journal = writeJournal(ctx.fs, ctx.agentDir, prepared.entries);
	} catch (error) {
		return notWritten(plan, error);
	}
	let done = 0;
	try {
		for (; done < plan.changes.length; done++) applyChange(ctx, plan.changes[done]);
		for (const change of plan.changes) verify(ctx, change);
		removeEmptyDirs(ctx.fs, plan.removeDirs);
		checkSkills(ctx, plan);
		// The commit point: from here on a crash leaves all-new; before it, recovery rolls back.
		if (journal) removeJournal(ctx.fs, journal);
	} catch (error) {
		return rollBack(ctx, plan, { prepared, journal, done, error });
	}
	for (const change of prepared.pruned)
		ctx.store.prune(skillKey(change.skill, change.absPath, change.relPath), change.relPath, ctx.backupCap);
	return { ok: true, landed: prepared.landed, snapshots: prepared.snapshots };
}
