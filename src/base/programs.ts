// Programs the package runs itself (git, bwrap), found by absolute path: only in PATH entries that
// are absolute and whose real path lies outside every folder the agent may write, so a `git` the
// agent dropped earlier on PATH is never the one the package runs outside the sandbox.

import { accessSync, constants, realpathSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import { findProjectRoot, isWithin, resolveReal } from "./paths.ts";

/** The absolute path of `name` on `path`, skipping relative entries and those inside `untrusted` (real paths). */
export function findProgram(
	name: string,
	options: { path?: string; untrusted: readonly string[] },
): string | undefined {
	for (const dir of (options.path ?? "").split(delimiter)) {
		if (!dir || !isAbsolute(dir)) continue;
		const candidate = join(dir, name);
		let real: string;
		try {
			real = realpathSync(candidate);
			accessSync(real, constants.X_OK);
			if (!statSync(real).isFile()) continue;
		} catch {
			continue;
		}
		const dirReal = realpathSync(dir);
		if (options.untrusted.some((u) => isWithin(u, real) || isWithin(u, dirReal))) continue;
		return candidate;
	}
	return undefined;
}

/** The folders the agent may write (set once the session knows them); before that, the working folder's project. */
let untrustedDirs: readonly string[] | undefined;
const found = new Map<string, string | undefined>();

/** Called before the first tool call with every writable place: later lookups skip them. */
export function distrustFolders(dirs: readonly string[]): void {
	untrustedDirs = [...dirs];
	found.clear();
}

/** `name`'s absolute path for this process (looked up once per set of writable places), or undefined. */
export function programPath(name: string): string | undefined {
	if (!found.has(name)) {
		const untrusted = untrustedDirs ?? [resolveReal(findProjectRoot(process.cwd()))];
		found.set(name, findProgram(name, { path: process.env.PATH, untrusted }));
	}
	return found.get(name);
}
