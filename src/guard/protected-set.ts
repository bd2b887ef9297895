// The protected set of one call: the places that decide what the agent may change, out of reach of
// pi's edit, write and bash while a control is on — <agentDir> whole, the project's .pi/ and every
// .agents/ pi reads, every skill root, local package folders, this package's own folder and pi's.

import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import { expandHome, findProjectRoot, getHomeDir, isWithin, resolveReal } from "../base/paths.ts";
import { pathExists } from "../base/fs-reads.ts";
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
	/** The place holding `real` (a symlink-free path), or undefined. */
	find(real: string): ProtectedPlace | undefined;
}

export interface ProtectedSetInput {
	readonly cwd: string;
	readonly agentDir: string;
	readonly settings: Pick<SelfSkillsSettings, "skillsDir">;
	/** Skill files pi loaded this session (`--skill`, packages, other extensions): their folders count too. */
	readonly runtimeSkillFiles?: readonly string[];
	readonly fs?: FsOps;
}

const REMOTE_SOURCE = /^(npm:|git:|git\+|https?:|ssh:|git@)/;
const GLOB = /[*?[{]/;

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

/** Every `.agents` folder pi reads: cwd and each ancestor up to the git root, or up to `/` outside git. */
function agentsFolders(cwd: string, fs: FsOps): string[] {
	const top = findProjectRoot(cwd, fs);
	const inGit = pathExists(fs, join(top, ".git"));
	const out: string[] = [];
	for (let dir = resolve(cwd); ; dir = dirname(dir)) {
		out.push(join(dir, ".agents"));
		if ((inGit && dir === top) || dirname(dir) === dir) return out;
	}
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
		{ path: join(cwd, ".pi"), why: "the project's .pi folder (settings, skills, extensions)" },
		...agentsFolders(cwd, fs).map((path) => ({ path, why: "a project .agents folder pi reads" })),
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
	return {
		places: outer,
		find: (real) => outer.find((place) => isWithin(place.real, real)),
	};
}
