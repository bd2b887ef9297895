// `restore`: put back the latest (or a named) backup of SKILL.md or a bundled file, or recreate a
// deleted skill from its snapshot. The current content is backed up first, so a restore can be
// undone by another restore; no read is needed because nothing the agent wrote is overwritten.

import { basename, join } from "node:path";
import type { BackupEntry, SnapshotEntry } from "../backup-store.ts";
import type { CallContext, PlanInput, PreparedMutation } from "../call-context.ts";
import { decodeText } from "../content-guard.ts";
import type { DiscoveredSkill } from "../discovery.ts";
import * as refusals from "../errors.ts";
import type { Refusal } from "../errors.ts";
import { checkWritable } from "../gates.ts";
import type { FileChange, Plan } from "../plan.ts";
import { findSkill, normalizeUserPath, resolveFileTarget, SKILL_FILE, type FileTarget, type SkillSelector } from "../target.ts";
import { loadedNameOf } from "./patch.ts";

export interface RestoreArgs extends SkillSelector {
	readonly file?: string;
	readonly backup?: string;
}

/** A backup named by its id, its id without extension, or its stamp. */
export function pickBackup<T extends { id: string }>(entries: readonly T[], wanted: string | undefined): T | undefined {
	if (wanted === undefined || wanted.trim() === "") return entries[0];
	const w = wanted.trim().replace(/^.*\//, "");
	return entries.find((e) => e.id === w || e.id.replace(/\.[^.]*$/, "") === w || e.id.startsWith(`${w}-`));
}

export function prepareRestore(ctx: CallContext, args: RestoreArgs): PreparedMutation | Refusal {
	const skill = findSkill(ctx.discovery.skills, args, ctx.cwd);
	if ("code" in skill) return prepareSnapshotRestore(ctx, args, skill);
	const target = resolveFileTarget(skill, args.file);
	if ("code" in target) return target;
	const entries = ctx.store.list(skill.name, target.relPath);
	const entry = pickBackup(entries, args.backup);
	if (!entry) return refusals.noBackup(skill.name, target.relPath, args.backup, entries.map((e) => e.id));
	return { action: "restore", skill: skill.name, file: target.relPath, paths: [target.absPath], plan: (input) => planFileRestore(ctx, target, entry, input) };
}

function planFileRestore(ctx: CallContext, target: FileTarget, entry: BackupEntry, input: PlanInput): Plan | Refusal {
	const writable = checkWritable({ roots: ctx.discovery.roots, agentDir: ctx.agentDir }, target);
	if (writable) return writable;
	const bytes = ctx.store.read(entry);
	if ("code" in bytes) return bytes;
	const text = decodeText(bytes, entry.path);
	if (typeof text !== "string") return text;
	const current = input.view.read(target.absPath);
	if (current !== null && current.equals(bytes)) return refusals.noChange(`backup ${entry.id}`);
	const dirName = basename(target.skill.dir ?? target.absPath);
	return {
		action: "restore",
		skill: target.skill.name,
		changes: [{ skill: target.skill.name, relPath: target.relPath, absPath: target.absPath, before: current, after: bytes, mode: 0o644, expectName: target.isSkillFile ? loadedNameOf(text, dirName) : undefined }],
	};
}

function wantedName(ctx: CallContext, args: RestoreArgs): string {
	if (args.path !== undefined && args.path.trim() !== "") {
		const p = normalizeUserPath(args.path, ctx.cwd);
		return basename(p) === SKILL_FILE ? basename(join(p, "..")) : basename(p);
	}
	return (args.skill ?? "").trim();
}

function prepareSnapshotRestore(ctx: CallContext, args: RestoreArgs, unknown: Refusal): PreparedMutation | Refusal {
	const name = wantedName(ctx, args);
	const snapshots = name === "" ? [] : ctx.store.listSnapshots(name);
	if (snapshots.length === 0) return unknown;
	if (args.file !== undefined && args.file !== SKILL_FILE) {
		return refusals.invalidArguments("restore", `skill "${name}" was deleted as a whole; omit "file" to recreate it from its snapshot`);
	}
	const snapshot = pickBackup(snapshots, args.backup);
	if (!snapshot) return refusals.noBackup(name, "(whole skill)", args.backup, snapshots.map((s) => s.id));
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

function planSnapshotRestore(ctx: CallContext, name: string, snapshot: SnapshotEntry, files: ReadonlyArray<{ relPath: string; bytes: Buffer }>, input: PlanInput): Plan | Refusal {
	const dir = snapshot.originDir ?? "";
	const skill: DiscoveredSkill = { name, description: "", filePath: join(dir, SKILL_FILE), dir, origin: { kind: "skills-dir", scope: "user" }, patchable: true, reason: undefined };
	const target: FileTarget = { skill, relPath: SKILL_FILE, absPath: skill.filePath, isSkillFile: true };
	const writable = checkWritable({ roots: ctx.discovery.roots, agentDir: ctx.agentDir }, target);
	if (writable) return writable;
	if (input.view.mode(dir) !== undefined) return refusals.exists(name, dir);
	const changes: FileChange[] = files.map((f) => ({
		skill: name,
		relPath: f.relPath,
		absPath: join(dir, ...f.relPath.split("/")),
		before: null,
		after: f.bytes,
		mode: input.view.mode(join(snapshot.path, ...f.relPath.split("/"))) ?? 0o644,
		expectName: f.relPath === SKILL_FILE ? name : undefined,
	}));
	return { action: "restore", skill: name, changes, note: `recreated from snapshot ${snapshot.id}; pi lists it again after /reload.` };
}
