// Which skills this package created ("own", for `selfskills.approval: { own, others }`): each
// `create` that lands appends the skill's folder to a private log, synced, so the fact survives
// restarts, a restore of the deleted skill into the same folder, and a pi upgrade. Every other
// skill is a person's ("others").
//
//   <agentDir>/selfskills/created.jsonl
//     {"name":"release-notes","dir":"/home/me/.pi/agent/skills/release-notes","time":"2026-12-02T09:45:01.123Z"}

import type { FsOps } from "../base/fs-ops.ts";
import { getCreatedPath, resolveReal } from "../base/paths.ts";
import { appendPrivate } from "../base/writer.ts";
import { readJsonLines } from "../base/fs-reads.ts";

export type SkillOriginKind = "own" | "others";

/** Records that this package created the skill in `dir` (called once its create landed). */
export function recordCreated(fs: FsOps, agentDir: string, name: string, dir: string): void {
	appendPrivate(
		fs,
		agentDir,
		getCreatedPath(agentDir),
		`${JSON.stringify({ name, dir: resolveReal(dir), time: new Date().toISOString() })}\n`,
		{ sync: true },
	);
}

/** The real paths of every skill folder this package created. */
export function readCreatedDirs(fs: FsOps, agentDir: string): Set<string> {
	// A torn last line after a crash is skipped: that create counts as a person's skill.
	return new Set(
		readJsonLines(fs, getCreatedPath(agentDir)).flatMap(({ dir }) => (typeof dir === "string" ? [dir] : [])),
	);
}

/** "own" when this package created the skill folder `dir`, else "others". */
export function originOfSkill(fs: FsOps, agentDir: string, dir: string): SkillOriginKind {
	return readCreatedDirs(fs, agentDir).has(resolveReal(dir)) ? "own" : "others";
}
