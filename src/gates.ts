// The gates every mutation passes, in the contract's order. Each gate is a small function that
// returns a refusal or nothing; none of them writes. Planners call them top to bottom:
//   1 old_string   2 read this session   3 unchanged since read   4 inside a writable root
//   5 unique match   6 pi's validation   (7 backup and 8 atomic write happen in commit.ts)

import { lstatSync } from "node:fs";
import { dirname } from "node:path";
import * as refusals from "./errors.ts";
import type { NearLine, Refusal } from "./errors.ts";
import type { ReadLedger } from "./read-ledger.ts";
import { getForbiddenReason, getPiPlaces, isWithin, resolveReal } from "./paths.ts";
import { findWritableRoot, type WritableRoot } from "./roots.ts";
import type { FileTarget } from "./target.ts";
import { checkSkillContent, newDiagnostics, suggestFrontmatter } from "./validation.ts";

/** Gate 1: a non-empty old_string that differs from new_string. */
export function checkOldString(oldString: string, newString: string): Refusal | undefined {
	if (oldString.length === 0) return refusals.emptyOldString();
	if (oldString === newString) return refusals.noChange("new_string");
	return undefined;
}

/** Gate 2: the skill's SKILL.md, and a bundled target itself, were read this session. */
export function checkRead(ledger: ReadLedger, target: FileTarget): Refusal | undefined {
	if (ledger.get(target.skill.filePath) === undefined) return refusals.notRead(target.skill.filePath, target.skill.name, undefined);
	if (!target.isSkillFile && ledger.get(target.absPath) === undefined) {
		return refusals.notRead(target.absPath, target.skill.name, target.relPath);
	}
	return undefined;
}

/** Gate 3: the target is byte-identical to what was read (sha256 precondition). */
export function checkUnchanged(ledger: ReadLedger, target: FileTarget, currentHash: string | null): Refusal | undefined {
	const readHash = ledger.get(target.absPath);
	if (readHash === undefined || readHash === currentHash) return undefined;
	const file = target.isSkillFile ? undefined : target.relPath;
	return refusals.stale(target.absPath, readHash, currentHash ?? "(deleted)", target.skill.name, file);
}

export interface WritableInput {
	readonly roots: readonly WritableRoot[];
	readonly agentDir: string;
}

function isSymlink(path: string): boolean {
	try {
		return lstatSync(path).isSymbolicLink();
	} catch {
		return false;
	}
}

/** Gate 4: the target lies inside a writable root after resolving symlinks, and is no symlink. */
export function checkWritable(input: WritableInput, target: FileTarget): Refusal | undefined {
	const rootPaths = input.roots.map((r) => r.path);
	const { skill } = target;
	if (!skill.patchable) return refusals.notWritable(target.absPath, skill.reason ?? "read-only", rootPaths);
	const forbidden = getForbiddenReason(getPiPlaces(input.agentDir), resolveReal(target.absPath));
	if (forbidden) return refusals.notWritable(target.absPath, forbidden, rootPaths);
	if (!findWritableRoot(input.roots, target.absPath)) {
		return refusals.notWritable(target.absPath, "outside every writable root (after resolving symlinks)", rootPaths);
	}
	if (isSymlink(target.absPath)) return refusals.notWritable(target.absPath, "the file is a symbolic link", rootPaths);
	if (skill.dir && !isWithin(resolveReal(skill.dir), resolveReal(dirname(target.absPath)))) {
		return refusals.notWritable(target.absPath, "a folder on the way is a symbolic link leading out of the skill", rootPaths);
	}
	return undefined;
}

function lineOf(text: string, index: number): number {
	let line = 1;
	for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
	return line;
}

/** Every start index of `needle` in `text` (non-overlapping, left to right). */
export function findAll(text: string, needle: string): number[] {
	const hits: number[] = [];
	for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) hits.push(i);
	return hits;
}

function similarity(a: string, b: string): number {
	if (a === b) return 1;
	const grams = (s: string) => new Set(Array.from({ length: Math.max(s.length - 1, 1) }, (_, i) => s.slice(i, i + 2)));
	const ga = grams(a);
	const gb = grams(b);
	let shared = 0;
	for (const g of ga) if (gb.has(g)) shared++;
	return (2 * shared) / (ga.size + gb.size);
}

/** The three lines most like the first non-blank line of `oldString`, with their numbers. */
export function closestLines(text: string, oldString: string): NearLine[] {
	const probe = oldString.split(/\r?\n/).find((l) => l.trim() !== "")?.trim() ?? oldString.trim();
	return text
		.split("\n")
		.map((raw, i) => ({ line: i + 1, text: raw.replace(/\r$/, ""), score: similarity(raw.trim(), probe) }))
		.filter((l) => l.text.trim() !== "" && l.score > 0.3)
		.sort((a, b) => b.score - a.score || a.line - b.line)
		.slice(0, 3)
		.map(({ line, text: t }) => ({ line, text: t.length > 160 ? `${t.slice(0, 157)}...` : t }));
}

/** Every start index of `needle` in `text`, overlapping ones included ("aba" twice in "ababa"). */
function findOverlapping(text: string, needle: string): number[] {
	const hits: number[] = [];
	for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + 1)) hits.push(i);
	return hits;
}

/** Gate 5: old_string occurs exactly once (or at least once with replace_all). */
export function checkUnique(text: string, oldString: string, replaceAll: boolean, path: string): Refusal | undefined {
	// Overlapping occurrences count: "aba" in "ababa" is ambiguous, not unique.
	const hits = replaceAll ? findAll(text, oldString) : findOverlapping(text, oldString);
	if (hits.length === 0) {
		const refusal = refusals.notFound(path, oldString, closestLines(text, oldString));
		const crlf = text.includes("\r\n") && /(^|[^\r])\n/.test(oldString);
		return crlf ? { ...refusal, message: `${refusal.message}\nThe file uses CRLF line endings: write \\r\\n in old_string.` } : refusal;
	}
	if (hits.length > 1 && !replaceAll) return refusals.notUnique(path, hits.length, hits.map((i) => lineOf(text, i)));
	return undefined;
}

/** Applies an exact replacement; `$&` and friends in newString are taken literally. */
export function replaceExact(text: string, oldString: string, newString: string, replaceAll: boolean): string {
	if (replaceAll) return text.split(oldString).join(newString);
	const at = text.indexOf(oldString);
	return text.slice(0, at) + newString + text.slice(at + oldString.length);
}

export interface ValidInput {
	readonly before: string | undefined;
	readonly after: string;
	readonly dirName: string;
	readonly path: string;
	/** Names of the other discovered skills, for collisions when the name changes. */
	readonly otherNames: readonly string[];
	/** For the corrected frontmatter of a refusal; only computed when there is one. */
	readonly previousDescription?: () => string | undefined;
}

/** Gate 6: pi still loads the skill, with no diagnostic the file did not already have. */
export function checkValid(input: ValidInput): Refusal | undefined {
	const after = checkSkillContent(input.after, input.dirName);
	const beforeDiagnostics = input.before === undefined ? [] : checkSkillContent(input.before, input.dirName).diagnostics;
	const added = newDiagnostics(beforeDiagnostics, after.diagnostics);
	if (after.name !== undefined && input.otherNames.includes(after.name)) {
		added.push({ type: "collision", message: `name "${after.name}" collides with another discovered skill` });
	}
	if (added.length === 0 && after.name !== undefined) return undefined;
	const suggestion = suggestFrontmatter(input.after, input.dirName, input.previousDescription?.());
	return refusals.invalidSkill(input.path, added.length > 0 ? added : after.diagnostics, suggestion);
}
