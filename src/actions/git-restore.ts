// `restore` with `backup: "git:<rev>"`: put back a file's, or a whole skill's, content as commit
// <rev> holds it (bytes exactly as stored, mode from the tree), through restore's gates and the
// pipeline's backup first. A deleted skill comes back from the commit that still had it.

import { basename, join } from "node:path";
import type { CallContext, PlanInput, PreparedMutation } from "../pipeline/call-context.ts";
import type { DiscoveredSkill } from "../policy/discovery.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { blobBytes, filesAt, isSafeRevision, locateInWorkTree, recentCommits, resolveCommit } from "../base/git.ts";
import { checkRisk, checkWritable, GATE_ORDER, humanGates, runGates, writableInput } from "../pipeline/gates.ts";
import { loadedNameOf } from "../checks/validation.ts";
import { checkFileArgument, findSkill, newSkillTarget, SKILL_FILE, type SkillSelector } from "../policy/target.ts";
import type { FileChange, Plan } from "../pipeline/types.ts";

interface GitFile {
	readonly relPath: string;
	readonly absPath: string;
	readonly bytes: Buffer;
	readonly mode: number;
}

/** The skill `args` names: discovered, or a folder `<root>/<name>` a commit still has (a deleted skill). */
function skillPlace(ctx: CallContext, args: SkillSelector): { name: string; dir: string; skill?: DiscoveredSkill } {
	const found = findSkill(ctx.discovery.skills, args, ctx.cwd);
	if (!("code" in found) && found.dir) return { name: found.name, dir: found.dir, skill: found };
	const name = (args.skill ?? "").trim();
	const dirs = ctx.discovery.roots.map((root) => join(root.path, name));
	const held = dirs.find((dir) => ctx.fs.stat(dir) !== undefined) ?? dirs[0] ?? "";
	return { name, dir: held };
}

/**
 * A restore from git is judged like a new change: by the findings its files have after it that they
 * did not have before (the package's own backups are an undo and are not scanned).
 */
function riskOfGitRestore(ctx: CallContext, input: PlanInput, changes: readonly FileChange[]): Refusal | undefined {
	for (const change of changes) {
		if (change.after === null) continue;
		const refused = checkRisk(ctx, input, {
			skill: change.skill,
			file: change.relPath,
			path: change.absPath,
			before: change.before?.toString("utf8"),
			after: change.after.toString("utf8"),
		});
		if (refused) return refused;
	}
	return undefined;
}

export function prepareGitRestore(
	ctx: CallContext,
	args: SkillSelector & { readonly file?: string },
	rev: string,
): PreparedMutation | Refusal {
	if (!isSafeRevision(rev))
		return refusals.invalidArguments("restore", `"git:${rev}" is not a revision git takes (a commit id, HEAD~1...)`);
	const place = skillPlace(ctx, args);
	if (place.name === "" || place.dir === "")
		return refusals.unknownSkill(
			place.name,
			ctx.discovery.skills.map((s) => s.name),
		);
	const relPath = args.file === undefined ? undefined : checkFileArgument(args.file);
	if (relPath !== undefined && typeof relPath !== "string") return relPath;
	const where = locateInWorkTree(ctx.fs, join(place.dir, relPath ?? SKILL_FILE));
	const shown = relPath ?? SKILL_FILE;
	if (!where)
		return refusals.noBackup(place.name, shown, `git:${rev}`, ["none: the skill does not lie in a git work tree"]);
	const skillRel = where.rel.slice(0, where.rel.length - (relPath ?? SKILL_FILE).length - 1);
	const wanted = relPath === undefined ? `${skillRel}/` : where.rel;
	const commit = resolveCommit(where.top, rev);
	const listed = commit ? filesAt(where.top, commit, wanted) : undefined;
	const files = (listed ?? []).filter((f) => f.mode === "100644" || f.mode === "100755");
	if (!commit || files.length === 0) {
		const recent = recentCommits(where.top, relPath === undefined ? skillRel : where.rel).map(
			(c) => `git:${c.short}`,
		);
		return refusals.noBackup(place.name, shown, `git:${rev}`, recent);
	}
	const loaded: GitFile[] = [];
	for (const f of files) {
		const bytes = blobBytes(where.top, f.id);
		if (!bytes) return refusals.noBackup(place.name, shown, `git:${rev}`, []);
		const inSkill = f.path.slice(skillRel.length + 1);
		loaded.push({
			relPath: inSkill,
			absPath: join(place.dir, ...inSkill.split("/")),
			bytes,
			mode: f.mode === "100755" ? 0o755 : 0o644,
		});
	}
	return {
		action: "restore",
		skill: place.name,
		file: relPath ?? "",
		paths: loaded.map((f) => f.absPath),
		plan: (input) =>
			planGitRestore(
				ctx,
				place,
				{ commit, files: loaded, skipped: (listed ?? []).length - files.length, shown },
				input,
			),
	};
}

function planGitRestore(
	ctx: CallContext,
	place: { name: string; dir: string; skill?: DiscoveredSkill },
	from: { commit: string; files: readonly GitFile[]; skipped: number; shown: string },
	input: PlanInput,
): Plan | Refusal {
	const changes: FileChange[] = from.files.flatMap((f) => {
		const before = input.view.read(f.absPath);
		if (before?.equals(f.bytes) && input.view.mode(f.absPath) === f.mode) return [];
		return [
			{
				skill: place.name,
				relPath: f.relPath,
				absPath: f.absPath,
				before,
				after: f.bytes,
				mode: f.mode,
				restoreMode: f.mode,
				expectName:
					f.relPath === SKILL_FILE ? loadedNameOf(f.bytes.toString("utf8"), basename(place.dir)) : undefined,
				unseen: true,
			},
		];
	});
	const short = from.commit.slice(0, 12);
	const target = place.skill
		? { skill: place.skill, relPath: SKILL_FILE, absPath: place.skill.filePath, isSkillFile: true }
		: newSkillTarget(place.name, place.dir);
	const refused = runGates(GATE_ORDER.restoreGit, {
		writable: () => checkWritable(writableInput(ctx), target),
		...humanGates(ctx, input, { name: place.name, dir: place.dir }),
		exists: () =>
			changes.length === 0 ? refusals.restoreNoChange(place.name, from.shown, `git:${short}`, undefined) : undefined,
		risk: () => riskOfGitRestore(ctx, input, changes),
	});
	if (refused) return refused;
	const skipped = from.skipped > 0 ? ` ${from.skipped} entry(ies) that are not regular files were left out.` : "";
	return {
		action: "restore",
		skill: place.name,
		changes,
		note:
			`Restored ${changes.length} file(s) from commit ${short}; files added since are left as they are.${skipped} ` +
			`Read it before changing it again: {"action":"read","skill":"${place.name}"}.`,
	};
}
