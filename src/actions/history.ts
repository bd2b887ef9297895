// `history`: the backups `restore` can use for a file of a skill (id, time, size, hash), the other
// files of the skill that have backups, and the snapshots of whole-skill deletions.

import type { ActionResult, CallContext } from "../call-context.ts";
import * as refusals from "../errors.ts";
import type { Refusal } from "../errors.ts";
import { checkFileArgument, findSkill, SKILL_FILE, type SkillSelector } from "../target.ts";

export interface HistoryArgs extends SkillSelector {
	readonly file?: string;
}

export function showHistory(ctx: CallContext, args: HistoryArgs): ActionResult | Refusal {
	const found = findSkill(ctx.discovery.skills, args, ctx.cwd);
	const name = "code" in found ? (args.skill ?? "").trim() : found.name;
	const relPath = args.file === undefined ? SKILL_FILE : checkFileArgument(args.file);
	if (typeof relPath !== "string") return relPath;
	const entries = ctx.store.list(name, relPath);
	const snapshots = name === "" ? [] : ctx.store.listSnapshots(name);
	if ("code" in found && entries.length === 0 && snapshots.length === 0) return found;
	const others = ctx.store.trackedFiles(name).filter((f) => f !== relPath);
	const lines = [
		`${entries.length} backup(s) of ${name}/${relPath}, newest first${entries.length > 0 ? "" : " (none yet: a backup is taken before each change)"}:`,
		...entries.map((e) => `  ${e.id}  ${e.time}  ${e.size} bytes  sha256 ${e.hash}${e.legacy ? "  (old flat layout)" : ""}`),
	];
	if (others.length > 0) lines.push(`Other files with backups: ${others.join(", ")} (pass "file")`);
	if (snapshots.length > 0) lines.push(`Whole-skill snapshots: ${snapshots.map((s) => `${s.id} (${s.originDir ?? "origin unknown"})`).join(", ")}`);
	if (entries.length > 0) lines.push(`Restore one: {"action":"restore","skill":"${name}"${relPath === SKILL_FILE ? "" : `,"file":"${relPath}"`},"backup":"${entries[0].id}"}`);
	return {
		text: lines.join("\n"),
		details: { ok: true, action: "history", skill: name, file: relPath, backups: entries, snapshots, otherFiles: others },
	};
}

export function noSkillGiven(action: string): Refusal {
	return refusals.invalidArguments(action, 'pass "skill" (a name from list) or "path" (a skill folder or its SKILL.md)');
}
