// Turning a call's `skill` / `path` / `file` into one concrete target: the discovered skill and
// the absolute regular file inside its folder. Every path rule of the contract lives here: no `..`,
// no absolute paths, backslashes, NUL or control characters, hidden segments, case/Unicode aliases
// of SKILL.md, trailing separators or names too long for the temp and backup names beside them.

import { basename, join, normalize, resolve } from "node:path";
import { skillNamed, type DiscoveredSkill } from "./discovery.ts";
import { controlCharIn, escapeControls } from "../checks/content-guard.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { describeNonRegular } from "../base/fs-ops.ts";
import { expandHome, isWithin, resolveReal } from "../base/paths.ts";

export const SKILL_FILE = "SKILL.md";

export interface SkillSelector {
	readonly skill?: string;
	readonly path?: string;
	/** The call's action, for the text of a refusal. */
	readonly action?: string;
}

/** A skill folder that does not exist yet (create, a deleted skill brought back): where it will be. */
export interface NewSkillTarget {
	readonly name: string;
	readonly dir: string;
	/** Its SKILL.md. */
	readonly absPath: string;
}

export function newSkillTarget(name: string, dir: string): NewSkillTarget {
	return { name, dir, absPath: join(dir, SKILL_FILE) };
}

export interface FileTarget {
	readonly skill: DiscoveredSkill;
	/** Path relative to the skill folder, `/`-separated; `SKILL.md` for the skill file. */
	readonly relPath: string;
	readonly absPath: string;
	readonly isSkillFile: boolean;
}

/**
 * Strips the `@` models like to add and expands `~`, then resolves against cwd. Never trims:
 * "deploy " is another folder than "deploy", and trimming patched the wrong one.
 */
export function normalizeUserPath(path: string, cwd: string): string {
	return resolve(cwd, expandHome(path.replace(/^@/, "")));
}

function editDistance(a: string, b: string): number {
	const row = Array.from({ length: b.length + 1 }, (_, i) => i);
	for (let i = 1; i <= a.length; i++) {
		let previous = row[0];
		row[0] = i;
		for (let j = 1; j <= b.length; j++) {
			const current = row[j];
			row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
			previous = current;
		}
	}
	return row[b.length];
}

/** Up to three discovered names close to `wanted` (substring or a small edit distance). */
export function nearNames(wanted: string, names: readonly string[]): string[] {
	// A name has at most 64 characters: more of a long argument only makes the distance cost more.
	const w = wanted.toLowerCase().slice(0, 128);
	return names
		.map((name) => ({ name, score: editDistance(w, name), related: name.includes(w) || w.includes(name) }))
		.filter(({ score, related }) => related || score <= Math.max(2, Math.floor(w.length / 3)))
		.sort((a, b) => a.score - b.score || a.name.localeCompare(b.name))
		.slice(0, 3)
		.map(({ name }) => name);
}

function matchesPath(skill: DiscoveredSkill, wanted: string, wantedReal: string): boolean {
	const places = skill.dir ? [skill.dir, skill.filePath] : [skill.filePath];
	return places.some((p) => p === wanted || resolveReal(p) === wantedReal);
}

/**
 * A `skill` or `path` argument carrying a control character names no skill (names and folders
 * never hold one): unknown_skill, decided before any lookup and echoed escaped, never raw.
 */
function checkSelectorText(selector: SkillSelector, names: () => readonly string[]): Refusal | undefined {
	for (const value of [selector.skill, selector.path]) {
		if (value === undefined || controlCharIn(value) === undefined) continue;
		const printable = value.replace(/\p{Cc}|[\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu, "");
		return refusals.unknownSkill(escapeControls(value.slice(0, 200)), nearNames(basename(printable), names()));
	}
	return undefined;
}

/** Linux's PATH_MAX: no longer path names a file. */
const MAX_USER_PATH = 4096;

export function findSkill(
	skills: readonly DiscoveredSkill[],
	selector: SkillSelector,
	cwd: string,
): DiscoveredSkill | Refusal {
	// Every name is listed only for a refusal's nearest names; a name is found through the index.
	const names = () => skills.map((s) => s.name);
	const bad = checkSelectorText(selector, names);
	if (bad) return bad;
	const name = (selector.skill ?? "").trim();
	if (selector.path !== undefined && selector.path.trim() !== "") {
		// Longer than any path the system resolves: resolving it segment by segment would take minutes.
		if (selector.path.length > MAX_USER_PATH)
			return refusals.unknownSkill(selector.path.slice(0, 200), nearNames(basename(selector.path), names()));
		const wanted = normalizeUserPath(selector.path, cwd);
		const wantedReal = resolveReal(wanted);
		const hit = skills.find((s) => matchesPath(s, wanted, wantedReal));
		if (!hit)
			return refusals.unknownSkill(
				selector.path,
				nearNames(basename(wanted) === SKILL_FILE ? basename(resolve(wanted, "..")) : basename(wanted), names()),
			);
		// Two arguments naming two skills: which one the model meant is a guess, so neither is taken.
		if (name !== "" && name !== hit.name) {
			return refusals.invalidArguments(
				selector.action ?? "?",
				`"skill" names "${name}" but "path" ${JSON.stringify(selector.path)} is the skill "${hit.name}"; ` +
					`pass only one of them ({"skill":"${hit.name}"} for the path's skill)`,
				{ skill: name, path: selector.path, pathSkill: hit.name },
			);
		}
		return hit;
	}
	const hit = skillNamed(skills, name);
	if (hit) return hit;
	return refusals.unknownSkill(name, nearNames(name, names()));
}

/**
 * Longest name of one file or folder. The filesystem allows 255 bytes, but the writer's temp file
 * (".<name>.selfskills-tmp-<pid>-<counter><time>") and the backup's "<stamp>-<hash><ext>" sit
 * beside it with up to ~45 more: a 230-byte name failed with ENAMETOOLONG mid-write.
 */
export const MAX_NAME_BYTES = 200;
const MAX_PATH_CHARS = 512;

/** Checks a `file` argument and returns its normalised relative path, or a refusal. */
export function checkFileArgument(file: string): string | Refusal {
	if (file.includes("\0")) return refusals.badFilePath(file, "it contains a NUL byte");
	const control = controlCharIn(file);
	if (control)
		return refusals.badFilePath(
			escapeControls(file),
			`it contains the control character ${control}; file names are plain printable text`,
		);
	if (file.includes("\\")) return refusals.badFilePath(file, "backslashes are not allowed; use /");
	if (file.trim() === "" || file !== file.trim())
		return refusals.badFilePath(file, "it is empty or has leading/trailing spaces");
	if (file.startsWith("/") || /^[a-zA-Z]:/.test(file) || file.startsWith("~"))
		return refusals.badFilePath(file, "absolute paths are not allowed");
	if (file !== file.normalize("NFC")) return refusals.badFilePath(file, "the name is not in Unicode NFC form");
	const segments = file.split("/").filter((s) => s !== "" && s !== ".");
	if (segments.some((s) => s === "..")) return refusals.badFilePath(file, "'..' segments are not allowed");
	if (segments.some((s) => s.startsWith(".")))
		return refusals.badFilePath(file, "hidden files and folders are not part of a skill");
	if (segments.some((s) => s === "node_modules"))
		return refusals.badFilePath(file, "node_modules is not part of a skill");
	if (segments.length === 0) return refusals.badFilePath(file, "it names the skill folder itself, not a file");
	if (/\/\.?$/.test(file)) {
		return refusals.badFilePath(
			file,
			`it ends with a separator, so it names a folder; name a file inside it, e.g. "${segments.join("/")}/notes.md"`,
		);
	}
	const rel = normalize(segments.join("/"));
	if (rel !== SKILL_FILE && rel.toLowerCase() === SKILL_FILE.toLowerCase()) {
		return refusals.badFilePath(file, "it differs from SKILL.md only in case; use exactly SKILL.md");
	}
	if (rel.length > MAX_PATH_CHARS || segments.some((s) => Buffer.byteLength(s) > MAX_NAME_BYTES)) {
		return refusals.badFilePath(
			file,
			`the path is too long (at most ${MAX_NAME_BYTES} bytes per name, ${MAX_PATH_CHARS} characters in all)`,
		);
	}
	return rel;
}

/** Why a path that is no regular file is refused, and the call that works instead. */
export function notRegularReason(kind: string, rel: string, skill: string): string {
	if (kind === "a folder")
		return (
			`it is a folder; name a file inside it, e.g. "${rel}/notes.md" ` +
			`({"action":"read","skill":"${skill}"} lists the bundled files)`
		);

	// Opening a FIFO for reading would block pi until a writer comes; a device may never end.
	return `it is ${kind}, not a regular file; only regular files are read or changed, so leave it as it is`;
}

/** Resolves `file` (SKILL.md by default) inside the skill's folder. */
export function resolveFileTarget(skill: DiscoveredSkill, file: string | undefined): FileTarget | Refusal {
	if (file === undefined || file === SKILL_FILE) {
		return { skill, relPath: SKILL_FILE, absPath: skill.filePath, isSkillFile: true };
	}
	const rel = checkFileArgument(file);
	if (typeof rel !== "string") return rel;
	if (rel === SKILL_FILE) return { skill, relPath: SKILL_FILE, absPath: skill.filePath, isSkillFile: true };
	if (!skill.dir)
		return refusals.badFilePath(file, `"${skill.name}" is a single-file skill without a folder for bundled files`);
	const absPath = join(skill.dir, rel);
	if (!isWithin(resolveReal(skill.dir), resolveReal(absPath))) {
		return refusals.badFilePath(file, "it resolves (through a symlink) outside the skill folder");
	}
	const kind = describeNonRegular(absPath);
	if (kind) return refusals.badFilePath(file, notRegularReason(kind, rel, skill.name));
	return { skill, relPath: rel, absPath, isSkillFile: false };
}
