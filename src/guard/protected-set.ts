// The protected set of one call: the places that decide what the agent may change, out of reach of
// pi's edit, write and bash while a control is on — <agentDir> whole, the project's .pi/ and every
// .agents/ pi reads, every skill root, local package folders, this package's own folder and pi's,
// the real target of every symlink among what pi loads, and the git hooks and config of the project's
// repository and its submodules.

import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import { expandHome, findProjectRoot, getHomeDir, isWithin, resolveReal } from "../base/paths.ts";
import { listDir, pathExists, tryLstat, tryRead } from "../base/fs-reads.ts";
import { getUserAgentsSkillsDir } from "../policy/roots.ts";
import {
	getGlobalSettingsPath,
	getProjectSettingsPath,
	readSettingsFile,
	type JsonObject,
	type SelfSkillsSettings,
} from "../policy/settings.ts";

/** One protected place: the path as configured, its real path, and why it is protected. */
export interface ProtectedPlace {
	readonly path: string;
	/** Every symlink resolved (for a missing path: its nearest existing ancestor's, plus the rest). */
	readonly real: string;
	readonly why: string;
	readonly exists: boolean;
}

export interface ProtectedSet {
	/** Outermost places only: a place inside another is left out (the outer one covers it). */
	readonly places: readonly ProtectedPlace[];
	/** The innermost place holding `real` (a symlink-free path; its reason is the most specific), or undefined. */
	find(real: string): ProtectedPlace | undefined;
}

export interface ProtectedSetInput {
	readonly cwd: string;
	readonly agentDir: string;
	readonly settings: Pick<SelfSkillsSettings, "skillsDir">;
	/** Skill files pi loaded this session (`--skill`, packages, other extensions): their folders count too. */
	readonly runtimeSkillFiles?: readonly string[];
	/** The running pi's own package folder, where it is known (boundary.ts finds it). */
	readonly piDir?: string;
	readonly fs?: FsOps;
}

const REMOTE_SOURCE = /^(npm:|git:|git\+|https?:|ssh:|git@)/;
const GLOB = /[*?[{]/;
/** Submodule git folders looked at, at most (a walk of `modules/` never runs long). */
const MAX_GIT_FOLDERS = 200;

/** The folder a settings `skills` or `packages` entry names, resolved against its settings folder. */
function entryPath(entry: string, base: string): string | undefined {
	let path = entry.replace(/^[!+-]/, "");
	if (path === "" || REMOTE_SOURCE.test(path)) return undefined;
	// A glob protects the folder it starts from.
	const segments = path.split("/");
	const firstGlob = segments.findIndex((segment) => GLOB.test(segment));
	if (firstGlob === 0) return undefined;
	if (firstGlob > 0) path = segments.slice(0, firstGlob).join("/");
	path = expandHome(path);
	return isAbsolute(path) ? resolve(path) : resolve(base, path);
}

/** The local folders a settings file names under `skills` and `packages`. */
function settingsFolders(json: JsonObject, base: string): Array<{ path: string; why: string }> {
	const out: Array<{ path: string; why: string }> = [];
	const skills = Array.isArray(json.skills) ? json.skills : [];
	for (const entry of skills) {
		const path = typeof entry === "string" ? entryPath(entry, base) : undefined;
		if (path) out.push({ path, why: "a skill root named in settings" });
	}
	const packages = Array.isArray(json.packages) ? json.packages : [];
	for (const entry of packages) {
		const source =
			typeof entry === "string"
				? entry
				: typeof entry === "object" && entry !== null && typeof (entry as JsonObject).source === "string"
					? String((entry as JsonObject).source)
					: undefined;
		const path = source === undefined || REMOTE_SOURCE.test(source) ? undefined : entryPath(source, base);
		if (path) out.push({ path, why: "a local package named in settings" });
	}
	return out;
}

/** Every `.agents` and `.pi` folder pi reads: cwd and each ancestor up to the git root, or up to `/` outside git. */
function projectFolders(cwd: string, fs: FsOps): Array<{ path: string; why: string }> {
	const top = findProjectRoot(cwd, fs);
	const inGit = pathExists(fs, join(top, ".git"));
	const out: Array<{ path: string; why: string }> = [];
	for (let dir = resolve(cwd); ; dir = dirname(dir)) {
		out.push({ path: join(dir, ".agents"), why: "a project .agents folder pi reads" });
		out.push({ path: join(dir, ".pi"), why: "a project .pi folder (settings, skills, extensions)" });
		if ((inGit && dir === top) || dirname(dir) === dir) return out;
	}
}

/**
 * What the person's own git runs later and no diff shows: hooks and config of the project
 * repository's common git folder (a worktree's or a submodule's `.git` file points to it), of every
 * submodule's git folder under its `modules/`, and each worktree's `config.worktree` where git reads one.
 */
function gitExecutionPoints(cwd: string, fs: FsOps): Array<{ path: string; why: string }> {
	const top = findProjectRoot(cwd, fs);
	const dotGit = join(top, ".git");
	let gitDir = dotGit;
	try {
		if (!fs.lstat(dotGit).isDirectory()) {
			const pointer = /^gitdir:\s*(.+)$/m.exec(fs.readFile(dotGit).toString("utf8"))?.[1]?.trim();
			if (pointer === undefined) return [];
			gitDir = resolve(top, pointer);
		}
	} catch {
		return [];
	}
	let common = gitDir;
	try {
		common = resolve(gitDir, fs.readFile(join(gitDir, "commondir")).toString("utf8").trim());
	} catch {
		// No commondir: the git folder is its own common folder.
	}
	const why = "the project repository's git hooks and config (run by the person's git later)";
	return gitFolders(common, fs).flatMap((dir) => {
		const points = [join(dir, "hooks"), join(dir, "config")];
		const worktrees = [dir, ...listDir(fs, join(dir, "worktrees")).map((name) => join(dir, "worktrees", name))];
		// config.worktree is read only with extensions.worktreeConfig; a missing one is held open then.
		const perWorktree = /worktreeconfig\s*=\s*true/i.test(tryRead(fs, join(dir, "config"))?.toString("utf8") ?? "");
		for (const worktree of worktrees) {
			const file = join(worktree, "config.worktree");
			if (perWorktree || pathExists(fs, file)) points.push(file);
		}
		return points.map((path) => ({ path, why }));
	});
}

/** A git folder and its submodules' git folders (`modules/<name>/`, names with slashes, nested), breadth first. */
function gitFolders(common: string, fs: FsOps): string[] {
	const found = [common];
	const queue = [join(common, "modules")];
	while (queue.length > 0 && found.length < MAX_GIT_FOLDERS) {
		const dir = queue.shift() as string;
		for (const name of listDir(fs, dir)) {
			const child = join(dir, name);
			if (pathExists(fs, join(child, "HEAD")) && pathExists(fs, join(child, "config"))) {
				found.push(child);
				queue.push(join(child, "modules"));
			} else if (tryLstat(fs, child)?.isDirectory()) queue.push(child);
		}
	}
	return found;
}

/** Folders whose entries pi loads: each entry that is a symlink is protected where it points. */
function linkedTargets(dirs: readonly string[], fs: FsOps): Array<{ path: string; why: string }> {
	const out: Array<{ path: string; why: string }> = [];
	for (const dir of dirs) {
		let names: string[];
		try {
			names = fs.readdir(dir);
		} catch {
			continue;
		}
		for (const name of names) {
			const path = join(dir, name);
			try {
				if (fs.lstat(path).isSymbolicLink())
					out.push({ path: fs.realpath(path), why: `the target of ${path}, which pi loads` });
			} catch {
				// A dangling link loads nothing.
			}
		}
	}
	return out;
}

/** The folder holding a `package.json`, from `start` up; undefined when none does. */
function packageRootOf(start: string, fs: FsOps): string | undefined {
	for (let dir = start; ; dir = dirname(dir)) {
		if (pathExists(fs, join(dir, "package.json"))) return dir;
		if (dirname(dir) === dir) return undefined;
	}
}

/** This package's own folder: the code that holds the control. */
function ownPackageDir(fs: FsOps): string | undefined {
	try {
		return packageRootOf(dirname(fileURLToPath(import.meta.url)), fs);
	} catch {
		return undefined;
	}
}

/**
 * The protected set for one call. Never the filesystem root or the home folder itself (a setting
 * naming one would leave nothing writable): such an entry is left out.
 */
export function getProtectedSet(input: ProtectedSetInput): ProtectedSet {
	const fs = input.fs ?? realFs;
	const { cwd, agentDir } = input;
	const wanted: Array<{ path: string; why: string }> = [
		{ path: agentDir, why: "pi's agent folder (settings, selfskills store, extensions, packages, trust)" },
		...projectFolders(cwd, fs),
		...gitExecutionPoints(cwd, fs),
		{ path: getUserAgentsSkillsDir(), why: "the user's ~/.agents/skills" },
		{ path: resolve(expandHome(input.settings.skillsDir)), why: "selfskills.skillsDir" },
		...settingsFolders(readSettingsFile(getGlobalSettingsPath(agentDir), fs).json, agentDir),
		// pi 0.73 reads a project's settings whether or not it is trusted: their folders count.
		...settingsFolders(readSettingsFile(getProjectSettingsPath(cwd), fs).json, join(cwd, ".pi")),
		...(input.runtimeSkillFiles ?? []).map((file) => ({
			path: dirname(resolve(cwd, file)),
			why: "the folder of a skill pi loaded",
		})),
	];
	const own = ownPackageDir(fs);
	if (own) wanted.push({ path: own, why: "the pi-selfskills package" });
	if (input.piDir) wanted.push({ path: input.piDir, why: "pi's own install folder (its code runs at every start)" });
	const loaded = [agentDir, join(agentDir, "extensions"), join(agentDir, "skills"), join(cwd, ".pi")];
	loaded.push(join(cwd, ".pi", "extensions"), join(cwd, ".pi", "skills"));
	wanted.push(...linkedTargets(loaded, fs));
	const homeReal = resolveReal(getHomeDir(), fs);
	const places: ProtectedPlace[] = [];
	for (const { path, why } of wanted) {
		const real = resolveReal(path, fs);
		if (dirname(real) === real || isWithin(real, homeReal)) continue;
		places.push({ path, real, why, exists: pathExists(fs, real) });
	}
	// Outermost first; a place inside one already kept adds nothing.
	places.sort((a, b) => a.real.length - b.real.length);
	const outer: ProtectedPlace[] = [];
	for (const place of places) if (!outer.some((o) => isWithin(o.real, place.real))) outer.push(place);
	const innermostFirst = [...places].reverse();
	return {
		places: outer,
		find: (real) => innermostFirst.find((place) => isWithin(place.real, real)),
	};
}
