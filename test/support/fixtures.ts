// What the tests put on disk and read back: skill text, skill folders, plain and JSON files, every
// file below a folder, and a tree fingerprint that proves nothing under a root changed. Node built-ins
// only, so the crash children can load it as plain transpiled JS (test/crash/transpile.ts).
import {
	chmodSync,
	existsSync,
	lstatSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	writeFileSync,
} from "node:fs";
import { dirname, join, relative } from "node:path";

/** A user skill most UX and end-to-end tests patch ("Run npm build." is unique in it). */
export const DEPLOY_SKILL =
	"---\nname: deploy-checks\ndescription: Use when deploying the app. Lists the checks to run.\n---\n" +
	"# Deploy checks\n\n1. Run npm build.\n2. Check the health page.\n";

/** A valid SKILL.md; the default body holds "Run the build." once, for patch tests. */
export function skillText(
	name: string,
	body = "# Steps\n\n1. Run the build.\n2. Check the page.\n",
	description = `Use when testing ${name}. Lists the steps.`,
): string {
	return `---\nname: ${name}\ndescription: ${description}\n---\n${body}`;
}

/** Writes `path` (making its folders), optionally with `mode`; returns `path`. */
export function writeFile(path: string, content: string | Uint8Array, mode?: number): string {
	mkdirSync(dirname(path), { recursive: true });
	writeFileSync(path, content);
	if (mode !== undefined) chmodSync(path, mode);
	return path;
}

export function writeJson(path: string, value: unknown): string {
	return writeFile(path, JSON.stringify(value));
}

/**
 * Writes <parent>/<name>/SKILL.md and any bundled `files` (paths relative to the skill folder);
 * returns the SKILL.md path.
 */
export function writeSkill(
	parent: string,
	name: string,
	content: string | Uint8Array = skillText(name),
	files: Record<string, string | Uint8Array> = {},
): string {
	for (const [rel, bytes] of Object.entries(files)) writeFile(join(parent, name, rel), bytes);
	return writeFile(join(parent, name, "SKILL.md"), content);
}

/** Every file below `dir` (symlinks listed, not followed), as absolute paths; none when `dir` is missing. */
export function walkFiles(dir: string): string[] {
	if (!existsSync(dir)) return [];
	return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
		e.isDirectory() ? walkFiles(join(dir, e.name)) : [join(dir, e.name)],
	);
}

/** path -> kind:content (or link target) of every entry under `root`, for before/after comparison. */
export function fingerprint(root: string): Map<string, string> {
	const out = new Map<string, string>();
	const walk = (dir: string) => {
		let names: string[];
		try {
			names = readdirSync(dir);
		} catch {
			return;
		}
		for (const name of names.sort()) {
			const path = join(dir, name);
			const stat = lstatSync(path);
			const rel = relative(root, path);
			if (stat.isSymbolicLink()) out.set(rel, `link:${readlinkSync(path)}`);
			else if (stat.isDirectory()) {
				out.set(rel, `dir:${(stat.mode & 0o777).toString(8)}`);
				walk(path);
			} else
				out.set(
					rel,
					`file:${(stat.mode & 0o777).toString(8)}:${stat.nlink}:${readFileSync(path).toString("base64")}`,
				);
		}
	};
	walk(root);
	return out;
}
