// The commit journal that makes a multi-file commit all-or-nothing across a crash. Before the
// first write a commit records each file's old and new hash and its backup; a process killed
// mid-commit leaves the journal behind, and the next start rolls every touched file back.
//
//   <agentDir>/selfskills/journal/1733132701123-4242-0.json
//   {"pid":4242,"entries":[{"absPath":"/…/SKILL.md","beforeHash":"3f2a…","afterHash":"9c1d…","backupPath":"/…/20261202-094501.123-3f2a9c0b1d.md"}]}

import { dirname, join } from "node:path";
import type { FsOps } from "./fs-ops.ts";
import { getSelfSkillsDir } from "./backup-store.ts";
import { sha256 } from "./read-ledger.ts";
import { isProcessAlive, mkdirDurable, removeFileDurable, writeFileAtomic } from "./writer.ts";

export interface JournalEntry {
	readonly absPath: string;
	readonly beforeHash: string | null;
	readonly afterHash: string | null;
	/** Where the old bytes are kept; null when the file did not exist before. */
	readonly backupPath: string | null;
	readonly mode?: number;
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
	readonly differs: ReadonlyArray<{ path: string; backupPath: string | null }>;
}

let sequence = 0;

export function getJournalDir(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "journal");
}

export function writeJournal(fs: FsOps, agentDir: string, entries: readonly JournalEntry[]): string {
	const dir = getJournalDir(agentDir);
	mkdirDurable(fs, dir);
	const path = join(dir, `${Date.now()}-${process.pid}-${sequence++}.json`);
	const journal: Journal = { pid: process.pid, startedAt: new Date().toISOString(), entries };
	writeFileAtomic(fs, path, Buffer.from(JSON.stringify(journal)), { mode: 0o600 });
	return path;
}

export function removeJournal(fs: FsOps, path: string): void {
	removeFileDurable(fs, path);
}

function currentHash(fs: FsOps, path: string): string | null {
	try {
		return sha256(fs.readFile(path));
	} catch {
		return null;
	}
}

function rollBackEntry(fs: FsOps, entry: JournalEntry): "restored" | "untouched" | "differs" {
	const now = currentHash(fs, entry.absPath);
	if (now === entry.beforeHash) return "untouched";
	if (now !== entry.afterHash) return "differs";
	if (entry.backupPath === null) {
		removeFileDurable(fs, entry.absPath);
		return "restored";
	}
	const bytes = fs.readFile(entry.backupPath);
	if (sha256(bytes) !== entry.beforeHash) return "differs";
	mkdirDurable(fs, dirname(entry.absPath));
	writeFileAtomic(fs, entry.absPath, bytes, entry.mode === undefined ? {} : { mode: entry.mode });
	return "restored";
}

/** Rolls back every journal left by a dead process; returns what it did. */
export function recoverJournals(fs: FsOps, agentDir: string): RecoveryReport[] {
	const dir = getJournalDir(agentDir);
	let names: string[];
	try {
		names = fs.readdir(dir).filter((n) => n.endsWith(".json")).sort();
	} catch {
		return [];
	}
	const reports: RecoveryReport[] = [];
	for (const name of names) {
		const path = join(dir, name);
		let journal: Journal;
		try {
			journal = JSON.parse(fs.readFile(path).toString("utf8")) as Journal;
		} catch {
			continue; // Torn journal: it was being written, so no file was touched yet.
		}
		if (isProcessAlive(journal.pid)) continue;
		const restored: string[] = [];
		const untouched: string[] = [];
		const differs: Array<{ path: string; backupPath: string | null }> = [];
		for (const entry of [...journal.entries].reverse()) {
			const fate = rollBackEntry(fs, entry);
			if (fate === "restored") restored.push(entry.absPath);
			else if (fate === "untouched") untouched.push(entry.absPath);
			else differs.push({ path: entry.absPath, backupPath: entry.backupPath });
		}
		if (differs.length === 0) removeJournal(fs, path);
		reports.push({ journal: path, restored, untouched, differs });
	}
	return reports;
}

/** Journals present now (finished or not), for /selfskills status. */
export function pendingJournals(fs: FsOps, agentDir: string): string[] {
	try {
		return fs.readdir(getJournalDir(agentDir)).filter((n) => n.endsWith(".json"));
	} catch {
		return [];
	}
}
