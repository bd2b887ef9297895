// What a mutation will do, decided before anything is written: a list of file changes (bytes
// before -> bytes after, null for "absent"), planned against a view of the files that is the
// disk for a single call and an in-memory overlay for a batch (op N sees ops 0..N-1).

import { dirname } from "node:path";
import type { FsOps } from "../base/fs-ops.ts";
import { isWithin } from "../base/paths.ts";
import { readIfExists, tryMode } from "../base/fs-reads.ts";
import type { FileChange, Plan, FileView } from "./types.ts";

/**
 * The files on disk for one planning step: each file is read once, however many gates ask (the
 * text, gate 3's hash), so they all judge the same bytes. The commit re-checks through views of
 * their own, each a fresh read.
 */
export function createDiskView(fs: FsOps): FileView {
	const reads = new Map<string, Buffer | null>();
	return {
		read(absPath) {
			let bytes = reads.get(absPath);
			if (bytes === undefined) {
				bytes = readIfExists(fs, absPath);
				reads.set(absPath, bytes);
			}
			return bytes;
		},
		mode: (absPath) => tryMode(fs, absPath),
		deletedBy: () => undefined,
		skillDeletedBy: () => undefined,
	};
}

/** A view that shows earlier planned ops (their changes, and the skill folders they deleted) over the base view. */
export function createOverlay(base: FileView): FileView & { apply(plan: Plan, index: number): void } {
	const written = new Map<string, { bytes: Buffer | null; by: number }>();
	const deletedDirs: Array<{ dir: string; by: number }> = [];
	return {
		read: (absPath) => (written.has(absPath) ? (written.get(absPath)?.bytes ?? null) : base.read(absPath)),
		mode: (absPath) => base.mode(absPath),
		deletedBy(absPath) {
			const entry = written.get(absPath);
			return entry && entry.bytes === null ? entry.by : undefined;
		},
		skillDeletedBy: (absPath) => deletedDirs.find(({ dir }) => isWithin(dir, absPath))?.by,
		apply(plan, index) {
			for (const change of plan.changes) written.set(change.absPath, { bytes: change.after, by: index });
			if (plan.snapshot) deletedDirs.push({ dir: plan.snapshot.dir, by: index });
		},
	};
}

/** Merges a batch's changes so each file appears once: first `before`, last `after`. */
export function mergeChanges(changes: readonly FileChange[]): FileChange[] {
	const byPath = new Map<string, FileChange>();
	for (const change of changes) {
		const first = byPath.get(change.absPath);
		byPath.set(change.absPath, first ? { ...change, before: first.before, mode: first.mode ?? change.mode } : change);
	}
	return [...byPath.values()].filter((c) => !(c.before === null && c.after === null));
}

export function parentDirs(changes: readonly FileChange[]): string[] {
	return [...new Set(changes.map((c) => dirname(c.absPath)))];
}
