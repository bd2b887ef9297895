// A session's last discovery, reused while a stat fingerprint of every place pi's resolver and
// loader read proves the disk unchanged: both settings files, and under every place pi scans each
// folder (its entry names), each `.md`, `package.json` and ignore file. Stamps are taken before pi
// reads, so a change while it reads moves one. An entry changed within a clock tick of its stamp
// could change again without a new timestamp ("racy git"): its content is compared as well.
// The tool's own rewrite of an existing file is followed (same folder entries, the bytes it wrote,
// for a skill file pi's loader's answer from verify-after-write); any other change drops the entry.

import type { Stats } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import type { LandedCheck } from "../checks/validation.ts";
import { sha256 } from "../base/hash.ts";
import { createPackageManager, discoverSkills, type DiscoverOptions, type Discovery } from "./discovery.ts";
import { getUserAgentsSkillsDir } from "./roots.ts";
import { getGlobalSettingsPath, getProjectSettingsPath } from "./settings.ts";

/** Wider than any filesystem's timestamp granularity (FAT: 2 s). */
const RACY_MS = 3_000;
/** For timestamps with a fraction of a second (ext4, xfs, btrfs, tmpfs, APFS: a kernel clock of 10 ms or finer). */
const FINE_RACY_MS = 200;

/** Files that change what pi reads around them; with `.md` files, all that pi's skill walk may read. */
const RULE_FILE = /^(package\.json|\.gitignore|\.ignore|\.fdignore)$/;

/**
 * An entry's stat (undefined: missing). `racy`: changed within the racy window of the stamp, so its
 * content is compared too (a folder's sorted `names`, a file's `hash`). `existenceOnly`: a `.git`
 * marks the project root; its churn does not matter.
 */
interface Stamp {
	readonly stat: Stats | undefined;
	readonly racy: boolean;
	readonly names?: string;
	readonly hash?: string;
	readonly existenceOnly?: boolean;
}

/** `places`: where pi scans (trees, package roots, the files it was handed); timestamps compared at `granularityMs`. */
interface Fingerprint {
	readonly stamps: Map<string, Stamp>;
	readonly places: readonly string[];
	readonly granularityMs: number;
	readonly fs: FsOps;
}

interface Entry extends Fingerprint {
	readonly key: string;
	discovery: Discovery;
}

/** A file a commit landed (pipeline's LandedChange fits): hashes null where it did not exist. */
export interface LandedFile {
	readonly absPath: string;
	readonly oldHash: string | null;
	readonly newHash: string | null;
	/** pi's loader on a written skill file at its place (verify-after-write). */
	readonly loaded?: LandedCheck;
}

/** `unkept`: misses not kept (a package not installed, a skill outside the stamped places). */
export type DiscoveryCacheStats = { hits: number; misses: number; unkept: number };

export interface DiscoveryCache {
	readonly stats: Readonly<DiscoveryCacheStats>;
	discover(options: DiscoverOptions): Promise<Discovery>;
	/** Called under the write locks once a commit landed: a rewrite is followed, anything else drops the entry. */
	noteLanded(changes: readonly LandedFile[]): void;
	clear(): void;
}

/** `read`'s answer, or undefined when it throws (missing, unreadable: a stamp records that too). */
function tolerant<T>(read: () => T): T | undefined {
	try {
		return read();
	} catch {
		return undefined;
	}
}

const statOf = (fs: FsOps, path: string) => tolerant(() => fs.stat(path));
const namesOf = (fs: FsOps, dir: string) => tolerant(() => fs.readdir(dir).sort().join("\0"));
const hashOf = (fs: FsOps, path: string) => tolerant(() => sha256(fs.readFile(path)));

/** Whether `stat` still says what `stamp` recorded, timestamps at the fingerprint's resolution. */
function sameStat(stat: Stats | undefined, stamp: Stamp, granularityMs: number): boolean {
	const was = stamp.stat;
	if (!stat || !was) return !stat && !was;
	if (stamp.existenceOnly) return stat.isDirectory() === was.isDirectory();
	const at = (t: number) => (granularityMs > 0 ? Math.floor(t / granularityMs) : t);
	return (
		was.ino === stat.ino &&
		was.size === stat.size &&
		at(was.mtimeMs) === at(stat.mtimeMs) &&
		at(was.ctimeMs) === at(stat.ctimeMs) &&
		was.mode === stat.mode &&
		was.dev === stat.dev
	);
}

/** Whether an entry changed so recently (before `now`) that a later change might keep its timestamps. */
function isRacy(stat: Stats, now: number, granularityMs: number): boolean {
	const fine = stat.mtimeMs % 1000 !== 0 && stat.ctimeMs % 1000 !== 0;
	const window = Math.max(fine ? FINE_RACY_MS : RACY_MS, 2 * granularityMs);
	return Math.max(stat.mtimeMs, stat.ctimeMs) >= now - window;
}

function stampOf(fp: Fingerprint, path: string, now: number, stat = statOf(fp.fs, path), names?: string): Stamp {
	const racy = stat !== undefined && isRacy(stat, now, fp.granularityMs);
	if (stat?.isDirectory()) return { stat, racy, names: names ?? namesOf(fp.fs, path) };
	return { stat, racy, hash: racy ? hashOf(fp.fs, path) : undefined };
}

/** Stamps `path` and, for a folder, everything under it pi could read (not dot folders, not node_modules). */
function stampTree(fp: Fingerprint, path: string, now: number, visited: Set<string>): void {
	if (fp.stamps.has(path)) return;
	const stat = statOf(fp.fs, path);
	if (!stat?.isDirectory()) {
		fp.stamps.set(path, stampOf(fp, path, now, stat));
		return;
	}
	const entries = tolerant(() => fp.fs.readdirEntries(path)) ?? [];
	const names = entries.map((e) => e.name).sort();
	fp.stamps.set(path, stampOf(fp, path, now, stat, names.join("\0")));
	const id = `${stat.dev}:${stat.ino}`;
	if (visited.has(id)) return; // A symlink loop.
	visited.add(id);
	for (const entry of entries) {
		const { name } = entry;
		const file = !entry.isDirectory() && (name.endsWith(".md") || RULE_FILE.test(name));
		const folder =
			!name.startsWith(".") && name !== "node_modules" && (entry.isDirectory() || entry.isSymbolicLink());
		if (file || folder) stampTree(fp, join(path, name), now, visited);
	}
}

/** Every stamp still holds; a racy one whose content held and has aged is trusted on its stat from then on. */
function isFresh(fp: Fingerprint): boolean {
	const now = Date.now();
	for (const [path, stamp] of fp.stamps) {
		const stat = statOf(fp.fs, path);
		if (!sameStat(stat, stamp, fp.granularityMs)) return false;
		if (!stamp.racy || !stat) continue;
		if (stat.isDirectory() ? namesOf(fp.fs, path) !== stamp.names : hashOf(fp.fs, path) !== stamp.hash) return false;
		if (!isRacy(stat, now, fp.granularityMs)) fp.stamps.set(path, { ...stamp, racy: false });
	}
	return true;
}

/** A settings or manifest `skills` entry as the folder to stamp: glob and override marks cut off. */
function entryBase(entry: string, baseDir: string): string {
	const plain = entry.trim().replace(/^[!+-]/, "");
	const glob = plain.search(/[*?[{]/);
	const head = glob === -1 ? plain : dirname(plain.slice(0, glob + 1));
	return head.startsWith("~") ? join(homedir(), head.slice(1)) : resolve(baseDir, head);
}

/** Stamped: `trees` whole, `folders` alone (a package root, which may be a repo), `markers` for existence. */
interface Places {
	readonly trees: string[];
	readonly folders: string[];
	readonly markers: string[];
}

/** Where pi looks inside an installed package: its manifest's `pi.skills` entries and `skills/`. */
function packagePlaces(fs: FsOps, root: string, places: Places): void {
	places.folders.push(root);
	places.trees.push(join(root, "package.json"), join(root, "skills"));
	// No manifest: pi uses the conventional folder only.
	type Manifest = { pi?: { skills?: unknown } };
	const entries = tolerant((): Manifest => JSON.parse(fs.readFile(join(root, "package.json")).toString("utf8")))?.pi
		?.skills;
	if (!Array.isArray(entries)) return;
	for (const entry of entries)
		if (typeof entry === "string" && !/^[!+-]/.test(entry.trim())) places.trees.push(entryBase(entry, root));
}

type Managers = ReturnType<typeof createPackageManager>;

/** Every place pi could find a skill for these options; undefined when one is unknown (a package not installed). */
function watchedPlaces(options: DiscoverOptions, managers: Managers): Places | undefined {
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
	const { settingsManager, packageManager } = managers;
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

function takeFingerprint(places: Places, granularityMs: number, fs: FsOps): Fingerprint {
	const fp: Fingerprint = { stamps: new Map(), places: [...places.trees, ...places.folders], granularityMs, fs };
	const now = Date.now();
	for (const mark of places.markers) fp.stamps.set(mark, { stat: statOf(fs, mark), racy: false, existenceOnly: true });
	const visited = new Set<string>();
	for (const tree of places.trees) stampTree(fp, tree, now, visited);
	// After the trees: a folder that is also a tree keeps its whole-tree stamps.
	for (const folder of places.folders) if (!fp.stamps.has(folder)) fp.stamps.set(folder, stampOf(fp, folder, now));
	return fp;
}

/**
 * The tool's rewrite of an existing file, followed into the entry; false when it must be dropped.
 * Its folder lists what it listed and the file holds the bytes written. A skill file keeps its
 * name, has no diagnostic before or after (its loader answer gives the new description); any other
 * file lies below a loaded skill's folder, where pi reads nothing but that SKILL.md, and is no
 * manifest or ignore file nor below another place pi scans.
 */
function followRewrite(entry: Entry, change: LandedFile): boolean {
	const { stamps, fs, places } = entry;
	const file = resolve(change.absPath);
	const dir = dirname(file);
	const dirStamp = stamps.get(dir);
	if (change.oldHash === null || change.newHash === null || dirStamp?.names === undefined) return false;
	if (namesOf(fs, dir) !== dirStamp.names || hashOf(fs, file) !== change.newHash) return false;
	const { skills, diagnostics } = entry.discovery;
	if (diagnostics.some((d) => d.path !== undefined && resolve(d.path) === file)) return false;
	const at = skills.findIndex((s) => s.filePath === file);
	if (at !== -1) {
		const { loaded } = change;
		if (!loaded?.loaded || loaded.name !== skills[at].name || loaded.diagnostics.length > 0) return false;
		const description = loaded.description ?? "";
		entry.discovery = { ...entry.discovery, skills: skills.map((s, i) => (i === at ? { ...s, description } : s)) };
	} else {
		const owner = skills.find((s) => s.dir !== undefined && file.startsWith(`${s.dir}${sep}`));
		if (!owner?.dir || RULE_FILE.test(basename(file))) return false;
		if (places.some((p) => p.startsWith(`${owner.dir}${sep}`) && p !== owner.filePath)) return false;
	}
	// Stamped now, just changed: compared by content until they age.
	const now = Date.now();
	stamps.set(dir, stampOf(entry, dir, now));
	if (stamps.has(file)) stamps.set(file, stampOf(entry, file, now));
	return true;
}

const keyOf = ({ cwd, agentDir, trusted, settings, runtimeSkillFiles }: DiscoverOptions) =>
	JSON.stringify({ cwd, agentDir, trusted, settings, runtimeSkillFiles, home: getUserAgentsSkillsDir() });

/** `timestampGranularityMs`: compare timestamps as if the filesystem kept them at that resolution (tests). */
export function createDiscoveryCache(cacheOptions: { timestampGranularityMs?: number } = {}): DiscoveryCache {
	let entry: Entry | undefined;
	const stats: DiscoveryCacheStats = { hits: 0, misses: 0, unkept: 0 };
	const granularityMs = cacheOptions.timestampGranularityMs ?? 0;
	return {
		stats,
		async discover(options) {
			const key = keyOf(options);
			if (entry && entry.key === key && isFresh(entry)) {
				stats.hits++;
				return entry.discovery;
			}
			stats.misses++;
			entry = undefined;
			const managers = createPackageManager(options);
			const places = watchedPlaces(options, managers);
			// Stamped before pi reads anything: a change while pi reads moves a stamp.
			const fingerprint = places && takeFingerprint(places, granularityMs, options.fs ?? realFs);
			const discovery = await discoverSkills(options, managers.packageManager);
			if (fingerprint && discovery.skills.every((s) => fingerprint.stamps.has(s.filePath)))
				entry = { ...fingerprint, key, discovery };
			else stats.unkept++;
			return discovery;
		},
		noteLanded(changes) {
			if (entry && !changes.every((change) => entry !== undefined && followRewrite(entry, change)))
				entry = undefined;
		},
		clear() {
			entry = undefined;
		},
	};
}
