// Path primitives every policy decision shares: containment (segment-wise, never a string prefix),
// symlink resolution for paths that may not exist yet, `~` expansion, the home folder and the
// project root. One definition each, so two modules can never disagree on what "inside" means.

import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { type FsOps, realFs } from "./fs-ops.ts";
import { pathExists } from "./fs-reads.ts";

/** An absolute POSIX path with no `.` or `..` segment, no doubled separator and no trailing one. */
const NOT_NORMAL = /\/\/|\/\.\.?(?:\/|$)|.\/$/;
const isNormalAbsolute = (path: string) => path.startsWith("/") && !NOT_NORMAL.test(path);

/** True when `child` is `parent` or lies below it (segment-wise, never a string prefix). */
export function isWithin(parent: string, child: string): boolean {
	// Normal absolute paths (nearly every call): whole segments compared without path.relative, which
	// resolves both paths again and was the largest cost of a first list of 1,000 skills.
	if (sep === "/" && isNormalAbsolute(parent) && isNormalAbsolute(child)) {
		if (child === parent) return true;
		const base = parent === "/" ? "/" : `${parent}/`;
		return child.startsWith(base) && !child.startsWith("..", base.length);
	}
	const rel = relative(parent, child);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Resolves every symlink of `path`; for a path that does not exist yet, resolves the nearest
 * existing ancestor and appends the rest, so a new file's containment is decided correctly.
 * A realpath that fails for any reason counts as missing: the climb goes on to the parent, and
 * when not even the root resolves, the absolute path is returned as it is.
 */
export function resolveReal(path: string, fs: FsOps = realFs): string {
	const absolute = resolve(path);
	const missing: string[] = [];
	let current = absolute;
	for (;;) {
		try {
			const real = fs.realpath(current);
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

/** The git root above cwd, or cwd itself outside a repository (a `.git` that cannot be seen is none). */
export function findProjectRoot(cwd: string, fs: FsOps = realFs): string {
	let dir = resolve(cwd);
	for (;;) {
		if (pathExists(fs, join(dir, ".git"))) return dir;
		const parent = dirname(dir);
		if (parent === dir) return resolve(cwd);
		dir = parent;
	}
}

const isInside = (segments: readonly string[], name: string): boolean => segments.includes(name);

/** A `.pi` folder's content other than `.pi/skills`: a project's settings, extensions and packages. */
function inDotPiOutsideSkills(segments: readonly string[]): boolean {
	return segments.some((segment, i) => segment === ".pi" && i + 1 < segments.length && segments[i + 1] !== "skills");
}

/**
 * Why no write may ever land at `real` (a symlink-free path), whatever a root or a setting says:
 * pi's own agent folder outside its `skills/` (settings, extensions, prompts, themes, sessions,
 * packages, this package's store), a project's `.pi/` outside `.pi/skills`, installed code under
 * `node_modules`, and files directly in the home folder. Undefined when none of these holds.
 */
export function getForbiddenReason(places: PiPlaces, real: string): string | undefined {
	if (isWithin(places.agentDirReal, real)) {
		if (isWithin(places.storeReal, real) || real === join(places.agentDirReal, "settings.json")) {
			return "the package's own settings, backups and logs are not writable through this tool";
		}
		if (isWithin(places.agentSkillsReal, real)) return undefined;
		return (
			`inside pi's own folder ${places.agentDir} (settings, extensions, packages, sessions): ` +
			"only its skills/ folder is writable"
		);
	}
	if (isWithin(places.agentSkillsReal, real)) return undefined;
	const segments = real.split(sep);
	if (inDotPiOutsideSkills(segments))
		return (
			"inside a project's .pi folder, where pi keeps its settings, extensions and packages: " +
			"only .pi/skills is writable"
		);
	if (isInside(segments, "node_modules"))
		return "inside node_modules (installed code: an update would overwrite the change)";
	const parent = dirname(real);
	if (parent === places.homeReal || dirname(parent) === parent)
		return "directly in the home folder or the filesystem root";
	return undefined;
}

/** pi's own places, symlinks resolved once for a run of checks (a discovery classifies thousands). */
export interface PiPlaces {
	readonly agentDir: string;
	readonly agentDirReal: string;
	readonly agentSkillsReal: string;
	/** `<agentDir>/selfskills`: this package's backups, journal, locks and audit log. */
	readonly storeReal: string;
	readonly homeReal: string;
}

export function getPiPlaces(agentDir: string, fs: FsOps = realFs): PiPlaces {
	return {
		agentDir,
		agentDirReal: resolveReal(agentDir, fs),
		agentSkillsReal: resolveReal(join(agentDir, "skills"), fs),
		storeReal: resolveReal(join(agentDir, "selfskills"), fs),
		homeReal: resolveReal(getHomeDir(), fs),
	};
}

/**
 * Why `root` can never be a writable root (a `skillsDir` or a local package's folder): it is or
 * holds the home folder or pi's agent folder, or it lies where getForbiddenReason forbids writes.
 */
export function getRootProblem(places: PiPlaces, root: string, fs: FsOps = realFs): string | undefined {
	const real = resolveReal(root, fs);
	if (isWithin(real, places.homeReal)) return `${root} is (or holds) the home folder`;
	if (isWithin(real, places.agentDirReal)) return `${root} is (or holds) pi's own folder ${places.agentDir}`;
	if (basename(real) === ".pi") return `${root} is a project's .pi folder (only .pi/skills may hold skills)`;
	// A skill folder inside the root: forbidden there means forbidden anywhere in the root.
	const reason = getForbiddenReason(places, join(real, "skill"));
	return reason === undefined ? undefined : `${root}: ${reason}`;
}

/*
 * The package's own store, private (folders 0700, files 0600) and never followed through a symlink:
 *
 *   <agentDir>/selfskills/backups/        every backup (layout atop backup-store.ts)
 *   <agentDir>/selfskills/journal/        a batch's commit journal until its commit point (journal.ts)
 *   <agentDir>/selfskills/audit.jsonl     one line per landed change (audit.ts)
 *   <agentDir>/selfskills/usage.jsonl     one line per use of a skill (usage.ts)
 *   <agentDir>/selfskills/created.jsonl   the skill folders this package created (origins.ts)
 *   <agentDir>/selfskills/proposals/      changes awaiting the person's review, one <id>.json each;
 *                                         decided/<id>.json until the model was told (proposals.ts)
 */
export function getSelfSkillsDir(agentDir: string): string {
	return join(agentDir, "selfskills");
}

export function getBackupsDir(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "backups");
}

export function getJournalDir(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "journal");
}

export function getAuditPath(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "audit.jsonl");
}

export function getUsagePath(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "usage.jsonl");
}

export function getCreatedPath(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "created.jsonl");
}

export function getProposalsDir(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "proposals");
}

/** The name an eval's throwaway folder starts with, under the temp folder: `<prefix><pid>-<random>`. */
export const EVAL_FOLDER_PREFIX = "selfskills-eval-";
