// A session's last discovery, reused only while a stat fingerprint proves the disk still gives
// the same answer. The fingerprint is a superset of what pi's resolver and loadSkills read: both
// settings files, and under every place pi scans (agent and project skills, `.agents/skills` up
// to the filesystem root, `~/.agents/skills`, the skillsDir, settings `skills` entries, each
// configured package's manifest entries and `skills/` folder) every folder, every `.md`,
// `package.json` and ignore file. Adding,
// removing or renaming an entry changes its folder's mtime; editing a file changes its own.
// An entry changed shortly before it was stamped (200 ms on a filesystem with sub-second
// timestamps, 3 s otherwise) could change again within the same clock tick and keep its mtime
// ("racy git"), so for those the content (folder names, file hash) is compared as well. Any
// doubt means a fresh discovery: a miss costs time, never correctness.
// A session's first discovery is stamped after pi read, off the call's path (in slices, finished
// by the next call at the latest): an entry whose mtime or ctime is older than the build's start
// less that window cannot have changed since before pi read it, and any later change moves its
// timestamp; a younger entry may have changed while pi read, so the cache does not trust the
// stamps and discovers again (in the background, stamped before the build as every later
// discovery is). The places pi starts from are also stat'ed before the build: one that vanished
// between pi's read and the walk leaves no timestamp behind.
// A call that names its skills (patch, write, delete, read, restore, history) checks the stamps
// outside every skill folder, everything in its own skills' folders, and of each skill pi loads
// before them the two entries that decide whether and under which name pi loads it: its folder (a
// new ignore file or a removed SKILL.md moves it) and its SKILL.md (a `name:` edited in place moves
// only that file). pi keeps the first skill of a name, so only a skill before a target can take its
// name; one after it cannot change which file the name means, and where it stands in pi's order moves
// only with a folder's entries or the settings, which are checked. The call skips the later skills'
// folders and SKILL.md and every other skill's bundled files and subfolders (pi never reads those
// while the SKILL.md loads); a call that gives a skill a new name, which must differ from every
// other, checks the later ones too (`laterNamesCurrent`). No cheaper signal than a stat per SKILL.md
// sees an in-place edit (a folder's mtime does not move, and fs.watch drops an inotify queue
// overflow without a word): a target late in pi's order costs more than an early one.
// The tool's own writes are followed under its write locks: a rewritten file (same folder entries,
// the bytes it wrote), a created skill (the only new entry of its root, holding only the SKILL.md
// pi's loader checked, or a restore's files too), placed among its siblings in the root's listing
// order, the order pi walks; new and removed bundled files (stamps only: pi reads nothing below a
// loaded SKILL.md's folder but it and the folder's ignore files); a whole skill deleted. So are pi's
// own edit, write and bash on skill files (side-doors.ts). Each is checked against the disk first:
// anything else changed, and the entry is dropped.

import type { Stats } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import type { LandedChange } from "../pipeline/commit.ts";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import {
	createPackageManager,
	describeSkill,
	discoverSkills,
	shareNameIndex,
	skillIndexNamed,
	skillNamed,
	type DiagnosticLike,
	type DiscoveredSkill,
	type DiscoverOptions,
	type Discovery,
	type SkillOrigin,
} from "./discovery.ts";
import { isWithin } from "../base/paths.ts";
import { sha256 } from "../store/read-ledger.ts";
import { getUserAgentsSkillsDir } from "./roots.ts";
import { getGlobalSettingsPath, getProjectSettingsPath } from "./settings.ts";
import { SKILL_FILE } from "./target.ts";
import { checkSkillContent } from "../checks/validation.ts";

/** Wider than any filesystem's timestamp granularity (FAT: 2 s). */
const RACY_MS = 3_000;

/**
 * For timestamps with a fraction of a second: a fine clock (ext4, xfs, btrfs, tmpfs, APFS keep
 * nanoseconds, taken from a kernel clock that ticks every 10 ms or faster).
 */
const FINE_RACY_MS = 200;

/** Files pi's skill walk may read: skill files, root-level .md skills, package manifests, ignore files. */
const WATCHED_FILE = /(\.md|^package\.json|^\.gitignore|^\.ignore|^\.fdignore)$/;

/** What a stat says about an entry (undefined: missing); timestamps at the fingerprint's resolution. */
interface Sig {
	readonly dev: number;
	readonly ino: number;
	readonly mode: number;
	readonly size: number;
	readonly mtime: number;
	readonly ctime: number;
}

interface Stamp {
	readonly sig: Sig | undefined;
	/** Changed within the racy window of the stamp: compare the content too. */
	readonly racy: boolean;
	/** Stamped after pi read, and changed since shortly before the build: what pi read is unknown. */
	readonly unsettled?: boolean;
	/** A folder's sorted entry names. */
	readonly names?: string;
	/** A racy file's sha256. */
	readonly hash?: string;
	/** Only whether it exists matters (a `.git` marks the project root; its churn does not). */
	readonly existenceOnly?: boolean;
}

interface Fingerprint {
	readonly stamps: Map<string, Stamp>;
	/** Whether each entry the walk listed is a symbolic link (its folder's listing says so: no lstat). */
	readonly links: Map<string, boolean>;
	/** The places pi scans (trees and package roots): one inside a skill folder is not that skill's. */
	readonly places: ReadonlySet<string>;
	/** Timestamps are compared at this resolution (0: as the filesystem gives them). */
	readonly granularityMs: number;
	/** Where the stamps are taken and checked (the call's FsOps). */
	readonly fs: FsOps;
}

/**
 * When stamps are taken. Before the build (`since`: the stamp time): a change while pi reads moves a
 * stamp. After it (`builtAt`: the build's start; `before`: the places pi starts from, stat'ed first):
 * an entry changed since shortly before the build is unsettled.
 */
type StampRule =
	| { readonly since: number; readonly builtAt?: undefined }
	| { readonly builtAt: number; readonly before: ReadonlyMap<string, Stats | undefined> };

interface Entry {
	readonly key: string;
	readonly options: DiscoverOptions;
	readonly fingerprint: Fingerprint;
	discovery: Discovery;
	/** No settings `skills` entry is a glob or an override (`!`, `+`, `-`): every file a place holds is enabled. */
	readonly plainEntries: boolean;
	/** The stamps still being taken after pi read (a session's first discovery); awaited before any use. */
	settling?: Settling;
	/** The stamps split by the skill folder (or single-file skill) they lie in; built on first use. */
	groups?: StampGroups;
	/** Each skill's index in discovery.skills by its file; built on first use. */
	fileIndex?: Map<string, number>;
}

interface StampGroups {
	/**
	 * Checked for every targeted call: the stamps outside every skill (settings, markers, roots,
	 * folders that group skills, manifests, ignore files, a SKILL.md pi does not load).
	 */
	readonly shared: readonly string[];
	/** Each discovered skill's folder and SKILL.md, in pi's order: checked up to the last target. */
	readonly heads: ReadonlyArray<readonly string[]>;
	readonly byOwner: ReadonlyMap<string, readonly string[]>;
}

export interface DiscoveryCacheStats {
	hits: number;
	misses: number;
	/** Misses whose result could not be kept (a package not installed, a skill outside the stamped places). */
	unkept: number;
	/** Discoveries run again after a call returned: the first one's late stamps found an entry changed too recently. */
	rebuilt: number;
	/** Creates of the tool followed into the cache (the skill added without a new discovery). */
	followedCreates: number;
}

export interface DiscoveryCache {
	readonly stats: Readonly<DiscoveryCacheStats>;
	/**
	 * `targets`: the names of the only skills the call acts on. The check then skips the other
	 * skills' bundled files and subfolders, and the folder and SKILL.md of each skill pi loads after
	 * the last target (none of them can take a target's name); every stamp that could change which
	 * file a target's name means, or how it is treated (settings, roots, grouping folders, manifests,
	 * ignore files, the earlier skills' folders and SKILL.md, everything in the named skills' folders)
	 * is still compared. A name the cached discovery lacks gets the full check.
	 */
	discover(options: DiscoverOptions, targets?: readonly string[]): Promise<Discovery>;
	/**
	 * For a call served by the targeted check: whether the skills pi loads after its targets, whose
	 * folder and SKILL.md it skipped, still load under the names `discovery` gives them. A call that
	 * gives a target a new name needs every other name; false: discover again with the full check.
	 */
	laterNamesCurrent(discovery: Discovery, targets: readonly string[]): boolean;
	/**
	 * Called under the write locks after a commit landed: the cache follows the tool's own
	 * writes when nothing else changed (same folder entries, the bytes it wrote, a SKILL.md
	 * that loads with its old name and diagnostics), and is dropped otherwise.
	 */
	noteLanded(changes: readonly LandedChange[]): void;
	/** Resolves once the last discovery's stamps are taken (a session's first is stamped after the call). */
	settled(): Promise<void>;
	clear(): void;
}

function statOf(fs: FsOps, path: string): Stats | undefined {
	try {
		// Most stamped paths that are missing stay missing: no exception for those.
		return fs.stat(path);
	} catch {
		return undefined;
	}
}

function sigOf(stat: Stats | undefined, granularityMs: number): Sig | undefined {
	if (!stat) return undefined;
	const at = (t: number) => (granularityMs > 0 ? Math.floor(t / granularityMs) : t);
	return {
		dev: stat.dev,
		ino: stat.ino,
		mode: stat.mode,
		size: stat.size,
		mtime: at(stat.mtimeMs),
		ctime: at(stat.ctimeMs),
	};
}

/** Whether `stat` still says what `stamp` recorded (compared field by field: no string per stat). */
function sameSig(stat: Stats | undefined, stamp: Stamp, granularityMs: number): boolean {
	const sig = stamp.sig;
	if (!stat || !sig) return !stat && !sig;
	if (stamp.existenceOnly) return stat.isDirectory() === ((sig.mode & 0o170000) === 0o040000);
	const at = (t: number) => (granularityMs > 0 ? Math.floor(t / granularityMs) : t);
	return (
		sig.ino === stat.ino &&
		sig.size === stat.size &&
		sig.mtime === at(stat.mtimeMs) &&
		sig.ctime === at(stat.ctimeMs) &&
		sig.mode === stat.mode &&
		sig.dev === stat.dev
	);
}

function namesOf(fs: FsOps, dir: string): string | undefined {
	try {
		return fs.readdir(dir).sort().join("\0");
	} catch {
		return undefined;
	}
}

function readOrUndefined(fs: FsOps, path: string): Buffer | undefined {
	try {
		return fs.readFile(path);
	} catch {
		return undefined;
	}
}

/**
 * The bytes at `path` when they are the ones `change` wrote (compared with the bytes the commit
 * passed on, a memory compare; else by hash), undefined otherwise.
 */
function writtenBytes(fs: FsOps, path: string, change: LandedChange): Buffer | undefined {
	const bytes = readOrUndefined(fs, path);
	return bytes && (change.after ? bytes.equals(change.after) : sha256(bytes) === change.newHash) ? bytes : undefined;
}

/** A folder stamp's sorted entry names as a list. */
const namesList = (names: string): string[] => (names === "" ? [] : names.split("\0"));

function hashOf(fs: FsOps, path: string): string | undefined {
	const bytes = readOrUndefined(fs, path);
	return bytes && sha256(bytes);
}

/** How long after its last change an entry could still change without a new timestamp. */
function racyWindow(stat: Stats, granularityMs: number): number {
	const fine = stat.mtimeMs % 1000 !== 0 && stat.ctimeMs % 1000 !== 0;
	return Math.max(fine ? FINE_RACY_MS : RACY_MS, 2 * granularityMs);
}

/** Whether two stats of one path say the same (both missing, or the same entry unchanged). */
function sameStat(a: Stats | undefined, b: Stats | undefined): boolean {
	if (!a || !b) return !a && !b;
	return (
		a.ino === b.ino &&
		a.dev === b.dev &&
		a.mode === b.mode &&
		a.size === b.size &&
		a.mtimeMs === b.mtimeMs &&
		a.ctimeMs === b.ctimeMs
	);
}

function stampOf(
	fs: FsOps,
	path: string,
	stat: Stats | undefined,
	granularityMs: number,
	rule: StampRule,
	names?: string,
): Stamp {
	const isDir = stat?.isDirectory() === true;
	const changed = stat === undefined ? 0 : Math.max(stat.mtimeMs, stat.ctimeMs);
	if (rule.builtAt !== undefined) {
		// Stamped after pi read: trusted only if unchanged since before the build began.
		const unsettled =
			(stat !== undefined && changed >= rule.builtAt - racyWindow(stat, granularityMs)) ||
			(rule.before.has(path) && !sameStat(rule.before.get(path), stat));
		return {
			sig: sigOf(stat, granularityMs),
			racy: false,
			names: isDir ? (names ?? namesOf(fs, path)) : undefined,
			...(unsettled ? { unsettled } : {}),
		};
	}
	const racy = stat !== undefined && changed >= rule.since - racyWindow(stat, granularityMs);
	return {
		sig: sigOf(stat, granularityMs),
		racy,
		names: isDir ? (names ?? namesOf(fs, path)) : undefined,
		hash: racy && !isDir ? hashOf(fs, path) : undefined,
	};
}

/**
 * Stamps `path` and, for a folder, everything under it pi could scan (not dot folders, not
 * node_modules); pauses after each folder, so a walk after the call can yield to pi in between.
 */
function* stampTree(
	path: string,
	fingerprint: Fingerprint,
	rule: StampRule,
	visited: Set<string>,
): Generator<void, void, void> {
	const { stamps, granularityMs, fs } = fingerprint;
	if (stamps.has(path)) return;
	const stat = statOf(fs, path);
	if (!stat?.isDirectory()) {
		stamps.set(path, stampOf(fs, path, stat, granularityMs, rule));
		return;
	}
	const entries = (() => {
		try {
			return fs.readdirEntries(path);
		} catch {
			return [];
		}
	})();
	stamps.set(
		path,
		stampOf(
			fs,
			path,
			stat,
			granularityMs,
			rule,
			entries
				.map((e) => e.name)
				.sort()
				.join("\0"),
		),
	);
	const id = `${stat.dev}:${stat.ino}`;
	if (visited.has(id)) return; // A symlink loop.
	visited.add(id);
	yield;
	for (const entry of entries) {
		const child = join(path, entry.name);
		fingerprint.links.set(child, entry.isSymbolicLink());
		if (WATCHED_FILE.test(entry.name) && !entry.isDirectory()) yield* stampTree(child, fingerprint, rule, visited);
		else if (
			!entry.name.startsWith(".") &&
			entry.name !== "node_modules" &&
			(entry.isDirectory() || entry.isSymbolicLink())
		)
			yield* stampTree(child, fingerprint, rule, visited);
	}
}

function isFresh(fingerprint: Fingerprint, paths: Iterable<string> = fingerprint.stamps.keys()): boolean {
	const now = Date.now();
	for (const path of paths) {
		const stamp = fingerprint.stamps.get(path);
		if (!stamp || stamp.unsettled) return false;
		const stat = statOf(fingerprint.fs, path);
		if (!sameSig(stat, stamp, fingerprint.granularityMs)) return false;
		if (!stamp.racy || !stat) continue;
		const fs = fingerprint.fs;
		if (stat.isDirectory() ? namesOf(fs, path) !== stamp.names : hashOf(fs, path) !== stamp.hash) return false;
		// Same content, and its timestamp is now old enough that any later change must move it.
		if (Math.max(stat.mtimeMs, stat.ctimeMs) < now - racyWindow(stat, fingerprint.granularityMs))
			fingerprint.stamps.set(path, { ...stamp, racy: false });
	}
	return true;
}

/** A settings `skills` entry as the folder to stamp: glob and override marks cut off. */
function entryBase(entry: string, baseDir: string): string {
	const plain = entry.trim().replace(/^[!+-]/, "");
	const glob = plain.search(/[*?[{]/);
	const head = glob === -1 ? plain : dirname(plain.slice(0, glob + 1));
	return head.startsWith("~") ? join(homedir(), head.slice(1)) : resolve(baseDir, head);
}

type PackageManagers = ReturnType<typeof createPackageManager>;

interface Places {
	/** Stamped whole: every folder and watched file under each. */
	readonly trees: string[];
	/** Stamped alone (a package root: its entries, not everything under it). */
	readonly folders: string[];
	/** Stamped for existence only. */
	readonly markers: string[];
}

/**
 * Where pi looks for skills inside an installed package: each manifest `pi.skills` entry (up to
 * its first glob) and the conventional `skills/` folder; the root and package.json are stamped
 * too, so a new folder or a changed manifest is seen. Not the whole package: that may be a repo.
 */
function packagePlaces(fs: FsOps, root: string, places: Places): void {
	places.folders.push(root);
	places.trees.push(join(root, "package.json"), join(root, "skills"));
	let entries: unknown;
	try {
		entries = (JSON.parse(fs.readFile(join(root, "package.json")).toString("utf8")) as { pi?: { skills?: unknown } })
			.pi?.skills;
	} catch {
		return; // No manifest: pi uses the conventional folder only.
	}
	if (!Array.isArray(entries)) return;
	for (const entry of entries)
		if (typeof entry === "string" && !/^[!+-]/.test(entry.trim())) places.trees.push(entryBase(entry, root));
}

/**
 * Every place pi's resolver could find a skill for these options; undefined when one cannot be
 * known (a package not installed).
 */

function watchedPlaces(
	options: DiscoverOptions,
	{ settingsManager, packageManager }: PackageManagers,
): Places | undefined {
	const { cwd, agentDir } = options;
	const places: Places = {
		trees: [
			getGlobalSettingsPath(agentDir),
			getProjectSettingsPath(cwd),
			join(agentDir, "skills"),
			join(cwd, ".pi", "skills"),
			getUserAgentsSkillsDir(),
			options.settings.skillsDir,
			...(options.runtimeSkillFiles ?? []),
		],
		folders: [],
		markers: [],
	};
	for (let dir = resolve(cwd); ; dir = dirname(dir)) {
		places.trees.push(join(dir, ".agents", "skills"));
		places.markers.push(join(dir, ".git"));
		if (dirname(dir) === dir) break;
	}
	const scopes = [
		{ scope: "user", settings: settingsManager.getGlobalSettings(), baseDir: agentDir },
		{ scope: "project", settings: settingsManager.getProjectSettings(), baseDir: join(cwd, ".pi") },
	] as const;
	for (const { scope, settings, baseDir } of scopes) {
		for (const pkg of settings.packages ?? []) {
			const installed = packageManager.getInstalledPath(typeof pkg === "string" ? pkg : pkg.source, scope);
			if (!installed) return undefined;
			packagePlaces(options.fs ?? realFs, resolve(installed), places);
		}
		for (const entry of settings.skills ?? []) places.trees.push(entryBase(entry, baseDir));
	}
	return { ...places, trees: places.trees.map((p) => resolve(p)) };
}

function emptyFingerprint(places: Places, granularityMs: number, fs: FsOps): Fingerprint {
	return {
		stamps: new Map(),
		links: new Map(),
		places: new Set([...places.trees, ...places.folders]),
		granularityMs,
		fs,
	};
}

/** Each place pi starts from, stat'ed before the build: one gone by the late walk is a change, not a miss. */
function statPlaces(places: Places, fs: FsOps): Map<string, Stats | undefined> {
	const before = new Map<string, Stats | undefined>();
	for (const path of [...places.markers, ...places.trees, ...places.folders]) before.set(path, statOf(fs, path));
	return before;
}

/** Takes every stamp of `fingerprint`, pausing after each folder. */
function* stampPlaces(places: Places, fingerprint: Fingerprint, rule: StampRule): Generator<void, void, void> {
	const { stamps, granularityMs, fs } = fingerprint;
	for (const marker of places.markers) {
		const stat = statOf(fs, marker);
		// Only whether it exists matters: a late stamp is unsettled when that differs from before the build.
		const moved = rule.builtAt !== undefined && (rule.before.get(marker) === undefined) !== (stat === undefined);
		stamps.set(marker, {
			sig: sigOf(stat, granularityMs),
			racy: false,
			existenceOnly: true,
			...(moved ? { unsettled: true } : {}),
		});
	}
	const visited = new Set<string>();
	for (const tree of places.trees) yield* stampTree(tree, fingerprint, rule, visited);
	// After the trees: a folder that is also a tree keeps its whole-tree stamps.
	for (const folder of places.folders)
		if (!stamps.has(folder)) stamps.set(folder, stampOf(fs, folder, statOf(fs, folder), granularityMs, rule));
}

function takeFingerprint(places: Places, granularityMs: number, fs: FsOps): Fingerprint {
	const fingerprint = emptyFingerprint(places, granularityMs, fs);
	for (const _ of stampPlaces(places, fingerprint, { since: Date.now() }));
	return fingerprint;
}

const SHARED_FILE = /^(package\.json|\.gitignore|\.ignore|\.fdignore)$/;

const ownerOf = (skill: DiscoveredSkill) => skill.dir ?? skill.filePath;

/**
 * Each stamp under the skill folder (or single-file skill) that holds it, each skill's folder and
 * SKILL.md by the skill (an edit there can make that skill a twin of any name, hide it, or, its
 * SKILL.md ignored, let pi find skills in its subfolders); the rest are shared.
 */
function groupStamps(entry: Entry): StampGroups {
	const skills = entry.discovery.skills;
	const owners = new Set(skills.map(ownerOf));
	const headOf = new Map<string, number>();
	skills.forEach((s, i) => {
		headOf.set(ownerOf(s), i);
		headOf.set(s.filePath, i);
	});
	const shared: string[] = [];
	const heads: string[][] = skills.map(() => []);
	const byOwner = new Map<string, string[]>();
	for (const path of entry.fingerprint.stamps.keys()) {
		const head = headOf.get(path);
		if (head !== undefined) {
			heads[head].push(path);
			continue;
		}
		let owner: string | undefined;
		// An ignore file or manifest can hide or add skills anywhere (and move the writable roots): always checked.
		for (let p = path; !SHARED_FILE.test(basename(path)); p = dirname(p)) {
			if (owners.has(p)) {
				owner = p;
				break;
			}
			// A place pi scans on its own (a settings entry or package inside some skill folder).
			if (entry.fingerprint.places.has(p) || dirname(p) === p) break;
		}
		if (owner === undefined) shared.push(path);
		else {
			const list = byOwner.get(owner);
			if (list) list.push(path);
			else byOwner.set(owner, [path]);
		}
	}
	return { shared, heads, byOwner };
}

/**
 * The stamps a call acting on `targets` depends on, and those it skips of the skills after its last
 * target (their folders and SKILL.md); undefined when it needs the full check.
 */
function targetedPaths(
	entry: Entry,
	targets: readonly string[],
): { paths: string[]; later: () => string[] } | undefined {
	entry.groups ??= groupStamps(entry);
	const { shared, heads, byOwner } = entry.groups;
	const owned: string[] = [];
	let last = -1;
	for (const name of targets) {
		// The tool's own writes never change a name or a place in pi's order: the groups still hold.
		const index = skillIndexNamed(entry.discovery.skills, name);
		// Not found: the refusal lists the names nearest to it, which any skill can change.
		if (index === undefined) return undefined;
		last = Math.max(last, index);
		owned.push(...(byOwner.get(ownerOf(entry.discovery.skills[index])) ?? []));
	}
	const paths = [...shared, ...owned];
	for (let i = 0; i <= last; i++) paths.push(...heads[i]);
	return { paths, later: () => heads.slice(last + 1).flat() };
}

/**
 * The skill files pi handed the session, as a digest taken once per list: index.ts hands over pi's
 * whole list before each prompt (a new list, never one changed in place), 0.6 MB of JSON at 10,000
 * skills, and the key is built on every call (1.4 ms for that JSON alone).
 */
const runtimeDigests = new WeakMap<readonly string[], string>();

function runtimeDigestOf(files: readonly string[] | undefined): string {
	if (files === undefined || files.length === 0) return "";
	let digest = runtimeDigests.get(files);
	if (digest === undefined) runtimeDigests.set(files, (digest = sha256(JSON.stringify(files))));
	return digest;
}

function keyOf(options: DiscoverOptions): string {
	const { cwd, agentDir, trusted, settings, runtimeSkillFiles } = options;
	const runtime = runtimeDigestOf(runtimeSkillFiles);
	return JSON.stringify({ cwd, agentDir, trusted, settings, runtime, home: getUserAgentsSkillsDir() });
}

/** The tool's own write, followed into the cache; false when the entry must be dropped instead. */
function followWrite(entry: Entry, change: LandedChange): boolean {
	const { stamps, granularityMs, fs } = entry.fingerprint;
	const file = resolve(change.absPath);
	const dir = dirname(file);
	const dirStamp = stamps.get(dir);
	if (change.newHash === null || change.oldHash === null || !dirStamp || dirStamp.unsettled) return false;
	const names = namesOf(fs, dir);
	if (names === undefined || names !== dirStamp.names) return false;
	stamps.set(dir, { sig: sigOf(statOf(fs, dir), granularityMs), racy: true, names });
	if (!stamps.has(file)) return true;
	if (stamps.get(file)?.unsettled) return false;
	const stat = statOf(fs, file);
	const bytes = writtenBytes(fs, file, change);
	if (!bytes) return false;
	stamps.set(file, { sig: sigOf(stat, granularityMs), racy: true, hash: change.newHash });
	// Skill files keep their place in the list: the tool's own writes change descriptions only.
	const index = fileIndexOf(entry).get(file) ?? -1;
	const { diagnostics } = entry.discovery;
	const own = diagnostics.flatMap((d, i) => (d.path !== undefined && resolve(d.path) === file ? [i] : []));
	if (index === -1) return own.length === 0;
	const skill = entry.discovery.skills[index];
	if (skill.dir === undefined) return false;
	// The bytes on disk are the ones gate 6 checked: pi's verdict on them is in the check cache.
	const check = checkSkillContent(bytes.toString("utf8"), basename(skill.dir));
	if (check.name !== skill.name || check.description === undefined) return false;
	const warnings = followWarnings(diagnostics, own, check.loaderDiagnostics);
	if (!warnings) return false;
	const skills = [...entry.discovery.skills];
	skills[index] = { ...skill, description: check.description };
	shareNameIndex(entry.discovery.skills, skills);
	entry.discovery = { ...entry.discovery, skills, diagnostics: warnings };
	return true;
}

/**
 * A discovery's diagnostics with the warnings pi's loader gives a rewritten skill file in place of
 * its old ones (`own`: their places), or undefined when that place is unknown. pi's loader lists a
 * loaded file's warnings together, with the path it was given, and their text depends on the
 * frontmatter and the folder's name alone; a file that had none has none after gate 6.
 */
function followWarnings(
	diagnostics: readonly DiagnosticLike[],
	own: readonly number[],
	fresh: readonly { readonly type: string; readonly message: string }[],
): readonly DiagnosticLike[] | undefined {
	if (own.length === 0) return fresh.length === 0 ? diagnostics : undefined;
	const first = own[0];
	const path = diagnostics[first].path;
	if (own.some((at, k) => at !== first + k || diagnostics[at].type !== "warning")) return undefined;
	if (fresh.some((d) => d.type !== "warning")) return undefined;
	return [
		...diagnostics.slice(0, first),
		...fresh.map((d) => ({ type: d.type, message: d.message, path })),
		...diagnostics.slice(first + own.length),
	];
}

/** The folder of the skill pi loads from `<dir>/SKILL.md` that holds `change`'s file, with the file's path segments. */
function loadedSkillOf(
	entry: Entry,
	change: LandedChange,
): { dir: string; index: number; segments: string[] } | undefined {
	const segments = change.relPath.split("/");
	let dir = resolve(change.absPath);
	for (const _ of segments) dir = dirname(dir);
	if (join(dir, ...segments) !== resolve(change.absPath)) return undefined;
	const index = fileIndexOf(entry).get(join(dir, SKILL_FILE));
	if (index === undefined || entry.discovery.skills[index].dir !== dir) return undefined;
	// A place pi scans inside the folder (or the folder itself, a package root) reads more than its SKILL.md.
	if (scansInside(entry, dir)) return undefined;
	return { dir, index, segments };
}

/** Each skill's index in the entry's discovery by its file, built on first use. */
function fileIndexOf(entry: Entry): Map<string, number> {
	entry.fileIndex ??= new Map(entry.discovery.skills.map((s, i) => [s.filePath, i]));
	return entry.fileIndex;
}

const scannedPlaces = new WeakMap<Discovery, readonly string[]>();

/**
 * The places pi scans on its own, where it reads more than a skill folder's SKILL.md (settings
 * entries, package roots, the trees), once per discovery: the skill files pi handed the session
 * (each is a place: index.ts keeps pi's list, 10,000 at 10,000 skills) are left out while each is
 * the SKILL.md of a skill found where pi looks anyway, which pi reads there and nothing beside it.
 */
function placesReadingMore(entry: Entry): readonly string[] {
	let places = scannedPlaces.get(entry.discovery);
	if (places === undefined) {
		const index = fileIndexOf(entry);
		const { skills } = entry.discovery;
		const found = (place: string) => {
			const at = index.get(place);
			return at !== undefined && basename(place) === SKILL_FILE && skills[at].origin.kind !== "runtime";
		};
		places = [...entry.fingerprint.places].filter((place) => !found(place));
		scannedPlaces.set(entry.discovery, places);
	}
	return places;
}

/** Whether pi scans a place of its own at or inside `dir` (a settings entry, a package root): it reads more there. */
function scansInside(entry: Entry, dir: string): boolean {
	return placesReadingMore(entry).some((place) => isWithin(dir, place));
}

/**
 * The tool's own new and removed files below the folders of skills pi loads (bundled files, never
 * a SKILL.md), followed into the fingerprint; false when the entry must be dropped instead. pi
 * reads nothing below a folder whose SKILL.md it loads but that file and the folder's ignore files,
 * so the discovery stays as it is: only the stamps move. Each folder on the way must now list
 * exactly what it listed plus the files (and folders) created, less the files removed; new folders
 * and files must be plain ones, a new file the bytes written. The stamps then say what a fresh walk
 * would: the changed folders with their new listings, a new watched file with its hash, a removed
 * file none.
 */
function followBundled(entry: Entry, changes: readonly LandedChange[]): boolean {
	if (changes.length === 0) return true;
	const { stamps, granularityMs, fs, links } = entry.fingerprint;
	/** Each folder's listing as the changes leave it, from its stamp (or empty: a folder they made). */
	const listings = new Map<string, Set<string>>();
	const made = new Set<string>();
	const listingOf = (dir: string): Set<string> | undefined => {
		let names = listings.get(dir);
		if (names) return names;
		const stamp = stamps.get(dir);
		if (made.has(dir)) names = new Set();
		else if (stamp?.names === undefined || stamp.unsettled) return undefined;
		else names = new Set(namesList(stamp.names));
		listings.set(dir, names);
		return names;
	};
	const files: Array<{ path: string; change: LandedChange; owner: string }> = [];
	const ownerOf = new Map<string, string>();
	for (const change of changes) {
		const skill = loadedSkillOf(entry, change);
		// Hidden files (an ignore file pi would read) and node_modules: the tool writes none, and the walk skips them.
		if (!skill || skill.segments.some((name) => name.startsWith(".") || name === "node_modules")) return false;
		const created = change.oldHash === null;
		let dir = skill.dir;
		for (const [i, name] of skill.segments.entries()) {
			const path = join(dir, name);
			const last = i === skill.segments.length - 1;
			const names = listingOf(dir);
			if (!names) return false;
			if (last) {
				if (names.has(name) === created || (created && stamps.has(path))) return false;
				if (created) names.add(name);
				else names.delete(name);
			} else if (!names.has(name)) {
				// A delete leaves its folders; only a new file brings new ones.
				if (!created) return false;
				names.add(name);
				made.add(path);
				ownerOf.set(path, skill.dir);
			}
			dir = path;
		}
		files.push({ path: resolve(change.absPath), change, owner: skill.dir });
	}
	const added: Array<[string, string]> = [];
	const removed = new Map<string, string>();
	for (const dir of made) if (!isPlain(fs, dir, true)) return false;
	for (const [dir, names] of listings) {
		const now = namesOf(fs, dir);
		if (now === undefined || now !== [...names].sort().join("\0")) return false;
		const owner = ownerOf.get(dir);
		if (owner !== undefined) added.push([dir, owner]);
		stamps.set(dir, { sig: sigOf(statOf(fs, dir), granularityMs), racy: true, names: now });
	}
	for (const dir of made) links.set(dir, false);
	for (const { path, change, owner } of files) {
		if (change.newHash === null) {
			if (stamps.delete(path)) removed.set(path, owner);
			links.delete(path);
			continue;
		}
		if (!isPlain(fs, path, false)) return false;
		links.set(path, false);
		if (!WATCHED_FILE.test(basename(path))) continue;
		if (!writtenBytes(fs, path, change)) return false;
		stamps.set(path, { sig: sigOf(statOf(fs, path), granularityMs), racy: true, hash: change.newHash });
		added.push([path, owner]);
	}
	if (entry.groups) entry.groups = regroup(entry.groups, added, removed);
	return true;
}

/**
 * The groups with new stamps below skill folders put in and removed ones taken out (each path with
 * its skill's folder), split as groupStamps splits them: an ignore file or manifest is shared.
 */
function regroup(
	groups: StampGroups,
	added: ReadonlyArray<readonly [string, string]>,
	removed: ReadonlyMap<string, string>,
): StampGroups {
	const kept = (paths: readonly string[]) => paths.filter((p) => !removed.has(p));
	const shared = kept(groups.shared);
	const byOwner = new Map(groups.byOwner);
	for (const owner of new Set(removed.values())) byOwner.set(owner, kept(byOwner.get(owner) ?? []));
	for (const [path, owner] of added) {
		if (SHARED_FILE.test(basename(path))) shared.push(path);
		else byOwner.set(owner, [...(byOwner.get(owner) ?? []), path]);
	}
	return { shared, heads: groups.heads, byOwner };
}

/**
 * The tool's own delete of a whole skill, followed into the cache; false when the entry must be
 * dropped instead. Followed when the folder is gone, its root now lists exactly what it listed less
 * the folder, no place pi scans lay inside it, and no other skill of its name waits behind it (pi
 * would load that one now: a collision names it). The skill leaves the discovery with its own
 * warnings; every stamp below its folder goes.
 */
function followSkillDelete(entry: Entry, change: LandedChange): boolean {
	const { stamps, granularityMs, fs, links } = entry.fingerprint;
	const skill = loadedSkillOf(entry, change);
	if (!skill || skill.segments.length !== 1 || !entry.plainEntries || links.get(skill.dir) === true) return false;
	const { dir, index } = skill;
	// pi's list still names the file: a fresh discovery reports it missing.
	if (entry.fingerprint.places.has(join(dir, SKILL_FILE))) return false;
	const root = dirname(dir);
	const rootStamp = stamps.get(root);
	if (rootStamp?.names === undefined || rootStamp.unsettled || statOf(fs, dir) !== undefined) return false;
	const names = namesOf(fs, root);
	const before = namesList(rootStamp.names);
	if (names === undefined || names !== before.filter((n) => n !== basename(dir)).join("\0")) return false;
	const { skills, diagnostics } = entry.discovery;
	const name = skills[index].name;
	if (diagnostics.some((d) => d.type === "collision" && d.message === `name "${name}" collision`)) return false;
	const inside = (path: string) => isWithin(dir, resolve(path));
	for (const path of [...stamps.keys()]) if (inside(path)) stamps.delete(path);
	for (const path of [...links.keys()]) if (inside(path)) links.delete(path);
	stamps.set(root, { sig: sigOf(statOf(fs, root), granularityMs), racy: true, names });
	entry.discovery = {
		...entry.discovery,
		skills: skills.filter((_, i) => i !== index),
		diagnostics: diagnostics.filter((d) => d.path === undefined || !inside(d.path)),
	};
	const groups = entry.groups;
	if (groups) {
		const byOwner = new Map(groups.byOwner);
		byOwner.delete(dir);
		entry.groups = {
			shared: groups.shared.filter((p) => !inside(p)),
			heads: groups.heads.filter((_, i) => i !== index),
			byOwner,
		};
	}
	entry.fileIndex = undefined;
	return true;
}

/**
 * The tool's own changes followed into the cache, each kind by its follower; false when the entry
 * must be dropped instead. A skill deleted whole takes its files' changes with it; a new skill comes
 * first (a restore brings its files back with it), then new and removed bundled files together (a
 * batch may add several to one folder), then rewrites, whose folders must list what they listed.
 */
function followLanded(entry: Entry, changes: readonly LandedChange[]): boolean {
	const deleted = changes.filter((c) => c.relPath === SKILL_FILE && c.newHash === null);
	for (const change of deleted) if (!followSkillDelete(entry, change)) return false;
	const gone = deleted.map((c) => dirname(resolve(c.absPath)));
	const rest = changes.filter((c) => !gone.some((dir) => isWithin(dir, resolve(c.absPath))));
	const bundled = rest.filter((c) => c.relPath !== SKILL_FILE && (c.oldHash === null || c.newHash === null));
	const created = rest.filter((c) => c.relPath === SKILL_FILE && c.oldHash === null);
	for (const change of created) {
		const dir = dirname(resolve(change.absPath));
		const withFiles = bundled.some((c) => isWithin(dir, resolve(c.absPath)));
		if (!followCreate(entry, change, withFiles)) return false;
	}
	if (!followBundled(entry, bundled)) return false;
	return rest.every((c) => bundled.includes(c) || created.includes(c) || followWrite(entry, c));
}

const IGNORE_FILES = [".gitignore", ".ignore", ".fdignore"];

/** An entry that is itself a folder (or a file), no symbolic link to one. */
function isPlain(fs: FsOps, path: string, folder: boolean): boolean {
	try {
		const stat = fs.lstat(path);
		return folder ? stat.isDirectory() : stat.isFile();
	} catch {
		return false;
	}
}

const sameOrigin = (a: SkillOrigin, b: SkillOrigin) =>
	a.kind === b.kind && a.scope === b.scope && a.packageSource === b.packageSource;

/**
 * The tool's own create of a skill folder (or a restore of one), followed into the cache; false when
 * the entry must be dropped instead. Followed only when the new folder is the only new entry of its
 * root and holds only the SKILL.md written, pi's loader reads that file under the folder's name
 * without a diagnostic, no skill has that name yet, and nothing can treat the new skill unlike the
 * root's other skills: no glob or
 * override among the settings `skills` entries, no ignore file or SKILL.md in the root or above it,
 * no place pi scans inside the root. Those siblings are then one run of the discovery in the
 * root's listing order (the order pi walks it): the new skill takes its listing place in that run,
 * with their origin. Anything else (an empty root, siblings from two places) is a miss.
 */
function followCreate(entry: Entry, change: LandedChange, withFiles = false): boolean {
	const { stamps, granularityMs, fs, places, links } = entry.fingerprint;
	const file = resolve(change.absPath);
	const dir = dirname(file);
	const root = dirname(dir);
	const name = basename(dir);
	const rootStamp = stamps.get(root);
	if (!entry.plainEntries || change.newHash === null || change.relPath !== "SKILL.md" || basename(file) !== "SKILL.md")
		return false;
	if (rootStamp?.names === undefined || rootStamp.unsettled || stamps.has(dir) || stamps.has(file)) return false;
	let listing: string[];
	try {
		listing = fs.readdir(root);
	} catch {
		return false;
	}
	const before = namesList(rootStamp.names);
	const names = [...listing].sort().join("\0");
	if (names !== [...before, name].sort().join("\0")) return false;
	// Files written with it are followed next (followBundled), from a folder that held only its SKILL.md.
	if ((!withFiles && namesOf(fs, dir) !== SKILL_FILE) || !isPlain(fs, dir, true) || !isPlain(fs, file, false))
		return false;
	const bytes = writtenBytes(fs, file, change);
	if (!bytes) return false;
	for (let p = root; ; p = dirname(p)) {
		if ([SKILL_FILE, ...IGNORE_FILES].some((n) => stamps.get(join(p, n))?.sig !== undefined)) return false;
		if (dirname(p) === p) break;
	}
	// A place inside the root is read apart from the root's run (the skill files pi handed the session aside).
	if (places.has(file) || placesReadingMore(entry).some((place) => place !== root && isWithin(root, place)))
		return false;
	const skills = entry.discovery.skills;
	const prefix = `${root}${sep}`;
	const first = skills.findIndex((s) => s.filePath.startsWith(prefix));
	if (first === -1) return false;
	let end = first;
	while (end < skills.length && skills[end].filePath.startsWith(prefix)) end++;
	for (let i = end; i < skills.length; i++) if (skills[i].filePath.startsWith(prefix)) return false;
	const origin = skills[first].origin;
	if (origin.kind === "package" || origin.kind === "runtime") return false;
	const order = new Map(listing.map((n, i) => [n, i]));
	const own = order.get(name) ?? -1;
	let at = end;
	let last = -1;
	for (let i = first; i < end; i++) {
		const rank = order.get(skills[i].filePath.slice(prefix.length).split(sep)[0]);
		if (rank === undefined || rank < last || !sameOrigin(skills[i].origin, origin)) return false;
		last = rank;
		if (at === end && rank > own) at = i;
	}
	// The bytes are the ones gate 6 checked: pi's verdict on them is in the check cache.
	const check = checkSkillContent(bytes.toString("utf8"), name);
	if (check.name !== name || check.description === undefined || check.diagnostics.length > 0) return false;
	// A create's name is new (gate); a restore's may not be, and pi would then keep only one of the two.
	if (skillNamed(skills, name) !== undefined) return false;
	const skill = describeSkill(entry.options, entry.discovery.roots, {
		name,
		description: check.description,
		filePath: file,
		origin,
	});
	entry.discovery = { ...entry.discovery, skills: [...skills.slice(0, at), skill, ...skills.slice(at)] };
	// Its folder and SKILL.md are its head; its root's stamp (shared) keeps its key.
	const groups = entry.groups;
	if (groups)
		entry.groups = { ...groups, heads: [...groups.heads.slice(0, at), [dir, file], ...groups.heads.slice(at)] };
	entry.fileIndex = undefined;
	stamps.set(root, { sig: sigOf(statOf(fs, root), granularityMs), racy: true, names });
	stamps.set(dir, { sig: sigOf(statOf(fs, dir), granularityMs), racy: true, names: SKILL_FILE });
	stamps.set(file, { sig: sigOf(statOf(fs, file), granularityMs), racy: true, hash: change.newHash });
	links.set(dir, false);
	links.set(file, false);
	return true;
}

/** No settings `skills` entry is a glob or an override: pi enables every file a place holds. */
function hasPlainEntries({ settingsManager }: PackageManagers): boolean {
	const entries = [settingsManager.getGlobalSettings(), settingsManager.getProjectSettings()].flatMap(
		(settings) => settings.skills ?? [],
	);
	return entries.every((entry) => typeof entry === "string" && !/^\s*[!+-]/.test(entry) && !/[*?[{]/.test(entry));
}

export interface DiscoveryCacheOptions {
	/** Compare timestamps as if the filesystem kept them at this resolution (tests: a coarse clock). */
	readonly timestampGranularityMs?: number;
}

/** How long a slice of the late walk runs before it lets pi go on. */
const SLICE_MS = 4;

interface Settling {
	done: Promise<void>;
	/** A call needs the stamps now: no more pauses. */
	hurry: boolean;
	cancelled: boolean;
	/** Ends the current pause at once. */
	wake?: () => void;
}

export function createDiscoveryCache(cacheOptions: DiscoveryCacheOptions = {}): DiscoveryCache {
	let entry: Entry | undefined;
	/** Whether this cache has built a discovery yet: the first is stamped after pi read. */
	let built = false;
	const stats: DiscoveryCacheStats = { hits: 0, misses: 0, unkept: 0, rebuilt: 0, followedCreates: 0 };
	const granularityMs = cacheOptions.timestampGranularityMs ?? 0;

	function drop(): void {
		if (entry?.settling) entry.settling.cancelled = true;
		entry = undefined;
	}

	/** pi's discovery, and the entry that may serve later calls (stamped before the build, or `late`, after it). */
	async function build(
		options: DiscoverOptions,
		key: string,
		late: boolean,
	): Promise<{ discovery: Discovery; kept?: Entry }> {
		const builtAt = Date.now();
		const fs = options.fs ?? realFs;
		// The settings are read right away (the places follow from them): stat'ed before that.
		const settingsFiles = [getGlobalSettingsPath(options.agentDir), getProjectSettingsPath(options.cwd)];
		const settingsBefore = late ? settingsFiles.map((path) => [resolve(path), statOf(fs, path)] as const) : [];
		const managers = createPackageManager(options);
		const places = watchedPlaces(options, managers);
		if (!places) {
			stats.unkept++;
			return { discovery: await discoverSkills(options, managers.packageManager) };
		}
		const plainEntries = hasPlainEntries(managers);
		if (late) {
			const rule: StampRule = { builtAt, before: new Map([...statPlaces(places, fs), ...settingsBefore]) };
			const discovery = await discoverSkills(options, managers.packageManager);
			const fingerprint = emptyFingerprint(places, granularityMs, fs);
			const kept: Entry = { key, options, fingerprint, discovery, plainEntries };
			const settling: Settling = { done: Promise.resolve(), hurry: false, cancelled: false };
			settling.done = settle(kept, stampPlaces(places, fingerprint, rule), settling);
			kept.settling = settling;
			return { discovery, kept };
		}
		// Stamped before pi reads anything: a change while pi reads moves a stamp (or, within one
		// clock tick, a racy entry's content), so the next check misses. No second pass is needed.
		const fingerprint = takeFingerprint(places, granularityMs, fs);
		const discovery = await discoverSkills(
			{ ...options, isSymlinkHint: (path) => fingerprint.links.get(path) },
			managers.packageManager,
		);
		if (discovery.skills.every((s) => fingerprint.stamps.has(s.filePath)))
			return { discovery, kept: { key, options, fingerprint, discovery, plainEntries } };
		stats.unkept++;
		return { discovery };
	}

	/** Nothing to stamp is left, or the entry went; never rejects (no call may be waiting for it). */
	async function settle(self: Entry, walk: Generator<void, void, void>, settling: Settling): Promise<void> {
		let next: Entry | undefined;
		try {
			next = await stampLate(self, walk, settling);
		} catch {
			// A walk or a second discovery that failed: the next call discovers for itself.
			next = undefined;
		}
		self.settling = undefined;
		if (entry === self && !settling.cancelled) entry = next;
	}

	/** The late walk, in slices between which pi goes on; then the entry kept, dropped or built again. */
	async function stampLate(
		self: Entry,
		walk: Generator<void, void, void>,
		settling: Settling,
	): Promise<Entry | undefined> {
		for (let done = false; !done; ) {
			await new Promise<void>((next) => {
				settling.wake = next;
				if (!settling.hurry) setImmediate(next);
				else next();
			});
			if (settling.cancelled) return undefined;
			const until = settling.hurry ? Number.POSITIVE_INFINITY : performance.now() + SLICE_MS;
			do done = walk.next().done === true;
			while (!done && performance.now() < until);
		}
		const { stamps } = self.fingerprint;
		if (!self.discovery.skills.every((s) => stamps.has(s.filePath))) {
			stats.unkept++;
			return undefined;
		}
		for (const stamp of stamps.values()) {
			if (!stamp.unsettled) continue;
			// Something changed around the build: what pi read is unknown, so pi reads again (stamped first).
			stats.rebuilt++;
			return (await build(self.options, self.key, false)).kept;
		}
		return self;
	}

	return {
		stats,
		async discover(options, targets) {
			const settling = entry?.settling;
			if (settling) {
				settling.hurry = true;
				settling.wake?.();
				await settling.done;
			}
			const key = keyOf(options);
			const targeted =
				entry && entry.key === key && targets !== undefined ? targetedPaths(entry, targets) : undefined;
			if (entry && entry.key === key && isFresh(entry.fingerprint, targeted?.paths)) {
				stats.hits++;
				return entry.discovery;
			}
			stats.misses++;
			drop();
			const late = !built;
			built = true;
			const { discovery, kept } = await build(options, key, late);
			entry = kept;
			return discovery;
		},
		laterNamesCurrent(discovery, targets) {
			// Another discovery since (or none kept): which stamps the call skipped is unknown.
			if (!entry || entry.discovery !== discovery || entry.settling) return false;
			const targeted = targetedPaths(entry, targets);
			// A name the cache lacks got the full check.
			return targeted === undefined || isFresh(entry.fingerprint, targeted.later());
		},
		noteLanded(changes) {
			if (!entry) return;
			// Stamps still being taken would see the tool's write as a change made around the build.
			if (entry.settling) return drop();
			if (!followLanded(entry, changes)) return drop();
			stats.followedCreates += changes.filter((c) => c.oldHash === null && c.relPath === SKILL_FILE).length;
		},
		settled() {
			return entry?.settling?.done ?? Promise.resolve();
		},
		clear() {
			drop();
			built = false;
		},
	};
}
