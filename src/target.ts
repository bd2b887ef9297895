// Turning a call's `skill` / `path` / `file` into one concrete target: the discovered skill and
// the absolute file inside its folder. Every path rule of the contract lives here: no `..`, no
// absolute paths, backslashes, NUL, hidden segments or case/Unicode aliases of SKILL.md.

import { homedir } from "node:os";
import { basename, join, normalize, resolve } from "node:path";
import type { DiscoveredSkill } from "./discovery.ts";
import * as refusals from "./errors.ts";
import type { Refusal } from "./errors.ts";
import { isWithin, resolveReal } from "./paths.ts";

export const SKILL_FILE = "SKILL.md";

export interface SkillSelector {
	readonly skill?: string;
	readonly path?: string;
}

export interface FileTarget {
	readonly skill: DiscoveredSkill;
	/** Path relative to the skill folder, `/`-separated; `SKILL.md` for the skill file. */
	readonly relPath: string;
	readonly absPath: string;
	readonly isSkillFile: boolean;
}

/** Strips the `@` models like to add and expands `~`, then resolves against cwd. */
export function normalizeUserPath(path: string, cwd: string): string {
	let p = path.trim().replace(/^@/, "");
	if (p === "~") p = homedir();
	else if (p.startsWith("~/")) p = join(homedir(), p.slice(2));
	return resolve(cwd, p);
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
	const w = wanted.toLowerCase();
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

export function findSkill(skills: readonly DiscoveredSkill[], selector: SkillSelector, cwd: string): DiscoveredSkill | Refusal {
	if (selector.path !== undefined && selector.path.trim() !== "") {
		const wanted = normalizeUserPath(selector.path, cwd);
		const wantedReal = resolveReal(wanted);
		const hit = skills.find((s) => matchesPath(s, wanted, wantedReal));
		if (hit) return hit;
		return refusals.unknownSkill(selector.path, nearNames(basename(wanted) === SKILL_FILE ? basename(resolve(wanted, "..")) : basename(wanted), skills.map((s) => s.name)));
	}
	const name = (selector.skill ?? "").trim();
	const hit = skills.find((s) => s.name === name);
	if (hit) return hit;
	return refusals.unknownSkill(name, nearNames(name, skills.map((s) => s.name)));
}

/** Checks a `file` argument and returns its normalised relative path, or a refusal. */
export function checkFileArgument(file: string): string | Refusal {
	if (file.includes("\0")) return refusals.badFilePath(file, "it contains a NUL byte");
	if (file.includes("\\")) return refusals.badFilePath(file, "backslashes are not allowed; use /");
	if (file.trim() === "" || file !== file.trim()) return refusals.badFilePath(file, "it is empty or has leading/trailing spaces");
	if (file.startsWith("/") || /^[a-zA-Z]:/.test(file) || file.startsWith("~")) return refusals.badFilePath(file, "absolute paths are not allowed");
	if (file !== file.normalize("NFC")) return refusals.badFilePath(file, "the name is not in Unicode NFC form");
	const segments = file.split("/").filter((s) => s !== "" && s !== ".");
	if (segments.some((s) => s === "..")) return refusals.badFilePath(file, "'..' segments are not allowed");
	if (segments.some((s) => s.startsWith("."))) return refusals.badFilePath(file, "hidden files and folders are not part of a skill");
	if (segments.some((s) => s === "node_modules")) return refusals.badFilePath(file, "node_modules is not part of a skill");
	if (segments.length === 0) return refusals.badFilePath(file, "it names the skill folder itself, not a file");
	const rel = normalize(segments.join("/"));
	if (rel !== SKILL_FILE && rel.toLowerCase() === SKILL_FILE.toLowerCase()) {
		return refusals.badFilePath(file, "it differs from SKILL.md only in case; use exactly SKILL.md");
	}
	if (rel.length > 512 || segments.some((s) => Buffer.byteLength(s) > 255)) return refusals.badFilePath(file, "the path is too long");
	return rel;
}

/** Resolves `file` (SKILL.md by default) inside the skill's folder. */
export function resolveFileTarget(skill: DiscoveredSkill, file: string | undefined): FileTarget | Refusal {
	if (file === undefined || file === SKILL_FILE) {
		return { skill, relPath: SKILL_FILE, absPath: skill.filePath, isSkillFile: true };
	}
	const rel = checkFileArgument(file);
	if (typeof rel !== "string") return rel;
	if (rel === SKILL_FILE) return { skill, relPath: SKILL_FILE, absPath: skill.filePath, isSkillFile: true };
	if (!skill.dir) return refusals.badFilePath(file, `"${skill.name}" is a single-file skill without a folder for bundled files`);
	const absPath = join(skill.dir, rel);
	if (!isWithin(resolveReal(skill.dir), resolveReal(absPath))) {
		return refusals.badFilePath(file, "it resolves (through a symlink) outside the skill folder");
	}
	return { skill, relPath: rel, absPath, isSkillFile: false };
}
