// Path primitives every policy decision shares: containment (segment-wise, never a string prefix),
// symlink resolution for paths that may not exist yet, `~` expansion, the home folder and the
// project root. One definition each, so two modules can never disagree on what "inside" means.

import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";

/** True when `child` is `parent` or lies below it (segment-wise, never a string prefix). */
export function isWithin(parent: string, child: string): boolean {
	const rel = relative(parent, child);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Resolves every symlink of `path`; for a path that does not exist yet, resolves the nearest
 * existing ancestor and appends the rest, so a new file's containment is decided correctly.
 */
export function resolveReal(path: string): string {
	const absolute = resolve(path);
	const missing: string[] = [];
	let current = absolute;
	for (;;) {
		try {
			const real = realpathSync.native(current);
			return missing.length > 0 ? join(real, ...missing.reverse()) : real;
		} catch {
			const parent = dirname(current);
			if (parent === current) return absolute;
			missing.push(basename(current));
			current = parent;
		}
	}
}

/** The user's home folder: `$HOME` when set (tests and sandboxes point it elsewhere), else the OS's. */
export function getHomeDir(): string {
	return process.env.HOME || homedir();
}

/** `~` and `~/x` expanded against the home folder; anything else unchanged. */
export function expandHome(path: string): string {
	if (path === "~") return getHomeDir();
	if (path.startsWith("~/")) return join(getHomeDir(), path.slice(2));
	return path;
}

/** The git root above cwd, or cwd itself outside a repository. */
export function findProjectRoot(cwd: string): string {
	let dir = resolve(cwd);
	for (;;) {
		if (existsSync(join(dir, ".git"))) return dir;
		const parent = dirname(dir);
		if (parent === dir) return resolve(cwd);
		dir = parent;
	}
}
