// Whether the current project is trusted (read in project-trust.ts), and the writes of the GLOBAL
// `selfskills.trustedProjects` list and pins. Only the global settings file can hold that list, so a
// project can never trust itself.

import { dirname, resolve } from "node:path";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import lockfile from "proper-lockfile";
import { getGlobalSettingsPath, isJsonObject, readSettingsFile, type JsonObject } from "./settings.ts";
import { mkdirDurable, writeFileAtomic } from "../base/writer.ts";
import { lstatIfExists, tryLstat } from "../base/fs-reads.ts";
import { getCoveringEntries } from "./project-trust.ts";

export {
	getCoveringEntries,
	getIgnoredEntries,
	getTrustRefusal,
	isAncestorEntry,
	isListedTrusted,
	resolveProjectTrust,
	type ProjectTrust,
	type TrustContext,
	type TrustSource,
} from "./project-trust.ts";

/**
 * The file a settings write must replace: the path itself, or the final target of a symlinked
 * settings.json (dotfile managers link it), so the link survives and its target is replaced
 * atomically. A dangling link is refused: writing would create a file where the user keeps none.
 */
function settingsWriteTarget(fs: FsOps, path: string): string {
	if (!tryLstat(fs, path)?.isSymbolicLink()) return path;
	try {
		return fs.realpath(path);
	} catch {
		throw new Error(
			`${path} is a symbolic link to a missing file; ` +
				"fix the link or replace it with a file, then run the command again",
		);
	}
}

/**
 * Rewrites the `selfskills` block of the global settings.json, under the same lock pi's
 * SettingsManager takes on it, with the same durable atomic write as every other file the package
 * writes (through a symlinked settings.json to its target). `update` edits a copy of the block.
 */
export function updateGlobalSelfSkills<T>(agentDir: string, update: (block: JsonObject) => T, fs: FsOps = realFs): T {
	const path = getGlobalSettingsPath(agentDir);
	mkdirDurable(fs, dirname(path));
	const target = settingsWriteTarget(fs, path);
	if (!lstatIfExists(fs, target)) writeFileAtomic(fs, target, Buffer.from("{}\n"));
	const release = lockfile.lockSync(path, { realpath: false });
	try {
		const { json, problem } = readSettingsFile(target, fs);
		if (problem && fs.readFile(target).toString("utf8").trim() !== "")
			throw new Error(`refusing to rewrite ${problem}`);
		const block = isJsonObject(json.selfskills) ? { ...json.selfskills } : {};
		const result = update(block);
		writeFileAtomic(fs, target, Buffer.from(`${JSON.stringify({ ...json, selfskills: block }, null, 2)}\n`));
		return result;
	} finally {
		release();
	}
}

const stringsOf = (value: unknown): string[] =>
	Array.isArray(value) ? value.filter((p): p is string => typeof p === "string") : [];

/**
 * Adds a project root to the global `selfskills.trustedProjects`, or removes every entry that covers
 * it (the root itself or an ancestor: the person was shown them first). Entries that trust nothing stay.
 */
export function setListedTrust(
	agentDir: string,
	projectRoot: string,
	trusted: boolean,
	fs: FsOps = realFs,
): readonly string[] {
	return updateGlobalSelfSkills(
		agentDir,
		(block) => {
			const current = stringsOf(block.trustedProjects);
			const root = resolve(projectRoot);
			const covering = new Set(getCoveringEntries(root, current));
			const next = trusted
				? [...current.filter((p) => resolve(p) !== root), root]
				: current.filter((p) => !covering.has(p));
			block.trustedProjects = next;
			return next;
		},
		fs,
	);
}

/** Adds or removes one entry of the global `selfskills.pinned` (a name, or a prefix ending in `*`). */
export function setGlobalPin(agentDir: string, entry: string, pinned: boolean, fs: FsOps = realFs): readonly string[] {
	return updateGlobalSelfSkills(
		agentDir,
		(block) => {
			const current = stringsOf(block.pinned);
			const next = pinned ? [...current.filter((p) => p !== entry), entry] : current.filter((p) => p !== entry);
			block.pinned = next;
			return next;
		},
		fs,
	);
}
