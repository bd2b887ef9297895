// The commit journal that makes a multi-file commit all-or-nothing across a crash. Before the
// first write a commit records each file's old and new hash and its backup; a process killed
// mid-commit leaves the journal behind, and the next start (or the next call) rolls every touched
// file back: the journal's removal is the commit point, so a commit is all-old or all-new.
//
//   <agentDir>/selfskills/journal/1733132701123-4242-0.json
//   {"pid":4242,"startedAt":"2026-12-02T09:45:01.123Z","entries":[
//     {"absPath":"/…/deploy-checks/SKILL.md","beforeHash":"3f2a…","afterHash":"9c1d…",
//      "backupPath":"/…/20261202-094501.123-3f2a9c0b1d.md","mode":420},
//     {"absPath":"/…/deploy-checks/references/api.md","beforeHash":null,"afterHash":"0be7…",
//      "backupPath":null,"createdDirs":["/…/deploy-checks/references"]}]}
//   (one line in the file, wrapped here)

import { dirname, join } from "node:path";
import type { FsOps } from "../base/fs-ops.ts";
import { getJournalDir } from "../base/paths.ts";
import {
	assertNoLinkBelow,
	createPrivateDirs,
	isProcessAlive,
	mkdirDurable,
	removeFileDurable,
	sweepTempFiles,
	writeFileAtomic,
	writePrivate,
} from "../base/writer.ts";
import { listDir } from "../base/fs-reads.ts";
import { tryHash } from "../base/hash.ts";
import { sha256 } from "../base/hash.ts";

export interface JournalEntry {
	readonly absPath: string;
	readonly beforeHash: string | null;
	readonly afterHash: string | null;
	/** Where the old bytes are kept; null when the file did not exist before. */
	readonly backupPath: string | null;
	/** The file's mode before the commit (a deleted file comes back with it). */
	readonly mode?: number;
	/** Folders the commit created for a new file, deepest first; removed again with it. */
	readonly createdDirs?: readonly string[];
}

export interface Journal {
	readonly pid: number;
	readonly startedAt: string;
	readonly entries: readonly JournalEntry[];
}

export interface RecoveryReport {
	readonly journal: string;
	readonly restored: readonly string[];
	readonly untouched: readonly string[];
	/** Files that match neither side, left as found, with the backup that holds the old bytes. */
	readonly differs: ReadonlyArray<{ path: string; backupPath: string | null; reason: string }>;
}

let sequence = 0;
/** Journals of commits running in this process right now; any other journal is recoverable. */
const active = new Set<string>();
/** Journals this process already tried and had to leave (a file differs): reported once, not retried. */
const leftAsFound = new Set<string>();

export function writeJournal(fs: FsOps, agentDir: string, entries: readonly JournalEntry[]): string {
	const dir = getJournalDir(agentDir);
	const dirs = createPrivateDirs(fs, agentDir);
	dirs.ensure(dir);
	const path = join(dir, `${Date.now()}-${process.pid}-${sequence++}.json`);
	const journal: Journal = { pid: process.pid, startedAt: new Date().toISOString(), entries };
	active.add(path);
	try {
		writePrivate(fs, dirs, path, Buffer.from(JSON.stringify(journal)));
	} catch (error) {
		// Nothing was written yet: a journal the rename put in place (a folder sync failed after it) must
		// not outlive this failed commit, or a later recovery would roll back a later commit of the same
		// files. One that cannot be removed is no longer ours: the next recovery finds its files untouched.
		try {
			fs.unlink(path);
		} catch {
			// absent, or left to the next recovery
		}
		active.delete(path);
		throw error;
	}
	return path;
}

export function removeJournal(fs: FsOps, path: string): void {
	removeFileDurable(fs, path);
	active.delete(path);
}

/** Leaves a journal on disk for recovery (a rollback that could not finish) and stops owning it. */
export function releaseJournal(path: string): void {
	active.delete(path);
}

/** Removes each folder that is empty (deepest first); a non-empty or missing one is left. */
export function removeEmptyDirs(fs: FsOps, dirs: readonly string[]): void {
	for (const dir of dirs) {
		try {
			fs.rmdir(dir);
		} catch {
			// Not empty or already gone.
		}
	}
}

/**
 * A journal entry's fate in the words of a commit: rolled back, never written (untouched), or
 * rollback_failed with why.
 */
type EntryFate = { fate: "rolled_back" } | { fate: "not_written" } | { fate: "rollback_failed"; reason: string };

function rollBackEntry(fs: FsOps, entry: JournalEntry): EntryFate {
	const now = tryHash(fs, entry.absPath) ?? null;
	if (now === entry.beforeHash) {
		if (entry.beforeHash === null) removeEmptyDirs(fs, entry.createdDirs ?? []);
		return { fate: "not_written" };
	}
	if (now !== entry.afterHash)
		return {
			fate: "rollback_failed",
			reason: "it matches neither the old nor the new content (changed by someone else?)",
		};
	if (entry.backupPath === null) {
		removeFileDurable(fs, entry.absPath);
		removeEmptyDirs(fs, entry.createdDirs ?? []);
		return { fate: "rolled_back" };
	}
	const bytes = fs.readFile(entry.backupPath);
	if (sha256(bytes) !== entry.beforeHash)
		return { fate: "rollback_failed", reason: "its backup no longer holds the old content" };
	mkdirDurable(fs, dirname(entry.absPath));
	writeFileAtomic(fs, entry.absPath, bytes, entry.mode === undefined ? {} : { mode: entry.mode });
	return { fate: "rolled_back" };
}

function recoverable(journal: Journal, path: string): boolean {
	if (leftAsFound.has(path)) return false;
	return journal.pid === process.pid ? !active.has(path) : !isProcessAlive(journal.pid);
}

/** Rolls back every journal left by a dead process (or a rollback that failed here); says what it did. */
export function recoverJournals(fs: FsOps, agentDir: string): RecoveryReport[] {
	const dir = getJournalDir(agentDir);
	try {
		assertNoLinkBelow(fs, agentDir, dir);
	} catch {
		return []; // A journal folder reached through a planted symlink is never read, let alone acted on.
	}
	const names = listDir(fs, dir)
		.filter((n) => n.endsWith(".json"))
		.sort();
	const reports: RecoveryReport[] = [];
	for (const name of names) {
		const path = join(dir, name);
		let journal: Journal;
		try {
			journal = JSON.parse(fs.readFile(path).toString("utf8")) as Journal;
		} catch {
			continue; // Unreadable: left for a person, and listed by /selfskills.
		}
		if (!recoverable(journal, path)) continue;
		const restored: string[] = [];
		const untouched: string[] = [];
		const differs: Array<{ path: string; backupPath: string | null; reason: string }> = [];
		for (const entry of [...journal.entries].reverse()) {
			sweepTempFiles(fs, dirname(entry.absPath)); // first: a dead writer's temp file keeps its folder non-empty
			let result: EntryFate;
			try {
				result = rollBackEntry(fs, entry);
			} catch (error) {
				result = {
					fate: "rollback_failed",
					reason: `it could not be put back (${error instanceof Error ? error.message : String(error)})`,
				};
			}
			if (result.fate === "rolled_back") restored.push(entry.absPath);
			else if (result.fate === "not_written") untouched.push(entry.absPath);
			else differs.push({ path: entry.absPath, backupPath: entry.backupPath, reason: result.reason });
		}
		if (differs.length > 0) leftAsFound.add(path);
		else {
			try {
				removeJournal(fs, path);
			} catch {
				// Every file is back; the journal is found again next time and finds them untouched.
			}
		}
		reports.push({ journal: path, restored, untouched, differs });
	}
	sweepTempFiles(fs, dir);
	return reports;
}

/** Journals present now (finished or not), for /selfskills status. */
export function pendingJournals(fs: FsOps, agentDir: string): string[] {
	return listDir(fs, getJournalDir(agentDir)).filter((n) => n.endsWith(".json"));
}
