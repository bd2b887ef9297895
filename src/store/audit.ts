// The record of every landed mutation: one JSON line in <agentDir>/selfskills/audit.jsonl and one
// `selfskills:changed` event on pi.events, each with action, skill, file, hashes and backup id.
// The log is private (0600) and never written through a symlink. Past 256 KiB (about 1,200 lines) it
// is moved aside whole, so what /selfskills reads stays small however long the package is used:
//
//   <agentDir>/selfskills/audit.jsonl                   {"carried":{"deploy-checks":41,…}}  ← counts so far
//                                                       {"time":"2026-12-04T16:40:00.000Z","action":"patch",…}
//   <agentDir>/selfskills/audit-20261204-164000.123-4242-9c1d0be7.jsonl   the lines before (kept)

import { randomBytes } from "node:crypto";
import type { FsOps } from "../base/fs-ops.ts";
import { getAuditPath } from "../base/paths.ts";
import { appendPrivate } from "../base/writer.ts";
import { lstatIfExists, readJsonLines } from "../base/fs-reads.ts";

/** Past this size the log is moved aside and a new one starts with the counts so far. */
export const AUDIT_ROTATE_BYTES = 256 * 1024;

export const CHANGED_EVENT = "selfskills:changed";

export interface ChangeRecord {
	readonly time: string;
	readonly cwd: string;
	readonly action: string;
	readonly skill: string;
	readonly file: string;
	readonly oldHash: string | null;
	readonly newHash: string | null;
	readonly backup: string | null;
	/** Set when the change came through a side door (pi's own edit, write or bash), not skill_manage. */
	readonly via?: "edit" | "write" | "bash";
	/** The agent's one sentence on why. */
	readonly reason?: string;
	/** The proposal the person approved, when the change landed that way. */
	readonly approved?: string;
	/** The person was asked (approval "ask") and allowed it once or for the session. */
	readonly allowed?: "once" | "session";
}

/** Landed changes per skill, from the audit log (for /selfskills; a line that does not parse is skipped). */
export function countChanges(fs: FsOps, agentDir: string): Map<string, number> {
	const out = new Map<string, number>();
	for (const line of readJsonLines(fs, getAuditPath(agentDir))) {
		if (typeof line.skill === "string") out.set(line.skill, (out.get(line.skill) ?? 0) + 1);
		const carried = line.carried;
		if (typeof carried !== "object" || carried === null || Array.isArray(carried)) continue;
		for (const [skill, count] of Object.entries(carried))
			if (typeof count === "number") out.set(skill, (out.get(skill) ?? 0) + count);
	}
	return out;
}

/** Appends records; an audit failure never undoes a landed change, it is returned instead. */
export function appendAudit(fs: FsOps, agentDir: string, records: readonly ChangeRecord[]): Error | undefined {
	if (records.length === 0) return undefined;
	try {
		const path = getAuditPath(agentDir);
		appendPrivate(fs, agentDir, path, records.map((r) => `${JSON.stringify(r)}\n`).join(""));
		if ((lstatIfExists(fs, path)?.size ?? 0) >= AUDIT_ROTATE_BYTES) rotateAudit(fs, agentDir);
		return undefined;
	} catch (error) {
		return error instanceof Error ? error : new Error(String(error));
	}
}

/**
 * Moves the log aside (kept whole, under a name no other process picks) and starts a new one with
 * the counts so far, appended: a line another process appends meanwhile is never lost, only maybe
 * not counted. A failure here loses nothing: the log was appended already.
 */
function rotateAudit(fs: FsOps, agentDir: string): void {
	const path = getAuditPath(agentDir);
	const carried = Object.fromEntries(countChanges(fs, agentDir));
	// A stamp to the millisecond, the pid and a random part: rename replaces silently, so the name of
	// an archive must be one no earlier archive (of this process or another) can have.
	const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 19);
	const archive = path.replace(/\.jsonl$/, `-${stamp}-${process.pid}-${randomBytes(4).toString("hex")}.jsonl`);
	if (lstatIfExists(fs, archive)) return;
	try {
		fs.rename(path, archive);
	} catch {
		return;
	}
	appendPrivate(fs, agentDir, path, `${JSON.stringify({ time: new Date().toISOString(), carried })}\n`);
}
