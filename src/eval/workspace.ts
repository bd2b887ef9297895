// The throwaway folders of one eval, under the real temp folder, and their sweep:
//
//   <tmp>/selfskills-eval-<pid>-<random>/      one eval of the pi process <pid>
//     owner.pid                                that pid: a folder whose owner is dead is swept
//     r1-with/project/                         a run's copy of the project (copy-on-write where possible;
//                                              node_modules folders are bound read-only, not copied)
//     r1-with/agent/skills/<name>/             the arm's skills: the only ones the run loads
//     r1-with/home/, r1-with/tmp/              the run's own HOME and TMPDIR
//
// Removed when the eval ends, however it ends; what a killed pi left is swept at the next start.

import { constants, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { EVAL_FOLDER_PREFIX } from "../base/paths.ts";
import { isProcessAlive } from "../base/writer.ts";

export { EVAL_FOLDER_PREFIX };

/** Folders never copied into a run's project: bound read-only at the same place instead. */
const BOUND_NOT_COPIED = new Set(["node_modules"]);

export interface Workspace {
	readonly root: string;
	/** Removes the whole folder; never throws. */
	remove(): void;
}

export function createWorkspace(): Workspace {
	const root = mkdtempSync(join(tmpdir(), `${EVAL_FOLDER_PREFIX}${process.pid}-`));
	writeFileSync(join(root, "owner.pid"), `${process.pid}\n`);
	return { root, remove: () => removeTree(root) };
}

/** Removes a folder of the workspace (a finished run's); never throws. */
export function removeTree(path: string): void {
	try {
		rmSync(path, { recursive: true, force: true, maxRetries: 3 });
	} catch {
		// Left for the sweep at the next start.
	}
}

/** A read-only bind of a folder of the person's project over its place in the copy. */
export interface ProjectBind {
	readonly source: string;
	readonly target: string;
}

/**
 * Copies the project at `from` to `to` (reflinks where the filesystem allows, symlinks as links,
 * modes and times kept); each node_modules folder is left empty in the copy and returned, to be
 * bound read-only over it.
 */
export function copyProject(from: string, to: string): ProjectBind[] {
	const binds: ProjectBind[] = [];
	cpSync(from, to, {
		recursive: true,
		mode: constants.COPYFILE_FICLONE,
		verbatimSymlinks: true,
		preserveTimestamps: true,
		filter: (source) => {
			if (source === from || !BOUND_NOT_COPIED.has(basename(source))) return true;
			const target = join(to, relative(from, source));
			mkdirSync(target, { recursive: true });
			binds.push({ source, target });
			return false;
		},
	});
	return binds;
}

/** The pid a throwaway folder's name carries, or undefined for a name not made by createWorkspace. */
function ownerOf(name: string): number | undefined {
	const match = new RegExp(`^${EVAL_FOLDER_PREFIX}(\\d+)-`).exec(name);
	return match ? Number(match[1]) : undefined;
}

/**
 * Removes the throwaway folders whose pi is gone (killed mid-eval): one read of the temp folder.
 * Returns the folders removed.
 */
export function sweepWorkspaces(dir: string = tmpdir()): string[] {
	let names: string[];
	try {
		names = readdirSync(dir);
	} catch {
		return [];
	}
	const swept: string[] = [];
	for (const name of names) {
		const pid = ownerOf(name);
		if (pid === undefined || isProcessAlive(pid)) continue;
		removeTree(join(dir, name));
		swept.push(join(dir, name));
	}
	return swept;
}
