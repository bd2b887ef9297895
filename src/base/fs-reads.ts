// Tolerant filesystem reads, every one through the FsOps seam, named by one convention:
//   …IfExists  a missing path (ENOENT, ENOTDIR) answers null or undefined; any other failure is thrown.
//   try…       any failure answers undefined (hash.ts's tryHash keeps the convention: null is absent).
//   is…        what lstat sees (a symlink is never followed); false when lstat fails.
// listDir, walkTree and readJsonLines take an unreadable folder or log as empty.

import type { Stats } from "node:fs";
import type { FsOps } from "./fs-ops.ts";

/** The code of a Node.js system error ("ENOENT", "EACCES", …), or undefined for any other throw. */
export function errnoCode(error: unknown): string | undefined {
	if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string")
		return error.code;
	return undefined;
}

/** The error says the path is missing: nothing at it, or a file where a folder on the way should be. */
export function isMissing(error: unknown): boolean {
	const code = errnoCode(error);
	return code === "ENOENT" || code === "ENOTDIR";
}

/** A file's bytes, or null when it does not exist; any other failure is thrown. */
export function readIfExists(fs: FsOps, path: string): Buffer | null {
	try {
		return fs.readFile(path);
	} catch (error) {
		if (isMissing(error)) return null;
		throw error;
	}
}

/** A path's lstat, or undefined when nothing is there; any other failure is thrown. */
export function lstatIfExists(fs: FsOps, path: string): Stats | undefined {
	try {
		return fs.lstat(path);
	} catch (error) {
		if (isMissing(error)) return undefined;
		throw error;
	}
}

/** A file's bytes, or undefined when they cannot be read (missing, a folder, unreadable...). */
export function tryRead(fs: FsOps, path: string): Buffer | undefined {
	try {
		return fs.readFile(path);
	} catch {
		return undefined;
	}
}

/** A regular file's bytes (no symlink followed), or undefined when it is anything else or cannot be read. */
export function tryReadRegular(fs: FsOps, path: string): Buffer | undefined {
	try {
		return fs.lstat(path).isFile() ? fs.readFile(path) : undefined;
	} catch {
		return undefined;
	}
}

/** A regular file's JSON value (no symlink followed), or undefined when there is none or it does not parse. */
export function tryReadJson(fs: FsOps, path: string): unknown {
	try {
		return fs.lstat(path).isFile() ? JSON.parse(fs.readFile(path).toString("utf8")) : undefined;
	} catch {
		return undefined;
	}
}

/** A path's lstat, or undefined when it cannot be had (missing or not). */
export function tryLstat(fs: FsOps, path: string): Stats | undefined {
	try {
		return fs.lstat(path);
	} catch {
		return undefined;
	}
}

/** A path's permission bits (lstat), or undefined when it cannot be had. */
export function tryMode(fs: FsOps, path: string): number | undefined {
	const stat = tryLstat(fs, path);
	return stat === undefined ? undefined : stat.mode & 0o7777;
}

/** The path itself is a symbolic link. */
export function isSymlink(fs: FsOps, path: string): boolean {
	return tryLstat(fs, path)?.isSymbolicLink() ?? false;
}

/** The path itself is a regular file. */
export function isRegularFile(fs: FsOps, path: string): boolean {
	return tryLstat(fs, path)?.isFile() ?? false;
}

/**
 * Whether `path` exists (symlinks followed), as `existsSync` decides it. A stat, which answers a
 * missing path without an exception (access() throws one, and findProjectRoot asks for a `.git` in
 * every folder up to the root, on every call).
 */
export function pathExists(fs: FsOps, path: string): boolean {
	try {
		return fs.stat(path) !== undefined;
	} catch {
		return false;
	}
}

/** The names in `dir`, or none when it cannot be listed (missing, not a folder, unreadable). */
export function listDir(fs: FsOps, dir: string): string[] {
	try {
		return fs.readdir(dir);
	} catch {
		return [];
	}
}

/** One entry of a walked tree: its path relative to the root (`/`-separated) and its lstat. */
export interface TreeEntry {
	readonly relPath: string;
	readonly absPath: string;
	readonly stat: Stats;
}

export interface Tree {
	readonly files: TreeEntry[];
	/** Every folder, the root first, each before the folders below it. */
	readonly dirs: string[];
	/** Relative paths of symbolic links: reported, never followed. */
	readonly symlinks: string[];
	/** Relative paths of what is neither a regular file, a folder nor a link (FIFO, socket, device): never opened. */
	readonly others: string[];
}

export interface WalkOptions {
	/** Leave out an entry (and, for a folder, all below it). */
	readonly skip?: (name: string, relPath: string) => boolean;
	/** Stop once this many files were found (a folder of a hundred thousand files costs no more). */
	readonly maxFiles?: number;
	/** Throw when a folder cannot be read (a snapshot must see everything); by default it counts as empty. */
	readonly strict?: boolean;
}

/**
 * The one tree walk of the package, with one set of rules: every entry lstat'ed through `ops`,
 * names in sorted order, a symlink never followed, an unreadable folder empty (or, strict, an error).
 */
export function walkTree(ops: FsOps, root: string, options: WalkOptions = {}): Tree {
	const tree: Tree = { files: [], dirs: [], symlinks: [], others: [] };
	const max = options.maxFiles ?? Number.POSITIVE_INFINITY;
	const walk = (dir: string, prefix: string) => {
		tree.dirs.push(dir);
		for (const name of (options.strict ? ops.readdir(dir) : listDir(ops, dir)).sort()) {
			if (tree.files.length >= max) return;
			const relPath = prefix ? `${prefix}/${name}` : name;
			if (options.skip?.(name, relPath)) continue;
			const absPath = `${dir}/${name}`;
			const stat = ops.lstat(absPath);
			if (stat.isSymbolicLink()) tree.symlinks.push(relPath);
			else if (stat.isDirectory()) walk(absPath, relPath);
			else if (stat.isFile()) tree.files.push({ relPath, absPath, stat });
			else tree.others.push(relPath);
		}
	};
	walk(root, "");
	return tree;
}

/**
 * The objects of a JSON-lines log of the private store (audit, usage, created); a missing log is
 * empty, and so is a link, FIFO, socket or device there (lstat'ed first, never opened); a line that
 * does not parse (a torn last line after a crash) is skipped, not fatal.
 */
export function readJsonLines(ops: FsOps, path: string): Array<Record<string, unknown>> {
	let text: string;
	try {
		if (!ops.lstat(path).isFile()) return [];
		text = ops.readFile(path).toString("utf8");
	} catch {
		return [];
	}
	return text.split("\n").flatMap((line) => {
		try {
			const value: unknown = JSON.parse(line);
			return typeof value === "object" && value !== null && !Array.isArray(value)
				? [value as Record<string, unknown>]
				: [];
		} catch {
			return [];
		}
	});
}
