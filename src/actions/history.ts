// `history`: the backups `restore` can use for a file of a skill (id, time, size, hash; its copies in
// whole-skill snapshots too), the other files of the skill that have backups, and the snapshots.

import { skillKey } from "../store/backup-store.ts";
import type { ActionResult, CallContext } from "../pipeline/call-context.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import type { DiscoveredSkill } from "../policy/discovery.ts";
import { checkFileArgument, findSkill, resolveFileTarget, SKILL_FILE, type SkillSelector } from "../policy/target.ts";
import { newestDiffering, restoreCandidates } from "./restore.ts";
import { locateInWorkTree, recentCommits, type CommitLine } from "../base/git.ts";
import { tryReadRegular } from "../base/fs-reads.ts";

export interface HistoryArgs extends SkillSelector {
	readonly file?: string;
}

export function showHistory(ctx: CallContext, args: HistoryArgs): ActionResult | Refusal {
	const found = findSkill(ctx.discovery.skills, args, ctx.cwd);
	const name = "code" in found ? (args.skill ?? "").trim() : found.name;
	const relPath = args.file === undefined ? SKILL_FILE : checkFileArgument(args.file);
	if (typeof relPath !== "string") return relPath;
	const entries = "code" in found ? ctx.store.list(name, relPath) : restoreCandidates(ctx, found, relPath);
	const snapshots = name === "" ? [] : ctx.store.listSnapshots(name);
	if ("code" in found && entries.length === 0 && snapshots.length === 0) return found;
	const others = ctx.store
		.trackedFiles("code" in found ? name : skillKey(found.name, found.filePath))
		.filter((f) => f !== relPath);
	const lines = [
		`${entries.length} backup(s) of ${name}/${relPath}, newest first` +
			`${entries.length > 0 ? "" : " (none yet: a backup is taken before each change)"}:`,
		...entries.map(
			(e) => `  ${e.id}  ${e.time}  ${e.size} bytes  sha256 ${e.hash}${e.legacy ? "  (old flat layout)" : ""}`,
		),
	];
	if (others.length > 0) lines.push(`Other files with backups: ${others.join(", ")} (pass "file")`);
	if (snapshots.length > 0)
		lines.push(
			`Whole-skill snapshots: ${snapshots.map((s) => `${s.id} (${s.originDir ?? "origin unknown"})`).join(", ")}`,
		);
	// The one a plain restore puts back: the newest that differs from the file now.
	const next = "code" in found ? entries[0] : newestDiffering(entries, currentBytes(ctx, found, relPath));
	const commits = "code" in found ? [] : commitsOf(ctx, found, relPath);
	if (commits.length > 0)
		lines.push(
			`Commits that touched ${name}/${relPath}, newest first (restore one with "backup":"git:<commit>"):`,
			...commits.map((c) => `  git:${c.short}  ${c.time}  ${c.author}  ${c.subject}`),
		);
	if (next)
		lines.push(
			`Restore one: {"action":"restore","skill":"${name}"` +
				`${relPath === SKILL_FILE ? "" : `,"file":"${relPath}"`},"backup":"${next.id}"}`,
		);
	return {
		text: lines.join("\n"),
		details: {
			ok: true,
			action: "history",
			skill: name,
			file: relPath,
			backups: entries,
			snapshots,
			otherFiles: others,
			commits,
		},
	};
}

/** The latest commits that touched the file, when it lies in a git work tree (whatever the git setting). */
function commitsOf(ctx: CallContext, skill: DiscoveredSkill, relPath: string): CommitLine[] {
	const target = resolveFileTarget(skill, relPath);
	if ("code" in target) return [];
	const where = locateInWorkTree(ctx.fs, target.absPath);
	return where ? recentCommits(where.top, where.rel) : [];
}

/** The file's bytes now, or null when it is absent or not a regular file. */
function currentBytes(ctx: CallContext, skill: DiscoveredSkill, relPath: string): Buffer | null {
	const target = resolveFileTarget(skill, relPath);
	if ("code" in target) return null;
	return tryReadRegular(ctx.fs, target.absPath) ?? null;
}

export function noSkillGiven(action: string): Refusal {
	return refusals.invalidArguments(
		action,
		'pass "skill" (a name from list) or "path" (a skill folder or its SKILL.md)',
	);
}
