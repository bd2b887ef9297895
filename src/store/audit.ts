// The record of every landed mutation: one JSON line in <agentDir>/selfskills/audit.jsonl and one
// `selfskills:changed` event on pi.events, each with action, skill, file, hashes and backup id.
// The log is private (0600) and never written through a symlink.

import type { FsOps } from "../base/fs-ops.ts";
import { getAuditPath } from "../base/paths.ts";
import { appendPrivate } from "../base/writer.ts";
import { readJsonLines } from "../base/fs-reads.ts";

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
	for (const { skill } of readJsonLines(fs, getAuditPath(agentDir))) {
		if (typeof skill === "string") out.set(skill, (out.get(skill) ?? 0) + 1);
	}
	return out;
}

/** Appends records; an audit failure never undoes a landed change, it is returned instead. */
export function appendAudit(fs: FsOps, agentDir: string, records: readonly ChangeRecord[]): Error | undefined {
	if (records.length === 0) return undefined;
	try {
		appendPrivate(fs, agentDir, getAuditPath(agentDir), records.map((r) => `${JSON.stringify(r)}\n`).join(""));
		return undefined;
	} catch (error) {
		return error instanceof Error ? error : new Error(String(error));
	}
}
