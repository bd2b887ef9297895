// `delete`: remove one bundled file (backed up first), or a whole skill when `file` is omitted:
// the full tree is snapshotted under __deleted__/<stamp>/ before anything is removed.

import { relative, sep } from "node:path";
import type { CallContext, PlanInput, PreparedMutation } from "../pipeline/call-context.ts";
import type { DiscoveredSkill } from "../policy/discovery.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import type { FsOps } from "../base/fs-ops.ts";
import {
	checkRead,
	checkUnchanged,
	checkWritable,
	writableInput,
	GATE_ORDER,
	humanGates,
	readGates,
	runGates,
} from "../pipeline/gates.ts";
import { isWithin } from "../base/paths.ts";
import { findSkill, resolveFileTarget, SKILL_FILE, type FileTarget, type SkillSelector } from "../policy/target.ts";
import { walkTree } from "../base/fs-reads.ts";
import { hashOrNull } from "../base/hash.ts";
import type { FileChange, Plan } from "../pipeline/types.ts";

export interface DeleteArgs extends SkillSelector {
	readonly file?: string;
}

export const MAX_SKILL_FILES = 2000;

export function prepareDelete(ctx: CallContext, args: DeleteArgs): PreparedMutation | Refusal {
	const skill = findSkill(ctx.discovery.skills, args, ctx.cwd);
	if ("code" in skill) return skill;
	if (args.file === undefined) return prepareSkillDelete(ctx, skill);
	const target = resolveFileTarget(skill, args.file);
	if ("code" in target) return target;
	if (target.isSkillFile) {
		return refusals.invalidArguments(
			"delete",
			`SKILL.md alone cannot be deleted; omit "file" to delete the whole skill "${skill.name}" ` +
				"(it is snapshotted first)",
		);
	}
	return {
		action: "delete",
		skill: skill.name,
		file: target.relPath,
		paths: [target.absPath],
		plan: (input) => planFileDelete(ctx, target, input),
	};
}

function skillFileTarget(skill: DiscoveredSkill): FileTarget {
	return { skill, relPath: SKILL_FILE, absPath: skill.filePath, isSkillFile: true };
}

function planFileDelete(ctx: CallContext, target: FileTarget, input: PlanInput): Plan | Refusal {
	const current = input.view.read(target.absPath);
	const refused = runGates(GATE_ORDER.deleteFile, {
		// Deleting a bundled file needs its skill read; the file itself, only if it was read, unchanged since.
		read: () => checkRead(ctx.ledger, skillFileTarget(target.skill)),
		exists: () =>
			current === null
				? refusals.badFilePath(target.relPath, `no such file in skill "${target.skill.name}"`)
				: undefined,
		unchanged: readGates(ctx, target, input).unchanged,
		writable: () => checkWritable(writableInput(ctx), target),
		...humanGates(ctx, input, { name: target.skill.name, dir: target.skill.dir ?? target.absPath }),
	});
	if (refused) return refused;
	return {
		action: "delete",
		skill: target.skill.name,
		changes: [
			{ skill: target.skill.name, relPath: target.relPath, absPath: target.absPath, before: current, after: null },
		],
	};
}

interface SnapshotFile {
	readonly relPath: string;
	readonly absPath: string;
	readonly mode: number;
}

/** A skill tree for its snapshot: every regular file with its mode, every folder, and what cannot be kept. */
function walkSkill(
	fs: FsOps,
	root: string,
): { files: SnapshotFile[]; dirs: string[]; symlinks: string[]; others: string[] } {
	const tree = walkTree(fs, root, { strict: true });
	return {
		...tree,
		files: tree.files.map((f) => ({ relPath: f.relPath, absPath: f.absPath, mode: f.stat.mode & 0o777 })),
	};
}

/** Files an earlier op of the batch created in the folder: deleted with it, so no folder is left behind. */
function writtenEarlier(input: PlanInput, dir: string, known: readonly SnapshotFile[]): SnapshotFile[] {
	const onDisk = new Set(known.map((f) => f.absPath));
	return [...input.touched]
		.filter((absPath) => !onDisk.has(absPath) && isWithin(dir, absPath) && input.view.read(absPath) !== null)
		.sort()
		.map((absPath) => ({ relPath: relative(dir, absPath).split(sep).join("/"), absPath, mode: 0o644 }));
}

function prepareSkillDelete(ctx: CallContext, skill: DiscoveredSkill): PreparedMutation | Refusal {
	if (!skill.dir)
		return refusals.invalidArguments(
			"delete",
			`"${skill.name}" is a single-file skill; it cannot be deleted as a folder`,
		);
	const dir = skill.dir;
	const target = skillFileTarget(skill);
	let tree: ReturnType<typeof walkSkill>;
	try {
		tree = walkSkill(ctx.fs, dir);
	} catch (error) {
		return refusals.ioError(dir, error);
	}
	if (tree.others.length > 0) {
		return refusals.badFilePath(
			tree.others[0],
			`the skill folder holds ${tree.others.length === 1 ? "an entry" : `${tree.others.length} entries`} ` +
				`that ${tree.others.length === 1 ? "is" : "are"} no regular file or folder ` +
				`(${tree.others.join(", ")}: a FIFO, socket or device), which a snapshot cannot keep; ` +
				`remove ${tree.others.length === 1 ? "it" : "them"} by hand, then delete the skill`,
		);
	}
	if (tree.symlinks.length > 0) {
		return refusals.notWritable(
			dir,
			`the skill folder holds symbolic links (${tree.symlinks.join(", ")}), which a snapshot cannot keep`,
			ctx.discovery.roots.map((r) => r.path),
		);
	}
	if (tree.files.length > MAX_SKILL_FILES)
		return refusals.tooLarge(`skill "${skill.name}" (files)`, tree.files.length, MAX_SKILL_FILES);
	return {
		action: "delete",
		skill: skill.name,
		file: "",
		paths: tree.files.map((f) => f.absPath),
		plan: (input) => {
			const refused = runGates(GATE_ORDER.deleteSkill, {
				read: () => checkRead(ctx.ledger, target),
				unchanged: () => checkUnchanged(ctx.ledger, target, hashOrNull(input.disk.read(target.absPath))),
				writable: () => checkWritable(writableInput(ctx), target),
				...humanGates(ctx, input, { name: skill.name, dir }),
			});
			if (refused) return refused;
			// A file an earlier op of the batch deleted is gone already (backed up by that op), not vanished.
			const present = tree.files.filter((f) => input.view.deletedBy(f.absPath) === undefined);
			const files = [...present, ...writtenEarlier(input, dir, tree.files)].map((f) => ({
				...f,
				bytes: input.view.read(f.absPath),
			}));
			const missing = files.find((f) => f.bytes === null);
			if (missing) return refusals.conflict(missing.absPath, "the file vanished while the delete was planned");
			const changes: FileChange[] = files.map((f) => ({
				skill: skill.name,
				relPath: f.relPath,
				absPath: f.absPath,
				before: f.bytes,
				after: null,
			}));
			return {
				action: "delete",
				skill: skill.name,
				changes,
				snapshot: {
					skill: skill.name,
					dir,
					files: files.map((f) => ({ relPath: f.relPath, bytes: f.bytes ?? Buffer.alloc(0), mode: f.mode })),
				},
				removeDirs: [...tree.dirs].reverse(),
				note:
					`the whole skill was snapshotted; {"action":"restore","skill":"${skill.name}"} brings it back. ` +
					"pi drops it from its list after /reload.",
			};
		},
	};
}
