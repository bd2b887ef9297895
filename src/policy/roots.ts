// The writable-root policy: which folders the tool may change, and for any skill whether it is
// patchable or read-only with the reason. Containment is decided on resolved (symlink-free)
// paths, segment by segment, never by string prefix.

import { basename, dirname, join, resolve, sep } from "node:path";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import { findProjectRoot, getHomeDir, getPiPlaces, getRootProblem, isWithin, resolveReal } from "../base/paths.ts";
import type { SelfSkillsSettings } from "./settings.ts";
import { pathExists } from "../base/fs-reads.ts";

export type RootKind = "agent-skills" | "project-pi" | "project-agents" | "local-package" | "skills-dir";

export interface WritableRoot {
	readonly kind: RootKind;
	/** The root as configured (may not exist yet). */
	readonly path: string;
	/** The root with every symlink resolved (or its nearest existing ancestor's). */
	readonly realPath: string;
}

export function getUserAgentsSkillsDir(): string {
	return join(getHomeDir(), ".agents", "skills");
}

/** `.agents/skills` in cwd and each ancestor up to the git root (cwd only outside git). */
export function getProjectAgentsDirs(cwd: string): string[] {
	const top = findProjectRoot(cwd);
	const dirs: string[] = [];
	let dir = resolve(cwd);
	for (;;) {
		dirs.push(join(dir, ".agents", "skills"));
		if (dir === top) return dirs;
		const parent = dirname(dir);
		if (parent === dir) return dirs;
		dir = parent;
	}
}

export interface RootsInput {
	readonly cwd: string;
	readonly agentDir: string;
	readonly trusted: boolean;
	readonly settings: SelfSkillsSettings;
	/** Folders of local (path) packages from the settings that pi resolved. */
	readonly localPackageDirs: readonly string[];
	/** Where the folders are looked at (default realFs). */
	readonly fs?: FsOps;
}

/** Whether a segment of `path` is `node_modules` (one string search, no array of segments). */
export function isInsideNodeModules(path: string): boolean {
	return `${sep}${path}${sep}`.includes(`${sep}node_modules${sep}`);
}

export function getWritableRoots(input: RootsInput): WritableRoot[] {
	const fs = input.fs ?? realFs;
	const makeRoot = (kind: RootKind, path: string): WritableRoot => ({
		kind,
		path: resolve(path),
		realPath: resolveReal(path, fs),
	});
	const roots = [makeRoot("agent-skills", join(input.agentDir, "skills"))];
	if (input.trusted) {
		roots.push(makeRoot("project-pi", join(input.cwd, ".pi", "skills")));
		if (input.settings.patchProjectAgents) {
			for (const dir of getProjectAgentsDirs(input.cwd)) roots.push(makeRoot("project-agents", dir));
		}
	}
	const places = getPiPlaces(input.agentDir, fs);
	if (input.settings.patchPackages) {
		for (const dir of input.localPackageDirs) {
			// A package folder in pi's own places (or holding them) is never a root: its skills stay read-only.
			if (pathExists(fs, dir) && getRootProblem(places, dir, fs) === undefined)
				roots.push(makeRoot("local-package", dir));
		}
	}
	// settings.ts already replaced a skillsDir with a root problem by the default (and reported it).
	if (getRootProblem(places, input.settings.skillsDir, fs) === undefined)
		roots.push(makeRoot("skills-dir", input.settings.skillsDir));
	return roots;
}

/** The writable root holding `path` after resolving symlinks; the root itself is never a target. */
export function findWritableRoot(roots: readonly WritableRoot[], path: string): WritableRoot | undefined {
	return findWritableRootOfReal(roots, resolveReal(path));
}

/** findWritableRoot for a path already resolved with resolveReal. */
export function findWritableRootOfReal(roots: readonly WritableRoot[], real: string): WritableRoot | undefined {
	return roots.find((root) => real !== root.realPath && isWithin(root.realPath, real));
}

/**
 * findWritableRootOfReal for many paths, answered once per folder. For `real` = `<folder>/<name>`,
 * a root holds `real` (and is not `real` itself) exactly when it is `folder` or holds it: no root
 * lies strictly between a folder and its entry, and one at `real` never counts. So every entry of a
 * folder gets the folder's answer, but where isWithin decides otherwise: a name starting with `..`
 * (seen outside `folder`), a path or a root's realPath that is not normal (isWithin resolves it,
 * the exclusion compares strings). Those take the plain search.
 */
export function createRootFinder(roots: readonly WritableRoot[]): (real: string) => WritableRoot | undefined {
	const plain = roots.every((root) => resolve(root.realPath) === root.realPath);
	/** A folder's answer for its entries (null: no root holds them); "search": the folder is not normal. */
	const byFolder = new Map<string, WritableRoot | null | "search">();
	let lastFolder: string | undefined;
	let lastHit: WritableRoot | null | "search" | undefined;
	return (real) => {
		const folder = dirname(real);
		const name = basename(real);
		const entry = folder === sep ? `${sep}${name}` : `${folder}${sep}${name}`;
		if (!plain || name === "" || name.startsWith("..") || entry !== real) return findWritableRootOfReal(roots, real);
		// Paths come folder by folder (pi lists a folder's skills one after another): the last answer first.
		let hit = folder === lastFolder ? lastHit : byFolder.get(folder);
		if (hit === undefined) {
			hit = resolve(folder) !== folder ? "search" : (roots.find((root) => isWithin(root.realPath, folder)) ?? null);
			byFolder.set(folder, hit);
		}
		lastFolder = folder;
		lastHit = hit;
		return hit === "search" ? findWritableRootOfReal(roots, real) : (hit ?? undefined);
	};
}
