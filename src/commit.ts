// Landing a plan (gates 7 and 8 of the contract), called while the caller holds the file locks:
// re-check every file against its planned `before`, take durable backups, journal a multi-file
// commit, write each file atomically, load changed skills again with pi's loader, and on any
// failure put every file already written back from the bytes just backed up.

import { dirname, join } from "node:path";
import { DELETED_DIR, type BackupStore, type SnapshotEntry } from "./backup-store.ts";
import * as refusals from "./errors.ts";
import type { Refusal } from "./errors.ts";
import type { FsOps } from "./fs-ops.ts";
import { removeJournal, writeJournal } from "./journal.ts";
import type { LockGuard } from "./locks.ts";
import { createDiskView, hashOrNull, type FileChange, type Plan } from "./plan.ts";
import { checkLanded } from "./validation.ts";
import { mkdirDurable, removeFileDurable, SymlinkTargetError, sweepTempFiles, writeFileAtomic } from "./writer.ts";

export interface CommitContext {
	readonly fs: FsOps;
	readonly agentDir: string;
	readonly cwd: string;
	readonly store: BackupStore;
	readonly backupCap: number;
	readonly guard: LockGuard;
	readonly signal?: AbortSignal;
	/** "stale" for a single call (re-read and retry), "conflict" for a batch. */
	readonly changedCode: "stale" | "conflict";
}

export interface LandedChange {
	readonly skill: string;
	readonly relPath: string;
	readonly absPath: string;
	readonly oldHash: string | null;
	readonly newHash: string | null;
	readonly backupId: string | null;
	readonly backupPath: string | null;
}

export type ChangeFate = "written" | "rolled_back" | "rollback_failed" | "not_written";

export interface FateReport {
	readonly path: string;
	readonly fate: ChangeFate;
	readonly backupPath: string | null;
}

export type CommitOutcome =
	| { readonly ok: true; readonly landed: readonly LandedChange[]; readonly snapshot?: SnapshotEntry }
	| { readonly ok: false; readonly refusal: Refusal; readonly fates: readonly FateReport[] };

class VerifyError extends Error {
	constructor(
		readonly path: string,
		readonly diagnostics: ReadonlyArray<{ type: string; message: string }>,
	) {
		super(`${path} no longer loads as a skill`);
	}
}

function isSymlink(fs: FsOps, path: string): boolean {
	try {
		return fs.lstat(path).isSymbolicLink();
	} catch {
		return false;
	}
}

function recheck(ctx: CommitContext, plan: Plan): Refusal | undefined {
	const view = createDiskView(ctx.fs);
	for (const change of plan.changes) {
		if (isSymlink(ctx.fs, change.absPath)) return refusals.conflict(change.absPath, "it became a symbolic link");
		const now = hashOrNull(view.read(change.absPath));
		const planned = hashOrNull(change.before);
		if (now === planned) continue;
		if (ctx.changedCode === "stale") {
			return refusals.stale(change.absPath, planned ?? "(absent)", now ?? "(deleted)", change.skill, change.relPath === "SKILL.md" ? undefined : change.relPath);
		}
		return refusals.conflict(change.absPath, "its content changed after the batch was planned");
	}
	return undefined;
}

function applyChange(ctx: CommitContext, change: FileChange): void {
	ctx.guard.assertHeld();
	if (change.after === null) {
		removeFileDurable(ctx.fs, change.absPath);
		return;
	}
	mkdirDurable(ctx.fs, dirname(change.absPath));
	const options = change.before === null ? { mode: change.mode ?? 0o644 } : {};
	writeFileAtomic(ctx.fs, change.absPath, change.after, { ...options, beforeRename: () => ctx.guard.assertHeld() });
}

function undoChange(ctx: CommitContext, change: FileChange): void {
	if (change.before === null) removeFileDurable(ctx.fs, change.absPath);
	else writeFileAtomic(ctx.fs, change.absPath, change.before);
}

function verify(ctx: CommitContext, change: FileChange): void {
	if (change.expectName === undefined || change.after === null) return;
	const landed = checkLanded(change.absPath, ctx.cwd, ctx.agentDir);
	if (!landed.loaded || landed.name !== change.expectName) throw new VerifyError(change.absPath, landed.diagnostics);
}

function failureRefusal(error: unknown, change: FileChange | undefined): Refusal {
	if (error instanceof VerifyError) return refusals.invalidSkill(error.path, [...error.diagnostics, { type: "error", message: "the written file did not load again; it was rolled back" }]);
	if (error instanceof SymlinkTargetError) return refusals.conflict(error.path, "it became a symbolic link");
	const code = refusals.errnoCode(error);
	if (code === "ECOMPROMISED") return refusals.conflict(change?.absPath ?? "(lock)", "the cross-process lock was lost");
	return refusals.ioError(change?.absPath ?? "(commit)", error);
}

function rollBack(ctx: CommitContext, written: readonly FileChange[], backups: Map<string, string | null>): FateReport[] {
	const fates: FateReport[] = [];
	for (const change of [...written].reverse()) {
		const backupPath = backups.get(change.absPath) ?? null;
		try {
			undoChange(ctx, change);
			fates.push({ path: change.absPath, fate: "rolled_back", backupPath });
		} catch {
			fates.push({ path: change.absPath, fate: "rollback_failed", backupPath });
		}
	}
	return fates;
}

function removeEmptyDirs(ctx: CommitContext, dirs: readonly string[]): void {
	for (const dir of dirs) {
		try {
			ctx.fs.rmdir(dir);
		} catch {
			// Not empty (a file appeared) or already gone: leave it.
		}
	}
}

/** The backup of one file: its own entry, or its copy inside a whole-skill snapshot. */
function takeBackup(ctx: CommitContext, change: FileChange, snapshot: SnapshotEntry | undefined): { id: string | null; path: string | null } {
	if (change.before === null) return { id: null, path: null };
	if (snapshot) return { id: `${DELETED_DIR}/${snapshot.id}`, path: join(snapshot.path, ...change.relPath.split("/")) };
	const entry = ctx.store.store(change.skill, change.relPath, change.before);
	return { id: entry.id, path: entry.path };
}

export function commitPlan(plan: Plan, ctx: CommitContext): CommitOutcome {
	const changed = recheck(ctx, plan);
	if (changed) return { ok: false, refusal: changed, fates: [] };
	if (ctx.signal?.aborted) return { ok: false, refusal: refusals.aborted(), fates: [] };
	for (const dir of new Set(plan.changes.map((c) => dirname(c.absPath)))) sweepTempFiles(ctx.fs, dir);

	const backups = new Map<string, string | null>();
	const landed: LandedChange[] = [];
	let snapshot: SnapshotEntry | undefined;
	try {
		if (plan.snapshot) snapshot = ctx.store.snapshot(plan.snapshot.skill, plan.snapshot.dir, plan.snapshot.files);
		for (const change of plan.changes) {
			const backup = takeBackup(ctx, change, snapshot);
			backups.set(change.absPath, backup.path);
			landed.push({
				skill: change.skill,
				relPath: change.relPath,
				absPath: change.absPath,
				oldHash: hashOrNull(change.before),
				newHash: hashOrNull(change.after),
				backupId: backup.id,
				backupPath: backup.path,
			});
		}
	} catch (error) {
		return { ok: false, refusal: failureRefusal(error, undefined), fates: plan.changes.map((c) => ({ path: c.absPath, fate: "not_written", backupPath: null })) };
	}

	const journal =
		plan.changes.length > 1
			? writeJournal(ctx.fs, ctx.agentDir, landed.map((l, i) => ({ absPath: l.absPath, beforeHash: l.oldHash, afterHash: l.newHash, backupPath: l.backupPath, mode: plan.changes[i].mode })))
			: undefined;
	const written: FileChange[] = [];
	let current: FileChange | undefined;
	try {
		for (const change of plan.changes) {
			current = change;
			applyChange(ctx, change);
			written.push(change);
		}
		current = undefined;
		for (const change of plan.changes) verify(ctx, change);
	} catch (error) {
		const fates = rollBack(ctx, written, backups);
		const notWritten = plan.changes.filter((c) => !written.includes(c)).map((c) => ({ path: c.absPath, fate: "not_written" as const, backupPath: backups.get(c.absPath) ?? null }));
		if (journal && fates.every((f) => f.fate === "rolled_back")) removeJournal(ctx.fs, journal);
		return { ok: false, refusal: failureRefusal(error, current), fates: [...fates, ...notWritten] };
	}
	if (journal) removeJournal(ctx.fs, journal);
	if (plan.removeDirs) removeEmptyDirs(ctx, plan.removeDirs);
	for (const change of plan.changes) {
		if (change.before !== null && !snapshot) ctx.store.prune(change.skill, change.relPath, ctx.backupCap);
	}
	return { ok: true, landed, snapshot };
}
