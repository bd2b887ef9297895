// Skill discovery through pi's own code: DefaultPackageManager.resolve() finds every place pi
// looks (settings `skills`, .pi/skills, .agents/skills up to the git root, <agentDir>/skills,
// ~/.agents/skills, package skills), loadSkills() applies pi's validation and collision rules,
// and each skill is then classified patchable or read-only with the reason.

import { basename, dirname, join, resolve, sep } from "node:path";
import { DefaultPackageManager, loadSkills, SettingsManager } from "@mariozechner/pi-coding-agent";
import {
	createRootFinder,
	getWritableRoots,
	getProjectAgentsDirs,
	getUserAgentsSkillsDir,
	isInsideNodeModules,
	type WritableRoot,
} from "./roots.ts";
import { getForbiddenReason, getPiPlaces, isWithin, resolveReal, type PiPlaces } from "../base/paths.ts";
import { folderWriteError, realFs, type FsOps } from "../base/fs-ops.ts";
import type { SelfSkillsSettings } from "./settings.ts";
import { getGlobalSettingsPath, getProjectSettingsPath } from "./settings.ts";

export type SkillOriginKind = "auto" | "settings" | "package" | "skills-dir" | "runtime";

export interface SkillOrigin {
	readonly kind: SkillOriginKind;
	readonly scope: string;
	/** The package source as written in the settings (`npm:x`, `../pkg`), for package skills. */
	readonly packageSource?: string;
}

export interface DiscoveredSkill {
	readonly name: string;
	readonly description: string;
	/** SKILL.md (or a root-level .md skill file) as pi sees it. */
	readonly filePath: string;
	/** The skill folder; bundled files live here. Undefined for a root-level single-file skill. */
	readonly dir: string | undefined;
	readonly origin: SkillOrigin;
	readonly patchable: boolean;
	/** Why the skill is read-only; undefined when patchable. */
	readonly reason: string | undefined;
	/** Set when the policy allows the skill but this user cannot write its folder. */
	readonly writeDenied?: { readonly folder: string; readonly errno: string };
}

export interface DiagnosticLike {
	readonly type: string;
	readonly message: string;
	readonly path?: string;
}

export interface Discovery {
	readonly skills: readonly DiscoveredSkill[];
	readonly diagnostics: readonly DiagnosticLike[];
	readonly roots: readonly WritableRoot[];
}

export interface DiscoverOptions {
	readonly cwd: string;
	readonly agentDir: string;
	readonly trusted: boolean;
	readonly settings: SelfSkillsSettings;
	/** SKILL.md paths pi loaded that settings cannot explain (`--skill`, other extensions). */
	readonly runtimeSkillFiles?: readonly string[];
	/** Asked whether this user may write each skill folder (default realFs; tests inject EACCES). */
	readonly fs?: FsOps;
}

type Storage = Parameters<typeof SettingsManager.fromStorage>[0];

function isSymlink(fs: FsOps, path: string): boolean {
	try {
		return fs.lstat(path).isSymbolicLink();
	} catch {
		return true; // Missing: let resolveReal decide.
	}
}

function readText(fs: FsOps, path: string): string | undefined {
	try {
		return fs.readFile(path).toString("utf8");
	} catch {
		return undefined;
	}
}

/** Read-only settings storage: never writes, and hides an untrusted project's settings. */
function createReadOnlyStorage(cwd: string, agentDir: string, trusted: boolean, fs: FsOps): Storage {
	const global = readText(fs, getGlobalSettingsPath(agentDir));
	const project = trusted ? readText(fs, getProjectSettingsPath(cwd)) : undefined;
	return {
		withLock(scope, fn) {
			fn(scope === "global" ? global : project);
		},
	};
}

const REMOTE_SOURCE = /^(npm:|git:|git\+|https?:|ssh:|git@)/;

function originOf(metadata: { source: string; scope: string; origin: string }): SkillOrigin {
	if (metadata.origin === "package") return { kind: "package", scope: metadata.scope, packageSource: metadata.source };
	return { kind: metadata.source === "auto" ? "auto" : "settings", scope: metadata.scope };
}

interface PolicyInput {
	readonly options: DiscoverOptions;
	readonly roots: readonly WritableRoot[];
	/** resolveReal, memoised for one discovery: thousands of skills share the same few roots. */
	readonly real: (path: string) => string;
	/** A skill's folder and file with every symlink resolved, each asked for once (not kept). */
	readonly realSkill: (dir: string | undefined, filePath: string) => RealSkill;
	/** findWritableRootOfReal over `roots`, answered once per folder (createRootFinder). */
	readonly rootOf: (real: string) => WritableRoot | undefined;
	readonly userAgentsReal: string;
	readonly projectAgentsDirs: readonly string[];
	readonly places: PiPlaces;
}

interface RealSkill {
	readonly realDir: string;
	readonly realFile: string;
	/** The real file is its real folder's entry of the same name (false for a single-file skill). */
	readonly fileInDir: boolean;
}

/** A folder holding at least this many skills is listed once, instead of an lstat per skill. */
const LISTED_FOLDER = 8;

/**
 * Whether each path is a symbolic link: the listing of a folder holding many of `paths` (its
 * entries' types, one readdir for hundreds of skills), else an lstat. `folder`: the path's
 * dirname, when the caller has it.
 */
function createLinkCheck(
	options: DiscoverOptions,
	paths: readonly string[],
): (path: string, folder?: string) => boolean {
	const fs = options.fs ?? realFs;
	const counts = new Map<string, number>();
	for (const path of paths) {
		const folder = dirname(path);
		counts.set(folder, (counts.get(folder) ?? 0) + 1);
	}
	const listings = new Map<string, ReadonlyMap<string, boolean> | undefined>();
	const listed = (folder: string) => {
		if (!listings.has(folder)) {
			try {
				listings.set(folder, new Map(fs.readdirEntries(folder).map((e) => [e.name, e.isSymbolicLink()])));
			} catch {
				listings.set(folder, undefined);
			}
		}
		return listings.get(folder);
	};
	// pi lists a folder's skills one after another: the last folder's listing is at hand.
	let lastFolder: string | undefined;
	let lastListing: ReadonlyMap<string, boolean> | undefined;
	return (path, folder = dirname(path)) => {
		if (folder !== lastFolder) {
			lastListing = (counts.get(folder) ?? 0) >= LISTED_FOLDER ? listed(folder) : undefined;
			lastFolder = folder;
		}
		return lastListing?.get(basename(path)) ?? isSymlink(fs, path);
	};
}

/** `skillPaths`: the skill folders (or files) to classify, whose common folders are listed once. */
function createPolicyInput(
	options: DiscoverOptions,
	roots: readonly WritableRoot[],
	skillPaths: readonly string[] = [],
): PolicyInput {
	const fs = options.fs ?? realFs;
	const memo = new Map<string, string>();
	const isLink = createLinkCheck(options, skillPaths);
	/** A path in a folder whose real path is `realParent`, no symlink itself: a plain name is appended. */
	const inFolder = (realParent: string, name: string): string => {
		// join() normalises again what is normal already.
		if (name === "." || name === "..") return join(realParent, name);
		return realParent === sep ? `${sep}${name}` : `${realParent}${sep}${name}`;
	};
	// pi lists a folder's skills one after another: the last folder's real path is at hand.
	let lastParent: string | undefined;
	let lastParentReal = "";
	// A path that is no symlink resolves to its folder's real path plus its own name: one lstat per
	// skill folder and file instead of a realpath() walking every component.
	const realOnce = (path: string): string => {
		const parent = dirname(path);
		if (parent === path || isLink(path, parent)) return resolveReal(path);
		if (parent !== lastParent) {
			lastParentReal = real(parent);
			lastParent = parent;
		}
		return inFolder(lastParentReal, basename(path));
	};
	const real = (path: string): string => {
		let hit = memo.get(path);
		if (hit === undefined) {
			hit = realOnce(path);
			memo.set(path, hit);
		}
		return hit;
	};
	const realSkill = (dir: string | undefined, filePath: string): RealSkill => {
		if (dir === undefined) {
			const realFile = realOnce(filePath);
			return { realDir: realFile, realFile, fileInDir: false };
		}
		// `dir` is the file's folder; its SKILL.md's type is an lstat's (a folder's listing pays only
		// for many skills side by side).
		const realDir = realOnce(dir);
		const name = basename(filePath);
		const link = isSymlink(fs, filePath);
		const realFile = link ? resolveReal(filePath) : inFolder(realDir, name);
		return { realDir, realFile, fileInDir: realFile === `${realDir}${sep}${name}` };
	};
	return {
		options,
		roots,
		real,
		realSkill,
		rootOf: createRootFinder(roots),
		userAgentsReal: real(getUserAgentsSkillsDir()),
		projectAgentsDirs: getProjectAgentsDirs(options.cwd).map((dir) => resolve(dir)),
		places: getPiPlaces(options.agentDir),
	};
}

/** "npm" or "git" for a package pi installed (its next update replaces the files), nothing for a local one. */
function getInstalledKind(source: string, realPath: string): "npm" | "git" | undefined {
	if (source.startsWith("npm:")) return "npm";
	if (REMOTE_SOURCE.test(source)) return "git";
	return isInsideNodeModules(realPath) ? "npm" : undefined;
}

/**
 * The policy reason a skill is read-only before containment is even considered (`realFile`: the
 * skill file with every symlink resolved).
 */
function policyReason(filePath: string, realFile: string, origin: SkillOrigin, input: PolicyInput): string | undefined {
	const { trusted, settings } = input.options;
	if (origin.scope === "project" && !trusted) return "untrusted project (the user can run /selfskills trust)";
	if (origin.kind === "runtime") return "added by a --skill flag or another extension";
	if (origin.kind === "package") {
		const installed = getInstalledKind(origin.packageSource ?? "", realFile);
		if (installed) return `installed ${installed} package: an update would overwrite the change`;
		if (!settings.patchPackages) return "local package skills are off (patchPackages: false)";
		return undefined;
	}
	if (origin.kind === "settings") {
		const inSkillsDir = isWithin(input.real(settings.skillsDir), realFile);
		return inSkillsDir ? undefined : "listed in a settings `skills` entry";
	}
	if (isWithin(input.userAgentsReal, realFile)) {
		return "user-level ~/.agents/skills is shared with other agents";
	}
	// filePath is resolved already (discoverSkills).
	const inProjectAgents = input.projectAgentsDirs.some((dir) => isWithin(dir, filePath));
	if (inProjectAgents && !settings.patchProjectAgents)
		return "project .agents/skills are off (patchProjectAgents: false)";
	return undefined;
}

function classify(filePath: string, dir: string | undefined, origin: SkillOrigin, input: PolicyInput) {
	const { realDir, realFile, fileInDir } = input.realSkill(dir, filePath);
	const policy = policyReason(filePath, realFile, origin, input);
	if (policy) return { patchable: false, reason: policy };
	// The skill file itself counts too: a SKILL.md symlinked out of the root makes the skill foreign.
	// (One in its real folder lies strictly inside whichever root holds that folder.)
	if (!input.rootOf(realDir) || (!fileInDir && !input.rootOf(realFile))) {
		return { patchable: false, reason: "outside every writable root (after resolving symlinks)" };
	}
	// A root that holds pi's own places (skillsDir set to a parent of them) still never reaches into them.
	const forbidden = getForbiddenReason(input.places, realDir);
	if (forbidden) return { patchable: false, reason: forbidden };
	// The policy allows it; the filesystem must too, or list would promise a write that fails.
	const folder = dir ?? dirname(filePath);
	const errno = folderWriteError(input.options.fs ?? realFs, folder);
	if (errno)
		return { patchable: false, reason: `folder not writable by you: ${folder}`, writeDenied: { folder, errno } };
	return { patchable: true, reason: undefined };
}

/** True when pi's own scan (agent skills, project .pi/skills and .agents/skills) already reaches `dir`. */
export function isScannedByPi(dir: string, options: Pick<DiscoverOptions, "cwd" | "agentDir">): boolean {
	const scanned = [
		join(options.agentDir, "skills"),
		join(options.cwd, ".pi", "skills"),
		...getProjectAgentsDirs(options.cwd),
	];
	return scanned.some((root) => isWithin(resolveReal(root), resolveReal(dir)));
}

/** The first skill of that name (pi loads one per name). */
export function skillNamed(skills: readonly DiscoveredSkill[], name: string): DiscoveredSkill | undefined {
	return skills.find((s) => s.name === name);
}

/** pi's package manager over read-only settings: what pi itself would resolve for this project. */
export function createPackageManager(options: Pick<DiscoverOptions, "cwd" | "agentDir" | "trusted" | "fs">): {
	settingsManager: SettingsManager;
	packageManager: DefaultPackageManager;
} {
	const { cwd, agentDir, trusted } = options;
	// pi 1.6 takes the trust decision here too (0.73 ignores the extra argument).
	const fromStorage = SettingsManager.fromStorage.bind(SettingsManager) as (
		storage: Storage,
		options?: { projectTrusted?: boolean },
	) => SettingsManager;
	const settingsManager = fromStorage(createReadOnlyStorage(cwd, agentDir, trusted, options.fs ?? realFs), {
		projectTrusted: trusted,
	});
	return { settingsManager, packageManager: new DefaultPackageManager({ cwd, agentDir, settingsManager }) };
}

/**
 * What an untrusted project's own settings add (its packages, `pi install -l`): pi 0.73 loads them
 * although this package never reads those settings, so their skills show up at run time. Resolved
 * as if trusted, only to give them their true origin (and the reason "untrusted project").
 */
async function resolveUntrustedProject(options: DiscoverOptions): Promise<Map<string, SkillOrigin>> {
	const { packageManager } = createPackageManager({ ...options, trusted: true });
	const out = new Map<string, SkillOrigin>();
	try {
		for (const resource of (await packageManager.resolve(async () => "skip")).skills) {
			if (resource.metadata.scope === "project") out.set(resolve(resource.path), originOf(resource.metadata));
		}
	} catch {
		// Only a better reason is lost: the skills stay read-only as run-time additions.
	}
	return out;
}

/** `packageManager`: one made by createPackageManager for the same options (it caches `npm root -g`). */
export async function discoverSkills(
	options: DiscoverOptions,
	packageManager = createPackageManager(options).packageManager,
): Promise<Discovery> {
	const { cwd, agentDir, trusted, settings } = options;
	const resolved = await packageManager.resolve(async () => "skip");
	const origins = new Map<string, SkillOrigin>();
	const localPackageDirs = new Set<string>();
	for (const resource of resolved.skills) {
		if (!resource.enabled) continue;
		const origin = originOf(resource.metadata);
		origins.set(resolve(resource.path), origin);
		const base = resource.metadata.baseDir;
		if (origin.kind === "package" && base && !REMOTE_SOURCE.test(origin.packageSource ?? ""))
			localPackageDirs.add(base);
	}
	const extraPaths: string[] = [];
	const skillsDirExtra = !isScannedByPi(settings.skillsDir, options);
	if (skillsDirExtra) extraPaths.push(settings.skillsDir);
	// pi lists the skillsDir's skills at run time too (handed over through resources_discover):
	// they are the skillsDir's.

	// pi hands over every skill file it loaded: most are origins keys, resolved already (no resolve()
	// each), and the skillsDir is resolved once for all.
	let skillsDirReal: string | undefined;
	const unknown = (options.runtimeSkillFiles ?? []).filter((file) => {
		if (origins.has(file) || origins.has(resolve(file))) return false;
		if (!skillsDirExtra) return true;
		skillsDirReal ??= resolveReal(settings.skillsDir);
		return !isWithin(skillsDirReal, resolveReal(file));
	});
	const projectOrigins =
		unknown.length > 0 && !trusted ? await resolveUntrustedProject(options) : new Map<string, SkillOrigin>();
	for (const file of unknown) {
		if (!origins.has(resolve(file))) {
			origins.set(resolve(file), projectOrigins.get(resolve(file)) ?? { kind: "runtime", scope: "temporary" });
			extraPaths.push(file);
		}
	}
	const loaded = loadSkills({ cwd, agentDir, skillPaths: [...origins.keys(), ...extraPaths], includeDefaults: false });
	const roots = getWritableRoots({
		cwd,
		agentDir,
		trusted,
		settings,
		localPackageDirs: [...localPackageDirs],
		fs: options.fs,
	});
	// pi's loader keeps the path it was given for a skill file, an origins key: resolved already.
	const files = loaded.skills.map((skill) => (origins.has(skill.filePath) ? skill.filePath : resolve(skill.filePath)));
	const input = createPolicyInput(
		options,
		roots,
		files.map((file) => dirname(file)),
	);
	const skills = loaded.skills.map((skill, i): DiscoveredSkill => {
		const filePath = files[i];
		const origin = origins.get(filePath) ?? { kind: "skills-dir", scope: "user" };
		return describe({ name: skill.name, description: skill.description, filePath, origin }, input);
	});
	return { skills, diagnostics: loaded.diagnostics, roots };
}

interface LoadedSkill {
	readonly name: string;
	readonly description: string;
	/** Resolved, as pi's resolver or loader found it. */
	readonly filePath: string;
	readonly origin: SkillOrigin;
}

function describe(skill: LoadedSkill, input: PolicyInput): DiscoveredSkill {
	const { name, description, filePath, origin } = skill;
	const dir = /(^|[\\/])SKILL\.md$/.test(filePath) ? dirname(filePath) : undefined;
	return { name, description, filePath, dir, origin, ...classify(filePath, dir, origin, input) };
}
