// `restore`: put back the latest (or a named) backup of SKILL.md or a bundled file, or recreate a
// deleted skill from its snapshot. A byte copy with the mode recorded with the backup: what write
// would refuse (binary, over 1 MiB) comes back too. The current content is backed up first, so no
// read is needed; the restored bytes are new to the agent, so the file no longer counts as read.

import { basename, dirname, join } from "node:path";
import { DELETED_DIR, skillKey, type BackupEntry, type SnapshotEntry } from "../store/backup-store.ts";
import type { CallContext, PlanInput, PreparedMutation } from "../pipeline/call-context.ts";
import type { DiscoveredSkill } from "../policy/discovery.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { checkWritable, writableInput, GATE_ORDER, humanGates, runGates } from "../pipeline/gates.ts";
import { loadedNameOf } from "../checks/validation.ts";
import { gitRevisionOf } from "../base/git.ts";
import { prepareGitRestore } from "./git-restore.ts";
import {
	findSkill,
	newSkillTarget,
	normalizeUserPath,
	resolveFileTarget,
	SKILL_FILE,
	type FileTarget,
	type SkillSelector,
} from "../policy/target.ts";
import { sha256 } from "../base/hash.ts";
import { isRegularFile } from "../base/fs-reads.ts";
import type { FileChange, Plan } from "../pipeline/types.ts";

/** One file of a skill recreated as a whole. */
type SnapshotFile = { readonly relPath: string; readonly bytes: Buffer; readonly mode: number };

export interface RestoreArgs extends SkillSelector {
	readonly file?: string;
	readonly backup?: string;
}

/** A backup named by its id, its id without extension, or its stamp (a snapshot copy also as `__deleted__/<stamp>`). */
export function pickBackup<T extends { id: string }>(entries: readonly T[], wanted: string | undefined): T | undefined {
	if (wanted === undefined || wanted.trim() === "") return entries[0];
	const raw = wanted.trim();
	const w = raw.replace(/^.*\//, "");
	return (
		entries.find(
			(e) => e.id === raw || e.id === w || e.id.replace(/\.[^.]*$/, "") === w || e.id.startsWith(`${w}-`),
		) ?? entries.find((e) => e.id === `${DELETED_DIR}/${w}`)
	);
}

/**
 * What restore can put back for one file of a skill, newest first: its own backups, and its copies
 * in snapshots of this folder's whole-skill deletions (a skill deleted, then created again, still
 * has its old files there), as ids `__deleted__/<stamp>`.
 */
export function restoreCandidates(ctx: CallContext, skill: DiscoveredSkill, relPath: string): BackupEntry[] {
	const own = ctx.store.list(skillKey(skill.name, skill.filePath), relPath);
	const copies = ctx.store.listSnapshots(skillKey(skill.name, skill.filePath)).flatMap((snapshot): BackupEntry[] => {
		if (skill.dir === undefined || snapshot.originDir !== skill.dir) return [];
		const path = join(snapshot.path, ...relPath.split("/"));
		try {
			if (!ctx.fs.lstat(path).isFile()) return [];
			const file = ctx.store.readSnapshot(snapshot).find((f) => f.relPath === relPath);
			if (!file) return [];
			const id = `${DELETED_DIR}/${snapshot.id}`;
			return [
				{
					id,
					path,
					stamp: snapshot.id,
					time: snapshot.time,
					hash: sha256(file.bytes).slice(0, 10),
					size: file.bytes.length,
					legacy: false,
					mode: file.mode,
				},
			];
		} catch {
			return [];
		}
	});
	return [...own, ...copies].sort((a, b) => b.stamp.localeCompare(a.stamp));
}

/** The newest candidate whose bytes differ from `current` (by the hash in its name). */
export function newestDiffering(entries: readonly BackupEntry[], current: Buffer | null): BackupEntry | undefined {
	const hash = current === null ? undefined : sha256(current).slice(0, 10);
	return entries.find((e) => e.hash !== hash);
}

function readCall(skill: string, relPath: string): string {
	return relPath === SKILL_FILE
		? `{"action":"read","skill":"${skill}"}`
		: `{"action":"read","skill":"${skill}","file":"${relPath}"}`;
}

/**
 * A skill pi no longer loads (a side-door edit broke its frontmatter) is not discovered, yet its
 * backups must still come back: its folder `<root>/<name>` in a writable root, when it has backups.
 */
function findBrokenSkill(ctx: CallContext, args: RestoreArgs): DiscoveredSkill | undefined {
	const name = wantedName(ctx, args);
	if (name === "" || name.includes("/")) return undefined;
	for (const root of ctx.discovery.roots) {
		const dir = join(root.path, name);
		const filePath = join(dir, SKILL_FILE);
		if (!isRegularFile(ctx.fs, filePath)) continue;
		if (ctx.store.list(skillKey(name, filePath), SKILL_FILE).length === 0) continue;
		// checkWritable still judges the place: only the policy part of discovery is skipped.
		return {
			name,
			description: "",
			filePath,
			dir,
			origin: { kind: "skills-dir", scope: "user" },
			patchable: true,
			reason: undefined,
		};
	}
	return undefined;
}

export function prepareRestore(ctx: CallContext, args: RestoreArgs): PreparedMutation | Refusal {
	const rev = gitRevisionOf(args.backup);
	if (rev !== undefined) return prepareGitRestore(ctx, args, rev);
	const found = findSkill(ctx.discovery.skills, args, ctx.cwd);
	const skill = "code" in found ? (findBrokenSkill(ctx, args) ?? found) : found;
	if ("code" in skill) return prepareSnapshotRestore(ctx, args, skill);
	const target = resolveFileTarget(skill, args.file);
	if ("code" in target) return target;
	const entries = restoreCandidates(ctx, skill, target.relPath);
	const named = args.backup === undefined || args.backup.trim() === "" ? undefined : pickBackup(entries, args.backup);
	if (entries.length === 0 || (args.backup !== undefined && args.backup.trim() !== "" && !named)) {
		return refusals.noBackup(
			skill.name,
			target.relPath,
			args.backup,
			entries.map((e) => e.id),
		);
	}
	return {
		action: "restore",
		skill: skill.name,
		file: target.relPath,
		paths: [target.absPath],
		plan: (input) => planFileRestore(ctx, target, { entries, named }, input),
	};
}

function planFileRestore(
	ctx: CallContext,
	target: FileTarget,
	choice: { entries: readonly BackupEntry[]; named: BackupEntry | undefined },
	input: PlanInput,
): Plan | Refusal {
	const current = input.view.read(target.absPath);
	// A plain restore undoes the last change: the newest backup that differs from the file now (a
	// commit that failed may have left a backup of the very bytes still on disk as the newest).
	const entry = choice.named ?? newestDiffering(choice.entries, current) ?? choice.entries[0];
	let bytes: Buffer = Buffer.alloc(0);
	const refused = runGates(GATE_ORDER.restoreFile, {
		writable: () => checkWritable(writableInput(ctx), target),
		...humanGates(ctx, input, { name: target.skill.name, dir: target.skill.dir ?? target.absPath }),
		// The backup must still hold what its name promises, and differ from the file now.
		exists: () => {
			const read = ctx.store.read(entry);
			if ("code" in read) return read;
			bytes = read;
			return current?.equals(bytes)
				? refusals.restoreNoChange(
						target.skill.name,
						target.relPath,
						entry.id,
						newestDiffering(choice.entries, current)?.id,
					)
				: undefined;
		},
	});
	if (refused) return refused;
	const dirName = basename(target.skill.dir ?? target.absPath);
	const change: FileChange = {
		skill: target.skill.name,
		relPath: target.relPath,
		absPath: target.absPath,
		before: current,
		after: bytes,
		mode: entry.mode ?? 0o644,
		// A backup with no recorded mode was 0644, except the older layouts, which kept none: the file keeps its own.
		restoreMode: entry.mode ?? (entry.legacy ? undefined : 0o644),
		// pi decides whether it loads (checked after the write); the name is all that is needed here.
		expectName: target.isSkillFile ? loadedNameOf(bytes.toString("utf8"), dirName) : undefined,
		unseen: true,
	};
	return {
		action: "restore",
		skill: target.skill.name,
		changes: [change],
		note:
			`Restored backup ${entry.id}. ` +
			`Read it before changing it again: ${readCall(target.skill.name, target.relPath)}.`,
	};
}

function wantedName(ctx: CallContext, args: RestoreArgs): string {
	if (args.path !== undefined && args.path.trim() !== "") {
		const p = normalizeUserPath(args.path, ctx.cwd);
		return basename(p) === SKILL_FILE ? basename(join(p, "..")) : basename(p);
	}
	return (args.skill ?? "").trim();
}

/**
 * A skill removed outside the tool (bash `rm -rf`): no snapshot, but its folder's files have backups
 * (pi's bash backed them up first). The newest folder of that name that is gone, with the newest
 * backup of every file the store holds for it; undefined when there is none.
 */
function removedSkill(ctx: CallContext, name: string): { snapshot: SnapshotEntry; files: SnapshotFile[] } | undefined {
	for (const entry of ctx.store.list(name, SKILL_FILE)) {
		// <backups>/<name>@<hash>/SKILL.md/<id>, with the note <name>@<hash>.json saying where it lived.
		const folder = dirname(dirname(entry.path));
		let dir: unknown;
		try {
			const note: unknown = JSON.parse(ctx.fs.readFile(`${folder}.json`).toString("utf8"));
			dir =
				typeof note === "object" && note !== null && "name" in note && note.name === name && "dir" in note
					? note.dir
					: undefined;
		} catch {
			continue; // an older layout, without a note: restored by file, not by name
		}
		if (typeof dir !== "string" || ctx.fs.stat(dir) !== undefined) continue;
		const key = { name, dir };
		const files = ctx.store.trackedFiles(key).flatMap((relPath): SnapshotFile[] => {
			const newest = ctx.store.list(key, relPath)[0];
			const bytes = newest && ctx.store.read(newest);
			return bytes && !("code" in bytes) ? [{ relPath, bytes, mode: newest.mode ?? 0o644 }] : [];
		});
		if (!files.some((f) => f.relPath === SKILL_FILE)) continue;
		return { snapshot: { id: entry.stamp, path: folder, time: entry.time, originDir: dir }, files };
	}
	return undefined;
}

function prepareSnapshotRestore(ctx: CallContext, args: RestoreArgs, unknown: Refusal): PreparedMutation | Refusal {
	const name = wantedName(ctx, args);
	const snapshots = name === "" ? [] : ctx.store.listSnapshots(name);
	const removed = name === "" || args.backup !== undefined ? undefined : removedSkill(ctx, name);
	if (removed && (args.file === undefined || args.file === SKILL_FILE) && !(snapshots[0]?.id > removed.snapshot.id)) {
		const { snapshot, files } = removed;
		const dir = snapshot.originDir ?? "";
		return {
			action: "restore",
			skill: name,
			file: "",
			paths: files.map((f) => join(dir, ...f.relPath.split("/"))),
			plan: (input) =>
				planSnapshotRestore(ctx, name, snapshot, files, input, "the newest backup of each of its files"),
		};
	}
	if (snapshots.length === 0) return unknown;
	if (args.file !== undefined && args.file !== SKILL_FILE) {
		return refusals.invalidArguments(
			"restore",
			`skill "${name}" was deleted as a whole; omit "file" to recreate it from its snapshot`,
		);
	}
	const snapshot = pickBackup(snapshots, args.backup);
	if (!snapshot)
		return refusals.noBackup(
			name,
			"(whole skill)",
			args.backup,
			snapshots.map((s) => s.id),
		);
	if (!snapshot.originDir) return refusals.noBackup(name, "(whole skill)", args.backup, []);
	const dir = snapshot.originDir;
	const files = ctx.store.readSnapshot(snapshot);
	return {
		action: "restore",
		skill: name,
		file: "",
		paths: files.map((f) => join(dir, ...f.relPath.split("/"))),
		plan: (input) => planSnapshotRestore(ctx, name, snapshot, files, input),
	};
}

function planSnapshotRestore(
	ctx: CallContext,
	name: string,
	snapshot: SnapshotEntry,
	files: readonly SnapshotFile[],
	input: PlanInput,
	from = `snapshot ${snapshot.id}`,
): Plan | Refusal {
	const dir = snapshot.originDir ?? "";
	const target = newSkillTarget(name, dir);
	const refused = runGates(GATE_ORDER.restoreSkill, {
		writable: () => checkWritable(writableInput(ctx), target),
		...humanGates(ctx, input, { name, dir }),
		exists: () => (input.view.mode(dir) !== undefined ? refusals.exists(name, dir) : undefined),
	});
	if (refused) return refused;
	const changes: FileChange[] = files.map((f) => ({
		skill: name,
		relPath: f.relPath,
		absPath: join(dir, ...f.relPath.split("/")),
		before: null,
		after: f.bytes,
		mode: f.mode,
		expectName: f.relPath === SKILL_FILE ? name : undefined,
		unseen: true,
	}));
	return {
		action: "restore",
		skill: name,
		changes,
		note:
			`Recreated from ${from} (${files.length} file(s)); pi lists it again after /reload. ` +
			`Read it before changing it: ${readCall(name, SKILL_FILE)}.`,
	};
}
