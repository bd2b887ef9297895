// When each skill is used: pi's `read` of a SKILL.md (that is how pi loads a skill) and skill_manage
// `read`. One private append per use, never a scan; past a size the log is folded into one line per
// skill (count, first and last use). `/selfskills` reads it to show last use and to list skills not
// used for a while, so the person can prune. Nothing is ever archived or moved automatically.
//
//   <agentDir>/selfskills/usage.jsonl
//     {"skill":"deploy-checks","time":"2026-12-02T09:45:01.123Z"}                                one use
//     {"skill":"deploy-checks","count":41,"first":"2026-10-01T08:00:00.000Z",
//      "last":"2026-12-01T17:02:10.000Z"}                                                       folded
//   (a folded record is one line in the file, wrapped here)

import type { FsOps } from "../base/fs-ops.ts";
import { getUsagePath } from "../base/paths.ts";
import { appendPrivate, writeFileAtomic } from "../base/writer.ts";
import { readJsonLines } from "../base/fs-reads.ts";

/** Past this size the log is folded into one line per skill (a few hundred bytes each). */
const FOLD_AT_BYTES = 256 * 1024;

export interface SkillUsage {
	readonly count: number;
	readonly first: string;
	readonly last: string;
}

/** Every skill's uses so far, by name; a line that does not parse is skipped (the log is advisory). */
export function readUsage(fs: FsOps, agentDir: string): Map<string, SkillUsage> {
	const out = new Map<string, SkillUsage>();
	for (const entry of readJsonLines(fs, getUsagePath(agentDir))) {
		if (typeof entry.skill !== "string") continue;
		const use = typeof entry.time === "string" ? { count: 1, first: entry.time, last: entry.time } : entry;
		if (typeof use.count !== "number" || typeof use.first !== "string" || typeof use.last !== "string") continue;
		const seen = out.get(entry.skill);
		out.set(entry.skill, {
			count: (seen?.count ?? 0) + use.count,
			first: seen && seen.first < use.first ? seen.first : use.first,
			last: seen && seen.last > use.last ? seen.last : use.last,
		});
	}
	return out;
}

/** Records one use: one append; folding the log (rare) is one small atomic rewrite. Never throws. */
export function recordUse(fs: FsOps, agentDir: string, skill: string, time = new Date()): void {
	const path = getUsagePath(agentDir);
	try {
		appendPrivate(fs, agentDir, path, `${JSON.stringify({ skill, time: time.toISOString() })}\n`);
		if (fs.lstat(path).size < FOLD_AT_BYTES) return;
		const folded = [...readUsage(fs, agentDir)]
			.map(([name, use]) => JSON.stringify({ skill: name, ...use }))
			.join("\n");
		writeFileAtomic(fs, path, Buffer.from(`${folded}\n`), { mode: 0o600, storeBase: agentDir });
	} catch {
		// Usage is advice for pruning; a failed record must never fail the read it counts.
	}
}

/** Skills not used for `days` (never used counts as not used), oldest use first. */
export function findUnused(
	usage: ReadonlyMap<string, SkillUsage>,
	skills: readonly string[],
	days: number,
	now = new Date(),
): Array<{ skill: string; last: string | undefined }> {
	const cutoff = new Date(now.getTime() - days * 86_400_000).toISOString();
	return skills
		.map((skill) => ({ skill, last: usage.get(skill)?.last }))
		.filter((s) => s.last === undefined || s.last < cutoff)
		.sort((a, b) => (a.last ?? "").localeCompare(b.last ?? "") || a.skill.localeCompare(b.skill));
}
