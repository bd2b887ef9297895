// Whether the current project is trusted: pi's own decision where the running pi has one
// (`ctx.isProjectTrusted()`, pi 0.79+), otherwise the GLOBAL `selfskills.trustedProjects` list.
// Only the global settings file can hold that list, so a project can never trust itself.

import { dirname, resolve } from "node:path";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import { expandHome, findProjectRoot, getHomeDir, isWithin, resolveReal } from "../base/paths.ts";
import lockfile from "proper-lockfile";
import { getGlobalSettingsPath, isJsonObject, readSettingsFile, type JsonObject } from "./settings.ts";
import { mkdirDurable, writeFileAtomic } from "../base/writer.ts";
import { lstatIfExists, tryLstat } from "../base/fs-reads.ts";

export type TrustSource = "pi" | "selfskills-list";

export interface ProjectTrust {
	readonly trusted: boolean;
	readonly source: TrustSource;
	readonly projectRoot: string;
}

/**
 * The entries of `trustedProjects` that trust `projectRoot`: it or an ancestor, as written in the
 * list. An entry for the filesystem root or the home folder (a hand edit) trusts nothing.
 */
export function getCoveringEntries(projectRoot: string, trustedProjects: readonly string[]): string[] {
	const root = resolveReal(projectRoot);
	return trustedProjects.filter((listed) => {
		const path = resolve(expandHome(listed));
		return getTrustRefusal(path) === undefined && isWithin(resolveReal(path), root);
	});
}

/** True when `entry` lies above `projectRoot` (and so covers other projects too), not at it. */
export function isAncestorEntry(entry: string, projectRoot: string): boolean {
	return resolveReal(resolve(expandHome(entry))) !== resolveReal(projectRoot);
}

export function isListedTrusted(projectRoot: string, trustedProjects: readonly string[]): boolean {
	return getCoveringEntries(projectRoot, trustedProjects).length > 0;
}

/** Entries that trust nothing (the filesystem root, the home folder), each with why; for `/selfskills`. */
export function getIgnoredEntries(trustedProjects: readonly string[]): string[] {
	return trustedProjects.flatMap((listed) => {
		const why = getTrustRefusal(resolve(expandHome(listed)));
		return why === undefined ? [] : [`"${listed}" trusts nothing: ${why}`];
	});
}

export interface TrustContext {
	readonly cwd: string;
}

function nativeTrust(ctx: TrustContext): boolean | undefined {
	const candidate: unknown = (ctx as { isProjectTrusted?: unknown }).isProjectTrusted;
	if (typeof candidate !== "function") return undefined;
	try {
		return Boolean(candidate.call(ctx));
	} catch {
		return undefined;
	}
}

export function resolveProjectTrust(ctx: TrustContext, trustedProjects: readonly string[]): ProjectTrust {
	const projectRoot = findProjectRoot(ctx.cwd);
	const native = nativeTrust(ctx);
	if (native !== undefined) return { trusted: native, source: "pi", projectRoot };
	return { trusted: isListedTrusted(projectRoot, trustedProjects), source: "selfskills-list", projectRoot };
}

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

/**
 * Why `projectRoot` may never be trusted: the filesystem root or the home folder itself would
 * trust every project below it at once. Undefined when it may be.
 */
export function getTrustRefusal(projectRoot: string): string | undefined {
	const real = resolveReal(projectRoot);
	if (dirname(real) === real)
		return `${projectRoot} is the filesystem root: trusting it would trust every project on this machine`;
	if (real === resolveReal(getHomeDir()))
		return `${projectRoot} is your home folder: trusting it would trust every project below it`;
	return undefined;
}
